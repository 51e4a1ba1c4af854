// The flow-level network model: collectives decomposed by algorithm (ring with one channel per
// NIC share, pipelined chain broadcast, direct all-to-all, point-to-point) into flows on the
// routed topology, concurrent groups of the same collective included so that they contend for
// shared NICs and switch uplinks. Algorithm, protocol and latency follow NCCL's tuner (the
// analytical model's); a tree or NVLS choice keeps its transfer time scaled by the contention its
// ring flows meet. Single-node groups with measured profile points use them.
#pragma once
#include <map>
#include <memory>
#include <tuple>

#include "sim/network/network_model.h"
#include "sim/topology/topology.h"

namespace parasim {

class FlowNetwork final : public NetworkModel {
 public:
  FlowNetwork(const Profile& p, const ClusterSpec& c);
  std::string name() const override { return name_of(NetworkKind::Flow); }
  double time_s(const CollectiveSpec& c) const override;
  std::string algorithm(const CollectiveSpec& c) const override;
  const Topology& topology() const { return topo_; }

  // Members (GPU ranks) of group j of a collective spec placed from node 0 on.
  std::vector<std::int64_t> members(const CollectiveSpec& c, std::int64_t j) const;

 private:
  double simulate(const CollectiveSpec& c) const;
  ClusterSpec c_;
  Topology topo_;
  AlphaBetaNetwork measured_;
  mutable std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, double>, double> cache_;
};

// Selects the network model a scenario asks for (network_kinds() in sim/scenario/choices.h).
std::unique_ptr<NetworkModel> make_network(NetworkKind kind, const Profile& p, const ClusterSpec& c);

}  // namespace parasim
