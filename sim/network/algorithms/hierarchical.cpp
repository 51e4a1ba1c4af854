// Hierarchical multi-node collective: reduce-scatter inside each node over NVLink, the
// inter-node collective on each GPU's 1/g shard across its rail (all rails at once), then
// all-gather inside the node. All-gather and reduce-scatter run the two halves that apply.
#include "sim/network/algorithms/algorithms.h"

namespace parasim {

std::optional<AlgoEstimate> hierarchical_estimate(const AlgoInput& in, NcclProto p) {
  if (in.nodes < 2 || in.per_node < 2) return std::nullopt;
  if (in.op != CollOp::AllReduce && in.op != CollOp::AllGather && in.op != CollOp::ReduceScatter) return std::nullopt;
  const NcclProtoCost c = proto_cost(in, NcclAlgo::Ring, p);
  const double g = static_cast<double>(in.per_node), nodes = static_cast<double>(in.nodes);
  const double intra_bw = in.intra_busbw * c.bw_fraction;
  const double rail_bw = in.net_busbw / g * c.bw_fraction;  // each GPU's share of the node's NICs
  // Intra-node phase on the full buffer (RS for AR/RS, AG for AR/AG): (g-1)/g * S at NVLink rate.
  const double intra_phase = (g - 1) / g * in.bytes / intra_bw + c.base_us * 1e-6 + (g - 1) * c.nvlink_step_us * 1e-6;
  // Inter-node phase on the S/g shard over `nodes` ranks of one rail.
  const double shard = in.bytes / g;
  const double inter_factor = in.op == CollOp::AllReduce ? 2 * (nodes - 1) / nodes : (nodes - 1) / nodes;
  const double inter_steps = in.op == CollOp::AllReduce ? 2 * (nodes - 1) : nodes - 1;
  const double inter_phase = inter_factor * shard / rail_bw + inter_steps * c.net_step_us * 1e-6;
  const double phases = in.op == CollOp::AllReduce ? 2 : 1;
  AlgoEstimate e;
  e.algo = NcclAlgo::Hierarchical;
  e.proto = p;
  e.latency_s = phases * (c.base_us + (g - 1) * c.nvlink_step_us) * 1e-6 + inter_steps * c.net_step_us * 1e-6;
  e.time_s = phases * intra_phase + inter_phase;
  return e;
}

}  // namespace parasim
