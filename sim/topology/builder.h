// Topology builders, one file each: node interiors (nvswitch, pcie) and fabrics (fat_tree,
// rail_optimized). Each adds vertices and links to a Topology.
#pragma once
#include "sim/topology/topology.h"

namespace parasim {

struct NodeNics {
  std::vector<TopoVertex> nics;  // per node: its NICs
};

// Node interiors: GPUs, their switch, NICs hung off the GPUs' PCIe. Returns each node's NICs.
std::vector<NodeNics> build_nvswitch_nodes(Topology& t, const ClusterSpec& c, const Profile& p);
std::vector<NodeNics> build_pcie_nodes(Topology& t, const ClusterSpec& c, const Profile& p);
// Fabrics joining the nodes' NICs.
void build_fat_tree(Topology& t, const ClusterSpec& c, const Profile& p, const std::vector<NodeNics>& nodes);
void build_rail_optimized(Topology& t, const ClusterSpec& c, const Profile& p, const std::vector<NodeNics>& nodes);
// Switches and links listed in the scenario; throws ConfigError (file, JSON pointer) on an
// unknown endpoint, an unlinked NIC or a node that cannot reach the others.
void build_custom(Topology& t, const ClusterSpec& c, const Profile& p, const std::vector<NodeNics>& nodes);

// Shared by node builders: NICs of one node attached to its GPUs over PCIe.
NodeNics attach_nics(Topology& t, const ClusterSpec& c, const Profile& p, std::int32_t node, const std::vector<TopoVertex>& gpus);
double nic_link_gbps(const ClusterSpec& c, const Profile& p);
// The NICs a node has when the scenario does not say: the profile's reference node's NIC per GPU
// (DGX/HGX H100 8 for 8, an NVL72 rack 72 for 72; the V100's DGX-2, 8 for 16, is taken as one per
// GPU too), up to that node's NIC count. A node of fewer GPUs gets fewer NICs.
std::int64_t default_nics_per_node(const Profile& p, std::int64_t gpus_per_node);

}  // namespace parasim
