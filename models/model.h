// Transformer model description (zoo JSON or inline in a scenario) and its parameter count.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/json_reader.h"
#include "sim/core/choice.h"

namespace parasim {

// Mixture of experts: an MoE layer's MLP is `experts` expert MLPs of expert_ffn_hidden and a
// router (a hidden x experts linear layer) that sends each token to top_k of them, plus, where the
// model has them, shared experts every token passes through (one MLP of shared_expert_ffn_hidden,
// all shared experts together, as Megatron-Core's moe_shared_expert_intermediate_size). How tokens
// are routed (random as the benchmarks force balance, a measured busiest expert, capacity and
// padding) is the training's, not the model's: sim/parallel/moe_routing.h.
// Which layers are MoE: the first first_dense_layers layers have a dense MLP of the model's
// ffn_hidden (DeepSeek-V3's first_k_dense_replace 3); of the rest, every interval-th one is MoE
// (layer i with (i - first_dense_layers + 1) % interval == 0; Llama 4 Maverick's
// interleave_moe_layer_step 2), the others dense. In a hybrid model the pattern's 'E' layers are
// the MoE ones (Nemotron 3 Nano), and neither of the two is given.
struct MoeSpec {
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t expert_ffn_hidden = 0;
  std::int64_t shared_expert_ffn_hidden = 0;
  std::int64_t first_dense_layers = 0;
  std::int64_t interval = 1;
};

// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): queries through a low-rank bottleneck
// (hidden -> q_lora_rank, RMSNorm, -> heads x (qk_nope + qk_rope); q_lora_rank 0: one hidden ->
// heads x (qk_nope + qk_rope) projection), keys and values through a shared latent (hidden ->
// kv_lora_rank + qk_rope, RMSNorm on the kv_lora_rank part, -> heads x (qk_nope + v)); the rotary
// part of the key (qk_rope wide) is shared by all heads. Attention scores are qk_nope + qk_rope
// wide, values v_head_dim wide; the output projection is heads x v_head_dim -> hidden.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

// Mamba-2 mixer (Dao & Gu 2024, "Transformers are SSMs", arXiv 2405.21060, section 7; Megatron-Core
// megatron/core/ssm/mamba_mixer.py): in_proj maps hidden to z, x (d_inner = heads x head_dim each),
// B, C (groups x state each) and dt (one per head); a causal depthwise conv1d of conv_kernel taps
// over x, B, C; the SSD chunked scan (chunks of `chunk` tokens) with a state of heads x head_dim x
// state per sequence; a gated RMSNorm over d_inner; out_proj maps d_inner back to hidden. Tensor
// parallelism splits heads and groups (Megatron asserts both divisible by tp).
struct MambaSpec {
  std::int64_t heads = 0;        // Megatron --mamba-num-heads; HF mamba_num_heads
  std::int64_t head_dim = 64;    // Megatron --mamba-head-dim; HF mamba_head_dim
  std::int64_t state = 128;      // Megatron --mamba-state-dim; HF ssm_state_size
  std::int64_t groups = 8;       // Megatron --mamba-num-groups; HF n_groups
  std::int64_t conv_kernel = 4;  // d_conv; HF conv_kernel
  std::int64_t chunk = 128;      // SSD chunk size; HF chunk_size
  std::int64_t d_inner() const { return heads * head_dim; }
  // in_proj output width: z, x, B, C, dt (mamba_mixer.py: d_inner * 2 + 2 * ngroups * d_state + nheads).
  std::int64_t in_proj_width() const { return 2 * d_inner() + 2 * groups * state + heads; }
  // Channels of the depthwise convolution: x, B, C.
  std::int64_t conv_dim() const { return d_inner() + 2 * groups * state; }
};

// What a layer holds: a transformer layer (attention, then the MLP), or one block of a hybrid
// model's pattern, each with its own pre-norm and residual (Megatron-Core's hybrid layer
// allocation, megatron/core/models/hybrid/hybrid_layer_allocation.py: 'M' a Mamba-2 mixer, '*'
// self-attention, '-' an MLP, 'E' an MLP with experts: LayerType::Mlp with LayerKind::moe).
enum class LayerType : std::uint8_t { Transformer, Mamba, Attention, Mlp };

// What one layer is, for models whose layers are not all alike: a dense or an MoE MLP, full or
// sliding-window attention, and its type in a hybrid model.
struct LayerKind {
  bool moe = false;
  bool windowed = false;
  LayerType type = LayerType::Transformer;
  bool has_attention() const { return type == LayerType::Transformer || type == LayerType::Attention; }
  bool has_mlp() const { return type == LayerType::Transformer || type == LayerType::Mlp; }
  bool operator==(const LayerKind&) const = default;
};
// The hybrid pattern symbol of a layer kind ('\0' for a transformer layer; 'E' for an MLP layer with
// experts), and the type of a symbol (nullopt for a symbol parasim does not model).
char layer_symbol(const LayerKind& k);
std::optional<LayerType> layer_type_of_symbol(char c);

// model.activation, model.position_embedding and model.norm, parsed once into these (their
// registries below: names, descriptions and sources).
enum class Activation : std::uint8_t { Gelu, SwiGlu, SquaredRelu };
enum class PositionEmbedding : std::uint8_t { Learned, Rope, Alibi, None };
enum class NormKind : std::uint8_t { LayerNorm, RmsNorm };
const ChoiceRegistry<Activation>& activations();
const ChoiceRegistry<PositionEmbedding>& position_embeddings();
const ChoiceRegistry<NormKind>& norm_kinds();
std::string name_of(Activation v);
std::string name_of(PositionEmbedding v);
std::string name_of(NormKind v);

struct ModelSpec {
  std::string name;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t ffn_hidden = 0;
  std::int64_t vocab = 0;
  Activation activation = Activation::Gelu;
  bool tied_embeddings = false;
  PositionEmbedding position_embedding = PositionEmbedding::Rope;
  std::int64_t max_positions = 0;  // learned position table size
  NormKind norm = NormKind::LayerNorm;
  bool bias = true;
  bool dropout = false;
  // Per-head RMSNorm of the queries and keys after their projection (Qwen3, OLMo 2, Gemma 3).
  bool qk_norm = false;
  // RoPE with YaRN scaling (model.rope_scaling "yarn"; GPT-OSS: factor 32): Megatron's position
  // embedding type "yarn", which its RoPE fusion does not take, so a scenario that fuses RoPE runs
  // Megatron-Core's unfused one for such a model (RopeImpl::Unfused, rope_impl()).
  bool rope_yarn = false;
  // Width of one attention head when it is not hidden / heads (Qwen3: 128 with hidden 2048 and 32
  // heads, so the query projection is 4096 wide); 0 = hidden / heads.
  std::int64_t head_dim_override = 0;
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;
  // Sliding-window attention: in windowed layers each query attends to the sliding_window keys
  // up to and including its own position (Mistral, Gemma 3, GPT-OSS). full_attention_interval n > 0:
  // layer i attends fully when (i + 1) % n == 0 (GPT-OSS: 2, sliding first; Gemma 3: 6), the
  // others are windowed; 0: every layer is windowed. sliding_window 0: no layer is.
  std::int64_t sliding_window = 0;
  std::int64_t full_attention_interval = 0;
  // A gated activation whose two inputs are clamped first (GPT-OSS: the gate at most 7, the linear
  // input within +-7; HF `swiglu_limit`, Megatron `activation_func_clamp_value`); 0: none.
  double activation_clamp = 0;
  // Hybrid models: one symbol per layer (LayerType: 'M' Mamba-2, '*' attention, '-' MLP, 'E' MoE;
  // Megatron's --hybrid-layer-pattern, formerly --hybrid-override-pattern, HF
  // hybrid_override_pattern); empty: every layer is a transformer layer.
  std::string hybrid_pattern;
  std::optional<MambaSpec> mamba;  // the Mamba-2 layers' mixer (needed when the pattern has 'M')
  double published_params = 0;  // from the source, for tests; 0 if unknown
  double published_active_params = 0;  // MoE: parameters per token, from the source; 0 if unknown
  double published_params_rounding = 0;  // the published figure was rounded to this (e.g. 0.1B)
  std::string source;

