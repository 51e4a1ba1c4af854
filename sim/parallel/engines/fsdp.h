// Per-layer sharded weights: each layer's parameters are gathered before use and freed after, its
// gradients reduce-scattered. This base is ZeRO-3 (zero_stage 3 without parallel.fsdp, "zero3");
// FSDP1 (fsdp1.cpp) and FSDP2 (fsdp2.cpp) add their own kernels around the gather and the
// reduction through the hooks below, and DeepSpeed 0.3's per-tensor ZeRO-3
// (deepspeed_zero3_v03.cpp) replaces the gather and the reduction. Two options apply to every one
// of them: hybrid sharding (HSDP: the shard group is part of the data-parallel ranks, dp_spec, and
// the reduced shard is all-reduced across the replicas) and CPU offload (the shard crosses PCIe
// before its gather and after its reduction; the optimizer runs on the host).
#pragma once
#include <optional>

#include "sim/parallel/grad_sync_engine.h"

namespace parasim {

class FsdpEngine : public GradSyncEngine {
 public:
  explicit FsdpEngine(SyncContext ctx);
  void begin_action(const Action& a, bool last_grad_of_chunk) override;
  std::vector<OpId> before_layer(Action::Kind k, std::int64_t layer) override;
  void after_layer(Action::Kind k, std::int64_t layer, OpId op) override;
  void end_action() override { flush_grad_reduce(); }

 protected:
  // The gather of layer `layer` (after deps d); returns what the layer's first kernel waits on.
  virtual std::vector<OpId> gather(Action::Kind k, std::int64_t layer, const LayerParams& lp, std::vector<OpId> d);
  // The reduction of the layer's gradients, whose last op is `op`.
  virtual void reduce(std::int64_t layer, const LayerParams& lp, OpId op);
  // What the layer waits on once its gather `ag` is done (FSDP2: the copy-out).
  virtual std::vector<OpId> after_gather(OpId ag, const LayerParams& lp) {
    (void)lp;
    return {ag};
  }
  // The op after which the layer's gradient is ready to reduce (FSDP1: the flat-gradient concat).
  virtual OpId gradient_ready(OpId done, const LayerParams& lp) {
    (void)lp;
    return done;
  }
  // The reduce-scatter's input, after `ready` (FSDP1: cast and pre-divide; FSDP2: copy-in).
  virtual OpId reduce_input(OpId ready, const LayerParams& lp) {
    (void)lp;
    return ready;
  }
  // Layers a backward may gather ahead (FSDP1's BACKWARD_POST: none).
  virtual std::int64_t backward_prefetch() const { return prefetch_; }
  double unit_bytes(const LayerParams& lp) const { return lp.all * sc().fsdp_param_bytes(); }
  // The layer's gradients in the reduce dtype, its dense part and its experts' summed.
  double reduce_bytes(const LayerParams& lp) const {
    return (lp.all - lp.experts) * sc().fsdp_reduce_bytes() + lp.experts * sc().fsdp_reduce_bytes();
  }
  // A layer's dense parameters are sharded over the FSDP group, its experts' (FSDP over a mixture
  // of experts: torchtitan's and NeMo AutoModel's FSDP2 with EP) over the expert-data-parallel
  // group (the ranks holding the same experts); each part is gathered and reduced over its own.
  double gathered_bytes(const LayerParams& lp) const;
  std::int64_t prefetch_ = 1;  // layers gathered ahead

 private:
  struct PendingReduce {
    OpId grad_ready = -1;
    LayerParams lp;
  };
  void flush_grad_reduce();
  void emit_grad_reduce(const PendingReduce& p);
  std::vector<OpId> layer_done_;  // this action's gathered-parameter releases, by layer
  // A layer's gradient reduce-scatter is issued after the next layer's parameter all-gather:
  // FSDP's default backward prefetch (BACKWARD_PRE), FSDP2 and DeepSpeed ZeRO-3 issue the next
  // unit's all-gather when the current unit's backward starts, and one NCCL communicator runs its
  // collectives in issue order, so the gather does not wait behind the reduction.
  std::optional<PendingReduce> pending_;
};

}  // namespace parasim
