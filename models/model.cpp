#include "models/model.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "sim/core/registry.h"

namespace parasim {

namespace {
double mlp_params(const ModelSpec& m, double ff) {
  const double h = static_cast<double>(m.hidden);
  const double bias = m.bias ? 1.0 : 0.0;
  return m.activation == Activation::SwiGlu ? 3 * h * ff + bias * (2 * ff + h) : 2 * h * ff + bias * (ff + h);
}
}  // namespace

namespace {
// Megatron-Core's layer symbols (hybrid_layer_allocation.py Symbols) that parasim models: a Mamba-2
// mixer, self-attention, a dense MLP and a mixture-of-experts MLP, each one layer with its norm.
struct LayerSymbol {
  char symbol;
  LayerType type;
  bool moe;
};
constexpr LayerSymbol kLayerSymbols[] = {
    {'M', LayerType::Mamba, false}, {'*', LayerType::Attention, false}, {'-', LayerType::Mlp, false}, {'E', LayerType::Mlp, true}};

const LayerSymbol* symbol_of(char c) {
  for (const LayerSymbol& s : kLayerSymbols)
    if (s.symbol == c) return &s;
  return nullptr;
}
}  // namespace

char layer_symbol(const LayerKind& k) {
  for (const LayerSymbol& s : kLayerSymbols)
    if (s.type == k.type && (s.type != LayerType::Mlp || s.moe == k.moe)) return s.symbol;
  return '\0';
}

std::optional<LayerType> layer_type_of_symbol(char c) {
  const LayerSymbol* s = symbol_of(c);
  return s ? std::optional<LayerType>(s->type) : std::nullopt;
}

LayerKind ModelSpec::layer_kind(std::int64_t i) const {
  LayerKind k;
  // parse_model refuses a pattern that is not one known symbol per layer.
  // A hybrid pattern names each layer's experts too ('E'); otherwise first_dense_layers and interval.
  if (i >= 0 && static_cast<size_t>(i) < hybrid_pattern.size()) {
    if (const LayerSymbol* s = symbol_of(hybrid_pattern[static_cast<size_t>(i)])) {
      k.type = s->type;
      k.moe = s->moe && moe.has_value();
    }
  } else if (moe && i >= moe->first_dense_layers) {
    k.moe = (i - moe->first_dense_layers + 1) % moe->interval == 0;
  }
  if (sliding_window > 0 && k.has_attention()) k.windowed = full_attention_interval == 0 || (i + 1) % full_attention_interval != 0;
  return k;
}

ModelSpec ModelSpec::of_kind(const LayerKind& k) const {
  ModelSpec m = *this;
  if (!k.moe) m.moe.reset();
  if (m.moe) {
    m.moe->first_dense_layers = 0;
    m.moe->interval = 1;
  }
  if (!k.windowed) m.sliding_window = 0;
  m.full_attention_interval = 0;
  // Every layer of the copy is of type k.type: a hybrid pattern of that one symbol.
  m.hybrid_pattern = k.type == LayerType::Transformer ? "" : std::string(static_cast<size_t>(m.layers), layer_symbol(k));
  return m;
}

std::vector<LayerKind> ModelSpec::kinds() const {
  // Every layer alike (no hybrid pattern, experts in every layer or none, sliding windows on every
  // layer or none): one kind, without walking the layers (a plan asks for it per stage).
  const bool same_ffn = !moe || (moe->first_dense_layers == 0 && moe->interval == 1);
  if (layers > 0 && hybrid_pattern.empty() && same_ffn && (sliding_window <= 0 || full_attention_interval == 0)) return {layer_kind(0)};
  std::vector<LayerKind> out;
  for (std::int64_t i = 0; i < layers; ++i)
    if (std::find(out.begin(), out.end(), layer_kind(i)) == out.end()) out.push_back(layer_kind(i));
  return out;
}

std::vector<std::int32_t> ModelSpec::kind_of_layers() const {
  const std::vector<LayerKind> ks = kinds();
  std::vector<std::int32_t> out(static_cast<size_t>(layers));
  for (std::int64_t i = 0; i < layers; ++i)
    out[static_cast<size_t>(i)] = static_cast<std::int32_t>(std::find(ks.begin(), ks.end(), layer_kind(i)) - ks.begin());
  return out;
}

bool ModelSpec::uniform() const { return kinds().size() <= 1; }

namespace {
// Attention parameters of one layer: the QKV (or MLA's down and up) projections, their norms, the
// output projection.
double attention_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  const double bias = m.bias ? 1.0 : 0.0;
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    const double heads = static_cast<double>(m.heads), qk = static_cast<double>(m.qk_head_dim());
    const double ql = static_cast<double>(a.q_lora_rank), kvl = static_cast<double>(a.kv_lora_rank);
    const double rope = static_cast<double>(a.qk_rope_head_dim), nope = static_cast<double>(a.qk_nope_head_dim);
    const double q = a.q_lora_rank > 0 ? h * ql + ql + ql * heads * qk : h * heads * qk;  // down, its norm, up
    const double kv = h * (kvl + rope) + kvl + kvl * heads * (nope + static_cast<double>(a.v_head_dim));
    return q + kv + static_cast<double>(m.attn_out_dim()) * h;
  }
  const double q = static_cast<double>(m.q_dim());
  const double kv = static_cast<double>(m.kv_dim());
  const double qk_norm = m.qk_norm ? 2.0 * static_cast<double>(m.head_dim()) : 0.0;  // one gain per head dim, q and k
  return h * (q + 2 * kv) + q * h + bias * (q + 2 * kv + h) + qk_norm;
}

