#include <gtest/gtest.h>

#include "../test_util.h"
#include "sim/network/flow_network.h"
#include "sim/topology/builder.h"

namespace parasim {
namespace {

// Two nodes of 2 GPUs and 2 NICs; each node on its own leaf, leaves joined by one spine link of
// `uplink` GB/s (line rate).
Json two_leaf_scenario(double uplink) {
  Json j = test::base_scenario();
  j["cluster"] = {{"gpu", "h100-sxm5-80g"}, {"nodes", 2}, {"gpus_per_node", 2},
                  {"inter_node",
                   {{"kind", "custom"}, {"nics_per_node", 2}, {"nic_gbps", 50},
                    {"switches", {"leaf0", "leaf1", "spine"}},
                    {"links",
                     {{{"a", "node0.nic0"}, {"b", "leaf0"}, {"gbps", 50}}, {{"a", "node0.nic1"}, {"b", "leaf0"}, {"gbps", 50}},
                      {{"a", "node1.nic0"}, {"b", "leaf1"}, {"gbps", 50}}, {{"a", "node1.nic1"}, {"b", "leaf1"}, {"gbps", 50}},
                      {{"a", "leaf0"}, {"b", "spine"}, {"gbps", uplink}}, {{"a", "leaf1"}, {"b", "spine"}, {"gbps", uplink}}}}}}};
  j["parallel"] = {{"dp", 4}, {"schedule", "ddp"}};
  j["training"]["global_batch"] = 4;
  return j;
}

std::string error_of(const Json& j) {
  try {
    parse_scenario(j, "test.json", test::data_dir());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(CustomFabric, RoutesAreShortestValidPaths) {
  const Scenario s = parse_scenario(two_leaf_scenario(100), "test.json", test::data_dir());
  const Topology t = build_topology(s.cluster, s.profile);
  // Inside a node: GPU -> NVSwitch -> GPU. Across: GPU -> NIC -> leaf -> spine -> leaf -> NIC -> GPU.
  EXPECT_EQ(t.route(0, 1).size(), 2u);
  EXPECT_EQ(t.route(0, 2).size(), 6u);
  EXPECT_EQ(t.route(2, 0).size(), 6u);  // symmetric
  EXPECT_NE(t.summary().find("inter-node custom"), std::string::npos);
}

TEST(CustomFabric, ThinUplinkLimitsCrossLeafFlows) {
  // Four ranks, one per GPU, ring across the two nodes: the leaf-spine link carries one channel
  // per NIC. Halving its capacity below the NICs' sum must slow the collective's bandwidth part.
  const CollectiveSpec ar{CollOp::AllGather, 4, 2, 1, 4e9};
  const Scenario wide = parse_scenario(two_leaf_scenario(100), "test.json", test::data_dir());
  const Scenario thin = parse_scenario(two_leaf_scenario(25), "test.json", test::data_dir());
  const double t_wide = FlowNetwork(wide.profile, wide.cluster).time_s(ar);
  const double t_thin = FlowNetwork(thin.profile, thin.cluster).time_s(ar);
  // 2 NICs x 50 GB/s fit a 100 GB/s uplink; at 25 GB/s the uplink is the bottleneck: 4x slower.
  EXPECT_NEAR(t_thin / t_wide, 4.0, 0.05);
}

TEST(CustomFabric, BadFabricsGiveExactErrors) {
  Json j = two_leaf_scenario(100);
  j["cluster"]["inter_node"]["links"][0]["b"] = "leaf9";
  EXPECT_EQ(error_of(j), "test.json: /cluster/inter_node/links/0/b: unknown endpoint \"leaf9\": expected a listed switch or node<i>.nic<j>");
  j = two_leaf_scenario(100);
  j["cluster"]["inter_node"]["links"][0]["a"] = "node5.nic0";
  EXPECT_EQ(error_of(j), "test.json: /cluster/inter_node/links/0/a: \"node5.nic0\" is outside the cluster (2 nodes of 2 NICs, counted from 0)");
  j = two_leaf_scenario(100);
  j["cluster"]["inter_node"]["links"].erase(1);
  EXPECT_EQ(error_of(j), "test.json: /cluster/inter_node/links: node0.nic1 is not linked to the fabric");
  j = two_leaf_scenario(100);
  j["cluster"]["inter_node"]["links"].erase(5);
  EXPECT_EQ(error_of(j), "test.json: /cluster/inter_node/links: node 1 cannot reach node 0 through the listed links");
  j = two_leaf_scenario(100);
  j["cluster"]["inter_node"]["switches"][1] = "leaf0";
  EXPECT_EQ(error_of(j), "test.json: /cluster/inter_node/switches/1: duplicate switch name \"leaf0\"");
  j = two_leaf_scenario(100);
  j["cluster"]["inter_node"]["kind"] = "fat_tree";
  EXPECT_EQ(error_of(j), "test.json: /cluster/inter_node/switches: only a \"custom\" inter_node fabric lists switches and links");
}

}  // namespace
}  // namespace parasim
