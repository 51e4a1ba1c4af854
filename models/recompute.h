// Megatron-Core's selective recompute modules (--recompute-modules): their names, the typed set a
// scenario's parallel.recompute_modules is parsed into once at load, and which forward kernels of
// a layer each module replays before its backward (selected by the kernels' LayerModule tags).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "models/layer_graph.h"

namespace parasim {

enum class RecomputeModule : std::uint8_t { CoreAttn, Layernorm, MlaUpProj, MoeAct, Mlp, Moe, SharedExperts };

// The names a scenario gives them, in the order the parser lists them: the one table the parser's
// choice list (and its "did you mean"), the enum and the resolved scenario's names all read.
struct RecomputeModuleName {
  const char* name;
  RecomputeModule module;
};
inline constexpr RecomputeModuleName kRecomputeModules[] = {{"core_attn", RecomputeModule::CoreAttn},
                                                           {"layernorm", RecomputeModule::Layernorm},
                                                           {"mla_up_proj", RecomputeModule::MlaUpProj},
                                                           {"moe_act", RecomputeModule::MoeAct},
                                                           {"mlp", RecomputeModule::Mlp},
                                                           {"moe", RecomputeModule::Moe},
                                                           {"shared_experts", RecomputeModule::SharedExperts}};
std::vector<std::string> recompute_module_names();
const char* recompute_module_name(RecomputeModule m);
// Throws std::invalid_argument for a name not in kRecomputeModules.
RecomputeModule recompute_module_from_name(const std::string& name);

// The modules a selective recompute replays, in the order the scenario lists them.
class RecomputeModules {
 public:
  RecomputeModules() = default;
  RecomputeModules(std::initializer_list<RecomputeModule> ms) : list_(ms) {}
  // Throws std::invalid_argument for an unknown name.
  static RecomputeModules from_names(const std::vector<std::string>& names);
  bool has(RecomputeModule m) const;
  std::vector<std::string> names() const;
  // These modules less `m`.
  RecomputeModules without(RecomputeModule m) const;

 private:
  std::vector<RecomputeModule> list_;
};

// Whether selective recompute of `mods` replays forward kernel `k` before the layer's backward:
// core_attn the attention core (the unfused kernels; a fused attention kernel only where
// `fused_attention`, ParallelSpec::recompute_fused_attention: the stack's choice), layernorm the
// block norms that are modules of their own (not Kernel::in_linear), mla_up_proj MLA's up projections with the RoPE and the query-key assembly, moe_act
// the routed experts' activation, mlp a dense layer's MLP, moe an MoE layer's router, token
// dispatch, experts and shared experts, shared_experts the shared experts.
bool replays(const RecomputeModules& mods, const Kernel& k, bool fused_attention);

// The forward kernels of layer `g` that selective recompute of `mods` replays, in issue order: what the
// GPU runs again (sim/parallel/emitter.cpp) and the host issues again (sim/host_launch.cpp).
Block replayed_kernels(const LayerGraph& g, const RecomputeModules& mods, bool fused_attention);

}  // namespace parasim
