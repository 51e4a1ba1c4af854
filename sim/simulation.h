// The whole data flow for one scenario: lower -> run -> metrics. A value with no global state, so
// sweeps can run many and tests can run them in parallel.
#pragma once
#include <optional>

#include "sim/core/engine.h"
#include "sim/metrics/metrics.h"
#include "sim/parallel/pipeline_engine.h"
#include "sim/parallel/schedule.h"
#include "sim/scenario/scenario.h"
#include "sim/steady_state.h"

namespace parasim {

struct SimulationOutput {
  Program program;    // empty when the step was folded (see fold)
  Timeline timeline;  // empty when the step was folded
  Result result;
  Fold fold;
  std::optional<TimePartition> partition;  // with Detail::Partition: where the step's time went
};

// What the caller needs. Summary: the Result only, so a step with many microbatches may be folded
// onto its steady state (sim/steady_state.h) in bounded memory. Partition: the Result and where the
// step's time went (sim/metrics/time_partition.h), folded alike. Timeline: every op of the whole
// step (traces, program dumps, reports that draw the step).
enum class Detail { Summary, Partition, Timeline };

// Registries of everything selectable by name, built once by the caller.
// The built-in registries the simulation reads (each built once: schedule_registry(),
// pipeline_engines()), so the parser, the lowering, the planner and `parasim list` read one list.
struct Registries {
  const ScheduleRegistry& schedules = schedule_registry();
  const PipelineEngineRegistry& pipeline_engines = parasim::pipeline_engines();
};

// Every registry whose names a scenario key takes (the schedules, and sim/scenario/choices.h's),
// described: the parser reads each registry itself; `parasim list`, the JSON Schema's enums and
// the reference's types read this.
std::vector<NamedChoice> named_choices(const Registries& reg);

LayerShape layer_shape(const Scenario& sc);
// The RoPE kernels the scenario runs: training.rope_impl, except that "fused" runs "unfused" for a
// YaRN-scaled model (model.rope_scaling): Megatron-Bridge's GPTModelProvider.provide() turns
// apply_rope_fusion off for any position_embedding_type but "rope" (utils/fusions.py
// validate_rope_fusion_compatibility), as Megatron-LM's arguments.py does.
RopeImpl rope_impl(const Scenario& sc);
// The MoE routing fields of a shape (LayerShape::moe_sent, moe_busiest, moe_padded) for its ep and
// tokens (sim/parallel/moe_routing.h); draw: E[max of ep standard normal draws], 0 for a lower bound.
void set_moe_routing(LayerShape& sh, const ModelSpec& m, const MoeRouting& r, double draw);
// `network` overrides the scenario's network model (tests use a free network for closed forms).
SimulationOutput simulate(const Scenario& sc, const Registries& reg, const NetworkModel* network = nullptr,
                          Detail detail = Detail::Summary);

// A lower bound of the step's time in seconds from lowering alone, without running the engine: the
// busiest rank's compute-stream work. The ops of one stream run one after another, and an
// overlapped collective only slows them, so no simulated step (folded or whole) is shorter. Every
// microbatch lays down the same compute ops, so that work is affine in the microbatch count: it
// is read from the programs of one and of two of the schedule's groups of microbatches and
// extended to the step's count. A planner skips a layout whose bound passes the best steps found.
double step_lower_bound_s(const Scenario& sc, const Registries& reg);
// A bound without lowering (about a tenth of step_lower_bound_s's cost on deep pipelines): per
// stage, its layer blocks' compute-stream work, forward and backward with full recompute's
// replay, times the microbatches (Emitter::chunk_floor), after the earlier stages' forward of one
// microbatch (its first action waits for them) and before their backward of one (where its last
// action is a first-chunk backward: not under a schedule that splits the backward). It leaves out
// the pipeline's sends, the gradient sync and the optimizer, so it stays at or below the simulated
// step; it counts the pipeline's fill and drain, which step_lower_bound_s does not, so either may
// be the larger. A planner refines the layouts whose floor is near the best steps found with
// step_lower_bound_s, and takes the larger of the two.
double step_floor_s(const Scenario& sc, const Registries& reg);

}  // namespace parasim
