#include <gtest/gtest.h>

#include <algorithm>

#include "../test_util.h"
#include "sim/network/algorithms/algorithms.h"

namespace parasim {
namespace {

Profile a100() { return load_profile(test::data_dir(), "a100-sxm4-80g", "test"); }
// Without NCCL's tables the analytical model is the uniform alpha-beta ring of the textbooks.
Profile a100_uniform() {
  Profile p = a100();
  p.nccl = NcclTuning{};
  return p;
}

TEST(AlphaBeta, UniformRingAllReduceWithoutMeasuredPoints) {
  Profile p = a100_uniform();
  p.collective_points.clear();
  ClusterSpec c;
  const AlphaBetaNetwork net(p, c);
  const double S = 256e6, n = 4, alpha = p.intra_alpha_us.value * 1e-6;
  const double B = p.nvlink_gbps.value * 1e9 * p.intra_bus_efficiency.value;
  CollectiveSpec s{CollOp::AllReduce, 4, 8, 2, S};
  // Ring: 2(n-1) steps of alpha + S/(n*B) each.
  EXPECT_NEAR(net.time_s(s), 2 * (n - 1) * (alpha + S / (n * B)), 1e-12);
  s.op = CollOp::AllGather;
  EXPECT_NEAR(net.time_s(s), (n - 1) * (alpha + S / (n * B)), 1e-12);
}

TEST(AlphaBeta, PcieNodesUsePcieBandwidthNotNvlinkPoints) {
  const Profile p = a100_uniform();
  ClusterSpec c;
  c.intra_kind = IntraNode::Pcie;
  const AlphaBetaNetwork net(p, c);
  const double S = 1e9, n = 8, alpha = p.intra_alpha_us.value * 1e-6;
  // Ring over PCIe links at the profile's PCIe rate: 2(n-1)(alpha + S/(n*B_pcie)).
  EXPECT_NEAR(net.time_s({CollOp::AllReduce, 8, 8, 1, S}), 2 * (n - 1) * (alpha + S / (n * p.pcie_gbps.value * 1e9)), 1e-9);
}

TEST(AlphaBeta, MeasuredPointsAreReproduced) {
  const Profile p = a100();
  const AlphaBetaNetwork net(p, ClusterSpec{});
  for (const auto& pt : p.collective_points) {
    CollectiveSpec s{CollOp::AllReduce, pt.ranks, 8, 1, pt.bytes};
    EXPECT_NEAR(net.time_s(s) / pt.time_s, 1.0, 1e-9) << pt.bytes;
  }
}

// A100 nodes have no NVLink SHARP: every group inside the node runs NCCL's ring over the same
// switch ports, so a 2- or 4-GPU group (tensor parallel inside a node) is priced from the 8-GPU
// measured curve at the same per-rank chunk, bus bandwidth for bus bandwidth.
TEST(AlphaBeta, SubNodeGroupsUseTheNodesMeasuredCurveAtTheSameChunk) {
  const Profile p = a100();
  ASSERT_EQ(p.nccl.nvls_algbw_gbps.value, 0.0);
  const AlphaBetaNetwork net(p, ClusterSpec{});
  const auto busbw8 = [&](double bytes) { return 2.0 * 7 / 8 * bytes / net.time_s({CollOp::AllReduce, 8, 8, 1, bytes}); };
  for (const double n : {2.0, 4.0})
    for (const double S : {4e6, 16e6, 64e6, 256e6}) {
      const auto ranks = static_cast<std::int64_t>(n);
      EXPECT_NEAR(net.time_s({CollOp::AllReduce, ranks, 8, 8 / ranks, S}) / (2 * (n - 1) / n * S / busbw8(S * 8 / n)), 1.0, 1e-9) << n << " " << S;
      EXPECT_EQ(net.algorithm({CollOp::AllReduce, ranks, 8, 8 / ranks, S}), "measured (NCCL's choice on this group shape)");
    }
  // Without the node's curve the same group falls back to the tuner, which misses NCCL's bandwidth
  // ramp: at 64 MB on 4 GPUs the measured curve is the slower one.
  Profile bare = p;
  bare.collective_points.clear();
  const AlphaBetaNetwork tuner(bare, ClusterSpec{});
  EXPECT_GT(net.time_s({CollOp::AllReduce, 4, 8, 2, 64e6}), 1.1 * tuner.time_s({CollOp::AllReduce, 4, 8, 2, 64e6}));
}

// Where the node runs NVLink SHARP, its 8-GPU all-reduce curve is NVLS and does not stand for a
// smaller group's ring (or a 5-7 GPU NVLS group, whose bus bandwidth is lower): the tuner prices them.
TEST(AlphaBeta, SubNodeGroupsOnNvlsNodesAreLeftToTheTuner) {
  const Profile p = load_profile(test::data_dir(), "h200-sxm-141g", "test");
  ASSERT_GT(p.nccl.nvls_algbw_gbps.value, 0.0);
  const AlphaBetaNetwork net(p, ClusterSpec{});
  for (const std::int64_t n : {2, 4, 5, 7}) {
    const CollectiveSpec s{CollOp::AllReduce, n, 8, 1, 8.0 * (1LL << 30)};
    EXPECT_NE(net.algorithm(s), "measured (NCCL's choice on this group shape)") << n;
    EXPECT_NEAR(net.time_s(s), net.choose(s).time_s, 1e-12) << n;
  }
}

TEST(AlphaBeta, NodeNicsAreSharedByConcurrentGroups) {
  const Profile p = a100_uniform();
  ClusterSpec c;
  c.nics_per_node = 8;
  c.nic_gbps = 25;
  const AlphaBetaNetwork net(p, c);
  // DP across 16 nodes, one rank per node (TP 8 inside): 8 groups share the node's 8 NICs.
  CollectiveSpec one{CollOp::AllReduce, 16, 1, 8, 1e9};
  CollectiveSpec all{CollOp::AllReduce, 16, 1, 1, 1e9};
  const double lat = 2 * 15 * p.inter_alpha_us.value * 1e-6;
  const double bw = 8 * 25e9 * p.inter_bus_efficiency.value;
  EXPECT_NEAR(net.time_s(one), lat + 2.0 * 15 / 16 * 1e9 / (bw / 8), 1e-9);
  EXPECT_NEAR(net.time_s(all), lat + 2.0 * 15 / 16 * 1e9 / bw, 1e-9);
  // 2:1 oversubscription halves the cross-node bandwidth.
  c.oversubscription = 2;
  const AlphaBetaNetwork over(p, c);
  EXPECT_NEAR(over.time_s(one) - lat, 2 * (net.time_s(one) - lat), 1e-9);
}

// --- NCCL's tuner over the profile's tables

ClusterSpec nodes_of_8(std::int64_t nodes) {
  ClusterSpec c;
  c.nodes = nodes;
  c.nics_per_node = 8;
  c.nic_gbps = 50;
  return c;
}

TEST(Tuner, ForcedRingSimpleIsNcclsRingModel) {
  Profile p = a100();
  ClusterSpec c = nodes_of_8(4);
  c.nccl.algorithm = NcclAlgo::Ring;
  c.nccl.protocol = NcclProto::Simple;
  const AlphaBetaNetwork net(p, c);
  const auto& k = p.nccl.cost.at(NcclAlgo::Ring).at(NcclProto::Simple);
  const double S = 1e9, n = 32, nodes = 4;
  // 2(n-1) steps, 2(nodes-1) of them network hops; bus bandwidth = min(NVLink ring, NIC share).
  const double lat = (k.base_us + (2 * (n - 1) - 2 * (nodes - 1)) * k.nvlink_step_us + 2 * (nodes - 1) * k.net_step_us) * 1e-6;
  const double bw = std::min(p.nvlink_gbps.value * p.intra_bus_efficiency.value, 8 * 50 * p.inter_bus_efficiency.value) * 1e9;
  const CollectiveSpec s{CollOp::AllReduce, 32, 8, 1, S};
  EXPECT_NEAR(net.time_s(s), lat + 2 * (n - 1) / n * S / bw, 1e-12);
  EXPECT_EQ(net.algorithm(s), "ring/simple");
}

TEST(Tuner, ForcedTreeIsDoubleBinaryTree) {
  Profile p = a100();
  ClusterSpec c = nodes_of_8(16);
  c.nccl.algorithm = NcclAlgo::Tree;
  c.nccl.protocol = NcclProto::LL128;
  const AlphaBetaNetwork net(p, c);
  const auto& k = p.nccl.cost.at(NcclAlgo::Tree).at(NcclProto::LL128);
  const double S = 64e6;
  // Chain of 8 in the node, log2(16) = 4 levels across nodes, up and down; algbw = busbw / 2.
  const double lat = (k.base_us + 2 * (7 * k.nvlink_step_us + 4 * k.net_step_us)) * 1e-6;
  const double busbw = std::min(p.nvlink_gbps.value * p.intra_bus_efficiency.value, 8 * 50 * p.inter_bus_efficiency.value) * 1e9 * k.bw_fraction;
  EXPECT_NEAR(net.time_s({CollOp::AllReduce, 128, 8, 1, S}), lat + S / (0.5 * busbw), 1e-12);
}

TEST(Tuner, PicksTheCheapestCandidateLikeNccl) {
  const Profile p = a100();
  const AlphaBetaNetwork net(p, nodes_of_8(16));
  for (double S : {4e3, 64e3, 1e6, 16e6, 256e6, 4e9}) {
    const CollectiveSpec s{CollOp::AllReduce, 128, 8, 1, S};
    double best = 1e300;
    for (const auto& [name, t] : net.candidates(s)) best = std::min(best, t);
    EXPECT_DOUBLE_EQ(net.time_s(s), best) << S;
  }
  // Small messages across many nodes: tree with a low-latency protocol; large: ring/simple.
  EXPECT_EQ(net.algorithm({CollOp::AllReduce, 128, 8, 1, 64e3}).substr(0, 4), "tree");
  EXPECT_EQ(net.algorithm({CollOp::AllReduce, 128, 8, 1, 4e9}), "ring/simple");
  // LL's quarter bandwidth loses to Simple for a large buffer inside a node.
  ClusterSpec one;
  one.nccl.algorithm = NcclAlgo::Ring;
  Profile no_points = p;
  no_points.collective_points.clear();
  const AlphaBetaNetwork node(no_points, one);
  EXPECT_EQ(node.algorithm({CollOp::AllGather, 8, 8, 1, 1e9}), "ring/simple");
  EXPECT_EQ(node.algorithm({CollOp::AllGather, 8, 8, 1, 1e3}), "ring/ll");
}

TEST(Tuner, NvlsFromTheProfilesMinimumGroupOnH200) {
  Profile p = load_profile(test::data_dir(), "h200-sxm-141g", "test");
  p.collective_points.clear();
  const AlphaBetaNetwork net(p, ClusterSpec{});
  const double S = 8.0 * (1LL << 30);
  EXPECT_EQ(net.algorithm({CollOp::AllReduce, 4, 8, 1, S}), "ring/simple");
  for (std::int64_t n : {5, 6, 7, 8}) {
    EXPECT_EQ(net.algorithm({CollOp::AllReduce, n, 8, 1, S}), "nvls/simple") << n;
    // The switch sets the rate: algorithm bandwidth independent of n.
    EXPECT_NEAR(S / net.time_s({CollOp::AllReduce, n, 8, 1, S}) / 1e9, p.nccl.nvls_algbw_gbps.value, 0.01 * p.nccl.nvls_algbw_gbps.value);
  }
  // A100 has no NVLS.
  const Profile a = a100();
  ClusterSpec forced;
  forced.nccl.algorithm = NcclAlgo::Nvls;
  EXPECT_THROW(AlphaBetaNetwork(a, forced).time_s({CollOp::AllReduce, 8, 8, 1, S}), ConfigError);
}

TEST(Tuner, ProfileRulesForceTheChoice) {
  Profile p = a100();
  NcclRule r;
  r.op = "all_reduce";
  r.min_nodes = 2;
  r.max_bytes = 1e6;
  r.algo = NcclAlgo::Ring;
  r.proto = NcclProto::LL128;
  p.nccl.rules.push_back(r);
  const AlphaBetaNetwork net(p, nodes_of_8(16));
  EXPECT_EQ(net.algorithm({CollOp::AllReduce, 128, 8, 1, 64e3}), "ring/ll128");
  EXPECT_EQ(net.algorithm({CollOp::AllReduce, 128, 8, 1, 4e9}), "ring/simple");  // outside the rule
}

TEST(Tuner, NcclNeverChoosesTheHierarchicalSchedule) {
  // NCCL runs multi-node all-gather and reduce-scatter as rings (and all-reduce as ring or tree):
  // the two-level schedule, which would need only nodes - 1 network steps and 7 NVLink steps
  // where the ring needs N - 1 steps, is priced only when a scenario forces it.
  const Profile p = a100();
  const AlphaBetaNetwork net(p, nodes_of_8(192));
  for (CollOp op : {CollOp::AllGather, CollOp::ReduceScatter, CollOp::AllReduce})
    for (double S : {24e3, 1e6, 300e6}) {
      const CollectiveSpec spec{op, 1536, 8, 1, S};
      EXPECT_EQ(net.algorithm(spec).find("hierarchical"), std::string::npos) << coll_op_name(op) << " " << S;
      for (const auto& [name, t] : net.candidates(spec)) EXPECT_EQ(name.find("hierarchical"), std::string::npos) << name;
    }
  // A 24 KB all-gather over 1536 ranks: NCCL's ring pays 1535 steps of latency.
  EXPECT_EQ(net.algorithm({CollOp::AllGather, 1536, 8, 1, 24e3}), "ring/ll");
  EXPECT_GT(net.time_s({CollOp::AllGather, 1536, 8, 1, 24e3}), 1e-3);
}

// NCCL's tuning model (src/graph/tuning.cc, v2.9-v2.11): in a communicator across nodes the LL
// protocol's NVLink steps cost 1.8x their single-node latency (the profile's
// network.nccl.multinode_nvlink_step_factor); inside one node, and for LL128 and Simple, they do not.
TEST(Tuner, LowLatencyNvlinkStepsSlowDownInACommunicatorAcrossNodes) {
  Profile p = a100();
  p.collective_points.clear();
  EXPECT_EQ(p.nccl.multinode_nvlink_step_factor.at(NcclProto::LL), 1.8);
  EXPECT_EQ(p.nccl.multinode_nvlink_step_factor.at(NcclProto::LL128), 1.0);
  const auto& k = p.nccl.cost.at(NcclAlgo::Ring).at(NcclProto::LL);
  ClusterSpec c = nodes_of_8(192);
  c.nccl.algorithm = NcclAlgo::Ring;
  c.nccl.protocol = NcclProto::LL;
  const double S = 24e3, n = 1536, nodes = 192;
  const double bw = std::min(p.nvlink_gbps.value * p.intra_bus_efficiency.value, 8 * 50 * p.inter_bus_efficiency.value) * 1e9 * k.bw_fraction;
  const double lat = (k.base_us + (n - nodes) * 1.8 * k.nvlink_step_us + (nodes - 1) * k.net_step_us) * 1e-6;
  EXPECT_NEAR(AlphaBetaNetwork(p, c).time_s({CollOp::AllGather, 1536, 8, 1, S}), lat + (n - 1) / n * S / bw, 1e-12);
  // One node: the plain step latency.
  ClusterSpec one;
  one.nccl.algorithm = NcclAlgo::Ring;
  one.nccl.protocol = NcclProto::LL;
  const double bw1 = p.nvlink_gbps.value * p.intra_bus_efficiency.value * 1e9 * k.bw_fraction;
  EXPECT_NEAR(AlphaBetaNetwork(p, one).time_s({CollOp::AllGather, 8, 8, 1, S}), (k.base_us + 7 * k.nvlink_step_us) * 1e-6 + 7.0 / 8 * S / bw1,
              1e-12);
  // A profile without the factor: every protocol's steps as in one node.
  p.nccl.multinode_nvlink_step_factor.at(NcclProto::LL) = 1.0;
  EXPECT_NEAR(AlphaBetaNetwork(p, c).time_s({CollOp::AllGather, 1536, 8, 1, S}),
              (k.base_us + (n - nodes) * k.nvlink_step_us + (nodes - 1) * k.net_step_us) * 1e-6 + (n - 1) / n * S / bw, 1e-12);
}

TEST(Tuner, HierarchicalAddsTheIntraNodePhases) {
  Profile p = a100();
  ClusterSpec c = nodes_of_8(4);
  c.nccl.algorithm = NcclAlgo::Hierarchical;
  c.nccl.protocol = NcclProto::Simple;
  const AlphaBetaNetwork net(p, c);
  const auto& k = p.nccl.cost.at(NcclAlgo::Ring).at(NcclProto::Simple);
  const double S = 1e9, g = 8, nodes = 4;
  const double intra = p.nvlink_gbps.value * p.intra_bus_efficiency.value * 1e9;
  const double rail = 8 * 50 * p.inter_bus_efficiency.value * 1e9 / g;
  const double rs = (g - 1) / g * S / intra + (k.base_us + (g - 1) * k.nvlink_step_us) * 1e-6;
  const double ar = 2 * (nodes - 1) / nodes * (S / g) / rail + 2 * (nodes - 1) * k.net_step_us * 1e-6;
  EXPECT_NEAR(net.time_s({CollOp::AllReduce, 32, 8, 1, S}), 2 * rs + ar, 1e-12);
}

// The H200 profile's all-reduce points are NCCL's default choice, NVLink SHARP from 2 MiB (482 GB/s
// bus bandwidth at 16 GiB, above the 450 GB/s links). All-gather and reduce-scatter, priced from
// them, must not inherit the switch's reduction: the published nccl-tests rows at 16 GiB ran them
// at 361 and 363 GB/s (Ring), held out from the profile.
TEST(AlphaBeta, AllGatherAndReduceScatterFromNvlsAllReducePointsRunAtTheWireRate) {
  const Profile p = load_profile(test::data_dir(), "h200-sxm-141g", "test");
  const AlphaBetaNetwork net(p, ClusterSpec{});
  const Json rows = read_json_file(test::test_data("published_microbench.json"));
  int checked = 0;
  for (const auto& r : rows) {
    const std::string id = r["id"];
    const bool ag = id == "nccl-h200-8gpu-16GiB-all_gather-ring", rs = id == "nccl-h200-8gpu-16GiB-reduce_scatter-ring";
    if (!ag && !rs) continue;
    const double S = r["message_bytes"].get<double>(), n = 8;
    const CollectiveSpec s{ag ? CollOp::AllGather : CollOp::ReduceScatter, 8, 8, 1, S};
    const double busbw = (n - 1) / n * S / net.time_s(s) / 1e9;
    EXPECT_NEAR(busbw / r["measured"]["busbw_GBps"].get<double>(), 1.0, 0.03) << id;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
  // The all-reduce itself keeps NCCL's measured NVLS curve.
  const CollectivePoint& top = *std::max_element(p.collective_points.begin(), p.collective_points.end(),
                                                 [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  EXPECT_NEAR(net.time_s({CollOp::AllReduce, 8, 8, 1, top.bytes}) / top.time_s, 1.0, 1e-9);
  EXPECT_GT(2 * (8 - 1) / 8.0 * top.bytes / top.time_s, 1.2 * p.nvlink_gbps.value * 1e9 * p.intra_bus_efficiency.value);
}

}  // namespace
}  // namespace parasim
