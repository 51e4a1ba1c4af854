// Point-to-point send/recv: one hop over NVLink, or over the sender's NIC share across nodes.
#include "sim/network/algorithms/algorithms.h"

namespace parasim {

std::optional<AlgoEstimate> p2p_estimate(const AlgoInput& in, NcclProto p) {
  if (in.op != CollOp::SendRecv || p != NcclProto::Simple) return std::nullopt;
  const NcclProtoCost c = proto_cost(in, NcclAlgo::Ring, p);
  const bool net = in.nodes > 1;
  AlgoEstimate e;
  e.algo = NcclAlgo::P2p;
  e.proto = p;
  e.latency_s = (net ? c.net_step_us : c.nvlink_step_us) * 1e-6;
  e.time_s = e.latency_s + in.bytes / (net ? in.net_busbw : in.intra_busbw);
  return e;
}

}  // namespace parasim
