// Direct all-to-all: every rank sends S/n to every other rank at once; the NVLink part and the
// network part proceed in parallel, the slower sets the time.
#include "sim/network/algorithms/algorithms.h"

#include <algorithm>

namespace parasim {

std::optional<AlgoEstimate> direct_estimate(const AlgoInput& in, NcclProto p) {
  if (in.op != CollOp::AllToAll || p != NcclProto::Simple) return std::nullopt;
  const NcclProtoCost c = proto_cost(in, NcclAlgo::Ring, p);
  const double n = static_cast<double>(in.ranks), g = static_cast<double>(in.per_node);
  const double intra = (g - 1) / n * in.bytes / in.intra_busbw;
  const double inter = in.nodes > 1 ? (n - g) / n * in.bytes / (in.net_busbw / g) : 0.0;
  AlgoEstimate e;
  e.algo = NcclAlgo::Direct;
  e.proto = p;
  e.latency_s = (c.base_us + (in.nodes > 1 ? c.net_step_us : c.nvlink_step_us)) * 1e-6;
  e.time_s = e.latency_s + std::max(intra, inter);
  return e;
}

}  // namespace parasim
