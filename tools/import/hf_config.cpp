// A Hugging Face config.json -> a parasim model (parasim.model/1). Llama-family (llama, mistral,
// qwen2, qwen3), their mixture-of-experts kin (mixtral, qwen2_moe, qwen3_moe), GPT-OSS and GPT-2
// are read; every key that would change the model and is not read is reported. Each key read is
// typed and bounded (sim/config/json_reader.h): a wrong type or value names the file and the key.
#include <filesystem>
#include <set>

#include "sim/config/json_reader.h"
#include "tools/import/framework_config.h"

namespace parasim {

namespace {

constexpr std::int64_t kBig = std::int64_t{1} << 40;

// The keys each family's reader reads (reported neither as unmapped nor as without effect).
const std::set<std::string> kLlamaKeys = {
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size",
    "tie_word_embeddings", "hidden_act", "max_position_embeddings", "head_dim", "attention_bias", "num_local_experts", "num_experts",
    "num_experts_per_tok", "experts_per_token", "moe_intermediate_size", "shared_expert_intermediate_size", "rope_scaling",
    "decoder_sparse_step", "mlp_only_layers", "sliding_window", "use_sliding_window", "max_window_layers", "layer_types",
    "swiglu_limit"};
const std::set<std::string> kGpt2Keys = {"n_embd", "n_layer", "n_head", "n_inner", "vocab_size", "n_positions", "activation_function",
                                         "tie_word_embeddings", "resid_pdrop"};

const std::set<std::string> kLlamaLike = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss"};

// Keys that describe weights, tokens or numerics, not the model's shape or cost.
const std::set<std::string> kHfNoEffect = {
    "architectures", "model_type", "torch_dtype", "dtype", "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id",
    "initializer_range", "rms_norm_eps", "layer_norm_epsilon", "rope_theta", "use_cache", "attention_dropout",
    "pretraining_tp", "output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "norm_topk_prob", "resid_pdrop",
    "embd_pdrop", "attn_pdrop", "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels",
    "summary_first_dropout", "scale_attn_weights", "task_specific_params", "n_ctx", "reorder_and_upcast_attn",
    "scale_attn_by_inverse_layer_idx", "_name_or_path", "mlp_bias", "initial_context_length"};

// The config with its null values dropped: Hugging Face writes null for a setting left unset
// (sliding_window, head_dim, rope_scaling), which is read as absent.
Json without_nulls(const Json& c) {
  Json out = Json::object();
  for (const auto& [k, v] : c.items())
    if (!v.is_null()) out[k] = v;
  return out;
}

// layer_types: "sliding_attention" or "full_attention" per layer, as a full layer every n-th.
void read_layer_types(const JsonObject& o, std::int64_t layers, std::int64_t window, Json& m) {
  const Json& types = o.raw("layer_types");
  if (!types.is_array() || static_cast<std::int64_t>(types.size()) != layers)
    o.fail("layer_types", "expected one entry per layer (" + std::to_string(layers) + ")");
  std::int64_t interval = 0;  // the first full-attention layer's 1-based index
  for (std::int64_t i = 0; i < layers; ++i) {
    const Json& t = types[static_cast<size_t>(i)];
    if (!t.is_string() || (t != "sliding_attention" && t != "full_attention"))
      o.fail("layer_types", "entry " + std::to_string(i) + ": expected \"sliding_attention\" or \"full_attention\"");
    if (t == "full_attention" && interval == 0) interval = i + 1;
  }
  for (std::int64_t i = 0; i < layers; ++i)
    if ((types[static_cast<size_t>(i)] == "full_attention") != (interval > 0 && (i + 1) % interval == 0))
      o.fail("layer_types", "only a full-attention layer every n-th layer (the n-th, 2n-th, ...) is modelled");
  if (interval == 1) return;  // every layer attends fully
  m["sliding_window"] = window;
  if (interval > 1) m["full_attention_interval"] = interval;
}

// Which layers attend through a window (the model types whose attention reads sliding_window:
// Mistral, Mixtral, Qwen2/3 and their MoE kin, GPT-OSS; Llama's ignores it). layer_types (GPT-OSS,
// newer transformers) names each layer's and takes precedence. Mistral and Mixtral window every
// layer; Qwen only with use_sliding_window, from max_window_layers on, with the config class's
// defaults (sliding_window 4096, max_window_layers 28: configuration_qwen2.py). parasim windows
// every layer, or all but every n-th (model.full_attention_interval).
void read_window(const JsonObject& o, const std::string& type, std::int64_t layers, Json& m) {
  static const std::set<std::string> windowing = {"mistral", "mixtral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "gpt_oss"};
  if (!windowing.count(type)) return;
  const bool qwen = type.rfind("qwen", 0) == 0;
  const bool on = qwen ? o.boolean("use_sliding_window", false) : true;
  const std::int64_t window = o.integer("sliding_window", 0, kBig, qwen ? 4096 : 0);
  const std::int64_t first_windowed = o.integer("max_window_layers", 0, kBig, qwen ? 28 : 0);
  if (!on || window == 0) return;
  if (o.has("layer_types")) {
    read_layer_types(o, layers, window, m);
    return;
  }
  if (qwen && first_windowed >= layers) return;  // no layer is windowed
  if (qwen && first_windowed > 0)
    o.fail("max_window_layers", "full attention in the first " + std::to_string(first_windowed) +
                                    " layers and windows after them is not modelled (parasim windows every layer, or all but every n-th)");
  m["sliding_window"] = window;
}

// Qwen2/3-MoE's decoder_sparse_step (experts in every n-th layer) and mlp_only_layers (dense
// layers), as parasim's moe.interval and moe.first_dense_layers.
void read_moe_layers(const JsonObject& o, std::int64_t layers, Json& moe) {
  const std::int64_t step = o.integer("decoder_sparse_step", 1, layers, 1);
  if (step > 1) moe["interval"] = step;
  const std::vector<std::int64_t> dense = o.has("mlp_only_layers") ? o.int_list("mlp_only_layers", 0, layers - 1) : std::vector<std::int64_t>{};
  for (size_t i = 0; i < dense.size(); ++i)
    if (dense[i] != static_cast<std::int64_t>(i) || step > 1)
      o.fail("mlp_only_layers", "only dense first layers (0, 1, ..., n-1) with experts in every layer after them are modelled");
  if (static_cast<std::int64_t>(dense.size()) == layers) moe = nullptr;  // every layer dense: no experts
  else if (!dense.empty()) moe["first_dense_layers"] = static_cast<std::int64_t>(dense.size());
}

Json llama_like(const JsonObject& o, const std::string& type) {
  const std::int64_t heads = o.integer("num_attention_heads", 1, kBig);
  const std::int64_t layers = o.integer("num_hidden_layers", 1, kBig);
  Json m = {{"layers", layers},
            {"hidden", o.integer("hidden_size", 1, kBig)},
            {"heads", heads},
            {"kv_heads", o.integer("num_key_value_heads", 1, heads, heads)},
            {"ffn_hidden", o.integer("intermediate_size", 1, kBig)},
            {"vocab", o.integer("vocab_size", 1, kBig)},
            {"activation", name_of(Activation::SwiGlu)},
            {"tied_embeddings", o.boolean("tie_word_embeddings", false)},
            {"position_embedding", name_of(PositionEmbedding::Rope)},
            {"norm", name_of(NormKind::RmsNorm)},
            {"bias", o.boolean("attention_bias", false)},
            {"dropout", false}};
  o.integer("max_position_embeddings", 1, kBig, 0);  // the model's context, not its cost
  if (o.has("head_dim")) m["head_dim"] = o.integer("head_dim", 1, kBig);
  if (o.str("hidden_act", "silu") != "silu") o.fail("hidden_act", "only SiLU-gated (SwiGLU) MLPs are read");
  const std::int64_t experts = o.has("num_local_experts") ? o.integer("num_local_experts", 0, 1 << 20) : o.integer("num_experts", 0, 1 << 20, 0);
  if (experts > 0) {
    const char* top_k = o.has("num_experts_per_tok") || !o.has("experts_per_token") ? "num_experts_per_tok" : "experts_per_token";
    m["moe"] = {{"experts", experts}, {"top_k", o.integer(top_k, 1, experts)},
                {"expert_ffn_hidden", o.integer("moe_intermediate_size", 1, kBig, m["ffn_hidden"].get<std::int64_t>())}};
    if (const std::int64_t shared = o.integer("shared_expert_intermediate_size", 0, kBig, 0); shared > 0) m["moe"]["shared_expert_ffn_hidden"] = shared;
    read_moe_layers(o, layers, m["moe"]);
    if (m["moe"].is_null()) m.erase("moe");
  }
  if (type == "qwen3" || type == "qwen3_moe") m["qk_norm"] = true;
  // GPT-OSS clamps its experts' gated activation (GptOssConfig's swiglu_limit, default 7.0); read
  // (and kept) only where some layer has experts, the one place parasim prices it.
  if (type == "gpt_oss") {
    const double limit = o.number("swiglu_limit", 0, 1e30, 7.0);
    if (m.contains("moe")) m["activation_clamp"] = limit;
  }
  if (const auto r = o.object_opt("rope_scaling")) {
    const std::string rope = r->has("rope_type") ? r->str("rope_type") : r->str("type", "");
    if (rope == "yarn") m["rope_scaling"] = "yarn";
  }
  read_window(o, type, layers, m);
  return m;
}

Json gpt2(const JsonObject& o) {
  const std::int64_t h = o.integer("n_embd", 1, kBig);
  const std::int64_t heads = o.integer("n_head", 1, kBig);
  o.str("activation_function", "gelu_new");  // a GELU of either form costs the same
  return {{"layers", o.integer("n_layer", 1, kBig)}, {"hidden", h}, {"heads", heads}, {"kv_heads", heads},
          {"ffn_hidden", o.integer("n_inner", 1, kBig, 4 * h)}, {"vocab", o.integer("vocab_size", 1, kBig)},
          {"activation", name_of(Activation::Gelu)}, {"tied_embeddings", o.boolean("tie_word_embeddings", true)},
          {"position_embedding", name_of(PositionEmbedding::Learned)}, {"max_positions", o.integer("n_positions", 1, kBig)},
          {"norm", name_of(NormKind::LayerNorm)}, {"bias", true}, {"dropout", o.number("resid_pdrop", 0, 1, 0.1) > 0}};
}

}  // namespace

ImportResult import_hf_config(const Json& config, const std::string& file) {
  if (!config.is_object()) throw ConfigError(file + ": expected a Hugging Face config object");
  const Json c = without_nulls(config);
  const JsonObject o(c, file, "");
  const std::string type = o.str("model_type", "");
  Json m;
  const std::set<std::string>* read = &kGpt2Keys;
  if (kLlamaLike.count(type)) m = llama_like(o, type), read = &kLlamaKeys;
  else if (type == "gpt2") m = gpt2(o);
  else o.fail("model_type", "\"" + type + "\" is not read (llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe, gpt_oss, gpt2)");
  ImportResult r;
  r.scenario = {{"schema", "parasim.model/1"}, {"name", std::filesystem::path(file).parent_path().filename().string()}};
  if (r.scenario["name"] == "") r.scenario["name"] = std::filesystem::path(file).stem().string();
  r.scenario.update(m);
  r.scenario["source"] = "Hugging Face config.json (" + std::filesystem::path(file).filename().string() + "), read by parasim import hf-config";
  for (const auto& [k, v] : config.items())
    if (!read->count(k) && !kHfNoEffect.count(k) && !v.is_null()) r.unmapped.push_back(k);
  return r;
}

}  // namespace parasim
