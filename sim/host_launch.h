// The host thread that launches a rank's kernels. A framework in eager mode (PyTorch, and
// Megatron-Core and Transformer Engine on it) issues every kernel from one CPU thread, in program
// order, each costing the host a launch time; the GPU runs them asynchronously, so the host runs
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
#include "sim/core/program.h"
#include "sim/scenario/choices.h"

namespace parasim {

struct HostLaunch {
  Time per_launch = 0;  // host time to issue one kernel
  // Per label index (Program::labels): the kernels an op of that label launches (the largest over
  // the kinds of layer), and whether the host waits, before issuing the op, for the GPU to finish
  // the rank's previous op (a sync point).
  std::vector<std::int64_t> launches;
  std::vector<char> sync_before;
  // In a model with more than one kind of layer, per label and kind (label x kinds + kind): the
  // kernels a layer's op of that kind launches (Op::layer_kind); a hybrid model's Mamba-2 layer
  // has no MLP block to launch, its MoE layer no attention block.
  std::size_t kinds = 0;
  std::vector<std::int64_t> kind_launches;
  std::vector<char> kind_sync_before;  // likewise for sync_before
  std::int64_t of(const Op& op) const { return by_kind(op) ? kind_launches[kind_index(op)] : launches[label_index(op)]; }
  bool syncs_before(const Op& op) const { return (by_kind(op) ? kind_sync_before[kind_index(op)] : sync_before[label_index(op)]) != 0; }

 private:
  bool by_kind(const Op& op) const { return op.layer_kind >= 0 && kinds > 0; }
  static std::size_t label_index(const Op& op) { return static_cast<std::size_t>(op.label); }
  std::size_t kind_index(const Op& op) const { return label_index(op) * kinds + static_cast<std::size_t>(op.layer_kind); }
};

// Program::host for every op: on each rank, the host issues the ops' kernels one after another from
// the step's start, or from the end of the op before a sync point. An op whose gate is on another
// stream gets the gate as a dependency, so that its end is known when the op is ready.
void add_host_issue(Program& p, const HostLaunch& h);

// Kernels the host launches for one block: each kernel's real launches (Kernel::launches: an
// expert GEMM once per local expert under Transformer Engine, an FP8 quantization's amax, scale
// and cast kernels, ...), and the kernels of a CUDA-graphed part (consecutive kernels of the
// `graphed` modules) as one graph launch.
std::int64_t block_launches(const Block& b, const std::vector<LayerModule>& graphed);

// The host model of a lowered program: `per_launch` per kernel, each label's kernels from the
// model's blocks (a layer's op: its kind's; any other: the largest over the kinds), a communication or other op one launch, and
// a sync point before each MoE layer's forward all-to-all (Megatron-Core's dropless token
// dispatcher with expert parallelism copies the token counts to the host and waits for them
// before the all-to-all: megatron/core/transformer/moe/token_dispatcher.py, cuda_sync_point
// "before_ep_alltoall"), and with eager PyTorch modules (LayerShape::eager_launches) before each
// MoE layer's MLP block (its token counts copied to the host for the grouped GEMM's group sizes).
// Each rank's host time to issue its kernels (seconds): launches x per_launch over its ops.
std::vector<double> host_issue_s(const Program& p, const HostLaunch& h);

// The layer modules Megatron-Core's CUDA-graph scopes capture (TransformerLayer with
// cuda_graph_impl "transformer_engine"): "attn" the attention submodule, "moe_router" the router,
// "mamba" a hybrid model's Mamba-2 mixer; "moe_preprocess" the dispatcher's routing-map
// preprocessing, which has no kernel priced apart.
std::vector<LayerModule> graphed_modules(const std::vector<CudaGraphScope>& scopes);

HostLaunch host_launch_model(const Program& p, const ModelGraph& g, Time per_launch, const std::vector<LayerModule>& graphed);

}  // namespace parasim
