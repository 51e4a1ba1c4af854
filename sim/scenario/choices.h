// The named choices a scenario makes between the frameworks' implementations (whose ZeRO optimizer,
// whose pipeline engine, FSDP1's backward prefetch, activation recompute): one registry per key,
// each name with a description and a reference, parsed once at load into the key's enum. The
// parser's choice list and its "did you mean", the JSON Schema's enums and the reference's types
// (`parasim docs`) and `parasim list` all read these registries (with the schedule registry,
// sim/parallel/schedule.h: named_choices in sim/simulation.h gathers them).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/config/json_reader.h"
#include "sim/core/registry.h"

namespace parasim {

// parallel.zero_impl: whose ZeRO optimizer runs.
enum class ZeroImpl : std::uint8_t { Megatron, DeepSpeed, DeepSpeedBf16, DeepSpeedV03 };
// parallel.pipeline_impl: whose pipeline engine runs (its names: sim/parallel/pipeline_engine.h).
enum class PipelineImpl : std::uint8_t { Megatron, DeepSpeed };
// parallel.fsdp.backward_prefetch: when FSDP1 issues the next unit's all-gather in backward.
enum class BackwardPrefetch : std::uint8_t { Pre, Post };
// parallel.recompute: which activations the backward recomputes.
enum class Recompute : std::uint8_t { None, Selective, Full, SelectiveOp };
// parallel.moe_dispatcher: how a mixture-of-experts layer's tokens reach their experts' ranks
// (traffic per rank pair: sim/parallel/moe_dispatch.h).
enum class MoeDispatcher : std::uint8_t { AllToAll, DeepEp, HybridEp };

// The entry of a registry whose factory holds the value `v`, and its name (what --dump-resolved and
// the results print).
template <class F, class E>
const typename Registry<F>::Entry& entry_of(const Registry<F>& r, E v) {
  for (const auto& e : r.entries())
    if (e.factory.value == v) return e;
  throw std::logic_error("a " + r.kind() + " value without a name in its registry");
}
template <class F, class E>
const std::string& name_of(const Registry<F>& r, E v) {
  return entry_of(r, v).name;
}

// A choice's entry: its enum value, and the ZeRO stages it applies to (a bit per stage; all by default).
template <class E>
struct Choice {
  E value;
  std::uint8_t stages = 0xF;
};
template <class E>
using ChoiceRegistry = Registry<Choice<E>>;

ChoiceRegistry<ZeroImpl> zero_impls();
ChoiceRegistry<BackwardPrefetch> backward_prefetches();
ChoiceRegistry<Recompute> recompute_modes();
ChoiceRegistry<MoeDispatcher> moe_dispatchers();

std::string name_of(ZeroImpl v);
std::string name_of(BackwardPrefetch v);
std::string name_of(Recompute v);
std::string name_of(MoeDispatcher v);

// The registry entry `key` of `o` names (the default's when absent); an unknown name is a
// ConfigError listing the registry's names and the closest one.
template <class F, class E>
typename Registry<F>::Entry parse_choice(const JsonObject& o, const std::string& key, const Registry<F>& r, E def) {
  return *r.find(o.choice(key, r.names(), name_of(r, def)));
}

// One kind of name a scenario key takes, as `parasim list`, the docs and the schema show it.
struct NamedChoice {
  std::string list;     // `parasim list <list>`
  std::string pointer;  // the scenario key (generic JSON pointer)
  struct Name {
    std::string name, description, reference;
  };
  std::vector<Name> names;
  std::vector<std::string> name_list() const;
};
template <class F>
NamedChoice describe(const Registry<F>& r, std::string list, std::string pointer) {
  NamedChoice c{std::move(list), std::move(pointer), {}};
  for (const auto& e : r.entries()) c.names.push_back({e.name, e.description, e.reference});
  return c;
}
// This file's registries and the NCCL ones (calibrate/profile/profile.h), described.
std::vector<NamedChoice> scenario_choices();
// What network.algorithm / network.protocol take: "auto" (NCCL's tuner) or a name a run may force.
NamedChoice nccl_algorithm_choice();
NamedChoice nccl_protocol_choice();

}  // namespace parasim
