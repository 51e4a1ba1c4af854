// Two-level fat tree: NICs to leaf switches (leaf_ports NICs per leaf), every leaf to every spine.
// A leaf's uplink capacity is its downlink capacity divided by the oversubscription, spread over
// the spines; one leaf needs no spine.
#include <algorithm>

#include "sim/topology/builder.h"

namespace parasim {

void build_fat_tree(Topology& t, const ClusterSpec& c, const Profile& p, const std::vector<NodeNics>& nodes) {
  const double nic = nic_link_gbps(c, p);
  std::vector<TopoVertex> nics;
  for (const auto& n : nodes) nics.insert(nics.end(), n.nics.begin(), n.nics.end());
  if (nics.empty()) return;
  const auto ports = static_cast<size_t>(c.leaf_ports);
  const size_t leaves = (nics.size() + ports - 1) / ports;
  std::vector<TopoVertex> leaf;
  for (size_t l = 0; l < leaves; ++l) leaf.push_back(t.add_vertex(VertexKind::Leaf, -1, static_cast<std::int32_t>(l)));
  for (size_t i = 0; i < nics.size(); ++i) t.add_link(nics[i], leaf[i / ports], nic, 0.0);
  if (leaves == 1) return;
  const auto spines = static_cast<size_t>(c.spines);
  const double up = static_cast<double>(ports) * nic / (c.oversubscription * static_cast<double>(spines));
  std::vector<TopoVertex> spine;
  for (size_t s = 0; s < spines; ++s) spine.push_back(t.add_vertex(VertexKind::Spine, -1, static_cast<std::int32_t>(s)));
  for (auto l : leaf)
    for (auto s : spine) t.add_link(l, s, up, 0.0);
}

}  // namespace parasim
