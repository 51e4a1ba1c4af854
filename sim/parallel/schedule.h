// Lowering a plan to a Program. Each schedule is one file that either returns the per-stage order
// of forward/backward actions (pipeline schedules, DDP) or lowers the whole step (DataParallel).
// A new schedule is one new file, a value in enum class Schedule (sim/scenario/choices.h) and its
// entry in register_builtins() (docs/extending.md).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "sim/cost/cost_model.h"
#include "models/layer_graph.h"
#include "sim/core/program.h"
#include "sim/core/registry.h"
#include "sim/network/network_model.h"
#include "sim/scenario/scenario.h"

namespace parasim {

// What the lowering reads. All references outlive the call.
struct LoweringInput {
  const Scenario& scenario;
  const LayerGraph& graph;  // layer 0's kind; the embedding, output layer and message sizes
  const ModelGraph& layers;  // every kind of layer, and each layer's
  const CostModel& cost;
  const NetworkModel& network;
  // Emit each layer's forward and backward on the compute stream as one fused op where nothing
  // else hangs between its ops (Program::segments): the same step, fewer ops. Only where no one
  // reads the program op by op (a trace, the host launch model).
  bool fuse = false;
};

// One unit of pipeline work on a stage: forward, backward (input and weight gradients), or with
// zero-bubble schedules backward-input (B) and backward-weight (W) separately.
struct Action {
  enum Kind : std::uint8_t { F, B, W } kind = F;
  std::int32_t microbatch = 0;
  std::int32_t chunk = 0;  // virtual stage index on this GPU (0 .. vpp-1)
};
using StageOrder = std::vector<std::vector<Action>>;  // [stage][i]

struct ScheduleSpec {
  std::int64_t stages = 1;        // p
  std::int64_t microbatches = 1;  // m
  std::int64_t chunks = 1;        // v
};

using OrderFn = std::function<StageOrder(const ScheduleSpec&)>;
using LowerFn = std::function<Program(const LoweringInput&)>;

// Where a schedule's step becomes periodic in its microbatch count m (sim/steady_state.h): once
// m reaches fill_stages x p the pipeline has filled (every stage holds as many microbatches in
// flight as it ever will), and from there the schedule repeats in groups of one microbatch, or of
// p for the interleaved schedule (Megatron's interleaved 1F1B advances p microbatches per chunk;
// Narayanan et al. SC'21 section 2.2). tests/core/steady_state_test.cpp checks each schedule's
// figures are affine from that point.
struct Periodicity {
  std::int64_t fill_stages = 1;
  bool groups_of_stages = false;
};

// A schedule's entry: its lowering and what the parser, the planner and the report need to know of it.
struct IdealBubble {
  const char* formula = nullptr;  // e.g. "(p-1)/(m+p-1)"; nullptr: no closed form printed
  double (*fraction)(double p, double m, double v) = nullptr;
};
struct ScheduleDef {
  Schedule value = Schedule::Ddp;
  OrderFn order{};  // pipeline-style schedules
  LowerFn lower{};  // schedules that lower themselves
  bool splits_backward = false;  // emits W actions
  Periodicity periodicity{};
  bool pipeline = true;  // needs pp > 1 (false: ddp, dataparallel, which need pp = 1)
  bool chunked = false;  // vpp >= 2 model chunks per stage, microbatches advanced in groups of pp
  bool microbatched = true;  // false: the whole batch at once (micro_batch = global_batch / dp)
  bool single_process = false;  // one process drives one node's GPUs (torch.nn.DataParallel)
  IdealBubble bubble{};  // the bubble fraction of equal stages and free sends (tools/report.cpp)
  // The planner (sim/planning/layouts.cpp) searches this schedule, and the first stage's
  // activations its memory bound counts: min(p, m) microbatches (1F1B's warm-up) or one.
  bool planned = false;
  bool warmup_holds_stages = false;
};

using ScheduleRegistry = Registry<ScheduleDef>;
void register_builtins(ScheduleRegistry& r);
const ScheduleRegistry& schedule_registry();  // the built-in schedules (built once, read only)
const ScheduleDef& schedule_def(const ScheduleRegistry& r, Schedule s);

// The shared emitter: per-layer ops for each action, p2p transfers between stages, data-parallel
// gradient synchronisation (bucketed, overlapped), sharded states, optimizer step.
Program lower_pipeline(const LoweringInput& in, const StageOrder& order, bool split_backward);

// The schedule's orders (one file each).
StageOrder order_ddp(const ScheduleSpec& s);
StageOrder order_gpipe(const ScheduleSpec& s);
StageOrder order_1f1b(const ScheduleSpec& s);
StageOrder order_interleaved(const ScheduleSpec& s);
StageOrder order_zb_h1(const ScheduleSpec& s);
Program lower_dataparallel(const LoweringInput& in);

// Lowers the scenario with the schedule it names.
Program lower(const ScheduleRegistry& r, const LoweringInput& in);

}  // namespace parasim