// The parameter tensors of a Mamba-2 mixer (Megatron-Core mamba_mixer.py, as Nemotron-H configures
// it: no linear biases, a conv1d bias, D one per head), in forward order: in_proj (hidden x
// in_proj_width), conv1d weight (conv_dim x conv_kernel) and bias (conv_dim), dt_bias, A_log and D
// (one per head each), the gated RMSNorm's gain (d_inner), out_proj (d_inner x hidden).
std::vector<double> mamba_tensor_params(const ModelSpec& m) {
  const MambaSpec& s = *m.mamba;
  const double h = static_cast<double>(m.hidden), heads = static_cast<double>(s.heads), conv = static_cast<double>(s.conv_dim());
  const double di = static_cast<double>(s.d_inner());
  return {h * static_cast<double>(s.in_proj_width()), conv * static_cast<double>(s.conv_kernel), conv, heads, heads, heads, di, di * h};
}

// Parameters of one layer of a uniform model: its blocks and one norm (gain, + bias for LayerNorm)
// before each.
double uniform_layer_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  const double norm = m.norm == NormKind::LayerNorm ? 2.0 * h : h;
  const LayerKind k = m.layer_kind(0);
  if (k.type == LayerType::Mamba) {
    double p = norm;
    for (const double t : mamba_tensor_params(m)) p += t;
    return p;
  }
  // MoE: the routed experts, the shared experts and the router (hidden x experts, no bias).
  double mlp_p = mlp_params(m, static_cast<double>(m.ffn_hidden));
  if (m.moe) {
    const double shared = static_cast<double>(m.moe->shared_expert_ffn_hidden);
    mlp_p = expert_params_per_layer(m) + (shared > 0 ? mlp_params(m, shared) : 0.0) + h * static_cast<double>(m.moe->experts);
  }
  return (k.has_attention() ? attention_params(m) + norm : 0.0) + (k.has_mlp() ? mlp_p + norm : 0.0);
}
}  // namespace

double expert_params_per_layer(const ModelSpec& m) {
  return m.moe ? static_cast<double>(m.moe->experts) * mlp_params(m, static_cast<double>(m.moe->expert_ffn_hidden)) : 0.0;
}

double expert_params(const ModelSpec& m, std::int64_t i) { return expert_params_per_layer(m.of_kind(m.layer_kind(i))); }

double layer_params(const ModelSpec& m, std::int64_t i) { return uniform_layer_params(m.of_kind(m.layer_kind(i))); }

double active_params(const ModelSpec& m) {
  double total = count_params(m).total();
  if (!m.moe) return total;
  const double idle = 1.0 - static_cast<double>(m.moe->top_k) / static_cast<double>(m.moe->experts);
  for (std::int64_t i = 0; i < m.layers; ++i) total -= expert_params(m, i) * idle;
  return total;
}

