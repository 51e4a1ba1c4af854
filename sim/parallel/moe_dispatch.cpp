#include "sim/parallel/moe_dispatch.h"

#include <algorithm>

#include "sim/parallel/emitter.h"

namespace parasim {

double hit_probability(std::int64_t experts, std::int64_t held, std::int64_t top_k) {
  // C(E - e, k) / C(E, k) = prod_{i<k} (E - e - i) / (E - i): none of the k draws lands on the e.
  double miss = 1.0;
  for (std::int64_t i = 0; i < top_k && miss > 0; ++i)
    miss *= std::max<double>(0.0, static_cast<double>(experts - held - i)) / static_cast<double>(experts - i);
  return 1.0 - miss;
}

DispatchTraffic dispatch_traffic(MoeDispatcher d, const DispatchShape& s) {
  DispatchTraffic t;
  const std::int64_t g = std::max<std::int64_t>(1, std::min(s.ranks_per_node, s.ranks));
  t.ranks_per_node = g;
  t.nodes = (s.ranks + g - 1) / g;
  const double n = static_cast<double>(s.ranks), gd = static_cast<double>(g), tok = s.bytes;
  if (d == MoeDispatcher::AllToAll) {
    // A copy per routed expert: k copies spread evenly over the ranks, each sent straight to its rank.
    t.to_each_rank = tok * static_cast<double>(s.top_k) / n * s.load;
    t.nic_per_node = gd * t.to_each_rank;
    t.nvlink = (gd - 1) * t.to_each_rank;
    return t;
  }
  // DeepEP / HybridEP: one copy per destination rank, one per destination node.
  const std::int64_t local = s.experts / s.ranks;
  const double p_rank = std::min(1.0, hit_probability(s.experts, local, s.top_k) * s.load);
  const double p_node = std::min(1.0, hit_probability(s.experts, local * g, s.top_k) * s.load);
  t.to_each_rank = tok * p_rank;
  t.nic_per_node = tok * p_node;
  // Its own tokens to the other g - 1 ranks of its node, and, for each other node's peer, that
  // peer's tokens to the g - 1 ranks here other than itself.
  const double nodes = static_cast<double>(t.nodes);
  t.nvlink = (gd - 1) * t.to_each_rank * nodes;
  return t;
}

DispatchRates dispatch_rates(const Profile& p, IntraNode intra, MoeDispatcher d, std::int64_t nodes, std::int64_t ranks_per_node) {
  DispatchRates r;
  if (d == MoeDispatcher::AllToAll) return r;
  if (nodes > 1) r.nic = p.moe_dispatch_rdma_efficiency(d, nodes);
  if (intra != IntraNode::Pcie && ranks_per_node > 1) r.nvlink = p.moe_dispatch_nvlink_efficiency(d, ranks_per_node);
  return r;
}

ScenarioDispatch scenario_dispatch(const Scenario& sc) {
  const CollectiveSpec group = make_layout(sc).ep_group(CollOp::AllToAll, 1);
  ScenarioDispatch out{group.nodes(), group.per_node(), {}};
  if (sc.model.moe && sc.parallel.ep > 1)
    out.rates = dispatch_rates(sc.profile, sc.cluster.intra_kind, sc.parallel.moe_dispatcher, out.nodes, out.ranks_per_node);
  return out;
}

}  // namespace parasim
