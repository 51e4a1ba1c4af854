// NVLink SHARP (NVLS) all-reduce inside an NVSwitch node: the switch reduces and multicasts, so
// each GPU moves about S/n each way and the rate is set by the switch, not by n. The profile
// gives the measured algorithm bandwidth and the smallest group NCCL runs it on.
#include "sim/network/algorithms/algorithms.h"

namespace parasim {

std::optional<AlgoEstimate> nvls_estimate(const AlgoInput& in, NcclProto p) {
  const NcclTuning* t = in.tuning;
  if (in.op != CollOp::AllReduce || p != NcclProto::Simple || in.nodes != 1 || !in.nvswitch || !t || !t->present) return std::nullopt;
  if (t->nvls_algbw_gbps.value <= 0 || static_cast<double>(in.ranks) < t->nvls_min_ranks.value) return std::nullopt;
  const NcclProtoCost c = proto_cost(in, NcclAlgo::Ring, p);
  AlgoEstimate e;
  e.algo = NcclAlgo::Nvls;
  e.proto = p;
  e.latency_s = (c.base_us + 2 * c.nvlink_step_us) * 1e-6;  // one hop up to the switch, one down
  e.time_s = e.latency_s + in.bytes / (t->nvls_algbw_gbps.value * 1e9);
  return e;
}

}  // namespace parasim
