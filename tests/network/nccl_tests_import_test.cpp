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

std::string json_error_of(const std::string& rel) {
  try {
    parse_nccl_tests_any(slurp(rel), rel);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(NcclTestsImport, ParsesJsonOutputWithContext) {
  const NcclTestsLog log = parse_nccl_tests_any(slurp("all_reduce_2node.json"), "all_reduce_2node.json");
  EXPECT_EQ(log.op, "all_reduce");
  EXPECT_EQ(log.ranks, 16);
  EXPECT_EQ(log.nodes, 2);
  EXPECT_EQ(log.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.nccl_version, "2.27.3");
  ASSERT_EQ(log.rows.size(), 4u);
  EXPECT_DOUBLE_EQ(log.rows.back().bytes, 1073741824);
  EXPECT_DOUBLE_EQ(log.rows.back().time_s, 10875.3e-6);
  for (const auto& r : log.rows) EXPECT_NEAR(r.busbw_gbps / r.algbw_gbps, 2.0 * 15 / 16, 0.01);
  // Same result whichever parser the content picks.
  EXPECT_EQ(parse_nccl_tests_any(slurp("all_reduce_8gpu.txt"), "x").ranks, 8);
}

TEST(NcclTestsImport, BadJsonFilesGiveClearErrors) {
  EXPECT_NE(json_error_of("truncated.json").find("truncated.json: JSON ends early at byte"), std::string::npos) << json_error_of("truncated.json");
  EXPECT_NE(json_error_of("truncated.json").find("was the run cut short?"), std::string::npos);
  EXPECT_EQ(json_error_of("wrong_results.json"),
            "wrong_results.json: /results/2/out_of_place/nwrong: the run reported 12.0 wrong results at 268435456 bytes; refusing to import it");
  EXPECT_EQ(json_error_of("nan_time.json"), "nan_time.json: /results/1/out_of_place/time: expected a positive number, got \"nan\"");
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
  // A size no profile can hold (found by the importer fuzz test: it imported, then the merged
  // profile failed to load).
  std::string text = slurp("all_reduce_8gpu.txt");
  text.replace(text.find("     1048576        262144"), 25, "       1e308        262144");
  try {
    parse_nccl_tests(text, "big.txt");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "big.txt:18: size 1e308 bytes or time 4.01e-05 s outside what a profile holds "
                                     "([1, 1e+15] bytes, [1e-12, 1e+06] s)");
  }
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

TEST(NcclTestsImport, ImportedMultiNodePointsPriceTheSameGroupShape) {
  Json prof = read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json");
  const NcclTestsLog log = parse_nccl_tests_any(slurp("all_reduce_2node.json"), "all_reduce_2node.json");
  merge_nccl_tests(prof, log);
  const Profile p = parse_profile(prof, "merged.json");
  ClusterSpec c;
  c.nodes = 2;
  const AlphaBetaNetwork net(p, c);
  // 16 ranks on 2 nodes, one group: the imported curve is reproduced and named as measured.
  const CollectiveSpec s{CollOp::AllReduce, 16, 8, 1, 1073741824};
  EXPECT_NEAR(net.time_s(s) / 10875.3e-6, 1.0, 1e-9);
  EXPECT_EQ(net.algorithm(s), "measured (NCCL's choice on this group shape)");
  // Eight such groups sharing the nodes' NICs are a different shape: the tuner prices them.
  const CollectiveSpec shared{CollOp::AllReduce, 16, 8, 8, 1073741824};
  EXPECT_NE(net.algorithm(shared).find("/"), std::string::npos);
}

}  // namespace
}  // namespace parasim
