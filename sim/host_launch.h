// The host thread that launches a rank's kernels. A framework in eager mode (PyTorch, and
// Megatron-Core and Transformer Engine on it) issues every kernel from one CPU thread, in program
// order: each framework call (a module's forward, an autograd node's backward, a torch function)
// costs the host its Python and dispatch time, and each further kernel the call launches from its
// own C++ loop a bare launch; the GPU runs them asynchronously, so the host runs
// ahead of it except where it waits for the GPU (a device-to-host copy it needs, such as an MoE
// dispatcher's token counts). A kernel cannot start before the host has issued it: when kernels
// are shorter than their launches, the step is bound by the host, not the GPU. Kernels inside a
// CUDA graph are issued by one graph launch.
//
// add_host_issue() fills Program::host from the lowered program in emission order (which is the
// host's order on each rank); the engine applies it (sim/core/engine.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/layer_graph.h"
#include "models/recompute.h"
#include "sim/cost/cost_model.h"
#include "sim/core/program.h"
#include "sim/scenario/choices.h"
#include "sim/scenario/scenario.h"

namespace parasim {

// The launches behind a priced kernel or an op: the framework calls the host makes (one per
// priced kernel: a module or function of Megatron-Core, Transformer Engine or PyTorch; one per CUDA
// graph replay) and the kernels they launch in all (a call can launch more from its own C++ loop:
// Transformer Engine's grouped GEMM issues one cuBLAS GEMM per local expert, an FP8 current-scaling
// quantization four kernels).
// Of the launches, `ops` are bare PyTorch ops a module runs in its own Python loop (Kernel::python_ops),
// each its own torch function call rather than a kernel of a call.
struct LaunchCount {
  std::int64_t calls = 0;
  std::int64_t launches = 0;
  std::int64_t ops = 0;
  LaunchCount& operator+=(const LaunchCount& o) {
    calls += o.calls;
    launches += o.launches;
    ops += o.ops;
    return *this;
  }
  bool operator==(const LaunchCount&) const = default;
};

// A sync inside an op: the host waits for the GPU between two of the op's kernels (Kernel::host_sync).
// `pre`: the launches the host makes before it; `next`: those of the kernel after it; `share`: the
// share of the op's GPU time that runs before it (< 0: the op has none).
struct InnerSync {
  LaunchCount pre;
  LaunchCount next;
  double share = -1;
};

struct HostLaunch {
  Time per_call = 0;  // host time of a framework call, its first kernel's launch included
  Time per_loop = 0;  // host time of each further kernel a call launches from its own loop
  Time per_op = 0;    // host time of a bare PyTorch op run from a module's Python loop
  // Per label index (Program::labels): the calls and launches of an op of that label (the kind of
  // layer whose calls take the host longest), and whether the host waits, before issuing the op, for the
  // GPU to finish the rank's previous op (a sync point).
  std::vector<LaunchCount> counts;
  std::vector<char> sync_before;
  std::vector<InnerSync> inner;  // per label, of the counts' kind (empty: no op has one)
  // In a model with more than one kind of layer, per label and kind (label x kinds + kind): the
  // launches of a layer's op of that kind (Op::layer_kind); a hybrid model's Mamba-2 layer has no
  // MLP block to launch, its MoE layer no attention block.
  std::size_t kinds = 0;
  std::vector<LaunchCount> kind_counts;
  std::vector<char> kind_sync_before;  // likewise for sync_before
  std::vector<InnerSync> kind_inner;   // and for inner
  const LaunchCount& count(const Op& op) const { return by_kind(op) ? kind_counts[kind_index(op)] : counts[label_index(op)]; }
  std::int64_t of(const Op& op) const { return count(op).launches; }  // the kernels it launches
  // The host time to issue `c`: each call, each bare op, and each further launch of the calls' loops.
  Time time_of(const LaunchCount& c) const { return c.calls * per_call + c.ops * per_op + (c.launches - c.calls - c.ops) * per_loop; }
  // The host time before the first kernel of `c` is issued: its first call's, or first op's.
  Time first_of(const LaunchCount& c) const { return c.calls > 0 ? per_call : c.ops > 0 ? per_op : 0; }
  Time issue_time(const Op& op) const { return time_of(count(op)); }
  bool syncs_before(const Op& op) const { return (by_kind(op) ? kind_sync_before[kind_index(op)] : sync_before[label_index(op)]) != 0; }
  InnerSync inner_sync(const Op& op) const {
    if (by_kind(op)) return kind_inner.empty() ? InnerSync{} : kind_inner[kind_index(op)];
    return inner.empty() ? InnerSync{} : inner[label_index(op)];
  }

