// Rail-optimized fabric: NIC r of every node goes to rail switch r (leaf_ports nodes per rail
// switch); rail switches of all groups meet at spines. Same-rail traffic crosses one switch.
#include <algorithm>

#include "sim/topology/builder.h"

namespace parasim {

void build_rail_optimized(Topology& t, const ClusterSpec& c, const Profile& p, const std::vector<NodeNics>& nodes) {
  const double nic = nic_link_gbps(c, p);
  if (nodes.empty() || nodes.front().nics.empty()) return;
  const auto ports = static_cast<size_t>(c.leaf_ports);
  const size_t rails = nodes.front().nics.size();
  const size_t groups = (nodes.size() + ports - 1) / ports;
  std::vector<std::vector<TopoVertex>> rail(groups);
  for (size_t g = 0; g < groups; ++g)
    for (size_t r = 0; r < rails; ++r) rail[g].push_back(t.add_vertex(VertexKind::Rail, -1, static_cast<std::int32_t>(g * rails + r)));
  for (size_t n = 0; n < nodes.size(); ++n)
    for (size_t r = 0; r < rails; ++r) t.add_link(nodes[n].nics[r], rail[n / ports][r], nic, 0.0);
  // Spines join all rail switches (cross-rail and cross-group traffic).
  const auto spines = static_cast<size_t>(c.spines);
  const double up = static_cast<double>(ports) * nic / (c.oversubscription * static_cast<double>(spines));
  if (groups * rails <= 1) return;
  std::vector<TopoVertex> spine;
  for (size_t s = 0; s < spines; ++s) spine.push_back(t.add_vertex(VertexKind::Spine, -1, static_cast<std::int32_t>(s)));
  for (auto& g : rail)
    for (auto r : g)
      for (auto s : spine) t.add_link(r, s, up, 0.0);
}

}  // namespace parasim