  std::int64_t head_dim() const { return head_dim_override > 0 ? head_dim_override : hidden / heads; }
  // Width of a query / key head in the scores and of a value head (MLA: qk_nope + qk_rope and
  // v_head_dim; otherwise both head_dim()).
  std::int64_t qk_head_dim() const { return mla ? mla->qk_nope_head_dim + mla->qk_rope_head_dim : head_dim(); }
  std::int64_t v_head_dim() const { return mla ? mla->v_head_dim : head_dim(); }
  std::int64_t q_dim() const { return heads * qk_head_dim(); }  // query projection width (= hidden by default)
  std::int64_t kv_dim() const { return kv_heads * head_dim(); }
  std::int64_t attn_out_dim() const { return heads * v_head_dim(); }  // attention output (projection input) width

  // Layer i's kind, and a copy of this model whose every layer is of kind k (what the per-layer
  // formulas and the layer graph take). uniform(): all layers are of one kind.
  LayerKind layer_kind(std::int64_t i) const;
  ModelSpec of_kind(const LayerKind& k) const;
  bool uniform() const;
  // The distinct kinds, in order of first appearance, and each layer's index into them.
  std::vector<LayerKind> kinds() const;
  std::vector<std::int32_t> kind_of_layers() const;
};

// Parameters of the pieces, whole model (not sharded).
struct ParamCount {
  double per_layer = 0;   // one transformer layer (the mean over the layers when they differ)
  double layers = 0;      // all transformer layers
  double embedding = 0;   // token (+ learned position) embedding
  double head = 0;        // output projection (0 when tied) + final norm
  double total() const { return layers + embedding + head; }
};
ParamCount count_params(const ModelSpec& m);
// Parameters of layer i.
double layer_params(const ModelSpec& m, std::int64_t i);
// The routed experts' parameters of layer i (all experts' MLP weights and biases; not the router
// nor the shared experts), 0 for a dense layer: the part expert parallelism splits over ep ranks.
double expert_params(const ModelSpec& m, std::int64_t i);
// The same of one layer of a uniform model (its every layer's).
double expert_params_per_layer(const ModelSpec& m);
// Parameters one token passes through: all of a dense model; of an MoE model, top_k of its routed
// experts in each MoE layer.
double active_params(const ModelSpec& m);
// The parameter tensors of one transformer layer in Megatron's module layout, in forward order:
// each norm's gain (and bias), fused QKV weight (and bias), attention projection, MLP input
// (fused gate+up with SwiGLU; with MoE the router, then each expert's) and output weights (and
// biases). Element counts; they sum to layer_params(m, i). Frameworks that gather or reduce
// parameters tensor by tensor (DeepSpeed 0.3's ZeRO-3) issue one collective per entry.
std::vector<double> layer_tensor_params(const ModelSpec& m, std::int64_t i);

// Decodes a model object (zoo file or inline). Throws ConfigError / ModelError with the path.
ModelSpec parse_model(const JsonObject& o);
// Loads models/<name>.json from the data directory. Unknown names list the zoo.
ModelSpec load_zoo_model(const std::string& data_dir, const std::string& name, const std::string& where);
std::vector<std::string> zoo_model_names(const std::string& data_dir);

}  // namespace parasim
