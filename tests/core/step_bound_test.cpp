// The step's lower bound from lowering alone (step_lower_bound_s, sim/simulation.h), which a
// planner uses to skip layouts: never above the simulated step, and its extension from one and two
// groups of microbatches equal to the whole step's compute-stream work. The floor without lowering
// (step_floor_s) lies below the step too, and the schedules' orders are what it assumes.
#include <algorithm>
#include <filesystem>
#include <vector>

#include <gtest/gtest.h>

#include "../test_util.h"

namespace parasim {
namespace {

// The busiest rank's compute-stream work of the whole program, read op by op.
double whole_compute_work_s(const Program& p) {
  std::vector<double> work(p.ranks.size(), 0.0);
  for (const Op& op : p.ops)
    if (op.stream == Stream::Compute) work[static_cast<size_t>(op.rank)] += static_cast<double>(op.duration) / static_cast<double>(kPicosPerSecond);
  return *std::max_element(work.begin(), work.end());
}

TEST(StepBound, NeverAboveTheSimulatedStepAndAffineInTheMicrobatches) {
  const Registries reg;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(test::data_dir() + "/scenarios"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  int tight = 0, tight_floor = 0;
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    const Scenario sc = parse_scenario(read_json_file(f.string()), f.string(), test::data_dir());
    const double bound = step_lower_bound_s(sc, reg);
    const SimulationOutput whole = simulate(sc, reg, nullptr, Detail::Timeline);
    EXPECT_LE(bound, whole.result.step_time_s * (1 + 1e-9));
    EXPECT_NEAR(bound, whole_compute_work_s(whole.program), 1e-9 * whole.result.step_time_s);
    EXPECT_GT(bound, 0.0);
    if (bound > 0.5 * whole.result.step_time_s) ++tight;
    const double floor = step_floor_s(sc, reg);
    EXPECT_LE(floor, whole.result.step_time_s * (1 + 1e-9));
    // Without a pipeline the floor is its per-microbatch counting alone, which must stay within
    // the ops the lowering puts on the compute stream.
    if (sc.parallel.pp == 1) {
      EXPECT_LE(floor, bound * (1 + 1e-12));
    }
    EXPECT_GT(floor, 0.0);
    if (floor > 0.5 * bound) ++tight_floor;
  }
  // A bound that prunes: most shipped steps spend most of their time computing.
  EXPECT_GE(tight, static_cast<int>(files.size()) / 2);
  // The floor leaves out the pipeline's sends, the gradient sync and the optimizer: most of the
  // bound all the same.
  EXPECT_GE(tight_floor, static_cast<int>(files.size()) * 3 / 4);
}

// step_floor_s's premises, for every pipeline schedule the registry holds: each stage's first
// action is a first-chunk forward (it waits for the stages before to forward that microbatch),
// and, where the backward is not split, its last is a first-chunk backward (the stages before
// then run theirs).
TEST(StepBound, EachStageStartsWithAFirstChunkForwardAndEndsWithAFirstChunkBackward) {
  const Registries reg;
  int orders = 0;
  for (const auto& e : reg.schedules.entries()) {
    const ScheduleDef& def = e.factory;
    if (!def.order) continue;
    SCOPED_TRACE(e.name);
    for (const std::int64_t p : {1, 2, 4, 8})
      for (const std::int64_t k : {1, 2, 3, 5})
        for (const std::int64_t v : {1, 2, 3}) {
          if ((v > 1) != def.chunked || (def.pipeline && p < 2) || (!def.pipeline && p > 1)) continue;
          const std::int64_t m = !def.microbatched ? 1 : def.chunked ? k * p : k;
          const StageOrder order = def.order(ScheduleSpec{p, m, v});
          ASSERT_EQ(order.size(), static_cast<size_t>(p));
          for (const auto& acts : order) {
            ASSERT_FALSE(acts.empty());
            EXPECT_EQ(acts.front().kind, Action::F);
            EXPECT_EQ(acts.front().chunk, 0);
            if (def.splits_backward) continue;
            EXPECT_EQ(acts.back().kind, Action::B);
            EXPECT_EQ(acts.back().chunk, 0);
          }
          ++orders;
        }
  }
  EXPECT_GE(orders, 30);
}

}  // namespace
}  // namespace parasim
