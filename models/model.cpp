#include "models/model.h"

#include <algorithm>
#include <filesystem>

#include "sim/core/registry.h"

namespace parasim {

namespace {
double mlp_params(const ModelSpec& m, double ff) {
  const double h = static_cast<double>(m.hidden);
  const double bias = m.bias ? 1.0 : 0.0;
  return m.activation == "swiglu" ? 3 * h * ff + bias * (2 * ff + h) : 2 * h * ff + bias * (ff + h);
}
}  // namespace

double expert_params_per_layer(const ModelSpec& m) {
  return m.moe ? static_cast<double>(m.moe->experts) * mlp_params(m, static_cast<double>(m.moe->expert_ffn_hidden)) : 0.0;
}

double active_params(const ModelSpec& m) {
  const double total = count_params(m).total(m.layers);
  if (!m.moe) return total;
  const double idle = 1.0 - static_cast<double>(m.moe->top_k) / static_cast<double>(m.moe->experts);
  return total - static_cast<double>(m.layers) * expert_params_per_layer(m) * idle;
}

ParamCount count_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  const double q = static_cast<double>(m.q_dim());
  const double kv = static_cast<double>(m.kv_dim());
  const double f = static_cast<double>(m.ffn_hidden);
  const double bias = m.bias ? 1.0 : 0.0;
  const double norm = m.norm == "layernorm" ? 2.0 * h : h;  // gain (+ bias for LayerNorm)
  ParamCount c;
  const double qk_norm = m.qk_norm ? 2.0 * static_cast<double>(m.head_dim()) : 0.0;  // one gain per head dim, q and k
  const double attn = h * (q + 2 * kv) + q * h + bias * (q + 2 * kv + h) + qk_norm;
  // MoE: the experts and the router (hidden x experts, no bias).
  const double mlp_p = m.moe ? expert_params_per_layer(m) + h * static_cast<double>(m.moe->experts) : mlp_params(m, f);
  c.per_layer = attn + mlp_p + 2 * norm;
  c.embedding = static_cast<double>(m.vocab) * h +
                (m.position_embedding == "learned" ? static_cast<double>(m.max_positions) * h : 0.0);
  c.head = norm + (m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h);
  return c;
}

std::vector<double> layer_tensor_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  const double q = static_cast<double>(m.q_dim());
  const double kv = static_cast<double>(m.kv_dim());
  const bool glu = m.activation == "swiglu";
  std::vector<double> t;
  auto norm = [&] {
    t.push_back(h);
    if (m.norm == "layernorm") t.push_back(h);
  };
  auto linear = [&](double in, double out) {
    t.push_back(in * out);
    if (m.bias) t.push_back(out);
  };
  auto mlp = [&](double ff) {
    linear(h, (glu ? 2 : 1) * ff);
    linear(ff, h);
  };
  norm();
  linear(h, q + 2 * kv);
  if (m.qk_norm) {
    t.push_back(static_cast<double>(m.head_dim()));
    t.push_back(static_cast<double>(m.head_dim()));
  }
  linear(q, h);
  norm();
  if (m.moe) {
    t.push_back(h * static_cast<double>(m.moe->experts));  // router
    for (std::int64_t e = 0; e < m.moe->experts; ++e) mlp(static_cast<double>(m.moe->expert_ffn_hidden));
  } else {
    mlp(static_cast<double>(m.ffn_hidden));
  }
  return t;
}

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
  m.activation = o.choice("activation", {"gelu", "swiglu"}, "gelu");
  m.tied_embeddings = o.boolean("tied_embeddings", false);
  m.position_embedding = o.choice("position_embedding", {"learned", "rope", "alibi"}, "rope");
  m.max_positions = o.integer("max_positions", 0, big, 0);
  m.norm = o.choice("norm", {"layernorm", "rmsnorm"}, "layernorm");
  m.bias = o.boolean("bias", true);
  m.dropout = o.boolean("dropout", false);
  m.qk_norm = o.boolean("qk_norm", false);
  m.head_dim_override = o.integer("head_dim", 0, big, 0);
  if (auto moe = o.object_opt("moe")) {
    MoeSpec s;
    s.experts = moe->integer("experts", 1, 1 << 20);
    s.top_k = moe->integer("top_k", 1, s.experts);
    s.expert_ffn_hidden = moe->integer("expert_ffn_hidden", 1, big);
    moe->finish();
    m.moe = s;
  }
  m.published_params = o.number("published_params", 0, 1e16, 0);
  m.published_params_rounding = o.number("published_params_rounding", 0, 1e16, 0);
  m.published_active_params = o.number("published_active_params", 0, 1e16, 0);
  m.source = o.str("source", "");
  o.finish({"schema", "description"});
  if (m.head_dim_override == 0 && m.hidden % m.heads != 0)
    o.fail("hidden", "hidden (" + std::to_string(m.hidden) + ") must be divisible by heads (" + std::to_string(m.heads) + "), or give head_dim");
  if (m.heads % m.kv_heads != 0)
    o.fail("kv_heads", "heads (" + std::to_string(m.heads) + ") must be divisible by kv_heads (" + std::to_string(m.kv_heads) + ")");
  if (m.position_embedding == "learned" && m.max_positions == 0)
    o.fail("max_positions", "learned position embeddings need max_positions > 0");
  return m;
}

std::vector<std::string> zoo_model_names(const std::string& data_dir) { return json_stems(data_dir + "/models"); }

ModelSpec load_zoo_model(const std::string& data_dir, const std::string& name, const std::string& where) {
  const std::string path = data_dir + "/models/" + name + ".json";
  if (name.find('/') != std::string::npos || !std::filesystem::exists(path)) {
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