ParamCount count_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  const double norm = m.norm == NormKind::LayerNorm ? 2.0 * h : h;
  ParamCount c;
  const std::vector<LayerKind> ks = m.kinds();
  if (ks.size() <= 1) {
    c.per_layer = uniform_layer_params(m.of_kind(ks.empty() ? LayerKind{} : ks.front()));
    c.layers = c.per_layer * static_cast<double>(m.layers);
  } else {
    std::vector<double> per_kind;
    for (const LayerKind& k : ks) per_kind.push_back(uniform_layer_params(m.of_kind(k)));
    for (const std::int32_t k : m.kind_of_layers()) c.layers += per_kind[static_cast<size_t>(k)];
    c.per_layer = c.layers / static_cast<double>(m.layers);
  }
  c.embedding = static_cast<double>(m.vocab) * h +
                (m.position_embedding == PositionEmbedding::Learned ? static_cast<double>(m.max_positions) * h : 0.0);
  c.head = norm + (m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h);
  return c;
}

std::vector<double> layer_tensor_params(const ModelSpec& model, std::int64_t i) {
  const ModelSpec m = model.of_kind(model.layer_kind(i));
  const double h = static_cast<double>(m.hidden);
  const double q = static_cast<double>(m.q_dim());
  const double kv = static_cast<double>(m.kv_dim());
  const bool glu = m.activation == Activation::SwiGlu;
  std::vector<double> t;
  auto norm = [&] {
    t.push_back(h);
    if (m.norm == NormKind::LayerNorm) t.push_back(h);
  };
  auto linear = [&](double in, double out) {
    t.push_back(in * out);
    if (m.bias) t.push_back(out);
  };
  auto mlp = [&](double ff) {
    linear(h, (glu ? 2 : 1) * ff);
    linear(ff, h);
  };
  const LayerKind k = m.layer_kind(0);
  norm();
  if (k.type == LayerType::Mamba) {
    const std::vector<double> mixer = mamba_tensor_params(m);
    t.insert(t.end(), mixer.begin(), mixer.end());
    return t;
  }
  // The MLP block: a router, the experts and the shared experts, or one dense MLP.
  auto mlp_block = [&] {
    if (!m.moe) return mlp(static_cast<double>(m.ffn_hidden));
    t.push_back(h * static_cast<double>(m.moe->experts));  // router
    for (std::int64_t e = 0; e < m.moe->experts; ++e) mlp(static_cast<double>(m.moe->expert_ffn_hidden));
    if (m.moe->shared_expert_ffn_hidden > 0) mlp(static_cast<double>(m.moe->shared_expert_ffn_hidden));
  };
  if (!k.has_attention()) {
    mlp_block();  // a hybrid model's MLP layer ('-') or MoE layer ('E')
    return t;
  }
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    const double heads = static_cast<double>(m.heads);
    if (a.q_lora_rank > 0) {
      t.push_back(h * static_cast<double>(a.q_lora_rank));
      t.push_back(static_cast<double>(a.q_lora_rank));
      t.push_back(static_cast<double>(a.q_lora_rank) * q);
    } else {
      t.push_back(h * q);
    }
    t.push_back(h * static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim));
    t.push_back(static_cast<double>(a.kv_lora_rank));
    t.push_back(static_cast<double>(a.kv_lora_rank) * heads * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim));
    t.push_back(static_cast<double>(m.attn_out_dim()) * h);
  } else {
    linear(h, q + 2 * kv);
    if (m.qk_norm) {
      t.push_back(static_cast<double>(m.head_dim()));
      t.push_back(static_cast<double>(m.head_dim()));
    }
    linear(q, h);
  }
  if (!k.has_mlp()) return t;
  norm();
  mlp_block();
  return t;
}

