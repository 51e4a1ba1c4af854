// Properties over seeded random valid scenarios (issue 40): whatever the layout, schedule, sharding
// and fabric, the simulator must never answer a planner's question the wrong way round.
//  - more bandwidth is never slower;
//  - more sharding (ZeRO 0 -> 1 -> 2 -> 3) never takes more memory per GPU;
//  - executed FLOPs never exceed the profile's sustained ceiling (HFU);
//  - the same input gives the same Result, bit for bit;
//  - a step folded onto its steady state (sim/steady_state.h) gives what the whole step gives.
#include <random>

#include <gtest/gtest.h>

#include "../test_util.h"
#include "tools/report.h"

namespace parasim {
namespace {

const Registries& registries() {
  static const Registries reg;
  return reg;
}

// A random layout of a small dense model (8 layers) on 1, 2 or 4 nodes of 8 GPUs, or nothing when
// the parser refuses the draw (it is then not a valid scenario).
std::optional<Json> draw(std::mt19937& rng) {
  const auto pick = [&rng](std::initializer_list<std::int64_t> xs) { return *(xs.begin() + rng() % xs.size()); };
  const std::int64_t nodes = pick({1, 2, 4}), tp = pick({1, 2, 4, 8}), pp = pick({1, 2, 4}), cp = pick({1, 2});
  const std::int64_t world = nodes * 8;
  if (world % (tp * pp * cp) != 0) return std::nullopt;
  const std::int64_t dp = world / (tp * pp * cp), m = pp * pick({1, 2, 3});
  Json j = test::base_scenario();
  j["model"] = {{"name", "small"}, {"layers", 8}, {"hidden", 2048}, {"heads", 16}, {"kv_heads", 8}, {"vocab", 32000},
                {"activation", "swiglu"}, {"ffn_hidden", 5632}};
  j["cluster"] = {{"gpu", "h100-sxm5-80g"}, {"nodes", nodes}, {"gpus_per_node", 8},
                  {"inter_node", {{"kind", "fat_tree"}, {"nics_per_node", 8}, {"nic_gbps", pick({12, 25, 50})}}}};
  j["training"] = {{"global_batch", m * dp}, {"micro_batch", 1}, {"seq_len", 4096}};
  j["parallel"] = {{"dp", dp}, {"tp", tp}, {"pp", pp}, {"cp", cp}, {"zero_stage", pick({0, 1, 2})}};
  if (pp == 1) j["parallel"]["schedule"] = "ddp";
  else {
    const std::int64_t s = pick({0, 1, 2, 3});
    j["parallel"]["schedule"] = s == 0 ? "gpipe" : s == 1 ? "1f1b" : s == 2 ? "interleaved" : "zb-h1";
    if (s == 2) j["parallel"]["vpp"] = 2;
  }
  if (tp > 1) j["parallel"]["sequence_parallel"] = rng() % 2 == 0;
  j["parallel"]["recompute"] = pick({0, 1}) ? "selective" : "none";
  try {
    test::scenario_from(j);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
  return j;
}

Result run(const Json& j) { return simulate(test::scenario_from(j), registries()).result; }

TEST(Properties, OverRandomScenarios) {
  std::mt19937 rng(4040);
  int valid = 0, multi_node = 0, sharded = 0;
  for (int trial = 0; trial < 400 && valid < 40; ++trial) {
    const std::optional<Json> j = draw(rng);
    if (!j) continue;
    ++valid;
    SCOPED_TRACE(j->dump());
    const Scenario sc = test::scenario_from(*j);
    const Result r = run(*j);
    // Executed FLOPs within the hardware's sustained ceiling.
    EXPECT_LE(r.hfu, sc.profile.sustained_clock_ratio.value);
    // Deterministic, bit for bit.
    EXPECT_EQ(result_json(run(*j)).dump(), result_json(r).dump());
    // More bandwidth between nodes is never slower.
    if (sc.cluster.nodes > 1) {
      ++multi_node;
      Json faster = *j;
      faster["cluster"]["inter_node"]["nic_gbps"] = 4 * (*j)["cluster"]["inter_node"]["nic_gbps"].get<double>();
      EXPECT_LE(run(faster).step_time_s, r.step_time_s * (1 + 1e-9));
    }
    // More sharding never takes more memory per GPU.
    if (sc.parallel.dp > 1) {
      ++sharded;
      double previous = std::numeric_limits<double>::infinity();
      for (int z = 0; z <= 3; ++z) {
        Json zj = *j;
        zj["parallel"]["zero_stage"] = z;
        const double peak = run(zj).peak_mem_gib;
        EXPECT_LE(peak, previous * (1 + 1e-9)) << "zero_stage " << z;
        previous = peak;
      }
    }
  }
  // The properties were exercised.
  EXPECT_GE(valid, 40);
  EXPECT_GE(multi_node, 10);
  EXPECT_GE(sharded, 10);
}

TEST(Properties, FoldedStepsEqualWholeStepsOverRandomScenarios) {
  std::mt19937 rng(4041);
  int folded = 0;
  for (int trial = 0; trial < 400 && folded < 25; ++trial) {
    std::optional<Json> j = draw(rng);
    if (!j) continue;
    const Scenario small = test::scenario_from(*j);
    const std::int64_t m = 2 * fold_points(small, registries().schedules).simulated();  // folded: the three points cost half the step
    (*j)["training"]["global_batch"] = m * small.parallel.dp;
    SCOPED_TRACE(j->dump());
    const Scenario sc = test::scenario_from(*j);
    const SimulationOutput f = simulate(sc, registries());
    const Result w = simulate(sc, registries(), nullptr, Detail::Timeline).result;
    if (!f.fold.folded()) continue;  // not periodic at the points tried: simulated whole, nothing to compare
    ++folded;
    EXPECT_EQ(f.result.ops, w.ops);
    for (const auto& [what, a, b] : std::initializer_list<std::tuple<const char*, double, double>>{
             {"step", f.result.step_time_s, w.step_time_s}, {"peak", f.result.peak_mem_gib, w.peak_mem_gib},
             {"reserved", f.result.reserved_gib, w.reserved_gib}, {"mfu", f.result.mfu, w.mfu}, {"hfu", f.result.hfu, w.hfu},
             {"bubble", f.result.bubble_fraction, w.bubble_fraction}, {"exposed", f.result.exposed.total(), w.exposed.total()}})
      EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::abs(b))) << what;
  }
  EXPECT_GE(folded, 25);
}

}  // namespace
}  // namespace parasim
