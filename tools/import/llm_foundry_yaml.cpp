// An llm-foundry training YAML (scripts/train/yamls/pretrain/mpt-*.yaml) -> a scenario naming
// llm-foundry@0.0.4 (or --stack), its MPT model inline. ${name} refers to a top-level key.
#include <filesystem>
#include <set>

#include <yaml-cpp/yaml.h>

#include "tools/import/framework_config.h"

namespace parasim {

namespace {

const std::set<std::string> kFoundryNoEffect = {
    "data_local", "data_remote", "run_name", "global_seed", "seed", "tokenizer", "train_loader", "eval_loader", "scheduler",
    "algorithms", "max_duration", "eval_interval", "eval_first", "eval_subset_num_batches", "device_eval_batch_size",
    "progress_bar", "log_to_console", "console_log_interval", "callbacks", "loggers", "save_folder", "save_interval",
    "save_num_checkpoints_to_keep", "load_path", "dist_timeout", "optimizer.lr", "optimizer.betas", "optimizer.eps",
    "optimizer.weight_decay", "model.init_device", "model.init_config", "model.tokenizer_name", "fsdp_config.limit_all_gathers",
    "fsdp_config.verbose", "fsdp_config.activation_checkpointing_reentrant", "fsdp_config.state_dict_type"};

// A scalar, with ${key} replaced by the top-level key's value.
std::string scalar(const YAML::Node& root, const YAML::Node& v) {
  std::string s = v.as<std::string>();
  if (s.starts_with("${") && s.ends_with("}")) {
    const YAML::Node ref = root[s.substr(2, s.size() - 3)];
    if (!ref || !ref.IsScalar()) throw ConfigError("unresolved interpolation " + s);
    s = ref.as<std::string>();
  }
  return s;
}
bool map_model(const std::string& k, const std::string& s, Json& sc) {
  Json& m = sc["model"];
  if (k == "model.name") return s == "mpt_causal_lm";
  if (k == "model.d_model") m["hidden"] = std::stoll(s);
  else if (k == "model.n_heads") m["heads"] = std::stoll(s);
  else if (k == "model.n_layers") m["layers"] = std::stoll(s);
  else if (k == "model.expansion_ratio") m["_expansion"] = std::stoll(s);
  else if (k == "model.vocab_size") m["vocab"] = std::stoll(s);
  else if (k == "model.max_seq_len") m["max_positions"] = std::stoll(s);
  else if (k == "model.no_bias") m["bias"] = s != "true";
  else if (k == "model.loss_fn") {
    if (s != "fused_crossentropy" && s != "torch_crossentropy") return false;
    sc["training"]["loss_impl"] = s == "fused_crossentropy" ? "xentropy" : "eager";
  } else if (k == "model.attn_config.attn_impl") {
    if (s == "torch") sc["training"]["flash_attention"] = false;
    else sc["training"]["attention_kernel"] = s == "flash" ? "flash" : "triton";
  } else return false;
  return true;
}

bool map_key(const std::string& k, const std::string& s, Json& sc) {
  Json& t = sc["training"];
  Json& p = sc["parallel"];
  if (k.starts_with("model.")) return map_model(k, s, sc);
  if (k == "max_seq_len") t["seq_len"] = std::stoll(s);
  else if (k == "global_train_batch_size") t["global_batch"] = std::stoll(s);
  else if (k == "device_train_microbatch_size") t["micro_batch"] = std::stoll(s);
  else if (k == "precision") {
    if (s != "amp_bf16" && s != "amp_fp16" && s != "amp_fp8") return false;
    t["dtype"] = s.substr(4);
  } else if (k == "optimizer.name") return s == "decoupled_adamw" || s == "adamw";
  else if (k == "fsdp_config.sharding_strategy") {
    if (s == "FULL_SHARD" || s == "SHARD_GRAD_OP") p["fsdp"]["sharding"] = name_of(s == "FULL_SHARD" ? FsdpSharding::Full : FsdpSharding::GradOp);
    else if (s == "NO_SHARD") sc["_no_shard"] = true;
    else return false;
  } else if (k == "fsdp_config.mixed_precision") {
    if (s == "DEFAULT") p["fsdp"]["reduce_dtype"] = name_of(Dtype::Fp32);  // Composer's DEFAULT: params 16-bit, reduce fp32
    else if (s != "PURE") return false;
  } else if (k == "fsdp_config.activation_checkpointing") p["recompute"] = s == "true" ? "full" : "none";
  else if (k == "fsdp_config.backward_prefetch") {
    if (s != "BACKWARD_PRE" && s != "BACKWARD_POST") return false;
    p["fsdp"]["backward_prefetch"] = s == "BACKWARD_PRE" ? "pre" : "post";
  } else if (k == "fsdp_config.activation_cpu_offload") return s == "false";
  else return kFoundryNoEffect.count(k) > 0;
  return true;
}

void walk(const YAML::Node& root, const YAML::Node& node, const std::string& prefix, Json& sc, ImportResult& r) {
  for (const auto& kv : node) {
    const std::string k = prefix + kv.first.as<std::string>();
    if (kFoundryNoEffect.count(k)) continue;
    if (kv.second.IsMap() && (k == "model" || k == "fsdp_config" || k == "optimizer" || k == "model.attn_config")) {
      walk(root, kv.second, k + ".", sc, r);
    } else if (!kv.second.IsScalar() || !map_key(k, scalar(root, kv.second), sc)) {
      r.unmapped.push_back(k);
    }
  }
}

}  // namespace

ImportResult import_llm_foundry(const std::string& text, const std::string& file, const ImportOptions& o) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(file + ": not valid YAML: " + e.what());
  }
  if (!root.IsMap()) throw ConfigError(file + ": expected a YAML mapping");
  ImportResult r;
  r.scenario = scenario_skeleton(o, std::filesystem::path(file).stem().string(), "llm-foundry@0.0.4");
  // MPTConfig's defaults (llmfoundry/models/mpt/configuration_mpt.py): GeLU MLP, low-precision
  // LayerNorm, tied embeddings, learned positions, biases, no dropout.
  r.scenario["model"] = {{"name", std::filesystem::path(file).stem().string()}, {"activation", name_of(Activation::Gelu)}, {"norm", name_of(NormKind::LayerNorm)},
                         {"tied_embeddings", true}, {"position_embedding", name_of(PositionEmbedding::Learned)}, {"bias", true}, {"dropout", false}};
  walk(root, root, "", r.scenario, r);
  Json& m = r.scenario["model"];
  if (m.contains("heads")) m["kv_heads"] = m["heads"];
  if (m.contains("hidden")) m["ffn_hidden"] = m["hidden"].get<std::int64_t>() * m.value("_expansion", 4);
  m.erase("_expansion");
  Json& p = r.scenario["parallel"];
  if (r.scenario.value("_no_shard", false)) p.erase("fsdp");
  else if (p.contains("fsdp") && !p["fsdp"].contains("sharding")) p["fsdp"]["sharding"] = name_of(FsdpSharding::Full);  // Composer's default FULL_SHARD
  r.scenario.erase("_no_shard");
  apply_model_option(r.scenario, o);
  finish_layout(r.scenario, 0);
  return r;
}

}  // namespace parasim
