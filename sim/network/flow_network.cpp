#include "sim/network/flow_network.h"

#include <algorithm>

#include "sim/network/algorithms/algorithms.h"
#include "sim/network/flow_model.h"
#include "sim/topology/builder.h"

namespace parasim {

namespace {
// Ring-type collectives repeat one identical step; a ring over k nodes is simulated on at most
// this many nodes (enough to span several leaf switches) and its per-step time reused.
constexpr std::int64_t kMaxSimNodes = 64;

ClusterSpec sim_cluster(ClusterSpec c) {
  if (c.inter_kind == InterNode::Custom) return c;  // listed link by link: simulated as written
  c.nodes = std::min(c.nodes, kMaxSimNodes);
  return c;
}
}  // namespace

FlowNetwork::FlowNetwork(const Profile& p, const ClusterSpec& c)
    : c_(c), topo_(build_topology(sim_cluster(c), p)), measured_(p, c) {}

std::vector<std::int64_t> FlowNetwork::members(const CollectiveSpec& c, std::int64_t j) const {
  const std::int64_t gpn = c_.gpus_per_node;
  const std::int64_t rpn = std::max<std::int64_t>(1, std::min(c.ranks_per_node, c.ranks));
  const std::int64_t groups = std::max<std::int64_t>(1, std::min(c.groups_per_node, gpn / rpn));
  const std::int64_t nodes = std::min((c.ranks + rpn - 1) / rpn, sim_cluster(c_).nodes);
  std::vector<std::int64_t> m;
  for (std::int64_t n = 0; n < nodes; ++n)
    for (std::int64_t i = 0; i < rpn; ++i) m.push_back(n * gpn + (j + i * groups) % gpn);  // strided, like DP groups
  return m;
}

double FlowNetwork::simulate(const CollectiveSpec& c) const {
  const std::int64_t rpn = std::max<std::int64_t>(1, std::min(c.ranks_per_node, c.ranks));
  const std::int64_t nodes = (c.ranks + rpn - 1) / rpn;
  const std::int64_t groups = std::max<std::int64_t>(1, std::min(c.groups_per_node, c_.gpus_per_node / rpn));
  // Groups beyond what the node's GPUs hold side by side run on the same GPUs (separate
  // communicators at once): their bytes ride on the same flows.
  const double stacked = static_cast<double>(std::max<std::int64_t>(1, c.groups_per_node)) / static_cast<double>(groups);
  const double n = static_cast<double>(c.ranks);
  std::vector<Flow> flows;
  double steps = 1;
  auto add = [&](std::int64_t a, std::int64_t b, double bytes) {
    if (a != b) flows.push_back({topo_.route(a, b), bytes * stacked, 0.0});
  };
  for (std::int64_t j = 0; j < groups; ++j) {
    const auto m = members(c, j);
    const auto k = static_cast<std::int64_t>(m.size());
    switch (c.op) {
      case CollOp::AllReduce:
      case CollOp::AllGather:
      case CollOp::ReduceScatter: {
        steps = c.op == CollOp::AllReduce ? 2 * (n - 1) : n - 1;
        // One ring per channel; multi-node rings get one channel per NIC share and enter each
        // node at a different GPU so that every NIC carries one channel.
        const std::int64_t channels = nodes > 1 ? std::max<std::int64_t>(1, c_.nics_per_node / groups) : 1;
        const double chunk = c.bytes / n / static_cast<double>(channels);
        for (std::int64_t ch = 0; ch < channels; ++ch)
          for (std::int64_t node = 0; node * rpn < k; ++node) {
            const std::int64_t e = ch % rpn;  // this channel enters and leaves every node at member e
            auto at = [&](std::int64_t nd, std::int64_t i) { return m[static_cast<size_t>((nd * rpn) % k + (e + i) % rpn)]; };
            for (std::int64_t i = 0; i + 1 < rpn; ++i) add(at(node, i), at(node, i + 1), chunk);
            if (nodes == 1) {
              add(at(node, rpn - 1), at(node, 0), chunk);  // close the ring inside the node
            } else {
              // NCCL's PXN: the last GPU hands the data over NVLink to the rail-aligned GPU,
              // whose NIC sends it to the same rail on the next node.
              if (rpn > 1) add(at(node, rpn - 1), at(node, 0), chunk);
              add(at(node, 0), at(node + 1, 0), chunk);
            }
          }
        break;
      }
      case CollOp::Broadcast:
        // Pipelined chain: every hop carries the whole message concurrently.
        steps = 1;
        for (std::int64_t i = 0; i + 1 < k; ++i) add(m[static_cast<size_t>(i)], m[static_cast<size_t>(i + 1)], c.bytes);
        break;
      case CollOp::AllToAll:
        steps = 1;
        for (std::int64_t a = 0; a < k; ++a)
          for (std::int64_t b = 0; b < k; ++b) add(m[static_cast<size_t>(a)], m[static_cast<size_t>(b)], c.bytes / n);
        break;
      case CollOp::SendRecv:
        steps = 1;
        add(m.front(), m[std::min<size_t>(1, m.size() - 1)], c.bytes);
        break;
    }
  }
  const FlowRun run = run_flows(flows, topo_.link_gbps);
  const double flow_bw_s = (c.op == CollOp::Broadcast ? 1.0 : steps) * run.makespan_s;
  // Algorithm, protocol and latency as NCCL's tuner chooses them (analytical model, same profile
  // tables and overrides); the flows give the bandwidth part under contention. For a ring the
  // simulated ring replaces the analytical transfer time; tree / NVLS / hierarchical keep their
  // own transfer time scaled by the contention the simulated ring met (flows / uncontended ring).
  const AlgoEstimate choice = measured_.choose(c);
  if (c.op == CollOp::AllToAll || c.op == CollOp::SendRecv || c.op == CollOp::Broadcast)
    return choice.latency_s + flow_bw_s;
  const AlgoEstimate ring = measured_.price(c, {NcclAlgo::Ring, choice.proto});
  const double ring_bw_s = std::max(ring.time_s - ring.latency_s, 1e-30);
  const double ring_simple_bw_s = [&] {
    const AlgoEstimate rs = measured_.price(c, {NcclAlgo::Ring, NcclProto::Simple});
    return std::max(rs.time_s - rs.latency_s, 1e-30);
  }();
  // The flows carry full-rate (Simple) rings; the protocol's bandwidth fraction scales them.
  const double flow_proto_s = flow_bw_s * ring_bw_s / ring_simple_bw_s;
  if (choice.algo == NcclAlgo::Ring) return choice.latency_s + flow_proto_s;
  return choice.latency_s + (choice.time_s - choice.latency_s) * flow_proto_s / ring_bw_s;
}

double FlowNetwork::time_s(const CollectiveSpec& c) const {
  if (c.ranks <= 1 || c.bytes <= 0) return 0.0;
  // An MoE dispatcher's kernels are priced from their per-rank loads (not yet as flows).
  if (c.loads) return measured_.time_s(c);
  // Measured NCCL points of this group shape already include the algorithm, protocol and NVLS
  // choices NCCL made; they win over simulated flows (same rule as the analytical model).
  if (measured_.use_measured(c)) return measured_.time_s(c);
  const auto key = std::make_tuple(static_cast<int>(c.op), c.ranks, c.ranks_per_node, c.groups_per_node, c.bytes);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  const double t = simulate(c);
  cache_.emplace(key, t);
  return t;
}

std::string FlowNetwork::algorithm(const CollectiveSpec& c) const {
  if (c.loads) return measured_.algorithm(c);
  if (measured_.use_measured(c)) return measured_.algorithm(c);
  const AlgoEstimate e = measured_.choose(c);
  const std::string tuned = std::string(nccl_algo_name(e.algo)) + "/" + nccl_proto_name(e.proto);
  switch (c.op) {
    case CollOp::Broadcast: return tuned + " latency, chain flows";
    case CollOp::AllToAll: return tuned + " latency, direct flows";
    case CollOp::SendRecv: return tuned + " latency, p2p flow";
    default:
      return e.algo == NcclAlgo::Ring ? tuned + " over ring flows (one channel per NIC share, PXN)"
                                      : tuned + " (transfer scaled by the contention its ring flows meet)";
  }
}

std::unique_ptr<NetworkModel> make_network(NetworkKind kind, const Profile& p, const ClusterSpec& c) {
  if (kind == NetworkKind::Flow) return std::make_unique<FlowNetwork>(p, c);
  return std::make_unique<AlphaBetaNetwork>(p, c);
}

}  // namespace parasim
