// Direct all-to-all: every rank sends S/n to every other rank at once; the NVLink part and the
// network part proceed in parallel, the slower sets the time. An MoE dispatcher's kernels
// (DeepEP, HybridEP) give their own per-rank loads instead of the even spread (sim/parallel/
// moe_dispatch.h); they move data over the same links, their NVLink and RDMA legs concurrently
// (DeepEP README: NVLink-to-RDMA forwarding overlapped), so the same rule prices them.
#include "sim/network/algorithms/algorithms.h"

#include <algorithm>

namespace parasim {

std::optional<AlgoEstimate> direct_estimate(const AlgoInput& in, NcclProto p) {
  if (in.op != CollOp::AllToAll || p != NcclProto::Simple) return std::nullopt;
  const NcclProtoCost c = proto_cost(in, NcclAlgo::Ring, p);
  const double n = static_cast<double>(in.ranks), g = static_cast<double>(in.per_node);
  const double nvlink = in.loads ? in.loads->nvlink : (g - 1) / n * in.bytes;
  const double nic = in.loads ? in.loads->nic : (n - g) / n * in.bytes;
  const double intra = nvlink / in.intra_busbw;
  const double inter = in.nodes > 1 ? nic / (in.net_busbw / g) : 0.0;
  AlgoEstimate e;
  e.algo = NcclAlgo::Direct;
  e.proto = p;
  e.latency_s = (c.base_us + (in.nodes > 1 ? c.net_step_us : c.nvlink_step_us)) * 1e-6;
  e.time_s = e.latency_s + std::max(intra, inter);
  return e;
}

}  // namespace parasim
