// torch.nn.DataParallel (single process, parameter-server style). Per forward call GPU 0
// broadcasts the parameters to the replicas, each GPU runs its slice of the batch, GPU 0 gathers
// the outputs (logits) and computes the loss for the whole batch, the output gradients are
// scattered back, each GPU runs backward, gradients are reduced onto GPU 0, and GPU 0 alone steps
// the optimizer. Every rank is simulated explicitly: GPU 0 is not like the others.
#include "sim/parallel/emitter.h"

namespace parasim {

Program lower_dataparallel(const LoweringInput& in) {
  const Scenario& sc = in.scenario;
  Program prog;
  Emitter em(in, prog);
  const auto n = static_cast<std::int32_t>(sc.parallel.dp);
  const auto m = static_cast<std::int32_t>(sc.microbatches());
  const ParamCount pc = count_params(sc.model);
  const double params = pc.total();
  const StateBytesPerParam sb = state_bytes(sc.training.dtype, sc.training.optimizer, sc.training.fp32_grad_accumulation);
  const ModelStates full = model_states(params, sb, Sharding{});
  const Layout& L = em.layout();
  for (std::int32_t r = 0; r < n; ++r) {
    SimRank s;
    s.real_rank = r;
    s.role = r == 0 ? "GPU 0 (parameters, loss, optimizer)" : "replica";
    s.static_mem[static_cast<size_t>(MemCat::Weights)] = to_bytes(full.weights);
    s.static_mem[static_cast<size_t>(MemCat::Grads)] = to_bytes(full.grads);
    if (r == 0) s.static_mem[static_cast<size_t>(MemCat::Optimizer)] = to_bytes(full.optimizer);
    s.static_mem[static_cast<size_t>(MemCat::Workspace)] = to_bytes(sc.profile.runtime_reserved_gib.value * kGiB);
    prog.ranks.push_back(s);
  }
  // Output logits of one replica's slice and the fp32 loss buffers GPU 0 builds over all of them.
  const double tokens = in.graph.tokens;
  const double logits = tokens * static_cast<double>(sc.model.vocab) * sc.dtype_bytes();
  const double gathered = static_cast<double>(n - 1) * tokens * static_cast<double>(sc.model.vocab) * (sc.dtype_bytes() + 4.0);
  auto collective = [&](CollOp op, Label label, double bytes, std::vector<std::vector<OpId>> deps, Phase ph) {
    const double t = in.network.time_s(L.group(op, 1, n, bytes));
    std::vector<OpId> members;
    const auto id = static_cast<std::int32_t>(prog.collectives.size());
    for (std::int32_t r = 0; r < n; ++r) {
      const OpId o = em.op(r, Stream::Comm, ph, label, t, deps[static_cast<size_t>(r)]);
      prog.ops[static_cast<size_t>(o)].collective = id;
      members.push_back(o);
    }
    prog.collectives.push_back(members);
    return members;
  };
  std::vector<std::vector<OpId>> prev(static_cast<size_t>(n));
  for (std::int32_t mb = 0; mb < m; ++mb) {
    auto bc = collective(CollOp::Broadcast, "replicate parameters", full.weights, prev, Phase::DpComm);
    std::vector<std::vector<OpId>> fwd_end(static_cast<size_t>(n));
    for (std::int32_t r = 0; r < n; ++r) {
      const auto f = em.forward(r, mb, 0, sc.model.layers, true, true, {bc[static_cast<size_t>(r)]});
      fwd_end[static_cast<size_t>(r)] = {f.last};
    }
    // Gather outputs onto GPU 0 ((n-1) slices over its links), loss over the whole batch there.
    auto ga = collective(CollOp::AllGather, "gather outputs", logits * n, fwd_end, Phase::DpComm);
    const OpId loss = em.op(0, Stream::Compute, Phase::Forward, "loss over gathered outputs",
                            in.cost.memory_s(3.0 * gathered), {ga[0]}, mb);
    prog.ops[static_cast<size_t>(loss)].at_start = {MemCat::Activations, to_bytes(gathered)};
    std::vector<std::vector<OpId>> sc_deps(static_cast<size_t>(n), std::vector<OpId>{});
    for (std::int32_t r = 0; r < n; ++r) sc_deps[static_cast<size_t>(r)] = {r == 0 ? loss : ga[static_cast<size_t>(r)]};
    auto scat = collective(CollOp::Broadcast, "scatter output gradients", logits, sc_deps, Phase::DpComm);
    prog.ops[static_cast<size_t>(scat[0])].at_end = {MemCat::Activations, -to_bytes(gathered)};
    std::vector<std::vector<OpId>> bwd_end(static_cast<size_t>(n));
    for (std::int32_t r = 0; r < n; ++r) {
      const auto b = em.backward(r, mb, 0, sc.model.layers, true, true, false, {scat[static_cast<size_t>(r)]});
      bwd_end[static_cast<size_t>(r)] = {b.last};
    }
    prev = {};
    auto red = collective(CollOp::Broadcast, "reduce gradients to GPU 0", full.grads, bwd_end, Phase::DpComm);
    prev.assign(static_cast<size_t>(n), {});
    for (std::int32_t r = 0; r < n; ++r) prev[static_cast<size_t>(r)] = {red[static_cast<size_t>(r)]};
  }
  const double traffic = optimizer_step_bytes(sb, sc.training.optimizer, sc.training.optimizer_impl);
  em.op(0, Stream::Compute, Phase::Optimizer, "optimizer step (GPU 0)", in.cost.optimizer_s(traffic * params), prev[0]);
  return prog;
}

}  // namespace parasim
