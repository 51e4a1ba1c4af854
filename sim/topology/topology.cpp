#include "sim/topology/topology.h"

#include <algorithm>
#include <deque>
#include <sstream>

#include <fmt/format.h>

namespace parasim {

const char* vertex_kind_name(VertexKind k) {
  switch (k) {
    case VertexKind::Gpu: return "gpu";
    case VertexKind::NvSwitch: return "nvswitch";
    case VertexKind::PcieSwitch: return "pcie_switch";
    case VertexKind::Nic: return "nic";
    case VertexKind::Leaf: return "leaf";
    case VertexKind::Rail: return "rail";
    case VertexKind::Spine: return "spine";
    case VertexKind::Switch: return "switch";
  }
  return "?";
}

TopoVertex Topology::add_vertex(VertexKind k, std::int32_t node, std::int32_t index) {
  return boost::add_vertex(VertexProps{k, node, index}, graph);
}

void Topology::add_link(TopoVertex a, TopoVertex b, double gbps, double latency_us) {
  for (auto [u, v] : {std::pair{a, b}, std::pair{b, a}}) {
    const auto id = static_cast<std::int32_t>(link_gbps.size());
    boost::add_edge(u, v, EdgeProps{id, gbps, latency_us}, graph);
    link_gbps.push_back(gbps);
  }
}

// Hop distance to dst (BFS over reversed edges), searched only as far as src: the ECMP walk from
// src (distance D) compares the distances of vertices nearer than D, all final once every vertex
// nearer than D - 1 has been expanded. Only the last destination's search is kept, and resumed for its next source (a
// ring's neighbours mostly share a leaf): a search over the whole fabric per destination grew with
// the square of the nodes (issue 40 item 11).
const std::vector<std::int32_t>& Topology::dist_to(TopoVertex dst, TopoVertex src) const {
  Search& s = search_;
  std::vector<std::int32_t>& d = s.dist;
  if (!s.started || s.dst != dst) {
    s.dst = dst;
    s.started = true;
    if (d.size() != boost::num_vertices(graph)) d.assign(boost::num_vertices(graph), -1);
    for (TopoVertex v : s.reached) d[v] = -1;  // undo the last search only: no pass over the fabric
    s.reached.assign(1, dst);
    s.frontier.assign(1, dst);
    d[dst] = 0;
  }
  while (!s.frontier.empty()) {
    const TopoVertex v = s.frontier.front();
    if (d[src] >= 0 && d[v] >= d[src] - 1) break;  // every vertex nearer than src has its distance
    s.frontier.pop_front();
    if (v != dst && graph[v].kind == VertexKind::Gpu) continue;  // GPUs do not forward traffic
    for (auto [e, end] = boost::in_edges(v, graph); e != end; ++e) {
      const TopoVertex u = boost::source(*e, graph);
      if (d[u] < 0) {
        d[u] = d[v] + 1;
        s.frontier.push_back(u);
        s.reached.push_back(u);
      }
    }
  }
  return d;
}

const std::vector<std::int32_t>& Topology::route(std::int64_t a, std::int64_t b) const {
  const auto key = std::make_pair(a, b);
  auto it = route_cache_.find(key);
  if (it != route_cache_.end()) return it->second;
  std::vector<std::int32_t> path;
  if (a != b) {
    const TopoVertex dst = gpu[static_cast<size_t>(b)];
    TopoVertex v = gpu[static_cast<size_t>(a)];
    const auto& d = dist_to(dst, v);
    if (d[v] < 0) throw ConfigError(fmt::format("topology: no path from GPU {} to GPU {}", a, b));
    // ECMP: among next hops one step closer, pick by a hash of (src, dst): deterministic and spread.
    std::uint64_t h = static_cast<std::uint64_t>(a) * 0x9E3779B97F4A7C15ULL ^ static_cast<std::uint64_t>(b) * 0xC2B2AE3D27D4EB4FULL;
    while (v != dst) {
      std::vector<std::pair<TopoVertex, std::int32_t>> next;
      for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e) {
        const TopoVertex w = boost::target(*e, graph);
        const auto& wp = graph[w];
        // Only the destination GPU may be entered: GPUs do not forward.
        if (d[w] == d[v] - 1 && (wp.kind != VertexKind::Gpu || w == dst)) next.push_back({w, graph[*e].id});
      }
      if (next.empty()) throw ConfigError(fmt::format("topology: no usable path from GPU {} to GPU {}", a, b));
      h ^= h >> 33;
      h *= 0xFF51AFD7ED558CCDULL;
      const auto& pick = next[static_cast<size_t>(h % next.size())];
      path.push_back(pick.second);
      v = pick.first;
    }
  }
  return route_cache_.emplace(key, std::move(path)).first->second;
}

std::string Topology::describe_route(std::int64_t a, std::int64_t b) const {
  std::string s = fmt::format("gpu {} -> gpu {}:", a, b);
  for (auto id : route(a, b)) {
    for (auto [e, end] = boost::edges(graph); e != end; ++e)
      if (graph[*e].id == id) {
        const auto& u = graph[boost::source(*e, graph)];
        const auto& v = graph[boost::target(*e, graph)];
        s += fmt::format(" [{}{} -> {}{} {:.0f} GB/s]", vertex_kind_name(u.kind), u.index, vertex_kind_name(v.kind), v.index, graph[*e].gbps);
        break;
      }
  }
  return s;
}

std::string Topology::summary() const {
  std::map<VertexKind, int> counts;
  for (auto [v, end] = boost::vertices(graph); v != end; ++v) ++counts[graph[*v].kind];
  std::ostringstream os;
  os << fmt::format("topology: {} GPUs, {} per node, intra-node {}, inter-node {}\n", gpus(), gpus_per_node, intra_kind, inter_kind);
  for (const auto& [k, n] : counts) os << fmt::format("  {:<12} {}\n", vertex_kind_name(k), n);
  os << fmt::format("  {:<12} {} (directed)\n", "links", link_gbps.size());
  std::map<double, int> speeds;
  for (double g : link_gbps) ++speeds[g];
  for (const auto& [g, n] : speeds) os << fmt::format("    {:>8.1f} GB/s x {}\n", g, n);
  return os.str();
}

std::string Topology::dot() const {
  std::ostringstream os;
  os << "digraph cluster {\n  node [shape=box];\n";
  for (auto [v, end] = boost::vertices(graph); v != end; ++v) {
    const auto& p = graph[*v];
    os << fmt::format("  v{} [label=\"{} {}{}\"];\n", *v, vertex_kind_name(p.kind), p.index, p.node >= 0 ? fmt::format(" (node {})", p.node) : "");
  }
  for (auto [e, end] = boost::edges(graph); e != end; ++e)
    os << fmt::format("  v{} -> v{} [label=\"{:.0f}\"];\n", boost::source(*e, graph), boost::target(*e, graph), graph[*e].gbps);
  os << "}\n";
  return os.str();
}

}  // namespace parasim