namespace {
// A hybrid pattern: one known symbol per layer, Mamba-2 layers only with a mamba mixer and a mamba
// mixer only with Mamba-2 layers, MoE layers ('E') only with moe and moe only with MoE layers (the
// pattern places them: parse_model refuses first_dense_layers and interval); MLA layers are not
// modelled in hybrid models.
void check_hybrid(const JsonObject& o, const ModelSpec& m) {
  const std::string& p = m.hybrid_pattern;
  if (p.empty() && o.has("hybrid_pattern")) o.fail("hybrid_pattern", "is empty: give one symbol per layer, or leave it out");
  if (p.empty()) {
    if (m.mamba) o.fail("mamba", "a Mamba-2 mixer needs hybrid_pattern to say which layers are Mamba-2 ('M')");
    return;
  }
  if (p.find_first_of("|/") != std::string::npos)
    o.fail("hybrid_pattern", "pipeline-stage boundaries ('|') and MTP patterns ('/') in the pattern are not modelled: give the "
                             "decoder layers' symbols only (parallel.stage_layers sets the stages)");
  // Each symbol is one character; a character outside ASCII (several UTF-8 bytes) is named whole, at
  // the layer it stands for, before the count (which would count its bytes).
  std::int64_t layer = 0;
  for (size_t i = 0; i < p.size(); ++layer) {
    size_t len = 1;
    while (i + len < p.size() && (static_cast<unsigned char>(p[i + len]) & 0xC0) == 0x80) ++len;
    if (len > 1 || !layer_type_of_symbol(p[i])) {
      std::string shown = p.substr(i, len);  // a control character (tab, newline) shown as its \xNN escape
      if (len == 1 && static_cast<unsigned char>(p[i]) < 0x20) {
        static constexpr char kHex[] = "0123456789abcdef";
        shown = std::string("\\x") + kHex[static_cast<unsigned char>(p[i]) >> 4] + kHex[p[i] & 0xF];
      }
      o.fail("hybrid_pattern", "symbol '" + shown + "' at layer " + std::to_string(layer) +
                                   " is not modelled: 'M' Mamba-2, '*' attention, '-' MLP, 'E' mixture of experts (Megatron-Core's symbols)");
    }
    i += len;
  }
  if (static_cast<std::int64_t>(p.size()) != m.layers)
    o.fail("hybrid_pattern", "has " + std::to_string(p.size()) + " symbols for " + std::to_string(m.layers) + " layers (one per layer)");
  if (p.find('M') != std::string::npos && !m.mamba) o.fail("mamba", "hybrid_pattern has Mamba-2 layers ('M'): give the mamba mixer");
  if (p.find('M') == std::string::npos && m.mamba) o.fail("mamba", "hybrid_pattern has no Mamba-2 layer ('M')");
  if (p.find('E') != std::string::npos && !m.moe) o.fail("moe", "hybrid_pattern has mixture-of-experts layers ('E'): give the experts (moe)");
  if (p.find('E') == std::string::npos && m.moe) o.fail("moe", "hybrid_pattern has no mixture-of-experts layer ('E')");
  if (m.mla) o.fail("mla", "multi-head latent attention in a hybrid model is not modelled");
}
}  // namespace

const ChoiceRegistry<Activation>& activations() {
  static const ChoiceRegistry<Activation> registry("activation", {
    {"gelu", "GeLU between two matrices (h -> ffn -> h)", "Hendrycks and Gimpel 2016; GPT-2/3, BLOOM, MPT", {Activation::Gelu}},
    {"swiglu", "SwiGLU: a gated unit over three matrices (gate and up h -> ffn, down ffn -> h)",
     "Shazeer 2020, 'GLU Variants Improve Transformer'; Llama, Qwen, Mistral", {Activation::SwiGlu}},
    {"squared_relu", "squared ReLU between two matrices", "So et al. 2021 (Primer); Nemotron-H", {Activation::SquaredRelu}}});
  return registry;
}

const ChoiceRegistry<PositionEmbedding>& position_embeddings() {
  static const ChoiceRegistry<PositionEmbedding> registry("position embedding", {
    {"learned", "a learned table of max_positions rows added to the token embeddings", "Vaswani et al. 2017; GPT-2/3",
     {PositionEmbedding::Learned}},
    {"rope", "rotary embeddings applied to queries and keys in every attention layer", "Su et al. 2021 (RoFormer); Llama",
     {PositionEmbedding::Rope}},
    {"alibi", "linear biases added to the attention scores inside the attention kernel", "Press et al. 2022; BLOOM, MPT",
     {PositionEmbedding::Alibi}},
    {"none", "no position encoding (Mamba-2 layers carry order in their state)", "Nemotron-H (NVIDIA 2025)", {PositionEmbedding::None}}});
  return registry;
}

const ChoiceRegistry<NormKind>& norm_kinds() {
  static const ChoiceRegistry<NormKind> registry("norm", {
    {"layernorm", "LayerNorm: mean and variance, a scale and a bias (2 x hidden parameters)", "Ba et al. 2016; GPT-3, BLOOM",
     {NormKind::LayerNorm}},
    {"rmsnorm", "RMSNorm: root mean square and a scale (hidden parameters)", "Zhang and Sennrich 2019; Llama", {NormKind::RmsNorm}}});
  return registry;
}

std::string name_of(Activation v) { return name_of(activations(), v); }
std::string name_of(PositionEmbedding v) { return name_of(position_embeddings(), v); }
std::string name_of(NormKind v) { return name_of(norm_kinds(), v); }

