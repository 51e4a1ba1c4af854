// Time to train with goodput: closed forms of the first-order model, the Young/Daly optimum as the
// minimum of the modelled wall clock, and how goodput moves with the GPU count.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "../test_util.h"
#include "sim/planning/goodput.h"

namespace parasim {
namespace {

// 1e12 tokens at 4M tokens per step and 10 s per step on 1,024 GPUs, no failures, no planned
// stops, no restart, sync checkpoints of 1 TB at 10 GB/s (100 s each).
GoodputInput base_input() {
  GoodputInput in;
  in.tokens = 1e12;
  in.tokens_per_step = 4'194'304;
  in.step_s = 10;
  in.gpus = 1024;
  in.checkpoint_bytes = 1e12;
  in.per_gpu_checkpoint_bytes = 1e12 / 1024;
  in.host_copy_gbps = 50;
  in.rel.storage_gbps = 10;
  in.rel.checkpoint_mode = "sync";
  return in;
}

TEST(Goodput, NoFailuresAndFreeCheckpointsIsTheIdealTime) {
  GoodputInput in = base_input();
  in.checkpoint_bytes = 0;
  const TimeToTrain t = time_to_train(in);
  // steps = ceil(1e12 / 4,194,304) = 238,419; days = 238,419 x 10 s / 86,400 s = 27.5948
  EXPECT_DOUBLE_EQ(t.steps, 238419);
  EXPECT_NEAR(t.days, 238419.0 * 10 / 86400, 1e-9);
  EXPECT_DOUBLE_EQ(t.days, t.ideal_days);
  EXPECT_DOUBLE_EQ(t.goodput, 1.0);
  // GPU-hours = days x 24 x GPUs
  EXPECT_NEAR(t.gpu_hours, t.days * 24 * 1024, 1e-6);
  EXPECT_FALSE(t.cost.has_value());
  in.price_per_gpu_hour = 2.5;
  EXPECT_NEAR(*time_to_train(in).cost, t.gpu_hours * 2.5, 1e-6);
}

TEST(Goodput, NoFailuresMeansNoCheckpointIsWorthItsPause) {
  const TimeToTrain t = time_to_train(base_input());  // 100 s checkpoints, never interrupted
  EXPECT_FALSE(std::isfinite(t.checkpoint.optimal_interval_s));
  EXPECT_DOUBLE_EQ(t.goodput, 1.0);
  EXPECT_EQ(ttt_json(t)["checkpoint"]["optimal_interval_s"], nullptr);
}

TEST(Goodput, YoungsIntervalWithoutRestartCost) {
  GoodputInput in = base_input();
  in.rel.failures_per_gpu_hour = 1e-5;
  // M = 3600 s / (1e-5 x 1024) = 351,562.5 s; delta = 1e12 B / 10 GB/s = 100 s;
  // Young: sqrt(2 x 100 x 351,562.5) = 8,385.25 s
  EXPECT_NEAR(optimal_interval_s(in), 8385.25, 0.01);
  EXPECT_NEAR(time_to_train(in).failures.mtbf_h, 351562.5 / 3600, 1e-9);
}

// The optimum minimises the modelled wall clock: nudged 5 % either way, and anywhere on a scan,
// the expected time is longer, with restarts, planned stops and asynchronous writes in the model.
TEST(Goodput, TheOptimalIntervalMinimisesTheExpectedWallClock) {
  for (const char* mode : {"sync", "async"}) {
    GoodputInput in = base_input();
    in.rel.failures_per_gpu_hour = 2e-5;
    in.rel.restart_s = 900;
    in.rel.planned_per_day = 1;
    in.rel.checkpoint_mode = mode;
    const double tau = optimal_interval_s(in);
    const double best = expected_wall_s(in, in.step_s, tau);
    EXPECT_GT(expected_wall_s(in, in.step_s, tau * 1.05), best) << mode;
    EXPECT_GT(expected_wall_s(in, in.step_s, tau * 0.95), best) << mode;
    for (double f = 0.1; f < 10; f *= 1.01) EXPECT_GE(expected_wall_s(in, in.step_s, tau * f), best * (1 - 1e-12)) << mode << f;
  }
}

TEST(Goodput, GoodputFallsAsTheGpuCountRises) {
  GoodputInput in = base_input();
  in.rel.failures_per_gpu_hour = 1.97e-5;
  in.rel.restart_s = 600;
  double last = 1.0;
  for (std::int64_t gpus = 64; gpus <= 65536; gpus *= 2) {
    in.gpus = gpus;
    const TimeToTrain t = time_to_train(in);
    EXPECT_LT(t.goodput, last) << gpus;
    EXPECT_GT(t.goodput, 0) << gpus;
    last = t.goodput;
  }
}

TEST(Goodput, TheBandScalesTheStepTime) {
  GoodputInput in = base_input();
  in.checkpoint_bytes = 0;
  in.band_p10 = 0.9;
  in.band_p90 = 1.2;
  const TimeToTrain t = time_to_train(in);
  // Failure-free: wall clock is proportional to the step time.
  EXPECT_NEAR(t.p10_days, 0.9 * t.days, 1e-9);
  EXPECT_NEAR(t.p90_days, 1.2 * t.days, 1e-9);
  in.rel.failures_per_gpu_hour = 2e-5;
  in.checkpoint_bytes = 1e12;
  const TimeToTrain f = time_to_train(in);
  EXPECT_LT(f.p10_days, f.days);
  EXPECT_GT(f.p90_days, f.days);
}

TEST(Goodput, WallClockIsTheSumOfItsParts) {
  GoodputInput in = base_input();
  in.rel.failures_per_gpu_hour = 2e-5;
  in.rel.restart_s = 600;
  in.rel.planned_per_day = 0.5;
  const TimeToTrain t = time_to_train(in);
  EXPECT_NEAR(t.compute_s + t.checkpoint_s + t.restart_total_s + t.rework_s, t.days * 86400, 1e-6 * t.days * 86400);
}

TEST(Goodput, AsyncCheckpointsWaitForStorageBeforeTheNext) {
  GoodputInput in = base_input();
  in.rel.failures_per_gpu_hour = 2e-5;
  in.rel.checkpoint_mode = "async";
  in.rel.storage_gbps = 0.1;  // 1 TB takes 10,000 s to reach storage, longer than Young's interval
  const TimeToTrain t = time_to_train(in);
  EXPECT_NEAR(t.checkpoint.drain_s, 1e4, 1e-6);
  EXPECT_GE(t.checkpoint.interval_s, t.checkpoint.drain_s);
  // The pause is the host copy: 1e12 / 1024 B at 50 GB/s = 19.5 ms
  EXPECT_NEAR(t.checkpoint.write_s, 1e12 / 1024 / 50e9, 1e-12);
}

TEST(Goodput, BadInputIsAConfigError) {
  GoodputInput in = base_input();
  in.step_s = 0;
  EXPECT_THROW(time_to_train(in), ConfigError);
  in = base_input();
  in.rel.storage_gbps = 0;
  EXPECT_THROW(time_to_train(in), ConfigError);
  in = base_input();
  in.interval_s = -1.0;
  EXPECT_THROW(time_to_train(in), ConfigError);
}

TEST(Reliability, TheDefaultFileGivesLlama3sInterruptionRate) {
  const ReliabilityFigures f = load_reliability(test::data_dir() + "/" + kReliabilityFile);
  // The paper: about one unexpected interruption every three hours on 16,384 GPUs.
  EXPECT_NEAR(1 / (f.failures_per_gpu_hour * 16384), 3.0, 0.15);
  EXPECT_FALSE(f.sources.empty());
}

TEST(Reliability, UnknownKeyNamesFileAndPointer) {
  Json j = read_json_file(test::data_dir() + "/" + kReliabilityFile);
  j["storage"]["write_gbsp"] = 1;
  const std::string path = ::testing::TempDir() + "bad_reliability.json";
  std::ofstream(path) << j.dump();
  try {
    load_reliability(path);
    FAIL() << "accepted an unknown key";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/storage/write_gbsp"), std::string::npos) << e.what();
  }
}

TEST(Goodput, ScenarioCheckpointHoldsWeightsAndAdamStates) {
  // llama2-7b (6.74B parameters) in bf16 with Adam: 2 B weights + 12 B optimizer states each.
  const Scenario sc = test::scenario_from(test::base_scenario());
  EXPECT_NEAR(checkpoint_bytes(sc) / 1e9, 6.74 * 14, 0.5);
}

}  // namespace
}  // namespace parasim
