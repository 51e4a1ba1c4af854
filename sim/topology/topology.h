// The cluster as a Boost.Graph graph: GPUs, NVSwitches / PCIe switches, NICs, leaf, rail and spine
// switches; one directed edge per link direction with its capacity (achievable GB/s, from the
// profile) and latency. Routes are shortest paths with deterministic ECMP among equal next hops,
// computed on demand and cached.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "calibrate/profile/profile.h"
#include "sim/scenario/scenario.h"

namespace parasim {

enum class VertexKind : std::uint8_t { Gpu, NvSwitch, PcieSwitch, Nic, Leaf, Rail, Spine, Switch };
const char* vertex_kind_name(VertexKind k);

struct VertexProps {
  VertexKind kind = VertexKind::Gpu;
  std::int32_t node = -1;   // server index, -1 for fabric switches
  std::int32_t index = 0;   // GPU rank, NIC index within node, switch index
};
struct EdgeProps {
  std::int32_t id = 0;      // dense link id (for the flow model)
  double gbps = 0;          // capacity per direction, GB/s (achievable)
  double latency_us = 0;    // per-hop latency; the network models take alpha from the profile
};

using TopoGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, VertexProps, EdgeProps>;
using TopoVertex = boost::graph_traits<TopoGraph>::vertex_descriptor;

class Topology {
 public:
  TopoGraph graph;
  std::vector<TopoVertex> gpu;  // vertex of each GPU rank
  std::vector<double> link_gbps;  // by link id
  std::int64_t gpus_per_node = 8;
  std::string intra_kind, inter_kind;

  // Link ids from GPU a to GPU b (empty when a == b). Cached.
  const std::vector<std::int32_t>& route(std::int64_t a, std::int64_t b) const;
  std::int64_t gpus() const { return static_cast<std::int64_t>(gpu.size()); }
  std::string summary() const;
  std::string dot() const;
  std::string describe_route(std::int64_t a, std::int64_t b) const;

  TopoVertex add_vertex(VertexKind k, std::int32_t node, std::int32_t index);
  // A physical link: two directed edges.
  void add_link(TopoVertex a, TopoVertex b, double gbps, double latency_us);

 private:
  // Hop distances to dst, final for src and every vertex nearer than src (the ECMP walk from src
  // compares no others).
  const std::vector<std::int32_t>& dist_to(TopoVertex dst, TopoVertex src) const;
  // The breadth-first search towards the last destination asked for, paused where it last stopped:
  // the next source for the same destination resumes it.
  struct Search {
    TopoVertex dst{};
    bool started = false;
    std::vector<std::int32_t> dist;  // -1: not reached yet
    std::deque<TopoVertex> frontier;
    std::vector<TopoVertex> reached;  // the vertices with a distance
  };
  mutable Search search_;
  mutable std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int32_t>> route_cache_;
};

// Builds the topology of a scenario's cluster: intra-node kind (nvswitch | pcie) and inter-node
// kind (fat_tree | rail_optimized), with the profile's achievable efficiencies applied to the
// datasheet link rates.
Topology build_topology(const ClusterSpec& c, const Profile& p);

}  // namespace parasim
