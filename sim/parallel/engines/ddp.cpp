// Replicated weights: DDP's bucketed gradient all-reduce, and ZeRO-1/2's reduce-scatter of the
// same buckets (the optimizer step's parameter all-gather is the shared optimizer_step), plus
// unfused gradient accumulation (training.grad_accumulation_fusion false).
#include "sim/parallel/grad_sync_engine.h"

namespace parasim {

namespace {

class DdpEngine final : public GradSyncEngine {
 public:
  using GradSyncEngine::GradSyncEngine;

  // Bucketed gradient sync, hung on the layer ops of the last backward. Sharded gradients (ZeRO-2,
  // FSDP grad_op) are reduce-scattered after every microbatch's backward and accumulate as the
  // rank's shard: DeepSpeed's stage_1_and_2.py reduces in the gradient hooks when
  // partition_gradients or at the accumulation boundary (ZeRO-1 only there), and FSDP's
  // post-backward hook reduce-scatters in every backward outside no_sync().
  void begin_action(const Action& a, bool last_grad_of_chunk) override {
    a_ = a;
    sync_here_ = c_.setup.grad_sync && (c_.setup.sh.grads || last_grad_of_chunk);
    bucket_ = ebucket_ = 0;
  }

  void after_layer(Action::Kind k, std::int64_t layer, OpId op) override {
    if (k != c_.setup.grad_kind()) return;
    const LayerParams lp = c_.setup.chunk_layer(vs(), layer);
    const OpId ready = accumulate(lp.all, op);
    if (!sync_here_) return;
    bucket_ += (lp.all - lp.experts) * c_.setup.sb.grads;
    ebucket_ += lp.experts * c_.setup.sb.grads;
    if (bucket_ + ebucket_ >= sc().parallel.bucket_mb * 1e6 && sc().parallel.overlap_grad_reduce) flush(ready);
  }

  // The chunk's embedding / head gradients join the last bucket (a split B leaves them to W).
  void after_chunk(Action::Kind k, OpId last, bool first_vs, bool last_vs) override {
    if (k == Action::B && c_.setup.split) return;
    const double ends = c_.stage.chunk_extra(first_vs, last_vs);
    const OpId ready = accumulate(ends, last);
    if (!sync_here_) return;
    bucket_ += ends * c_.setup.sb.grads;
    if (last_vs) ebucket_ += c_.stage.mtp_experts * c_.setup.sb.grads;
    flush(ready);
  }

 private:
  void flush(OpId after) {
    const Sharding& sh = c_.setup.sh;
    const CollOp grad_op = sh.optimizer ? CollOp::ReduceScatter : CollOp::AllReduce;
    if (bucket_ > 0)
      sync_ops_.push_back(comm(Phase::DpComm, sh.optimizer ? Label(op_label::kGradReduceScatter) : Label(op_label::kGradAllReduce),
                               c_.setup.dp_spec(layout(), grad_op, bucket_), {after}));
    if (ebucket_ > 0 && sc().parallel.expert_dp() > 1)  // MoE: expert gradients, over the expert-data-parallel group
      sync_ops_.push_back(comm(Phase::DpComm, sh.optimizer ? Label(op_label::kExpertGradReduceScatter) : Label(op_label::kExpertGradAllReduce),
                               layout().edp_group(grad_op, ebucket_), {after}));
    bucket_ = ebucket_ = 0;
  }

  // Unfused gradient accumulation: after each layer's weight gradient, one pass adds it into the
  // replicated gradient buffer, reading the new 16-bit gradient and reading and writing the buffer
  // (2 or 4 bytes). Returns the op after which the layer's gradient is final.
  OpId accumulate(double params, OpId after) {
    if (sc().training.grad_accumulation_fusion || params <= 0) return after;
    const double bytes = params * (sc().dtype_bytes() + 2 * (c_.setup.ds_bf16 ? kMasterBytes : c_.setup.sb.grads));
    return op(Stream::Compute, Phase::Backward, op_label::kGradAccumulate, c_.setup.in.cost.memory_s(bytes), {after});
  }

  bool sync_here_ = false;
  double bucket_ = 0;
  double ebucket_ = 0;
};

}  // namespace

void register_ddp_engine(GradSyncRegistry& r) {
  r.add({"ddp", "replicated weights: bucketed gradient all-reduce (DDP), or reduce-scatter of the buckets (ZeRO-1/2)",
         "Li et al. 2020, 'PyTorch Distributed' (VLDB); Rajbhandari et al. 2020, 'ZeRO' (SC'20)", make_engine<DdpEngine>});
}

}  // namespace parasim
