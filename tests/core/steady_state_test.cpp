// Folding a long step onto its steady state (sim/steady_state.h): the folded Result equals the
// whole step's simulation, and a step of 65,536 microbatches runs in bounded memory.
#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "../test_util.h"

namespace parasim {
namespace {

const Registries& registries() {
  static const Registries reg;
  return reg;
}

// A small model (8 layers of Llama 2 7B's width) so that whole steps of 100+ microbatches stay cheap.
Scenario layout(const std::string& schedule, std::int64_t pp, std::int64_t vpp, std::int64_t dp, std::int64_t tp, std::int64_t m,
                const Json& extra = Json::object()) {
  Json j = test::base_scenario();
  j["model"] = {{"name", "small"}, {"layers", 8}, {"hidden", 4096}, {"heads", 32}, {"vocab", 32000}, {"activation", "swiglu"},
                {"ffn_hidden", 11008}};
  j["cluster"] = {{"gpu", "h100-sxm5-80g"}, {"nodes", pp * dp * tp > 8 ? pp * dp * tp / 8 : 1},
                  {"gpus_per_node", std::min<std::int64_t>(8, pp * dp * tp)}};
  j["training"] = {{"global_batch", m * dp}, {"micro_batch", 1}, {"seq_len", 2048}};
  j["parallel"] = {{"dp", dp}, {"tp", tp}, {"pp", pp}, {"schedule", schedule}};
  if (vpp > 1) j["parallel"]["vpp"] = vpp;
  j["parallel"].update(extra);
  return test::scenario_from(j);
}

void expect_close(double folded, double whole, const std::string& what) {
  EXPECT_NEAR(folded, whole, 1e-9 * std::max(std::abs(whole), 1.0)) << what;
}

// Every figure of the folded Result against the whole step simulated op by op.
void expect_fold_exact(const Scenario& sc, const std::string& name) {
  const SimulationOutput folded = simulate(sc, registries());
  const SimulationOutput whole = simulate(sc, registries(), nullptr, Detail::Timeline);
  ASSERT_TRUE(folded.fold.folded()) << name;
  ASSERT_FALSE(whole.fold.folded()) << name;
  EXPECT_TRUE(folded.program.ops.empty()) << name;  // nothing of the whole step is kept
  const Result &f = folded.result, &w = whole.result;
  EXPECT_EQ(f.ops, w.ops) << name;
  EXPECT_EQ(f.events, w.events) << name;
  for (const auto& [what, a, b] : std::initializer_list<std::tuple<const char*, double, double>>{
           {"step", f.step_time_s, w.step_time_s}, {"tokens/s", f.tokens_per_s, w.tokens_per_s}, {"mfu", f.mfu, w.mfu},
           {"hfu", f.hfu, w.hfu}, {"bubble", f.bubble_fraction, w.bubble_fraction}, {"peak", f.peak_mem_gib, w.peak_mem_gib},
           {"reserved", f.reserved_gib, w.reserved_gib}, {"exposed", f.exposed.total(), w.exposed.total()}})
    expect_close(a, b, name + " " + what);
  ASSERT_EQ(f.ranks.size(), w.ranks.size());
  for (size_t r = 0; r < f.ranks.size(); ++r) {
    expect_close(f.ranks[r].peak_mem_gib, w.ranks[r].peak_mem_gib, name + " rank peak");
    expect_close(f.ranks[r].idle_s, w.ranks[r].idle_s, name + " rank idle");
    expect_close(f.ranks[r].bubble_fraction, w.ranks[r].bubble_fraction, name + " rank bubble");
  }
  for (const auto& [k, v] : w.breakdown) expect_close(f.breakdown.at(k), v, name + " " + k);
  // Where the time went, folded alike, against the whole step's timeline line by line.
  const SimulationOutput with_times = simulate(sc, registries(), nullptr, Detail::Partition);
  ASSERT_TRUE(with_times.fold.folded()) << name;
  ASSERT_TRUE(with_times.partition) << name;
  test::expect_same_partition(*with_times.partition, partition_time(whole.program, whole.timeline, whole.result), name);
}

TEST(SteadyState, FoldedStepEqualsTheWholeStep) {
  expect_fold_exact(layout("ddp", 1, 1, 8, 1, 64), "ddp");
  expect_fold_exact(layout("ddp", 1, 1, 8, 1, 64, {{"fsdp", {{"sharding", "full"}}}}), "fsdp");
  expect_fold_exact(layout("gpipe", 2, 1, 2, 2, 64, {{"sequence_parallel", true}}), "gpipe");  // activations grow with m
  expect_fold_exact(layout("1f1b", 4, 1, 4, 1, 128, {{"zero_stage", 1}}), "1f1b over two nodes");
  expect_fold_exact(layout("interleaved", 4, 2, 2, 1, 128), "interleaved");
  expect_fold_exact(layout("zb-h1", 4, 1, 2, 1, 128), "zb-h1");
}

// Each schedule's declared Periodicity (sim/parallel/schedule.h) is where its step really becomes
// affine: the line through its first three fold points predicts, to 1e-9, every figure of the step
// simulated op by op three groups further on. Two layouts per schedule: one node, and two nodes
// with ZeRO-1 and tensor parallelism. Every schedule with an order must be here.
TEST(SteadyState, EverySchedulesStepIsAffineFromItsFill) {
  std::set<std::string> covered{"dataparallel", "naive"};  // one batch at a time: no microbatch count to fold
  for (const auto& [schedule, vpp] : std::initializer_list<std::pair<std::string, std::int64_t>>{
           {"ddp", 1}, {"gpipe", 1}, {"1f1b", 1}, {"interleaved", 2}, {"zb-h1", 1}}) {
    covered.insert(schedule);
    const std::int64_t pp = schedule == "ddp" ? 1 : 4;
    for (const auto& [dp, tp, extra] : std::initializer_list<std::tuple<std::int64_t, std::int64_t, Json>>{
             {2, 1, Json::object()}, {2, 2, Json{{"zero_stage", 1}}}}) {
      const Scenario base = layout(schedule, pp, vpp, dp, tp, 64, extra);
      const FoldPoints f = fold_points(base, registries().schedules);
      std::array<Result, 3> at;
      for (int k = 0; k < 3; ++k)
        at[static_cast<size_t>(k)] = simulate(with_microbatches(base, f.at(k)), registries(), nullptr, Detail::Timeline).result;
      const std::int64_t m = f.at(5);
      const Scenario far = with_microbatches(base, m);
      const std::optional<Result> line = extrapolate_steady_state(
          at, f, m, static_cast<double>(far.training.global_batch) * static_cast<double>(far.training.seq_len));
      const std::string name = schedule + " dp " + std::to_string(dp) + " tp " + std::to_string(tp);
      ASSERT_TRUE(line.has_value()) << name << ": not affine from " << f.first;
      const Result w = simulate(far, registries(), nullptr, Detail::Timeline).result;
      EXPECT_EQ(line->ops, w.ops) << name;
      for (const auto& [what, a, b] : std::initializer_list<std::tuple<const char*, double, double>>{
               {"step", line->step_time_s, w.step_time_s}, {"bubble", line->bubble_fraction, w.bubble_fraction},
               {"peak", line->peak_mem_gib, w.peak_mem_gib}, {"reserved", line->reserved_gib, w.reserved_gib},
               {"exposed", line->exposed.total(), w.exposed.total()}})
        expect_close(a, b, name + " " + what);
    }
  }
  const std::vector<std::string> all = registries().schedules.names();
  EXPECT_EQ(covered, std::set<std::string>(all.begin(), all.end()));
}

TEST(SteadyState, ShortStepsAreSimulatedWhole) {
  // The three fold points (4, 5, 6 microbatches, from the fill of 4) cost 15 > 12.
  const SimulationOutput out = simulate(layout("1f1b", 4, 1, 2, 1, 12), registries());
  EXPECT_FALSE(out.fold.folded());
  EXPECT_FALSE(out.program.ops.empty());
}

TEST(SteadyState, FiguresOffOneLineAreNotExtrapolated) {
  std::array<Result, 3> at;
  for (int k = 0; k < 3; ++k) at[static_cast<size_t>(k)].step_time_s = 1.0 + k * k;  // 1, 2, 5: not affine
  EXPECT_FALSE(extrapolate_steady_state(at, FoldPoints{8, 8}, 1000, 1.0).has_value());
  at[2].step_time_s = 3.0;
  const std::optional<Result> r = extrapolate_steady_state(at, FoldPoints{8, 8}, 1000, 1.0);
  ASSERT_TRUE(r.has_value());
  EXPECT_NEAR(r->step_time_s, 1000.0 / 8, 1e-9);  // one second per 8 microbatches
}

// Three collinear points whose step grows slower than a rank's compute stream: a steeper piece of
// the (convex, piecewise affine) step is still ahead, so nothing is extrapolated.
TEST(SteadyState, AStepGrowingSlowerThanAComputeStreamIsNotExtrapolated) {
  std::array<Result, 3> at;
  for (int k = 0; k < 3; ++k) {
    Result& r = at[static_cast<size_t>(k)];
    r.step_time_s = 10.0 + k;  // one second per group of microbatches
    r.ranks.resize(1);
    r.ranks[0].compute_s = 4.0 + 0.9 * k;  // the compute stream: 0.9 s per group, below the step's 1 s
  }
  EXPECT_TRUE(extrapolate_steady_state(at, FoldPoints{8, 8}, 1000, 1.0).has_value());
  for (int k = 0; k < 3; ++k) at[static_cast<size_t>(k)].ranks[0].compute_s = 4.0 + 1.5 * k;  // 1.5 s per group: faster than the step
  EXPECT_FALSE(extrapolate_steady_state(at, FoldPoints{8, 8}, 1000, 1.0).has_value());
}

// ../shared/repro/405b_mb65536.json: Llama 3.1 405B with 65,536 microbatches per pipeline took
// 8.1 GB and ended in std::bad_alloc. Folded, it keeps no op of the whole step; its op count is
// what the whole step's program has (counted from two whole steps of 512 and 1,024 microbatches).
TEST(SteadyState, SixtyFiveThousandMicrobatchesInBoundedMemory) {
  const Scenario sc = parse_scenario(read_json_file(test::test_data("repro/405b_mb65536.json")), "405b_mb65536.json", test::data_dir());
  const SimulationOutput out = simulate(sc, registries());
  ASSERT_TRUE(out.fold.folded());
  EXPECT_EQ(out.fold.microbatches, 65536);
  EXPECT_TRUE(out.program.ops.empty());
  EXPECT_LE(out.fold.simulated[2], 1024);
  const auto ops = [&](std::int64_t m) {
    return static_cast<std::int64_t>(simulate(with_microbatches(sc, m), registries(), nullptr, Detail::Timeline).program.ops.size());
  };
  const std::int64_t o512 = ops(512), o1024 = ops(1024);
  EXPECT_EQ(out.result.ops, o1024 + (65536 - 1024) / 512 * (o1024 - o512));
  EXPECT_GT(out.result.step_time_s, 0);
  EXPECT_LT(out.result.bubble_fraction, 0.01);  // (p-1)/(v m + p-1) with m = 65,536
}

}  // namespace
}  // namespace parasim