namespace {

// model.moe: the experts, and which layers have them.
std::optional<MoeSpec> parse_moe(const JsonObject& o, const ModelSpec& m, std::int64_t big) {
  const auto moe = o.object_opt("moe");
  if (!moe) return std::nullopt;
  MoeSpec s;
  // In a hybrid model the pattern's 'E' layers are the MoE ones.
  for (const char* key : {"first_dense_layers", "interval"})
    if (!m.hybrid_pattern.empty() && moe->has(key))
      moe->fail(key, "with a hybrid_pattern the pattern places the expert layers ('E'): give no first_dense_layers or interval");
  s.experts = moe->integer("experts", 1, 1 << 20);
  s.top_k = moe->integer("top_k", 1, s.experts);
  s.expert_ffn_hidden = moe->integer("expert_ffn_hidden", 1, big);
  s.shared_expert_ffn_hidden = moe->integer("shared_expert_ffn_hidden", 0, big, 0);
  s.first_dense_layers = moe->integer("first_dense_layers", 0, m.layers - 1, 0);
  s.interval = moe->integer("interval", 1, m.layers, 1);
  moe->finish();
  return s;
}

// model.mla: multi-head latent attention's ranks and head widths.
std::optional<MlaSpec> parse_mla(const JsonObject& o, std::int64_t big) {
  const auto mla = o.object_opt("mla");
  if (!mla) return std::nullopt;
  MlaSpec a;
  a.q_lora_rank = mla->integer("q_lora_rank", 0, big, 0);
  a.kv_lora_rank = mla->integer("kv_lora_rank", 1, big);
  a.qk_nope_head_dim = mla->integer("qk_nope_head_dim", 1, big);
  a.qk_rope_head_dim = mla->integer("qk_rope_head_dim", 1, big);
  a.v_head_dim = mla->integer("v_head_dim", 1, big);
  mla->finish();
  return a;
}

// model.mamba: a hybrid model's Mamba-2 mixer.
std::optional<MambaSpec> parse_mamba(const JsonObject& o, std::int64_t big) {
  const auto mamba = o.object_opt("mamba");
  if (!mamba) return std::nullopt;
  MambaSpec s;
  s.heads = mamba->integer("heads", 1, big);
  s.head_dim = mamba->integer("head_dim", 1, big, 64);
  s.state = mamba->integer("state", 1, big, 128);
  s.groups = mamba->integer("groups", 1, big, 8);
  s.conv_kernel = mamba->integer("conv_kernel", 1, 64, 4);
  s.chunk = mamba->integer("chunk", 1, 1 << 20, 128);
  mamba->finish();
  // Megatron-Core mamba_mixer.py: nheads must be divisible by ngroups.
  if (s.heads % s.groups != 0)
    mamba->fail("groups", "mamba heads (" + std::to_string(s.heads) + ") must be divisible by groups (" + std::to_string(s.groups) + ")");
  return s;
}

// What the model's figures must satisfy together, after every key is read.
void check_model(const JsonObject& o, const ModelSpec& m) {
  if (m.head_dim_override == 0 && m.hidden % m.heads != 0)
    o.fail("hidden", "hidden (" + std::to_string(m.hidden) + ") must be divisible by heads (" + std::to_string(m.heads) + "), or give head_dim");
  if (m.mla && m.kv_heads != m.heads)
    o.fail("kv_heads", "multi-head latent attention (mla) gives every head its own key and value: kv_heads must equal heads (" +
                           std::to_string(m.heads) + ")");
  if (m.mla && m.bias) o.fail("bias", "multi-head latent attention (mla) is modelled without biases (DeepSeek-V2/V3, Kimi K2 have none)");
  if (m.mla && (m.qk_norm || m.head_dim_override > 0))
    o.fail(m.qk_norm ? "qk_norm" : "head_dim", "with multi-head latent attention (mla) the head widths come from mla");
  if (m.moe) {
    bool any = false;
    for (std::int64_t i = 0; i < m.layers && !any; ++i) any = m.layer_kind(i).moe;
    if (!any)
      o.fail("moe", "no layer is a mixture-of-experts layer with first_dense_layers " + std::to_string(m.moe->first_dense_layers) +
                        " and interval " + std::to_string(m.moe->interval) + " over " + std::to_string(m.layers) + " layers");
  }
  if (m.full_attention_interval > 0 && m.sliding_window == 0)
    o.fail("full_attention_interval", "needs sliding_window > 0 (the layers between the full-attention ones are windowed)");
  if (m.heads % m.kv_heads != 0)
    o.fail("kv_heads", "heads (" + std::to_string(m.heads) + ") must be divisible by kv_heads (" + std::to_string(m.kv_heads) + ")");
  if (m.rope_yarn && m.position_embedding != PositionEmbedding::Rope)
    o.fail("rope_scaling", "\"yarn\" scales a rotary embedding; position_embedding is \"" + name_of(m.position_embedding) + "\"");
  if (m.position_embedding == PositionEmbedding::Learned && m.max_positions == 0)
    o.fail("max_positions", "learned position embeddings need max_positions > 0");
}

}  // namespace

