#include "sim/parallel/engines/fsdp.h"

namespace parasim {

FsdpEngine::FsdpEngine(SyncContext ctx) : GradSyncEngine(std::move(ctx)) {
  const auto& fsdp = sc().parallel.fsdp;
  prefetch_ = fsdp ? fsdp->prefetch : 1;
}

void FsdpEngine::begin_action(const Action& a, bool) {
  a_ = a;
  layer_done_.clear();
  pending_.reset();
}

double FsdpEngine::gathered_bytes(const LayerParams& lp) const {
  const double nd = c_.setup.nd;
  if (lp.experts <= 0) return unit_bytes(lp) * (1.0 - 1.0 / nd);
  const double edp = static_cast<double>(sc().parallel.expert_dp());
  return (lp.all - lp.experts) * sc().fsdp_param_bytes() * (1.0 - 1.0 / nd) + lp.experts * sc().fsdp_param_bytes() * (1.0 - 1.0 / edp);
}

std::vector<OpId> FsdpEngine::before_layer(Action::Kind k, std::int64_t layer) {
  const LayerParams lp = c_.setup.chunk_layer(vs(), layer);
  std::vector<OpId> d;
  const std::int64_t depth = k != Action::F ? backward_prefetch() : prefetch_;
  const auto idx = static_cast<std::int64_t>(layer_done_.size()) - 1 - depth;
  if (idx >= 0) d.push_back(layer_done_[static_cast<size_t>(idx)]);
  if (c_.setup.offload) {
    const double shard = lp.all / c_.setup.nd * kMasterBytes;
    d = {op(Stream::Comm, Phase::FsdpGather, op_label::kParamShardH2D, shard / c_.setup.pcie_bps, d)};
  }
  return gather(k, layer, lp, std::move(d));
}

std::vector<OpId> FsdpEngine::gather(Action::Kind k, std::int64_t, const LayerParams& lp, std::vector<OpId> d) {
  const Layout& L = layout();
  OpId ag = comm(Phase::FsdpGather, k == Action::F ? Label(op_label::kParamAllGatherFwd) : Label(op_label::kParamAllGatherBwd),
                 c_.setup.dp_spec(L, CollOp::AllGather, unit_bytes({lp.all - lp.experts, 0.0})), d);
  c_.prog.ops[static_cast<size_t>(ag)].at_start = {MemCat::GatheredParams, to_bytes(gathered_bytes(lp))};
  if (lp.experts > 0 && sc().parallel.expert_dp() > 1)
    ag = comm(Phase::FsdpGather, k == Action::F ? Label(op_label::kExpertParamAllGatherFwd) : Label(op_label::kExpertParamAllGatherBwd),
              L.edp_group(CollOp::AllGather, unit_bytes({lp.experts, 0.0})), {ag});
  flush_grad_reduce();  // the previous layer's reduce-scatter queues behind this prefetch
  return after_gather(ag, lp);
}

void FsdpEngine::after_layer(Action::Kind k, std::int64_t layer, OpId done) {
  const LayerParams lp = c_.setup.chunk_layer(vs(), layer);
  if (k == Action::F || k == Action::B) {  // W needs no weights
    const OpId rel = op(Stream::Compute, Phase::Other, op_label::kReleaseGatheredParams, 0, {done});
    c_.prog.ops[static_cast<size_t>(rel)].at_end = {MemCat::GatheredParams, -to_bytes(gathered_bytes(lp))};
    layer_done_.push_back(rel);
  }
  if (c_.setup.grad_sync && k == c_.setup.grad_kind()) reduce(layer, lp, done);
}

void FsdpEngine::reduce(std::int64_t, const LayerParams& lp, OpId done) {
  flush_grad_reduce();
  pending_ = PendingReduce{gradient_ready(done, lp), lp};
}

void FsdpEngine::flush_grad_reduce() {
  if (!pending_) return;
  const PendingReduce p = *pending_;
  pending_.reset();
  emit_grad_reduce(p);
}

void FsdpEngine::emit_grad_reduce(const PendingReduce& p) {
  const SyncSetup& u = c_.setup;
  const ParallelSpec& par = sc().parallel;
  const Layout& L = layout();
  const LayerParams& lp = p.lp;
  const double gbytes = (lp.all - lp.experts) * sc().fsdp_reduce_bytes();
  const double ebytes = lp.experts * sc().fsdp_reduce_bytes();
  const OpId in_op = reduce_input(p.grad_ready, lp);
  const OpId rs = comm(Phase::DpComm, op_label::kGradReduceScatter, u.dp_spec(L, CollOp::ReduceScatter, gbytes), {in_op});
  const double unsharded = gbytes * (1.0 - 1.0 / u.nd) + ebytes * (1.0 - 1.0 / static_cast<double>(par.expert_dp()));
  c_.prog.ops[static_cast<size_t>(rs)].at_start = {MemCat::Grads, to_bytes(unsharded)};
  c_.prog.ops[static_cast<size_t>(rs)].at_end = {MemCat::Grads, -to_bytes(unsharded)};
  sync_ops_.push_back(rs);
  if (ebytes > 0 && par.expert_dp() > 1)
    sync_ops_.push_back(comm(Phase::DpComm, op_label::kExpertGradReduceScatter, L.edp_group(CollOp::ReduceScatter, ebytes), {in_op}));
  if (u.sh.nd < par.dp * par.cp)  // HSDP: all-reduce the shard across replicas
    sync_ops_.push_back(comm(Phase::DpComm, "grad all-reduce (replicas)", L.dpcp_outer(CollOp::AllReduce, u.sh.nd, gbytes / u.nd), {rs}));
  if (u.offload)  // the reduced shard goes to the host for the CPU optimizer
    sync_ops_.push_back(op(Stream::Comm, Phase::DpComm, op_label::kGradShardD2H, lp.all / u.nd * kMasterBytes / u.pcie_bps, {sync_ops_.back()}));
}

void register_zero3_engine(GradSyncRegistry& r) {
  r.add({"zero3", "per-layer sharded weights (ZeRO-3; with parallel.fsdp, FSDP1 / FSDP2 add their kernels): all-gather before use, "
                  "reduce-scatter gradients; HSDP and CPU offload as options",
         "Rajbhandari et al. 2020, 'ZeRO' (SC'20), stage 3; Zhao et al. 2023, 'PyTorch FSDP' (VLDB)", make_engine<FsdpEngine>});
}

}  // namespace parasim
