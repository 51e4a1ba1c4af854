// Node interiors. nvswitch (DGX/HGX): every GPU has one NVLink-bundle to the node's NVSwitch
// fabric at the per-direction NVLink rate. pcie: GPUs share a PCIe switch at the PCIe rate.
// Capacities are datasheet rates times the profile's achievable efficiency.
#include "sim/topology/builder.h"

#include <algorithm>

namespace parasim {

double nic_link_gbps(const ClusterSpec& c, const Profile& p) { return c.nic_gbps * p.inter_bus_efficiency.value; }

NodeNics attach_nics(Topology& t, const ClusterSpec& c, const Profile& p, std::int32_t node, const std::vector<TopoVertex>& gpus) {
  NodeNics n;
  const auto nics = static_cast<std::int32_t>(c.nics_per_node);
  for (std::int32_t i = 0; i < nics; ++i) n.nics.push_back(t.add_vertex(VertexKind::Nic, node, i));
  // GPU g uses NIC g * nics / gpus (GPUDirect RDMA through the shared PCIe switch).
  for (size_t g = 0; g < gpus.size(); ++g) {
    const size_t nic = g * static_cast<size_t>(nics) / gpus.size();
    t.add_link(gpus[g], n.nics[nic], p.pcie_gbps.value, 0.0);
  }
  return n;
}

namespace {
// One node's GPUs, each linked to the node's switch at `gbps`.
std::vector<TopoVertex> node_gpus(Topology& t, const ClusterSpec& c, const Profile& p, std::int32_t node, TopoVertex sw, double gbps) {
  std::vector<TopoVertex> gpus;
  for (std::int32_t g = 0; g < c.gpus_per_node; ++g) {
    gpus.push_back(t.add_vertex(VertexKind::Gpu, node, static_cast<std::int32_t>(node * c.gpus_per_node + g)));
    t.gpu.push_back(gpus.back());
    t.add_link(gpus.back(), sw, gbps, p.intra_alpha_us.value);
  }
  return gpus;
}
}  // namespace

std::vector<NodeNics> build_nvswitch_nodes(Topology& t, const ClusterSpec& c, const Profile& p) {
  const double nvlink = (c.intra_gbps > 0 ? c.intra_gbps : p.nvlink_gbps.value) * p.intra_bus_efficiency.value;
  std::vector<NodeNics> out;
  for (std::int32_t node = 0; node < c.nodes; ++node) {
    const auto gpus = node_gpus(t, c, p, node, t.add_vertex(VertexKind::NvSwitch, node, node), nvlink);
    out.push_back(c.nodes > 1 ? attach_nics(t, c, p, node, gpus) : NodeNics{});
  }
  return out;
}

std::vector<NodeNics> build_pcie_nodes(Topology& t, const ClusterSpec& c, const Profile& p) {
  std::vector<NodeNics> out;
  for (std::int32_t node = 0; node < c.nodes; ++node) {
    const TopoVertex sw = t.add_vertex(VertexKind::PcieSwitch, node, node);
    node_gpus(t, c, p, node, sw, p.pcie_gbps.value);
    NodeNics n;
    if (c.nodes > 1)
      for (std::int32_t i = 0; i < c.nics_per_node; ++i) {
        n.nics.push_back(t.add_vertex(VertexKind::Nic, node, i));
        t.add_link(sw, n.nics.back(), p.pcie_gbps.value, 0.0);
      }
    out.push_back(n);
  }
  return out;
}

std::int64_t default_nics_per_node(const Profile& p, std::int64_t gpus_per_node) {
  return std::min(static_cast<std::int64_t>(p.node_nics.value), gpus_per_node);
}

}  // namespace parasim
