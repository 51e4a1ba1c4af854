// Whole-step properties: determinism, every shipped scenario runs, the slowest GPU's pace.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <map>

#include "../test_util.h"
#include "sim/memory/memory_model.h"
#include "sim/network/flow_network.h"
#include "sim/parallel/emitter.h"
#include "tools/report.h"

namespace parasim {
namespace {

TEST(Determinism, TwoRunsGiveByteIdenticalJson) {
  const Scenario sc = load_scenario(test::data_dir() + "/scenarios/default.json", test::data_dir());
  const std::string a = result_json(simulate(sc, Registries{}).result).dump();
  const std::string b = result_json(simulate(sc, Registries{}).result).dump();
  EXPECT_EQ(a, b);
}

// Examples double as tests: every shipped scenario loads, simulates, and reports sane figures.
TEST(Examples, EveryScenarioRuns) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::data_dir() + "/scenarios")) {
    if (e.path().extension() != ".json") continue;
    ++n;
    const Scenario sc = load_scenario(e.path().string(), test::data_dir());
    const auto out = simulate(sc, Registries{});
    EXPECT_GT(out.result.step_time_s, 0) << e.path();
    EXPECT_GT(out.result.mfu, 0.05) << e.path();
    EXPECT_LT(out.result.mfu, out.result.hfu_reported + 1e-12) << e.path();
    // Executed FLOPs never beat the profile's sustained ceiling (issue 40, item 2).
    EXPECT_LE(out.result.hfu, sc.profile.sustained_clock_ratio.value) << e.path();
    EXPECT_TRUE(out.result.fits_in_memory) << e.path() << " peak " << out.result.peak_mem_gib;
  }
  EXPECT_GE(n, 8);
}

// The slowest GPU paces a synchronous step: with free communication a data-parallel step is its
// kernels' time, so it grows by exactly slowest_gpu_pace, which grows with the job's GPU count.
TEST(SlowestGpu, StepGrowsByThePaceOfTheJobsSlowestGpu) {
  Json j = test::base_scenario();  // llama2-7b, dp 8 on one H100 node
  const Scenario sc = test::scenario_from(j);
  Scenario alike = sc;
  alike.profile.gpu_speed_spread.value = 0;
  const double paced = test::simulate_with(sc, test::FreeNetwork{}).result.step_time_s;
  const double plain = test::simulate_with(alike, test::FreeNetwork{}).result.step_time_s;
  EXPECT_GT(sc.profile.gpu_speed_spread.value, 0);
  EXPECT_NEAR(paced / plain, slowest_gpu_pace(sc.profile, 8), 1e-6);
  j["cluster"]["nodes"] = 8;
  j["parallel"]["dp"] = 64;
  j["training"]["global_batch"] = 512;  // the same 8 microbatches per GPU
  const Scenario big = test::scenario_from(j);
  const double paced64 = test::simulate_with(big, test::FreeNetwork{}).result.step_time_s;
  EXPECT_NEAR(paced64 / plain, slowest_gpu_pace(sc.profile, 64), 1e-6);
  EXPECT_GT(paced64, paced);
}

}  // namespace
}  // namespace parasim
