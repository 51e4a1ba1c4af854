// Ring: n-1 steps (all-gather, reduce-scatter, broadcast as a pipelined chain) or 2(n-1) steps
// (all-reduce = reduce-scatter + all-gather), each moving S/n per rank. Across nodes the ring
// leaves each node once per channel through the NICs, so 2(nodes-1) of the all-reduce steps
// are network hops and the rest NVLink hops (NCCL's ring latency model).
#include "sim/network/algorithms/algorithms.h"

#include <algorithm>

namespace parasim {

std::optional<AlgoEstimate> ring_estimate(const AlgoInput& in, NcclProto p) {
  if (in.op == CollOp::AllToAll || in.op == CollOp::SendRecv) return std::nullopt;
  const NcclProtoCost c = proto_cost(in, NcclAlgo::Ring, p);
  const double n = static_cast<double>(in.ranks), nodes = static_cast<double>(in.nodes);
  const bool ar = in.op == CollOp::AllReduce;
  const double steps = ar ? 2 * (n - 1) : n - 1;
  const double inter_steps = ar ? 2 * (nodes - 1) : nodes - 1;
  double busbw = in.nodes > 1 ? std::min(in.per_node > 1 ? in.intra_busbw : 1e300, in.net_busbw) : in.intra_busbw;
  busbw *= c.bw_fraction;
  AlgoEstimate e;
  e.algo = NcclAlgo::Ring;
  e.proto = p;
  e.latency_s = (c.base_us + (steps - inter_steps) * c.nvlink_step_us + inter_steps * c.net_step_us) * 1e-6;
  e.time_s = e.latency_s + bus_factor(in.op, in.ranks) * in.bytes / busbw;
  return e;
}

}  // namespace parasim
