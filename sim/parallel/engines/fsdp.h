// Per-layer sharded weights (ZeRO-3, FSDP1 / FSDP2 full or hybrid sharding, CPU offload): each
// layer's parameters are gathered before use and freed after, its gradients reduce-scattered.
// DeepSpeed 0.3's per-tensor ZeRO-3 (deepspeed_zero3_v03.cpp) replaces the gather and reduction.
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
  double unit_bytes(const LayerParams& lp) const { return lp.all * sc().fsdp_param_bytes(); }
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
  bool bwd_post_ = false, fsdp1_ = false, fsdp2_ = false;
  std::vector<OpId> layer_done_;  // this action's gathered-parameter releases, by layer
  // A layer's gradient reduce-scatter is issued after the next layer's parameter all-gather:
  // FSDP's default backward prefetch (BACKWARD_PRE), FSDP2 and DeepSpeed ZeRO-3 issue the next
  // unit's all-gather when the current unit's backward starts, and one NCCL communicator runs its
  // collectives in issue order, so the gather does not wait behind the reduction.
  std::optional<PendingReduce> pending_;
};

}  // namespace parasim
