// DeepSpeed 0.3's ZeRO-3 (parallel.zero_impl "deepspeed-0.3"): one all-gather per parameter
// tensor, each after torch.cuda.synchronize() (so nothing is prefetched and no gather overlaps
// compute or the previous gradient reduction), with the list form of all_gather: ProcessGroupNCCL
// gathers into one flat buffer and copies each rank's slice back, one copy per rank. Gradients are
// reduce-scattered tensor by tensor with the list form of reduce_scatter, whose per-rank inputs
// are first copied into one buffer. Each copy is a kernel (profile kernel_overhead_us) that also
// moves its bytes through HBM. With full recompute the replayed forward gathers the layer again
// (the module hooks fire once more) before the backward's own gather.
#include <cmath>

#include "sim/parallel/engines/fsdp.h"

namespace parasim {

namespace {

class DeepSpeedZero3V03Engine final : public FsdpEngine {
 public:
  explicit DeepSpeedZero3V03Engine(SyncContext ctx)
      : FsdpEngine(std::move(ctx)),
        tensors0_(layer_tensor_params(sc().model, 0)) {
    prefetch_ = 0;
  }

 protected:
  std::vector<OpId> gather(Action::Kind k, std::int64_t layer, const LayerParams& lp, std::vector<OpId> d) override {
    // torch.cuda.synchronize(): the gathers wait for every op this rank issued before them (the
    // communication stream runs in issue order; the compute stream's last op here).
    d.clear();
    if (const OpId c = last_op_on(c_.prog, c_.rank, Stream::Compute); c >= 0) d.push_back(c);
    const int passes = k == Action::B && c_.em.recomputes(layer) ? 2 : 1;
    OpId first_ag = -1;
    const std::vector<double> tensors = tensors_of(layer);
    for (int pass = 0; pass < passes; ++pass)
      for (const double t : tensors) {
        const double bytes = t / static_cast<double>(sc().parallel.tp) * sc().fsdp_param_bytes();
        const OpId ag = comm(Phase::FsdpGather, op_label::kParamAllGatherOneTensor, c_.setup.dp_spec(layout(), CollOp::AllGather, bytes), d);
        if (first_ag < 0) first_ag = ag;
        d = {op(Stream::Comm, Phase::FsdpGather, op_label::kAllGatherCopyBackPerRank, per_rank_copies_s(2 * bytes), {ag})};
      }
    c_.prog.ops[static_cast<size_t>(first_ag)].at_start = {MemCat::GatheredParams, to_bytes(gathered_bytes(lp))};
    return d;
  }

  // Issued at once (DeepSpeed's backward hook); the next gather's synchronize waits for it.
  void reduce(std::int64_t layer, const LayerParams&, OpId done) override {
    OpId prev = done;
    for (const double t : tensors_of(layer)) {
      const double gbytes = t / static_cast<double>(sc().parallel.tp) * sc().fsdp_reduce_bytes();
      const OpId cp = op(Stream::Comm, Phase::DpComm, op_label::kReduceScatterCopyInPerRank,
                         per_rank_copies_s(2 * gbytes), {prev});
      prev = comm(Phase::DpComm, op_label::kGradReduceScatterOneTensor, c_.setup.dp_spec(layout(), CollOp::ReduceScatter, gbytes), {cp});
      sync_ops_.push_back(prev);
    }
  }

 private:
  std::vector<double> tensors_of(std::int64_t layer) const {
    return c_.setup.uniform ? tensors0_ : layer_tensor_params(sc().model, c_.setup.chunk_first(vs()) + layer);
  }
  // The list form's copies: one kernel per rank, together moving `bytes` through HBM.
  double per_rank_copies_s(double bytes) const { return c_.setup.in.cost.memory_s(bytes, 1.0, std::llround(c_.setup.nd)); }
  std::vector<double> tensors0_;  // the first layer's parameter tensors (every layer's, when uniform)
};

}  // namespace

void register_deepspeed_zero3_v03_engine(GradSyncRegistry& r) {
  r.add({"deepspeed-zero3-0.3", "DeepSpeed 0.3's ZeRO-3: per-tensor all-gather after a device synchronize, per-tensor reduce-scatter, list-form copies",
         "DeepSpeed 0.3 runtime/zero (ZeRO-3); torch.distributed ProcessGroupNCCL list all_gather / reduce_scatter", make_engine<DeepSpeedZero3V03Engine>});
}

}  // namespace parasim
