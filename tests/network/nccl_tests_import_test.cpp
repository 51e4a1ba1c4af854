// nccl-tests import: real-format samples written from the nccl-tests output format, plus a
// truncated, a garbage and a wrong-results file that must give clear errors.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>

#include <fmt/format.h>

#include "../test_util.h"
#include "calibrate/import/nccl_tests.h"

namespace parasim {
namespace {

std::string nccl_table(const std::string& rel) { return test::slurp(test::test_data("nccl-tests/" + rel)); }

// The ConfigError message `f` throws, or "(no error)".
std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string error_of(const std::string& rel) {
  return config_error([&] { parse_nccl_tests(nccl_table(rel), rel); });
}

std::string json_error_of(const std::string& rel) {
  return config_error([&] { parse_nccl_tests_any(nccl_table(rel), rel); });
}

TEST(NcclTestsImport, ParsesJsonOutputWithContext) {
  const NcclTestsLog log = parse_nccl_tests_any(nccl_table("all_reduce_2node.json"), "all_reduce_2node.json");
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
  EXPECT_EQ(parse_nccl_tests_any(nccl_table("all_reduce_8gpu.txt"), "x").ranks, 8);
}

TEST(NcclTestsImport, BadJsonFilesGiveClearErrors) {
  EXPECT_NE(json_error_of("truncated.json").find("truncated.json: JSON ends early at byte"), std::string::npos) << json_error_of("truncated.json");
  EXPECT_NE(json_error_of("truncated.json").find("was the run cut short?"), std::string::npos);
  EXPECT_EQ(json_error_of("wrong_results.json"),
            "wrong_results.json: /results/2/out_of_place/nwrong: the run reported 12.0 wrong results at 268435456 bytes; refusing to import it");
  EXPECT_EQ(json_error_of("nan_time.json"), "nan_time.json: /results/1/out_of_place/time: expected a positive number, got \"nan\"");
}

TEST(NcclTestsImport, ParsesSingleNodeLogWithContext) {
  const NcclTestsLog log = parse_nccl_tests(nccl_table("all_reduce_8gpu.txt"), "all_reduce_8gpu.txt");
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
  const NcclTestsLog log = parse_nccl_tests(nccl_table("all_gather_2node.txt"), "ag", "all_gather");
  EXPECT_EQ(log.ranks, 4);
  EXPECT_EQ(log.nodes, 2);
  EXPECT_EQ(log.rows.size(), 3u);
}

TEST(NcclTestsImport, BadFilesGiveClearErrors) {
  // reduce_perf (found by fuzz_nccl_tests: "all_+reduce_perf" read as reduce_perf was imported, and
  // the merged profile then failed to load: profiles hold no "reduce" points).
  std::string reduce = nccl_table("all_reduce_8gpu.txt");
  reduce.replace(reduce.find("all_reduce_perf"), 15, "reduce_perf");
  const std::string reduce_error = config_error([&] { parse_nccl_tests(reduce, "reduce.txt"); });
  EXPECT_NE(reduce_error.find("reduce.txt: unknown collective \"reduce\""), std::string::npos) << reduce_error;
  EXPECT_EQ(error_of("truncated.txt"), "truncated.txt:18: truncated result row (expected at least 9 columns, got 6)");
  EXPECT_EQ(error_of("garbage.txt"), "garbage.txt:1: unexpected text before the results table: \"this is not\"");
  EXPECT_EQ(error_of("wrong_results.txt"),
            "wrong_results.txt:5: the run reported 3 wrong results at 1048576 bytes; refusing to import it");
  // A size no profile can hold (found by the importer fuzz test: it imported, then the merged
  // profile failed to load).
  std::string text = nccl_table("all_reduce_8gpu.txt");
  text.replace(text.find("     1048576        262144"), 25, "       1e308        262144");
  EXPECT_EQ(config_error([&] { parse_nccl_tests(text, "big.txt"); }),
            "big.txt:18: size 1e308 bytes or time 4.01e-05 s outside what a profile holds ([1, 1e+15] bytes, [1e-12, 1e+06] s)");
}

TEST(NcclTestsImport, MergeReplacesSameGroupAndResultLoads) {
  Json prof = read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json");
  const size_t before = prof["network"]["collective_points"].size();
  const NcclTestsLog log = parse_nccl_tests(nccl_table("all_reduce_8gpu.txt"), "all_reduce_8gpu.txt");
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
  const NcclTestsLog log = parse_nccl_tests_any(nccl_table("all_reduce_2node.json"), "all_reduce_2node.json");
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

// The reproducers of the hostile-user trial (issue 40, tests/data/repro): each was imported
// silently before; each is refused naming the file, the line and what was expected.
std::string repro(const std::string& name) {
  std::ifstream in(test::test_data("repro/" + name));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string import_error(const std::string& name, const std::string& profile, const std::string& op = "") {
  return config_error([&] {
    const NcclTestsLog log = parse_nccl_tests_any(repro(name), name, op);
    check_nccl_tests_log(log, load_profile(test::data_dir(), profile, "test"));
  });
}

TEST(NcclTestsImport, NonNumericFieldIsNotReadAsItsNumericPrefix) {
  // "29x.3" was read as 29 us by std::stod.
  EXPECT_EQ(import_error("m_nonnumeric.txt", "h100-sxm5-80g"), "m_nonnumeric.txt:21: column time (us): expected a number, got \"29x.3\"");
}

TEST(NcclTestsImport, ImpossibleBandwidthAgainstTheProfilesLinksIsRefused) {
  // 1 GiB in 0.001 us over 8 ranks: every GPU moves at least 7/8 of it, 9.4e8 GB/s against the
  // H100's 450 GB/s of NVLink per direction.
  EXPECT_EQ(import_error("m_busbw_impossible.txt", "h100-sxm5-80g"),
            "m_busbw_impossible.txt:18: 1.07374e+09 bytes in 0.001 us moves 9.395e+08 GB/s through each GPU's links, above the 450 "
            "GB/s per direction of profile h100-sxm5-80g (network.nvlink_gbps); no GPU moves data that fast: a wrong size or time?");
  // The shipped sample's fastest row (1 GiB in 3893.5 us: 241 GB/s per GPU) is below the link rate.
  const NcclTestsLog ok = parse_nccl_tests(nccl_table("all_reduce_8gpu.txt"), "all_reduce_8gpu.txt");
  EXPECT_NO_THROW(check_nccl_tests_log(ok, load_profile(test::data_dir(), "h100-sxm5-80g", "test")));
}

TEST(NcclTestsImport, TwoAppendedRunsAreRefused) {
  EXPECT_EQ(import_error("m_two_runs.txt", "h100-sxm5-80g"),
            "m_two_runs.txt:28: a second run starts here (the first began at line 1); the file holds appended runs, which would mix "
            "two group shapes: split it into one file per run");
}

TEST(NcclTestsImport, LogOfAnotherGpuThanTheProfileIsRefused) {
  EXPECT_EQ(import_error("m_a100_log.txt", "h100-sxm5-80g"),
            "m_a100_log.txt:5: the log ran on \"NVIDIA A100-SXM4-80GB\", but profile h100-sxm5-80g is for \"NVIDIA H100 80GB HBM3\"; "
            "import it into a profile of that GPU (--gpu)");
  // Into the A100 profile it goes (its rows stay under the A100's 300 GB/s of NVLink).
  EXPECT_EQ(import_error("m_a100_log.txt", "a100-sxm4-80g"), "(no error)");
}

TEST(NcclTestsImport, OpOptionContradictingTheLogIsRefused) {
  const std::string gather = config_error([&] { parse_nccl_tests(nccl_table("all_reduce_8gpu.txt"), "ar.txt", "all_gather"); });
  EXPECT_NE(gather.find("--op all_gather contradicts the log, which ran all_reduce_perf"), std::string::npos) << gather;
  // The same op in either spelling is no contradiction.
  EXPECT_EQ(parse_nccl_tests(nccl_table("all_reduce_8gpu.txt"), "ar.txt", "all_reduce").op, "all_reduce");
  Json j = Json::parse(nccl_table("all_reduce_2node.json"));
  j["args"][0] = "/opt/nccl-tests/build/alltoall_perf";
  EXPECT_EQ(parse_nccl_tests_json(j.dump(), "a2a.json", "all_to_all").op, "all_to_all");
  const std::string a2a = config_error([&] { parse_nccl_tests_json(j.dump(), "a2a.json", "all_reduce"); });
  EXPECT_NE(a2a.find("a2a.json: /args/0: --op all_reduce contradicts the log, which ran alltoall_perf"), std::string::npos) << a2a;
}

TEST(NcclTestsImport, JsonLogWithARepeatedDeviceListIsRefused) {
  // The devices list twice over read as 32 ranks; a process (host and pid) listed twice is damage.
  Json j = Json::parse(nccl_table("all_reduce_2node.json"));
  Json& dev = j["config"]["devices"];
  const size_t n = dev.size();
  for (size_t i = 0; i < n; ++i) dev.push_back(dev[i]);
  EXPECT_EQ(config_error([&] { parse_nccl_tests_json(j.dump(), "twice.json"); }),
            fmt::format("twice.json: /config/devices/{}: dgx-a pid 41000 is listed twice (first at "
                        "/config/devices/0): a repeated device list, not more ranks", n));
}

TEST(NcclTestsImport, RanksOnDifferentGpusAreRefused) {
  std::string text = nccl_table("all_reduce_8gpu.txt");
  const auto at = text.rfind("NVIDIA H100 80GB HBM3");
  text.replace(at, 21, "NVIDIA A100-SXM4-80GB");
  const std::string mixed = config_error([&] { parse_nccl_tests(text, "mixed.txt"); });
  EXPECT_NE(mixed.find("this rank ran on \"NVIDIA A100-SXM4-80GB\", rank 0 on \"NVIDIA H100 80GB HBM3\""), std::string::npos) << mixed;
}

}  // namespace
}  // namespace parasim
