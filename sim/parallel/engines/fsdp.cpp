#include "sim/parallel/engines/fsdp.h"

namespace parasim {

FsdpEngine::FsdpEngine(SyncContext ctx) : GradSyncEngine(std::move(ctx)) {
  const auto& fsdp = sc().parallel.fsdp;
  prefetch_ = fsdp ? fsdp->prefetch : 1;
  bwd_post_ = fsdp && fsdp->backward_prefetch == BackwardPrefetch::Post;
  fsdp2_ = fsdp && fsdp->version == 2;
  fsdp1_ = fsdp && fsdp->version == 1;
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
  // BACKWARD_POST: the gather is issued after the previous unit's gradient computation.
  const std::int64_t depth = k != Action::F && bwd_post_ ? 0 : prefetch_;
  const auto idx = static_cast<std::int64_t>(layer_done_.size()) - 1 - depth;
  if (idx >= 0) d.push_back(layer_done_[static_cast<size_t>(idx)]);
  if (c_.setup.offload) {
    const double shard = lp.all / c_.setup.nd * kMasterBytes;
    d = {op(Stream::Comm, Phase::FsdpGather, "param shard H2D (offload)", shard / c_.setup.pcie_bps, d)};
  }
  return gather(k, layer, lp, std::move(d));
}

std::vector<OpId> FsdpEngine::gather(Action::Kind k, std::int64_t, const LayerParams& lp, std::vector<OpId> d) {
  const Layout& L = layout();
  OpId ag = comm(Phase::FsdpGather, k == Action::F ? "param all-gather fwd" : "param all-gather bwd",
                 c_.setup.dp_spec(L, CollOp::AllGather, unit_bytes({lp.all - lp.experts, 0.0})), d);
  c_.prog.ops[static_cast<size_t>(ag)].at_start = {MemCat::GatheredParams, to_bytes(gathered_bytes(lp))};
  if (lp.experts > 0 && sc().parallel.expert_dp() > 1)
    ag = comm(Phase::FsdpGather, k == Action::F ? "expert param all-gather fwd" : "expert param all-gather bwd",
              L.edp_group(CollOp::AllGather, unit_bytes({lp.experts, 0.0})), {ag});
  flush_grad_reduce();  // the previous layer's reduce-scatter queues behind this prefetch
  if (fsdp2_)  // the unit's pre-forward / pre-backward waits for the gather and copies it out
    return {op(Stream::Compute, Phase::Other, "all-gather copy-out (FSDP2)", c_.setup.in.cost.memory_s(2 * unit_bytes(lp)), {ag})};
  return {ag};
}

void FsdpEngine::after_layer(Action::Kind k, std::int64_t layer, OpId done) {
  const LayerParams lp = c_.setup.chunk_layer(vs(), layer);
  if (k == Action::F || k == Action::B) {  // W needs no weights
    const OpId rel = op(Stream::Compute, Phase::Other, "release gathered params", 0, {done});
    c_.prog.ops[static_cast<size_t>(rel)].at_end = {MemCat::GatheredParams, -to_bytes(gathered_bytes(lp))};
    layer_done_.push_back(rel);
  }
  if (c_.setup.grad_sync && k == c_.setup.grad_kind()) reduce(layer, lp, done);
}

void FsdpEngine::reduce(std::int64_t, const LayerParams& lp, OpId done) {
  flush_grad_reduce();
  // FSDP1's flat parameter: the layer's weights are split views of it, so autograd's split
  // backward concatenates their gradients into one flat gradient on the compute stream (read and
  // write it in the parameter dtype); the post-backward hook then, on its own stream, casts it to
  // the reduce dtype when that differs and divides it by the gradient pre-divide factor before the
  // reduce-scatter (torch.distributed.fsdp _runtime_utils._post_backward_hook; FSDP2 copies into
  // its reduce-scatter buffer instead, the copy-in below). Those kernels run on FSDP's
  // post-backward (FSDP2: reduce-scatter) stream beside the next layer's backward, but unlike an
  // NCCL kernel, which holds a few SMs (one per channel), an elementwise kernel over the whole
  // gradient launches blocks for every SM: the two streams take turns on the SMs, so the side
  // kernel costs the compute stream its full time. They are priced on the compute stream, where
  // the next layer's backward waits behind them (the copy stream is for the DMA engines' host
  // transfers, which do run beside the SMs).
  const OpId grad_ready = fsdp1_ ? op(Stream::Compute, Phase::Backward, "flat gradient concat (FSDP1)",
                                      c_.setup.in.cost.memory_s(2 * lp.all * sc().fsdp_param_bytes()), {done})
                                 : done;
  pending_ = PendingReduce{grad_ready, lp};
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
  const double pbytes = lp.all * sc().fsdp_param_bytes();
  const double all_g = gbytes + ebytes;
  const double cast = sc().fsdp_reduce_dtype() != sc().fsdp_param_dtype() ? pbytes + all_g : 0.0;
  const OpId in_op = fsdp2_   ? op(Stream::Compute, Phase::Other, "reduce-scatter copy-in (FSDP2)", u.in.cost.memory_s(pbytes + all_g), {p.grad_ready})
                     : fsdp1_ ? op(Stream::Compute, Phase::Other, "gradient cast and pre-divide (FSDP1)",
                                   u.in.cost.memory_s(cast + 2 * all_g), {p.grad_ready})
                              : p.grad_ready;
  const OpId rs = comm(Phase::DpComm, "grad reduce-scatter", u.dp_spec(L, CollOp::ReduceScatter, gbytes), {in_op});
  const double unsharded = gbytes * (1.0 - 1.0 / u.nd) + ebytes * (1.0 - 1.0 / static_cast<double>(par.expert_dp()));
  c_.prog.ops[static_cast<size_t>(rs)].at_start = {MemCat::Grads, to_bytes(unsharded)};
  c_.prog.ops[static_cast<size_t>(rs)].at_end = {MemCat::Grads, -to_bytes(unsharded)};
  sync_ops_.push_back(rs);
  if (ebytes > 0 && par.expert_dp() > 1)
    sync_ops_.push_back(comm(Phase::DpComm, "expert grad reduce-scatter", L.edp_group(CollOp::ReduceScatter, ebytes), {in_op}));
  if (u.sh.nd < par.dp * par.cp)  // HSDP: all-reduce the shard across replicas
    sync_ops_.push_back(comm(Phase::DpComm, "grad all-reduce (replicas)", L.dpcp_outer(CollOp::AllReduce, u.sh.nd, gbytes / u.nd), {rs}));
  if (u.offload)  // the reduced shard goes to the host for the CPU optimizer
    sync_ops_.push_back(op(Stream::Comm, Phase::DpComm, "grad shard D2H (offload)", lp.all / u.nd * kMasterBytes / u.pcie_bps, {sync_ops_.back()}));
}

void register_fsdp_engines(GradSyncRegistry& r) {
  r.add({"fsdp", "per-layer sharded weights (ZeRO-3, FSDP1 / FSDP2, HSDP, CPU offload): all-gather before use, reduce-scatter gradients",
         "Zhao et al. 2023, 'PyTorch FSDP' (VLDB); torch.distributed.fsdp", make_engine<FsdpEngine>});
  register_deepspeed_zero3_v03_engine(r);
}

}  // namespace parasim
