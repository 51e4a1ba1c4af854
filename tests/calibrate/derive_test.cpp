// parasim profile derive (calibrate/profile/derive.h): the figures given are set with their source,
// every other figure of the base is carried over unchanged in value and marked assumed, and the
// result loads as a profile.
#include <gtest/gtest.h>

#include "../test_util.h"
#include "calibrate/profile/derive.h"
#include "calibrate/profile/profile.h"

namespace parasim {
namespace {

Json base_doc() { return read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json"); }

ProfileDerivation variant() {
  ProfileDerivation d;
  d.name = "h100-variant";
  d.source = "a datasheet";
  d.sets = {{"memory.hbm_gbps", 2400}, {"/device/memory_bytes", 96e9}};
  return d;
}

// Every figure (object with value, how and source) of a document, by JSON pointer.
void figures_of(const Json& node, const std::string& ptr, std::map<std::string, Json>& out) {
  if (node.is_object()) {
    if (node.contains("value") && node.contains("how") && node.contains("source")) out[ptr] = node;
    for (const auto& [k, v] : node.items()) figures_of(v, ptr + "/" + k, out);
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) figures_of(node[i], ptr + "/" + std::to_string(i), out);
  }
}

TEST(ProfileDerive, SetFiguresTakeTheNewValueAndSource) {
  const Json out = derive_profile(base_doc(), "h100-sxm5-80g", variant());
  EXPECT_EQ(out["memory"]["hbm_gbps"]["value"].get<double>(), 2400);
  EXPECT_EQ(out["memory"]["hbm_gbps"]["how"], "datasheet");
  EXPECT_EQ(out["memory"]["hbm_gbps"]["source"], "a datasheet");
  EXPECT_EQ(out["device"]["memory_bytes"].get<double>(), 96e9);
  EXPECT_EQ(out["name"], "h100-variant");
  const Profile p = parse_profile(out, "h100-variant.json");
  EXPECT_EQ(p.hbm_gbps.value, 2400);
  EXPECT_EQ(p.device.memory_bytes, 96e9);
}

TEST(ProfileDerive, EveryOtherFigureIsCarriedOverAsAssumed) {
  const Json base = base_doc();
  const Json out = derive_profile(base, "h100-sxm5-80g", variant());
  std::map<std::string, Json> before, after;
  figures_of(base, "", before);
  figures_of(out, "", after);
  ASSERT_EQ(before.size(), after.size());
  ASSERT_GT(before.size(), 20u);
  for (const auto& [ptr, f] : before) {
    if (ptr == "/memory/hbm_gbps") continue;
    const Json& g = after.at(ptr);
    EXPECT_EQ(g["value"], f["value"]) << ptr;
    EXPECT_EQ(g["how"], "assumed") << ptr;
    EXPECT_EQ(g["source"].get<std::string>(),
              "carried over from h100-sxm5-80g (" + f["how"].get<std::string>() + "): " + f["source"].get<std::string>())
        << ptr;
  }
}

TEST(ProfileDerive, BadRequestsAreConfigErrorsNamingTheKey) {
  ProfileDerivation d = variant();
  d.sets = {{"memory.hbm_gbs", 2400}};
  try {
    derive_profile(base_doc(), "h100-sxm5-80g", d);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/memory/hbm_gbs"), std::string::npos) << e.what();
  }
  d.sets = {{"memory", 1}};  // an object, not a figure
  EXPECT_THROW(derive_profile(base_doc(), "h100-sxm5-80g", d), ConfigError);
  d = variant();
  d.source.clear();
  EXPECT_THROW(derive_profile(base_doc(), "h100-sxm5-80g", d), ConfigError);
  d = variant();
  d.name.clear();
  EXPECT_THROW(derive_profile(base_doc(), "h100-sxm5-80g", d), ConfigError);
}

// A figure's "value" sets the figure, its base range dropped with its base value (a value outside
// the HybridEP point's carried range [0.539, 0.573] failed the derived profile's load, blaming a
// range the user never set); a measured point's coordinates (its node count) are not relabelled.
TEST(ProfileDerive, AFiguresValueSetsTheFigureAndPointsKeepTheirCoordinates) {
  ProfileDerivation d = variant();
  d.sets = {{"/network/moe_dispatch_rdma/hybridep/0/efficiency/value", 0.7}};
  const Json out = derive_profile(base_doc(), "h100-sxm5-80g", d);
  const Json& point = out["network"]["moe_dispatch_rdma"]["hybridep"][0];
  EXPECT_EQ(point["efficiency"]["value"].get<double>(), 0.7);
  EXPECT_EQ(point["efficiency"]["source"], "a datasheet");
  EXPECT_FALSE(point["efficiency"].contains("range"));
  EXPECT_NO_THROW(parse_profile(out, "h100-variant.json"));
  d.sets = {{"/network/moe_dispatch_rdma/hybridep/0/nodes", 3}};
  EXPECT_THROW(derive_profile(base_doc(), "h100-sxm5-80g", d), ConfigError);
  d.sets = {{"/compute/gemm_max_efficiency/bf16/shape_mnk/0", 4096}};
  EXPECT_THROW(derive_profile(base_doc(), "h100-sxm5-80g", d), ConfigError);
  // What was measured at a point, and a figure's range, may be set.
  d.sets = {{"/network/collective_points/0/time_s", 1e-3}, {"/compute/gemm_max_efficiency/bf16/range/1", 0.9}};
  const Json set = derive_profile(base_doc(), "h100-sxm5-80g", d);
  EXPECT_EQ(set["network"]["collective_points"][0]["time_s"].get<double>(), 1e-3);
  EXPECT_EQ(set["compute"]["gemm_max_efficiency"]["bf16"]["range"][1].get<double>(), 0.9);
  EXPECT_NO_THROW(parse_profile(set, "h100-variant.json"));
}

TEST(ProfileDerive, DottedPathsAreJsonPointers) {
  EXPECT_EQ(profile_key_pointer("memory.hbm_gbps"), "/memory/hbm_gbps");
  EXPECT_EQ(profile_key_pointer("/compute/sustained_clock_ratio"), "/compute/sustained_clock_ratio");
}

}  // namespace
}  // namespace parasim
