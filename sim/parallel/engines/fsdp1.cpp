// FSDP1 (FullyShardedDataParallel, parallel.fsdp.version 1): flat parameters. The layer's weights
// are views of one flat parameter, so autograd's split backward concatenates their gradients into
// one flat gradient on the compute stream (read and write it in the parameter dtype); the
// post-backward hook then casts it to the reduce dtype when that differs and divides it by the
// gradient pre-divide factor before the reduce-scatter (torch.distributed.fsdp
// _runtime_utils._post_backward_hook). Those kernels run on FSDP's post-backward stream beside the
// next layer's backward, but unlike an NCCL kernel, which holds a few SMs (one per channel), an
// elementwise kernel over the whole gradient launches blocks for every SM: the two streams take
// turns on the SMs, so the side kernel costs the compute stream its full time. They are priced on
// the compute stream, where the next layer's backward waits behind them. BackwardPrefetch
// BACKWARD_POST (parallel.fsdp.backward_prefetch "post") issues the next unit's gather after the
// current unit's gradient computation.
#include "sim/parallel/engines/fsdp.h"

namespace parasim {

namespace {

class Fsdp1Engine final : public FsdpEngine {
 public:
  explicit Fsdp1Engine(SyncContext ctx)
      : FsdpEngine(std::move(ctx)), backward_post_(sc().parallel.fsdp->backward_prefetch == BackwardPrefetch::Post) {}

 protected:
  std::int64_t backward_prefetch() const override { return backward_post_ ? 0 : prefetch_; }

  OpId gradient_ready(OpId done, const LayerParams& lp) override {
    return op(Stream::Compute, Phase::Backward, op_label::kFlatGradConcat, c_.setup.in.cost.memory_s(2 * lp.all * sc().fsdp_param_bytes()),
              {done});
  }

  OpId reduce_input(OpId ready, const LayerParams& lp) override {
    const double all_g = reduce_bytes(lp);
    const double cast = sc().fsdp_reduce_dtype() != sc().fsdp_param_dtype() ? lp.all * sc().fsdp_param_bytes() + all_g : 0.0;
    return op(Stream::Compute, Phase::Other, op_label::kGradCastPreDivide, c_.setup.in.cost.memory_s(cast + 2 * all_g), {ready});
  }

 private:
  bool backward_post_;
};

}  // namespace

void register_fsdp1_engine(GradSyncRegistry& r) {
  r.add({"fsdp1", "FSDP1's flat parameters: the flat-gradient concat, then cast and pre-divide before each reduce-scatter; BACKWARD_PRE or POST",
         "torch.distributed.fsdp FullyShardedDataParallel (_runtime_utils._post_backward_hook); Zhao et al. 2023 (VLDB)",
         make_engine<Fsdp1Engine>});
}

}  // namespace parasim
