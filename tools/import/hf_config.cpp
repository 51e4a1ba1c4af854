// A Hugging Face config.json -> a parasim model (parasim.model/1). Llama-family (llama, mistral,
// qwen2, qwen3), their mixture-of-experts kin (mixtral, qwen2_moe, qwen3_moe) and GPT-2 are read;
// every key that would change the model and is not read is reported.
#include <filesystem>
#include <set>

#include "tools/import/framework_config.h"

namespace parasim {

namespace {

const std::set<std::string> kLlamaLike = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe"};

// Keys that describe weights, tokens or numerics, not the model's shape or cost.
const std::set<std::string> kHfNoEffect = {
    "architectures", "model_type", "torch_dtype", "dtype", "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id",
    "initializer_range", "rms_norm_eps", "layer_norm_epsilon", "rope_theta", "use_cache", "attention_dropout",
    "pretraining_tp", "max_window_layers", "use_sliding_window", "sliding_window", "output_router_logits", "router_aux_loss_coef",
    "router_jitter_noise", "norm_topk_prob", "decoder_sparse_step", "mlp_only_layers", "resid_pdrop", "embd_pdrop", "attn_pdrop",
    "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels", "summary_first_dropout", "scale_attn_weights",
    "task_specific_params", "n_ctx", "reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx", "_name_or_path", "mlp_bias"};

std::int64_t need(const Json& c, const char* key, const std::string& file) {
  if (!c.contains(key) || !c[key].is_number_integer()) throw ConfigError(file + ": /" + key + ": expected an integer");
  return c[key].get<std::int64_t>();
}

Json llama_like(const Json& c, const std::string& file, std::set<std::string>& read) {
  read.insert({"hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size",
               "tie_word_embeddings", "hidden_act", "max_position_embeddings", "head_dim", "attention_bias", "num_local_experts",
               "num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size", "rope_scaling"});
  const std::int64_t heads = need(c, "num_attention_heads", file);
  Json m = {{"layers", need(c, "num_hidden_layers", file)}, {"hidden", need(c, "hidden_size", file)}, {"heads", heads},
            {"kv_heads", c.value("num_key_value_heads", heads)}, {"ffn_hidden", need(c, "intermediate_size", file)},
            {"vocab", need(c, "vocab_size", file)}, {"activation", name_of(Activation::SwiGlu)}, {"tied_embeddings", c.value("tie_word_embeddings", false)},
            {"position_embedding", name_of(PositionEmbedding::Rope)}, {"norm", name_of(NormKind::RmsNorm)}, {"bias", c.value("attention_bias", false)}, {"dropout", false}};
  if (c.contains("head_dim") && c["head_dim"].is_number_integer()) m["head_dim"] = c["head_dim"];
  if (c.value("hidden_act", "silu") != "silu") throw ConfigError(file + ": /hidden_act: only SiLU-gated (SwiGLU) MLPs are read");
  const std::int64_t experts = c.value("num_local_experts", c.value("num_experts", 0));
  if (experts > 0) {
    m["moe"] = {{"experts", experts}, {"top_k", need(c, "num_experts_per_tok", file)},
                {"expert_ffn_hidden", c.value("moe_intermediate_size", m["ffn_hidden"].get<std::int64_t>())}};
    if (c.value("shared_expert_intermediate_size", 0) > 0) m["moe"]["shared_expert_ffn_hidden"] = c["shared_expert_intermediate_size"];
  }
  if (c.value("model_type", "") == "qwen3" || c.value("model_type", "") == "qwen3_moe") m["qk_norm"] = true;
  if (c.contains("rope_scaling") && c["rope_scaling"].is_object()) {
    const Json& r = c["rope_scaling"];
    const Json& type = r.contains("rope_type") ? r["rope_type"] : r.contains("type") ? r["type"] : Json();
    if (type.is_string() && type.get<std::string>() == "yarn") m["rope_scaling"] = "yarn";
  }
  return m;
}

Json gpt2(const Json& c, const std::string& file, std::set<std::string>& read) {
  read.insert({"n_embd", "n_layer", "n_head", "n_inner", "vocab_size", "n_positions", "activation_function", "tie_word_embeddings"});
  const std::int64_t h = need(c, "n_embd", file);
  const std::int64_t heads = need(c, "n_head", file);
  return {{"layers", need(c, "n_layer", file)}, {"hidden", h}, {"heads", heads}, {"kv_heads", heads},
          {"ffn_hidden", c.contains("n_inner") && c["n_inner"].is_number_integer() ? c["n_inner"].get<std::int64_t>() : 4 * h},
          {"vocab", need(c, "vocab_size", file)}, {"activation", name_of(Activation::Gelu)}, {"tied_embeddings", c.value("tie_word_embeddings", true)},
          {"position_embedding", name_of(PositionEmbedding::Learned)}, {"max_positions", need(c, "n_positions", file)}, {"norm", name_of(NormKind::LayerNorm)}, {"bias", true},
          {"dropout", c.value("resid_pdrop", 0.1) > 0}};
}

}  // namespace

ImportResult import_hf_config(const Json& c, const std::string& file) {
  if (!c.is_object()) throw ConfigError(file + ": expected a Hugging Face config object");
  const std::string type = c.value("model_type", "");
  std::set<std::string> read;
  Json m;
  if (kLlamaLike.count(type)) m = llama_like(c, file, read);
  else if (type == "gpt2") m = gpt2(c, file, read);
  else throw ConfigError(file + ": /model_type: \"" + type + "\" is not read (llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe, gpt2)");
  ImportResult r;
  r.scenario = {{"schema", "parasim.model/1"}, {"name", std::filesystem::path(file).parent_path().filename().string()}};
  if (r.scenario["name"] == "") r.scenario["name"] = std::filesystem::path(file).stem().string();
  r.scenario.update(m);
  r.scenario["source"] = "Hugging Face config.json (" + std::filesystem::path(file).filename().string() + "), read by parasim import hf-config";
  for (const auto& [k, v] : c.items())
    if (!read.count(k) && !kHfNoEffect.count(k)) r.unmapped.push_back(k);
  return r;
}

}  // namespace parasim
