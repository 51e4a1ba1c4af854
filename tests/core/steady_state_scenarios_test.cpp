// Every shipped scenario and every measured run whose step folds onto its steady state
// (sim/steady_state.h) gives, folded, what the whole step simulated op by op gives, to 1e-9: the
// fold's fill points (Periodicity in sim/parallel/schedule.h) checked on the real layouts, not only
// on the small ones of steady_state_test.cpp; and the planner's step bound below every step. About 8 s in Release (ctest label "slow").
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "../test_util.h"

namespace parasim {
namespace {

TEST(SteadyStateScenarios, EveryFoldedScenarioEqualsItsWholeStep) {
  const Registries reg;
  int folded = 0;
  for (const auto& f : test::scenario_and_measured_files()) {
    Json j = read_json_file(f.string());
    if (j.value("schema", "") == "parasim.measured/1") j = j["scenario"];
    else if (j.value("schema", "") != "parasim.scenario/1") continue;  // e.g. the list of skipped runs
    const Scenario sc = parse_scenario(j, f.string(), test::data_dir());
    const SimulationOutput out = simulate(sc, reg, nullptr, Detail::Partition);
    // The planner's bound (step_lower_bound_s) holds for every published layout, folded or not.
    EXPECT_LE(step_lower_bound_s(sc, reg), out.result.step_time_s * (1 + 1e-9)) << f.filename().string();
    const double floor = step_floor_s(sc, reg);
    EXPECT_LE(floor, out.result.step_time_s * (1 + 1e-9)) << f.filename().string();
    // Without a pipeline the floor counts only compute-stream ops the lowering emits.
    if (sc.parallel.pp == 1) {
      EXPECT_LE(floor, step_lower_bound_s(sc, reg) * (1 + 1e-12)) << f.filename().string();
    }
    if (!out.fold.folded()) continue;
    ++folded;
    const SimulationOutput whole = simulate(sc, reg, nullptr, Detail::Timeline);
    const Result& w = whole.result;
    const Result& r = out.result;
    SCOPED_TRACE(f.filename().string());
    EXPECT_EQ(r.ops, w.ops);
    for (const auto& [what, a, b] : std::initializer_list<std::tuple<const char*, double, double>>{
             {"step", r.step_time_s, w.step_time_s}, {"peak", r.peak_mem_gib, w.peak_mem_gib},
             {"reserved", r.reserved_gib, w.reserved_gib}, {"bubble", r.bubble_fraction, w.bubble_fraction},
             {"mfu", r.mfu, w.mfu}, {"exposed", r.exposed.total(), w.exposed.total()}})
      EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::abs(b))) << what;
    ASSERT_TRUE(out.partition);
    test::expect_same_partition(*out.partition, partition_time(whole.program, whole.timeline, whole.result), f.filename().string());
  }
  EXPECT_GE(folded, 100);  // most long published steps fold (124 when written)
}

}  // namespace
}  // namespace parasim
