#include <gtest/gtest.h>

#include "../test_util.h"

namespace parasim {
namespace {

Profile a100() { return load_profile(test::data_dir(), "a100-sxm4-80g", "test"); }

TEST(AlphaBeta, UniformRingAllReduceWithoutMeasuredPoints) {
  Profile p = a100();
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
  const Profile p = a100();
  ClusterSpec c;
  c.intra_kind = "pcie";
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

TEST(AlphaBeta, NodeNicsAreSharedByConcurrentGroups) {
  const Profile p = a100();
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

}  // namespace
}  // namespace parasim
