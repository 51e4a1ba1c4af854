// Transformer model description (zoo JSON or inline in a scenario) and its parameter count.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/json_reader.h"

namespace parasim {

// Mixture of experts: every transformer layer's MLP is `experts` expert MLPs of expert_ffn_hidden
// and a router (a hidden x experts linear layer) that sends each token to top_k of them. Routing
// is taken as balanced (every expert gets tokens * top_k / experts), as the published MoE
// benchmarks force it (Megatron-Bridge's moe_router_force_load_balancing, AutoModel's fake
// balanced gate). Shared experts and dense layers between MoE layers are not modelled.
struct MoeSpec {
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t expert_ffn_hidden = 0;
};

struct ModelSpec {
  std::string name;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t ffn_hidden = 0;
  std::int64_t vocab = 0;
  std::string activation = "gelu";        // "gelu" | "swiglu"
  bool tied_embeddings = false;
  std::string position_embedding = "rope";  // "learned" | "rope" | "alibi"
  std::int64_t max_positions = 0;          // learned position table size
  std::string norm = "layernorm";          // "layernorm" | "rmsnorm"
  bool bias = true;
  bool dropout = false;
  // Per-head RMSNorm of the queries and keys after their projection (Qwen3, OLMo 2, Gemma 3).
  bool qk_norm = false;
  // Width of one attention head when it is not hidden / heads (Qwen3: 128 with hidden 2048 and 32
  // heads, so the query projection is 4096 wide); 0 = hidden / heads.
  std::int64_t head_dim_override = 0;
  std::optional<MoeSpec> moe;
  double published_params = 0;  // from the source, for tests; 0 if unknown
  double published_active_params = 0;  // MoE: parameters per token, from the source; 0 if unknown
  double published_params_rounding = 0;  // the published figure was rounded to this (e.g. 0.1B)
  std::string source;

  std::int64_t head_dim() const { return head_dim_override > 0 ? head_dim_override : hidden / heads; }
  std::int64_t q_dim() const { return heads * head_dim(); }  // query projection width (= hidden by default)
  std::int64_t kv_dim() const { return kv_heads * head_dim(); }
};

// Parameters of the pieces, whole model (not sharded).
struct ParamCount {
  double per_layer = 0;   // one transformer layer
  double embedding = 0;   // token (+ learned position) embedding
  double head = 0;        // output projection (0 when tied) + final norm
  double total(std::int64_t layers) const { return per_layer * static_cast<double>(layers) + embedding + head; }
};
ParamCount count_params(const ModelSpec& m);
// The experts' parameters of one MoE layer (all experts' MLP weights and biases; not the router),
// 0 for a dense model: the part expert parallelism splits over ep ranks.
double expert_params_per_layer(const ModelSpec& m);
// Parameters one token passes through: all of a dense model; of an MoE model, top_k of its experts.
double active_params(const ModelSpec& m);
// The parameter tensors of one transformer layer in Megatron's module layout, in forward order:
// each norm's gain (and bias), fused QKV weight (and bias), attention projection, MLP input
// (fused gate+up with SwiGLU; with MoE the router, then each expert's) and output weights (and
// biases). Element counts; they sum to count_params(m).per_layer. Frameworks that gather or
// reduce parameters tensor by tensor (DeepSpeed 0.3's ZeRO-3) issue one collective per entry.
std::vector<double> layer_tensor_params(const ModelSpec& m);

// Decodes a model object (zoo file or inline). Throws ConfigError / ModelError with the path.
ModelSpec parse_model(const JsonObject& o);
// Loads models/<name>.json from the data directory. Unknown names list the zoo.
ModelSpec load_zoo_model(const std::string& data_dir, const std::string& name, const std::string& where);
std::vector<std::string> zoo_model_names(const std::string& data_dir);

}  // namespace parasim
