// FSDP2 (fully_shard, parallel.fsdp.version 2): per-parameter DTensors. After each all-gather the
// unit's pre-forward / pre-backward waits for it and copies the gathered buffer out into the
// unsharded parameters (read + write the unit) on the compute stream; before each reduce-scatter a
// copy-in concatenates the unsharded gradients into the reduce-scatter input in the reduce dtype
// (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py).
#include "sim/parallel/engines/fsdp.h"

namespace parasim {

namespace {

class Fsdp2Engine final : public FsdpEngine {
 public:
  using FsdpEngine::FsdpEngine;

 protected:
  std::vector<OpId> after_gather(OpId ag, const LayerParams& lp) override {
    return {op(Stream::Compute, Phase::Other, op_label::kAllGatherCopyOut, c_.setup.in.cost.memory_s(2 * unit_bytes(lp)), {ag})};
  }

  OpId reduce_input(OpId ready, const LayerParams& lp) override {
    return op(Stream::Compute, Phase::Other, op_label::kReduceScatterCopyIn, c_.setup.in.cost.memory_s(lp.all * sc().fsdp_param_bytes() + reduce_bytes(lp)),
              {ready});
  }
};

}  // namespace

void register_fsdp2_engine(GradSyncRegistry& r) {
  r.add({"fsdp2", "FSDP2's per-parameter sharding: a copy-out after each all-gather, a copy-in before each reduce-scatter",
         "torch.distributed.fsdp fully_shard (_fully_shard/_fsdp_collectives.py)", make_engine<Fsdp2Engine>});
}

}  // namespace parasim