ModelSpec parse_model(const JsonObject& o) {
  ModelSpec m;
  const std::int64_t big = 1LL << 40;
  m.name = o.str("name");
  m.layers = o.integer("layers", 1, 100000);
  m.hidden = o.integer("hidden", 1, big);
  m.heads = o.integer("heads", 1, big);
  m.kv_heads = o.integer("kv_heads", 1, big, m.heads);
  m.ffn_hidden = o.integer("ffn_hidden", 1, big, 4 * m.hidden);
  m.vocab = o.integer("vocab", 1, big);
  m.activation = parse_enum(o, "activation", activations(), Activation::Gelu);
  m.tied_embeddings = o.boolean("tied_embeddings", false);
  m.position_embedding = parse_enum(o, "position_embedding", position_embeddings(), PositionEmbedding::Rope);
  m.max_positions = o.integer("max_positions", 0, big, 0);
  m.norm = parse_enum(o, "norm", norm_kinds(), NormKind::LayerNorm);
  m.bias = o.boolean("bias", true);
  m.dropout = o.boolean("dropout", false);
  m.qk_norm = o.boolean("qk_norm", false);
  m.rope_yarn = o.choice("rope_scaling", {"none", "yarn"}, "none") == "yarn";
  m.head_dim_override = o.integer("head_dim", 0, big, 0);
  m.hybrid_pattern = o.str("hybrid_pattern", "");
  m.moe = parse_moe(o, m, big);
  m.mla = parse_mla(o, big);
  m.sliding_window = o.integer("sliding_window", 0, big, 0);
  m.full_attention_interval = o.integer("full_attention_interval", 0, m.layers, 0);
  m.activation_clamp = o.number("activation_clamp", 0, 1e30, 0);
  if (m.activation_clamp > 0 && m.activation != Activation::SwiGlu)
    o.fail("activation_clamp", "clamps a gated activation's two inputs; the model's activation is \"" + name_of(m.activation) + "\", not gated");
  if (m.activation_clamp > 0 && !m.moe)
    o.fail("activation_clamp", "is modelled for a mixture-of-experts model's routed experts (GPT-OSS's clamped quick-GEGLU); the model has "
                               "no experts (model.moe)");
  m.mamba = parse_mamba(o, big);
  m.published_params = o.number("published_params", 0, 1e16, 0);
  m.published_params_rounding = o.number("published_params_rounding", 0, 1e16, 0);
  m.published_active_params = o.number("published_active_params", 0, 1e16, 0);
  m.source = o.str("source", "");
  o.finish({"schema", "description"});
  check_hybrid(o, m);
  check_model(o, m);
  return m;
}

std::vector<std::string> zoo_model_names(const std::string& data_dir) { return json_stems(data_dir + "/models"); }

ModelSpec load_zoo_model(const std::string& data_dir, const std::string& name, const std::string& where) {
  const std::string path = data_dir + "/models/" + name + ".json";
  if (name.find('/') != std::string::npos || !std::filesystem::exists(path)) {
    std::error_code ec;
    if (!std::filesystem::is_directory(data_dir + "/models", ec))
      throw ConfigError(where + ": unknown model \"" + name + "\": the model zoo " + data_dir +
                        "/models does not exist (set --data-dir or PARASIM_DATA_DIR to the parasim tree, or give the model inline)");
    const auto names = zoo_model_names(data_dir);
    std::string msg = where + ": unknown model \"" + name + "\"";
    const std::string close = closest_name(name, names);
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    msg += " Zoo: ";
    for (size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : "") + names[i];
    throw ConfigError(msg);
  }
  const Json j = read_json_file(path);
  return parse_model(JsonObject(j, "models/" + name + ".json", ""));
}

}  // namespace parasim
