// nccl-tests import: real-format samples written from the nccl-tests output format, plus a
// truncated, a garbage and a wrong-results file that must give clear errors.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../test_util.h"
#include "calibrate/import/nccl_tests.h"

namespace parasim {
namespace {

std::string slurp(const std::string& rel) {
  std::ifstream in(test::test_data("nccl-tests/" + rel));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(const std::string& rel) {
  try {
    parse_nccl_tests(slurp(rel), rel);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(NcclTestsImport, ParsesSingleNodeLogWithContext) {
  const NcclTestsLog log = parse_nccl_tests(slurp("all_reduce_8gpu.txt"), "all_reduce_8gpu.txt");
  EXPECT_EQ(log.op, "all_reduce");
  EXPECT_EQ(log.ranks, 8);
  EXPECT_EQ(log.nodes, 1);
  EXPECT_EQ(log.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.nccl_version, "2.21.5+cuda12.4");
  ASSERT_EQ(log.rows.size(), 6u);
  EXPECT_DOUBLE_EQ(log.rows.back().bytes, 1073741824);
  EXPECT_DOUBLE_EQ(log.rows.back().time_s, 3893.5e-6);
  // busbw is a display value: algbw * 2(n-1)/n for all-reduce; check the file is consistent.
  EXPECT_NEAR(log.rows.back().busbw_gbps, log.rows.back().algbw_gbps * 2 * 7 / 8, 0.05);
}

TEST(NcclTestsImport, CountsHostsAsNodesAndTakesOpFromOverride) {
  EXPECT_EQ(error_of("all_gather_2node.txt"), "all_gather_2node.txt: cannot tell which collective this is; pass --op");
  const NcclTestsLog log = parse_nccl_tests(slurp("all_gather_2node.txt"), "ag", "all_gather");
  EXPECT_EQ(log.ranks, 4);
  EXPECT_EQ(log.nodes, 2);
  EXPECT_EQ(log.rows.size(), 3u);
}

TEST(NcclTestsImport, BadFilesGiveClearErrors) {
  EXPECT_EQ(error_of("truncated.txt"), "truncated.txt:18: truncated result row (expected at least 9 columns, got 6)");
  EXPECT_EQ(error_of("garbage.txt"), "garbage.txt:1: unexpected text before the results table: \"this is not\"");
  EXPECT_EQ(error_of("wrong_results.txt"),
            "wrong_results.txt:5: the run reported 3 wrong results at 1048576 bytes; refusing to import it");
}

TEST(NcclTestsImport, MergeReplacesSameGroupAndResultLoads) {
  Json prof = read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json");
  const size_t before = prof["network"]["collective_points"].size();
  const NcclTestsLog log = parse_nccl_tests(slurp("all_reduce_8gpu.txt"), "all_reduce_8gpu.txt");
  const auto notes = merge_nccl_tests(prof, log);
  // The shipped H100 profile's 20 imported 8-GPU all-reduce points are replaced by the 6 new ones.
  EXPECT_EQ(prof["network"]["collective_points"].size(), before - 20 + 6);
  EXPECT_NE(notes.front().find("replaced 20 existing all_reduce points for 8 ranks on 1 node(s)"), std::string::npos);
  const Profile p = parse_profile(prof, "merged.json");
  const AlphaBetaNetwork net(p, ClusterSpec{});
  // The merged profile now predicts the imported measurement at 1 GiB exactly.
  EXPECT_NEAR(net.time_s({CollOp::AllReduce, 8, 8, 1, 1073741824.0}), 3893.5e-6, 1e-9);
}

}  // namespace
}  // namespace parasim
