// VRAM accounting: model states per sharding (ZeRO, Rajbhandari et al. 2020) and activations per
// layer per microbatch (Korthikanti et al. 2022, Table 2, generalised to GQA, SwiGLU and no-dropout
// models). The engine turns these into alloc/free events; the peak comes from the timeline.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "models/layer_graph.h"
#include "models/recompute.h"
#include "sim/scenario/choices.h"

namespace parasim {

struct ActivationBytes {
  double layer_stored = 0;   // kept from a layer's forward until its backward, per microbatch
  double layer_working = 0;  // a layer's full set, alive while it is recomputed (full recompute)
  double embed = 0;          // first stage, per microbatch
  double head = 0;           // last stage, per microbatch (fp32 logits for the loss)
  double head_working = 0;   // last stage: the loss's gradient buffers, alive during its backward
  // Training metrics (LayerShape::train_metrics): the 16-bit logits, part of `head`, stay alive
  // until the metrics have run after the microbatch's backward; each metric's cross entropy holds
  // its fp32 upcast and log_softmax output meanwhile (one metric at a time).
  double metrics_kept = 0;
  double metrics_working = 0;
  // What the head's backward (or, split, its weight gradient) frees: all of `head` but the
  // logits the training metrics still read.
  double head_freed_by_backward() const { return head - metrics_kept; }
};

// With Recompute::Selective, the recomputed modules (ParallelSpec::recompute_modules) keep none of
// their own activations.
ActivationBytes activation_bytes(const ModelSpec& m, const LayerShape& shape, Recompute recompute,
                                 const RecomputeModules& modules = {RecomputeModule::CoreAttn});

struct StateBytesPerParam {
  double weights = 2;    // bf16/fp16 parameters
  double grads = 2;      // bf16 gradients (4 with fp32 accumulation)
  double optimizer = 12; // Adam mixed precision: fp32 master, momentum, variance (K = 12)
};
StateBytesPerParam state_bytes(Dtype dtype, Optimizer optimizer, bool fp32_grads);

// HBM bytes the optimizer step moves per parameter it updates. impl "fused": one pass reading
// parameter, gradient and states and writing parameter and states. "unfused": one elementwise
// kernel per term of the update on fp32 tensors (PyTorch's for-loop / foreach Adam, Composer's
// DecoupledAdamW), each reading its operands and writing its result.
// A fused step over a separate fp32 master copy (Megatron's and DeepSpeed's mixed-precision
// optimizers; not FSDP, whose sharded parameters are the fp32 copy) ends with a second kernel that
// copies the master into the 16-bit model weights (master_copy: the master is read again);
// cast_grads: 16-bit gradients are first cast into fp32 main gradients in a kernel of their own,
// which the Adam pass then reads in fp32.
double optimizer_step_bytes(const StateBytesPerParam& b, Optimizer optimizer, OptimizerImpl impl, bool master_copy = false,
                            bool cast_grads = false);

// How states are sharded over `nd` data-parallel ranks.
struct Sharding {
  bool weights = false, grads = false, optimizer = false;
  std::int64_t nd = 1;
};
// ZeRO stage 0..3 -> what is sharded. FSDP "full" = 3, "grad_op" = 2; "hybrid" = 3 within groups.
Sharding sharding_for(std::int64_t zero_stage, std::optional<FsdpSharding> fsdp_sharding, std::int64_t dp, std::int64_t shard_group);

struct ModelStates {
  double weights = 0, grads = 0, optimizer = 0;
  double total() const { return weights + grads + optimizer; }
};
ModelStates model_states(double params, const StateBytesPerParam& b, const Sharding& s);

}  // namespace parasim
