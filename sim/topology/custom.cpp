// Custom fabric: the scenario lists switches and links (NIC-to-switch and switch-to-switch);
// routes are the graph's shortest paths with deterministic ECMP, like the built-in fabrics.
#include <map>
#include <regex>
#include <set>

#include "sim/topology/builder.h"

namespace parasim {

void build_custom(Topology& t, const ClusterSpec& c, const Profile& p, const std::vector<NodeNics>& nodes) {
  const CustomFabric& f = c.custom;
  std::map<std::string, TopoVertex> sw;
  for (size_t i = 0; i < f.switches.size(); ++i)
    sw[f.switches[i]] = t.add_vertex(VertexKind::Switch, -1, static_cast<std::int32_t>(i));
  static const std::regex nic_re(R"(^node(\d+)\.nic(\d+)$)");
  std::set<std::pair<std::int64_t, std::int64_t>> linked;
  auto endpoint = [&](const std::string& name, const std::string& where) -> TopoVertex {
    std::smatch m;
    if (std::regex_match(name, m, nic_re)) {
      const std::int64_t node = std::stoll(m[1]), nic = std::stoll(m[2]);
      if (node >= c.nodes || nic >= c.nics_per_node || static_cast<size_t>(node) >= nodes.size())
        throw_config(f.file, where, "\"" + name + "\" is outside the cluster (" + std::to_string(c.nodes) + " nodes of " +
                                        std::to_string(c.nics_per_node) + " NICs, counted from 0)");
      linked.insert({node, nic});
      return nodes[static_cast<size_t>(node)].nics[static_cast<size_t>(nic)];
    }
    auto it = sw.find(name);
    if (it == sw.end()) throw_config(f.file, where, "unknown endpoint \"" + name + "\": expected a listed switch or node<i>.nic<j>");
    return it->second;
  };
  for (const auto& l : f.links) {
    const TopoVertex a = endpoint(l.a, l.where + "/a"), b = endpoint(l.b, l.where + "/b");
    if (a == b) throw_config(f.file, l.where, "a link needs two different endpoints");
    t.add_link(a, b, l.gbps * p.inter_bus_efficiency.value, l.latency_us);
  }
  for (std::int64_t n = 0; n < c.nodes; ++n)
    for (std::int64_t i = 0; i < c.nics_per_node; ++i)
      if (!linked.count({n, i}))
        throw_config(f.file, f.pointer + "/links", "node" + std::to_string(n) + ".nic" + std::to_string(i) + " is not linked to the fabric");
  // Every node must reach node 0.
  for (std::int64_t n = 1; n < c.nodes; ++n)
    try {
      t.route(n * c.gpus_per_node, 0);
    } catch (const ConfigError&) {
      throw_config(f.file, f.pointer + "/links", "node " + std::to_string(n) + " cannot reach node 0 through the listed links");
    }
}

}  // namespace parasim