 private:
  bool by_kind(const Op& op) const { return op.layer_kind >= 0 && kinds > 0; }
  static std::size_t label_index(const Op& op) { return static_cast<std::size_t>(op.label); }
  std::size_t kind_index(const Op& op) const { return label_index(op) * kinds + static_cast<std::size_t>(op.layer_kind); }
};

// The host's costs from a scenario's training settings: host_launch_us per framework call,
// host_loop_launch_us per further launch of a call's own loop (0: as a call), and host_op_us per
// bare PyTorch op of a module's Python loop (0: as a call). Eager PyTorch modules (launch_impl
// "eager") loop in Python: every launch there is a call.
struct HostCosts {
  Time per_call = 0, per_loop = 0, per_op = 0;
};
HostCosts host_costs(const TrainingSpec& t);

// Program::host for every op: on each rank, the host issues the ops' kernels one after another from
// the step's start, or from the end of the op before a sync point. An op whose gate is on another
// stream gets the gate as a dependency, so that its end is known when the op is ready.
void add_host_issue(Program& p, const HostLaunch& h);

// What the host launches for one block: a call per priced kernel with its real launches
// (Kernel::launches: an expert GEMM once per local expert under Transformer Engine, an FP8
// quantization's amax, scale and cast kernels, ...), and a CUDA-graphed part (consecutive kernels
// of the `graphed` modules) as one call that launches one graph.
LaunchCount block_launches(const Block& b, const std::vector<LayerModule>& graphed);

// The last sync inside a block (a kernel with Kernel::host_sync that no CUDA graph holds): the
// launches before it and the share of the block's time (kernel_seconds) before it.
InnerSync block_sync(const Block& b, const std::vector<LayerModule>& graphed, const CostModel& cost);

// The host model of a lowered program: `costs` per call and loop launch, each label's launches from
// the model's blocks (a layer's op: its kind's; any other: the largest over the kinds), a
// communication or other op one call of one launch, and
// a sync point before each MoE layer's forward all-to-all (Megatron-Core's dropless token
// dispatcher with expert parallelism copies the token counts to the host and waits for them
// before the all-to-all: megatron/core/transformer/moe/token_dispatcher.py, cuda_sync_point
// "before_ep_alltoall"), and with eager PyTorch modules (LayerShape::eager_launches) before each
// MoE layer's MLP block (its token counts copied to the host for the grouped GEMM's group sizes).
// With `cost`, the syncs inside ops (block_sync): PyTorch's copy of GPT-OSS's clamped activation's
// linear offset to the device (the activation kernel's Kernel::host_sync); without, counts only.
// Each rank's host time to issue its kernels (seconds): HostLaunch::issue_time over its ops.
std::vector<double> host_issue_s(const Program& p, const HostLaunch& h);

// The layer modules Megatron-Core's CUDA-graph scopes capture (TransformerLayer with
// cuda_graph_impl "transformer_engine"): "attn" the attention submodule, "moe_router" the router,
// "mamba" a hybrid model's Mamba-2 mixer; "moe_preprocess" the dispatcher's routing-map
// preprocessing, which has no kernel priced apart.
std::vector<LayerModule> graphed_modules(const std::vector<CudaGraphScope>& scopes);

// What a selective recompute replays (ParallelSpec::recompute_modules, recompute_fused_attention):
// Megatron-Core re-runs those modules' forward before their backward, so the host issues their
// kernels again (tensor_parallel.checkpoint, CheckpointWithoutOutput).
struct HostReplay {
  RecomputeModules modules;
  bool fused_attention = false;
};

// A scenario's replay: its recompute modules under selective recompute, nothing otherwise.
HostReplay host_replay(const Scenario& s);

HostLaunch host_launch_model(const Program& p, const ModelGraph& g, HostCosts costs, const std::vector<LayerModule>& graphed,
                             const HostReplay& replay, const CostModel* cost);

}  // namespace parasim
