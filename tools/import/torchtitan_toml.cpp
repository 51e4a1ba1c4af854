// A torchtitan job file (train_configs/*.toml, the layout of late 2024) -> a scenario naming
// torchtitan@2024-12 (or --stack). The model comes from [model] name + flavor (the zoo's Llama 2 / 3
// models) or --model.
#include <filesystem>
#include <map>
#include <set>

#include <toml++/toml.h>

#include "tools/import/framework_config.h"

namespace parasim {

namespace {

// [section].key entries with no effect on a step's time or memory.
const std::set<std::string> kTitanNoEffect = {
    "job.dump_folder", "job.description", "job.use_for_integration_test", "job.print_args", "model.tokenizer_path",
    "optimizer.lr", "optimizer.eps", "optimizer.fused", "training.warmup_steps", "training.max_norm", "training.steps",
    "training.dataset", "training.dataset_path", "training.seed", "training.deterministic", "training.gc_freq",
    "training.enable_cpu_offload", "training.mixed_precision_reduce", "experimental.pipeline_parallel_split_points"};

const std::map<std::string, std::string> kZoo = {{"llama3/8B", "llama3-8b"},   {"llama3/70B", "llama3-70b"},
                                                 {"llama3/405B", "llama3.1-405b"}, {"llama2/7B", "llama2-7b"},
                                                 {"llama2/13B", "llama2-13b"}, {"llama2/70B", "llama2-70b"}};

std::string dotted(const std::string& section, const std::string& key) { return section + "." + key; }

// One [section] key: returns false when it is not mapped.
bool map_key(const std::string& k, const toml::node& v, Json& sc, std::map<std::string, std::int64_t>& deg, ImportResult& r) {
  Json& t = sc["training"];
  Json& p = sc["parallel"];
  const auto i64 = [&]() { return v.value<std::int64_t>().value_or(0); };
  const auto str = [&]() { return v.value<std::string>().value_or(""); };
  const auto yes = [&]() { return v.value<bool>().value_or(false); };
  if (k == "training.batch_size") deg["batch"] = i64();
  else if (k == "training.seq_len") t["seq_len"] = i64();
  else if (k == "training.data_parallel_replicate_degree") deg["replicate"] = i64();
  else if (k == "training.data_parallel_shard_degree") deg["shard"] = i64();
  else if (k == "training.tensor_parallel_degree") p["tp"] = i64();
  else if (k == "experimental.pipeline_parallel_degree") p["pp"] = i64();
  else if (k == "experimental.context_parallel_degree") p["cp"] = i64();
  else if (k == "experimental.enable_async_tensor_parallel") p["tp_comm_overlap"] = yes();
  else if (k == "training.compile") {
    if (yes()) t.update({{"norm_impl", name_of(NormImpl::Fused)}, {"rope_impl", name_of(RopeImpl::Fused)}, {"loss_impl", "fused"}});
    if (yes()) r.notes.push_back("compile = true: the norms, RoPE and the loss as fused (Triton) kernels");
  } else if (k == "training.mixed_precision_param") {
    const std::string d = str();
    if (d != "bfloat16" && d != "float32") return false;
    t["dtype"] = name_of(d == "bfloat16" ? Dtype::Bf16 : Dtype::Fp32);
  } else if (k == "activation_checkpoint.mode") p["recompute"] = str();
  else if (k == "activation_checkpoint.selective_ac_option") {
    if (str() != "op") return false;  // every N-th layer: not modelled
    deg["selective_op"] = 1;
  } else if (k == "float8.enable_float8_linear") {
    if (yes()) t.update({{"dtype", name_of(Dtype::Fp8)}, {"fp8_recipe", name_of(Fp8Recipe::Current)}});
  } else if (k == "model.norm_type") {
    if (str() == "fused_rmsnorm") t["norm_impl"] = name_of(NormImpl::Fused);
    else if (str() != "rmsnorm") return false;
  } else if (k == "model.name" || k == "model.flavor") {
    // read with the zoo table below
  } else if (k == "optimizer.name") {
    if (str() != "AdamW" && str() != "Adam") return false;
  } else {
    return k.starts_with("profiling.") || k.starts_with("metrics.") || k.starts_with("checkpoint.") || k.starts_with("comm.") ||
           kTitanNoEffect.count(k);
  }
  return true;
}

// Data parallelism: shard degree -1 takes the GPUs left; replicate x shard is HSDP.
void finish_titan_layout(Json& sc, const std::map<std::string, std::int64_t>& deg, ImportResult& r) {
  Json& p = sc["parallel"];
  finish_layout(sc, 0);
  const std::int64_t dp = p["dp"];
  const std::int64_t replicate = deg.count("replicate") ? deg.at("replicate") : 1;
  const std::int64_t shard = deg.count("shard") && deg.at("shard") > 0 ? deg.at("shard") : dp / replicate;
  if (replicate * shard != dp) throw ConfigError("data_parallel_replicate_degree x data_parallel_shard_degree != the data-parallel GPUs (" + std::to_string(dp) + ")");
  if (shard > 1)
    p["fsdp"] = replicate > 1 ? Json{{"sharding", name_of(FsdpSharding::Hybrid)}, {"shard_group", shard}} : Json{{"sharding", name_of(FsdpSharding::Full)}};
  if (p.value("recompute", "none") == "selective") p["recompute"] = deg.count("selective_op") ? "selective_op" : "selective";
  const std::int64_t batch = deg.count("batch") ? deg.at("batch") : 8;
  sc["training"]["micro_batch"] = batch;
  sc["training"]["global_batch"] = batch * dp;  // no gradient accumulation in the late-2024 trainer
  if (p.value("pp", 1) > 1) {
    p["p2p_sync"] = false;
    r.notes.push_back("parallel.p2p_sync false: torch.distributed.pipelining sends without blocking the stage");
  }
  if (p.value("cp", 1) > 1) p["cp_impl"] = name_of(CpImpl::AllGather);
}

}  // namespace

ImportResult import_torchtitan(const std::string& text, const std::string& file, const ImportOptions& o) {
  toml::table tbl;
  try {
    tbl = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw ConfigError(file + ": not valid TOML: " + std::string(e.description()));
  }
  ImportResult r;
  r.scenario = scenario_skeleton(o, std::filesystem::path(file).stem().string(), "torchtitan@2024-12");
  std::map<std::string, std::int64_t> deg;
  for (const auto& [section, node] : tbl) {
    const toml::table* sec = node.as_table();
    if (!sec) {
      r.unmapped.push_back(std::string(section.str()));
      continue;
    }
    for (const auto& [key, v] : *sec) {
      const std::string k = dotted(std::string(section.str()), std::string(key.str()));
      if (!map_key(k, v, r.scenario, deg, r)) r.unmapped.push_back(k);
    }
  }
  if (o.model.empty()) {
    const std::string id = tbl["model"]["name"].value_or(std::string()) + "/" + tbl["model"]["flavor"].value_or(std::string());
    if (!kZoo.count(id)) throw ConfigError(file + ": [model] " + id + " is not a zoo model parasim knows: give --model");
    r.scenario["model"] = kZoo.at(id);
  }
  finish_titan_layout(r.scenario, deg, r);
  return r;
}

}  // namespace parasim
