// Double binary tree all-reduce (NCCL >= 2.4): a chain through the GPUs of each node and two
// complementary binary trees across nodes, each carrying half the data. Every rank sends and
// receives about S per direction (reduce up, broadcast down), so the algorithm bandwidth is
// half the bus bandwidth; latency grows with log2(nodes) network hops instead of nodes.
#include "sim/network/algorithms/algorithms.h"

#include <algorithm>
#include <cmath>

namespace parasim {

std::optional<AlgoEstimate> tree_estimate(const AlgoInput& in, NcclProto p) {
  if (in.op != CollOp::AllReduce) return std::nullopt;
  const NcclProtoCost c = proto_cost(in, NcclAlgo::Tree, p);
  double busbw = in.nodes > 1 ? std::min(in.per_node > 1 ? in.intra_busbw : 1e300, in.net_busbw) : in.intra_busbw;
  busbw *= c.bw_fraction;
  const double depth = std::ceil(std::log2(static_cast<double>(std::max<std::int64_t>(1, in.nodes))));
  AlgoEstimate e;
  e.algo = NcclAlgo::Tree;
  e.proto = p;
  e.latency_s = (c.base_us + 2 * (static_cast<double>(in.per_node - 1) * c.nvlink_step_us + depth * c.net_step_us)) * 1e-6;
  e.time_s = e.latency_s + in.bytes / (0.5 * busbw);
  return e;
}

}  // namespace parasim
