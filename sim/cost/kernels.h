// Prices the kernels of a LayerGraph with a CostModel, one by one: the numbers behind every
// block time the schedules use, and the table `parasim run --kernels` prints so that a user can
// hold the prediction against a profiler trace (Nsight Systems, torch.profiler) kernel by kernel.
#pragma once
#include <string>
#include <vector>

#include "sim/cost/cost_model.h"
#include "models/layer_graph.h"

namespace parasim {

// Seconds of one kernel on one rank.
double kernel_seconds(const CostModel& c, const Kernel& k);

struct KernelRow {
  std::string block;      // "attention fwd", "mlp bwd", "embedding fwd", "head bwd", ...
  bool layer = false;     // a transformer layer's block (attention, MLP), not the embedding, head, MTP or metrics
  const Kernel* kernel = nullptr;
  double seconds = 0;
  std::string priced_by;  // "GEMM points", "GEMM kernel model", "attention <kernel>", "HBM bandwidth"
};

// Every kernel of one transformer layer (attention and MLP, forward and backward) and of the
// embedding and output layers, for one microbatch on one rank, in execution order. The rows
// point into `g`, which must outlive them.
std::vector<KernelRow> kernel_rows(const LayerGraph& g, const CostModel& c);
// A model whose layers differ: the embedding and output layers once, then each kind of layer's
// attention and MLP blocks, their block names followed by the kind ("attention fwd [dense MLP]").
std::vector<KernelRow> kernel_rows(const ModelGraph& g, const ModelSpec& m, const CostModel& c);
// "dense MLP" / "MoE", "full attention" / "window 128": the parts of a kind the model varies.
std::string kind_label(const ModelSpec& m, const LayerKind& k);

}  // namespace parasim
