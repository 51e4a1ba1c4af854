#include "models/recompute.h"

#include <algorithm>
#include <stdexcept>

namespace parasim {

std::vector<std::string> recompute_module_names() {
  std::vector<std::string> names;
  for (const auto& r : kRecomputeModules) names.emplace_back(r.name);
  return names;
}

const char* recompute_module_name(RecomputeModule m) {
  for (const auto& r : kRecomputeModules)
    if (r.module == m) return r.name;
  return "";
}

RecomputeModule recompute_module_from_name(const std::string& name) {
  for (const auto& r : kRecomputeModules)
    if (name == r.name) return r.module;
  throw std::invalid_argument("unknown recompute module \"" + name + "\"");
}

RecomputeModules RecomputeModules::from_names(const std::vector<std::string>& names) {
  RecomputeModules out;
  for (const auto& n : names) out.list_.push_back(recompute_module_from_name(n));
  return out;
}

bool RecomputeModules::has(RecomputeModule m) const { return std::find(list_.begin(), list_.end(), m) != list_.end(); }

RecomputeModules RecomputeModules::without(RecomputeModule m) const {
  RecomputeModules out = *this;
  std::erase(out.list_, m);
  return out;
}

std::vector<std::string> RecomputeModules::names() const {
  std::vector<std::string> out;
  for (RecomputeModule m : list_) out.emplace_back(recompute_module_name(m));
  return out;
}

namespace {
bool module_replays(RecomputeModule r, const Kernel& k, bool fused_attention) {
  using M = LayerModule;
  const M m = k.module;
  switch (r) {
    case RecomputeModule::CoreAttn: return m == M::CoreAttn || (fused_attention && m == M::FusedAttn);
    case RecomputeModule::Layernorm: return m == M::BlockNorm && !k.in_linear;
    case RecomputeModule::MlaUpProj: return m == M::MlaUpProj || m == M::Rope || m == M::MlaQkConcat;
    case RecomputeModule::MoeAct: return m == M::Experts && k.ffn == FfnStep::Activation;
    case RecomputeModule::Mlp: return m == M::Mlp;
    case RecomputeModule::Moe: return m == M::Router || m == M::TokenDispatch || m == M::Experts || m == M::SharedExperts;
    case RecomputeModule::SharedExperts: return m == M::SharedExperts;
  }
  return false;
}
}  // namespace

bool replays(const RecomputeModules& mods, const Kernel& k, bool fused_attention) {
  for (const auto& r : kRecomputeModules)
    if (mods.has(r.module) && module_replays(r.module, k, fused_attention)) return true;
  return false;
}

Block replayed_kernels(const LayerGraph& g, const RecomputeModules& mods, bool fused_attention) {
  // "mla_up_proj" names a module only multi-head latent attention has (Megatron-Core's
  // MLASelfAttention); on any other layer it replays nothing, its RoPE included.
  const bool mla = std::any_of(g.attn_fwd.kernels.begin(), g.attn_fwd.kernels.end(),
                               [](const Kernel& k) { return k.module == LayerModule::MlaUpProj; });
  const RecomputeModules effective = mla ? mods : mods.without(RecomputeModule::MlaUpProj);
  Block out;
  for (const Block* b : {&g.attn_fwd, &g.mlp_fwd})
    for (const Kernel& k : b->kernels)
      if (replays(effective, k, fused_attention)) out.kernels.push_back(k);
  return out;
}

}  // namespace parasim
