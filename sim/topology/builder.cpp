#include "sim/topology/builder.h"

namespace parasim {

Topology build_topology(const ClusterSpec& c, const Profile& p) {
  Topology t;
  t.gpus_per_node = c.gpus_per_node;
  t.intra_kind = name_of(c.intra_kind);
  t.inter_kind = c.nodes > 1 ? name_of(c.inter_kind) : "none";
  const auto nodes = c.intra_kind == IntraNode::Pcie ? build_pcie_nodes(t, c, p) : build_nvswitch_nodes(t, c, p);
  if (c.nodes > 1) {
    if (c.inter_kind == InterNode::RailOptimized) build_rail_optimized(t, c, p, nodes);
    else if (c.inter_kind == InterNode::Custom) build_custom(t, c, p, nodes);
    else build_fat_tree(t, c, p, nodes);
  }
  return t;
}

}  // namespace parasim
