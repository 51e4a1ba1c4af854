// Communication overlapped with the GEMMs of its block (sim/parallel/comm_overlap.h): bounds of
// the block's time, the exposed share, and Transformer Engine's userbuffers on a real shape.
#include <gtest/gtest.h>

#include <algorithm>

#include "../test_util.h"
#include "sim/parallel/comm_overlap.h"
#include "sim/scenario/measured.h"

namespace parasim {
namespace {

// Block time: the GEMMs plus what overlap adds to them.
double block(double gemm, double comm, double slowdown, double exposed) {
  return gemm + overlap_extra(gemm, comm, slowdown, exposed);
}

TEST(CommOverlap, IdealOverlapTakesTheLongerPart) {
  // Nothing exposed, no slowdown: the block is as long as its longer part, max(G, C).
  EXPECT_DOUBLE_EQ(block(3.0, 1.0, 0, 0), 3.0);
  EXPECT_DOUBLE_EQ(block(1.0, 3.0, 0, 0), 3.0);
}

TEST(CommOverlap, NothingHiddenIsTheSumOfTheParts) {
  // Every byte exposed and no slowdown: G + C, as without overlap.
  EXPECT_DOUBLE_EQ(block(3.0, 1.0, 0, 1), 4.0);
  EXPECT_DOUBLE_EQ(block(1.0, 3.0, 0, 1), 4.0);
}

TEST(CommOverlap, ExposedTimeLiesBetweenNoneAndAllAndFallsAsMoreIsHidden) {
  const double gemm = 2.0, comm = 1.5;
  double last = block(gemm, comm, 0.1, 1.0);
  for (double exposed = 1.0; exposed >= 0.0; exposed -= 0.125) {
    const double t = block(gemm, comm, 0.1, exposed);
    EXPECT_LE(t, last + 1e-12) << "exposed share " << exposed;  // hiding more never costs time
    // Never faster than either part alone; never slower than both in sequence plus the slowdown.
    EXPECT_GE(t, std::max(gemm, comm));
    EXPECT_LE(t, gemm * 1.1 + comm + 1e-12);
    last = t;
  }
}

TEST(CommOverlap, OverlapBeatsNoOverlapWhenTheSlowdownCostsLessThanWhatItHides) {
  // G 2, C 1, slowdown 0.1, 1/8 exposed: 2 * 1.1 + 0.125 = 2.325 < G + C = 3.
  EXPECT_DOUBLE_EQ(block(2.0, 1.0, 0.1, 0.125), 2.325);
  EXPECT_LT(block(2.0, 1.0, 0.1, 0.125), 3.0);
}

// The all-to-all beside another microbatch's kernels slows them only while it runs: a short
// collective costs a share of itself, never more than it hides (hostile test: ep_comm_overlap on a
// fast NVLink made a step 3.6 s slower, the slowdown charged on the whole layer's compute); a
// collective longer than the slowed compute is the block's time.
TEST(CommOverlap, AllToAllSlowsTheComputeOnlyWhileItRuns) {
  const double sd = 0.189;
  for (double comm : {0.001, 0.1, 0.5, 1.0, 1.189, 1.5, 3.0}) {
    const double extra = overlap_extra_while_running(1.0, comm, sd);
    EXPECT_LE(extra, comm + 1e-15) << comm;                      // overlap never costs more than the collective
    EXPECT_GE(1.0 + extra, std::max(1.0, comm) - 1e-15) << comm;  // nor less than the longer part
    if (comm > 1.0 + sd) {
      EXPECT_DOUBLE_EQ(1.0 + extra, comm) << comm;  // the collective outlasts the slowed kernels
    }
  }
  // Continuous where the collective outlasts the slowed kernels (the whole compute then ran slowed:
  // 1.189), no slowdown costs nothing, and the cost grows with the collective.
  EXPECT_NEAR(overlap_extra_while_running(1.0, 1.189, sd), 0.189, 1e-12);
  EXPECT_DOUBLE_EQ(overlap_extra_while_running(1.0, 0.5, 0.0), 0.0);
  EXPECT_LT(overlap_extra_while_running(1.0, 0.1, sd), overlap_extra_while_running(1.0, 0.2, sd));
}

TEST(CommOverlap, UserbuffersSlowTheGemmsByTheSmsTheyHold) {
  Profile p = load_profile(test::data_dir(), "h100-sxm5-80g", "test");
  ASSERT_TRUE(p.has_tp_overlap);
  // H100 SXM has 132 SMs; with 16 held by the communication kernels a GEMM runs on 116, so it
  // takes 132/116 as long: 16/116 = 13.8 % slower.
  EXPECT_NEAR(tp_overlap_pricing(p).gemm_slowdown, 16.0 / 116.0, 1e-12);
  p.has_tp_overlap = false;  // without the figures: the NCCL overlap slowdown, nothing exposed
  EXPECT_EQ(tp_overlap_pricing(p).gemm_slowdown, p.overlap_compute_slowdown.value);
  EXPECT_EQ(tp_overlap_pricing(p).exposed_fwd, 0.0);
}

TEST(CommOverlap, UserbuffersOverlapIsFasterOnLlama3_70bTp4Pp8H100) {
  // Megatron-Bridge's Llama 3 70B FP8 preset on 64 H100 (tp 4, pp 8, vp 5): overlap on must be
  // faster than off, and no faster than with a free network.
  const std::string f = test::data_dir() + "/scenarios/measured/pub-mbridge-26.04-dgx-h100-llama3_70b-fp8-64gpu-tp4pp8cp1.json";
  const Scenario on = load_measured(f, test::data_dir()).scenario;
  Scenario off = on;
  off.parallel.tp_comm_overlap = false;
  const double t_on = simulate(on, Registries{}).result.step_time_s;
  const double t_off = simulate(off, Registries{}).result.step_time_s;
  const double t_free = test::simulate_with(off, test::FreeNetwork{}).result.step_time_s;
  EXPECT_LT(t_on, t_off);
  EXPECT_GT(t_on, t_free);
}

// The chunked collectives run under the GEMMs, they do not vanish: the breakdown (over all streams)
// counts the same TP time with the overlap as without it.
TEST(CommOverlap, OverlappedTpCollectivesStillCountInTheBreakdown) {
  const std::string f = test::data_dir() + "/scenarios/measured/pub-mbridge-26.04-dgx-h100-llama3_70b-fp8-64gpu-tp4pp8cp1.json";
  const Scenario on = load_measured(f, test::data_dir()).scenario;
  Scenario off = on;
  off.parallel.tp_comm_overlap = false;
  const double tp_off = simulate(off, Registries{}).result.breakdown.at("tp_comm_s");
  const auto with = simulate(on, Registries{}, nullptr, Detail::Partition);
  ASSERT_GT(tp_off, 0);
  EXPECT_NEAR(with.result.breakdown.at("tp_comm_s"), tp_off, 1e-6 * tp_off);
  ASSERT_TRUE(with.partition.has_value());
  EXPECT_NEAR(with.partition->other_streams_s.at("tp_comm_s"), tp_off, 1e-6 * tp_off);
}

}  // namespace
}  // namespace parasim
