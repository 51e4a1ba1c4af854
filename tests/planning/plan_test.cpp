// parasim plan: the enumeration respects the framework rules, accounts for every candidate, and
// what the memory bound prunes really does not fit.
#include <array>
#include <cstdio>

#include <gtest/gtest.h>

#include "sim/planning/layouts.h"
#include "tests/test_util.h"

namespace parasim {
namespace {

PlanJob small_job(std::int64_t gpus, bool cross_node_tp) {
  PlanJob job;
  job.model = "llama3-8b";  // 32 layers, 32 heads, 8 KV heads
  job.gpu = "h100-sxm5-80g";
  job.gpus = gpus;
  job.seq = 4096;
  job.global_batch = 32;
  job.max_micro_batch = 2;
  job.max_vpp = 2;
  job.allow_cross_node_tp = cross_node_tp;
  job.base = {{"schema", "parasim.scenario/1"},
              {"cluster", {{"gpu", job.gpu}, {"gpus_per_node", 8}}},
              {"training", Json::object()}};
  job.base_file = "test.json";
  return job;
}

Scenario base_of(const PlanJob& job) {
  PlanLayout l;
  l.dp = job.gpus;
  PlanJob any = job;
  any.global_batch = job.gpus;
  return parse_scenario(layout_scenario(any, l), "test.json", test::data_dir());
}

// A job smaller than the base's node (an NVL72 rack's 64-GPU NVLink domain) plans on the part of
// it the job uses: 8 GPUs are one 8-GPU node with a NIC each, not an error.
TEST(Plan, AJobSmallerThanTheBaseNodeRunsOnPartOfIt) {
  PlanJob job = small_job(8, false);
  job.base["cluster"]["gpus_per_node"] = 64;
  job.base["cluster"]["inter_node"] = {{"nics_per_node", 64}};
  const Scenario sc = base_of(job);
  EXPECT_EQ(sc.cluster.gpus_per_node, 8);
  EXPECT_EQ(sc.cluster.nodes, 1);
  job.gpus = 12;  // not a part of 64 that divides it
  EXPECT_THROW(plan_base_scenario(job, test::data_dir()), ConfigError);
}

TEST(Plan, EveryCandidateIsKeptOrCountedAgainstOneRule) {
  const PlanJob job = small_job(16, false);
  const Enumeration en = enumerate_layouts(job, base_of(job));
  std::int64_t pruned = 0;
  for (const auto& [rule, n] : en.pruned) pruned += n;
  EXPECT_EQ(en.candidates, pruned + static_cast<std::int64_t>(en.layouts.size()));
  EXPECT_FALSE(en.layouts.empty());
}

TEST(Plan, LayoutsRespectTheFrameworkRules) {
  for (const bool cross : {false, true}) {
    const PlanJob job = small_job(16, cross);
    const Scenario base = base_of(job);
    const Enumeration en = enumerate_layouts(job, base);
    bool tp16_seen = false;
    for (const PlanLayout& l : en.layouts) {
      EXPECT_EQ(l.dp * l.tp * l.pp * l.cp, job.gpus);
      EXPECT_LE(l.tp, base.model.kv_heads);  // Megatron-Core: TP <= KV heads
      EXPECT_EQ(base.model.kv_heads % l.tp, 0);
      if (!cross) {
        EXPECT_LE(l.tp, 8);  // within a node
      }
      EXPECT_EQ(base.model.layers % (l.pp * l.vpp), 0);
      EXPECT_EQ(job.global_batch % (l.micro_batch * l.dp), 0);
      EXPECT_TRUE(!l.tp_comm_overlap || l.sequence_parallel);
      EXPECT_TRUE(!l.sequence_parallel || l.tp > 1);
      EXPECT_EQ(l.schedule == Schedule::Ddp, l.pp == 1);
      EXPECT_EQ(l.schedule == Schedule::Interleaved, l.vpp > 1);
      tp16_seen = tp16_seen || l.tp == 16;
    }
    EXPECT_FALSE(tp16_seen);  // 16 > 8 KV heads, even across nodes
    // With cross-node TP allowed, tp 16 is removed by the head rule instead of the node rule.
    EXPECT_EQ(en.pruned.count("TP within a node") > 0, !cross);
  }
}

TEST(Plan, WhatTheMemoryBoundPrunesDoesNotFit) {
  // Llama 3 8B on 8 H100: without sharding 16 bytes x 8 B parameters over tp alone leaves layouts
  // whose states exceed 72 GiB (80 GB x 0.9).
  const PlanJob job = small_job(8, false);
  const Enumeration en = enumerate_layouts(job, base_of(job));
  ASSERT_GE(en.memory_pruned_sample.size(), 4u);
  const Registries reg;
  const double cap = base_of(job).profile.device.memory_bytes * (1 - job.headroom);
  // A spread of the sample: first, last and two between.
  const size_t n = en.memory_pruned_sample.size();
  for (const size_t i : {size_t{0}, n / 3, 2 * n / 3, n - 1}) {
    const PlanLayout& l = en.memory_pruned_sample[i];
    const Scenario sc = parse_scenario(layout_scenario(job, l), "test.json", test::data_dir());
    const SimulationOutput out = simulate(sc, reg);
    EXPECT_GT(out.result.peak_mem_gib * kGiB, cap) << layout_settings(l).dump();
    EXPECT_LE(memory_lower_bound(sc, l, reg.schedules), out.result.peak_mem_gib * kGiB) << layout_settings(l).dump();
  }
}

TEST(Plan, SurvivorsLoadAndTheBestFits) {
  PlanJob job = small_job(8, false);
  job.global_batch = 16;
  job.max_vpp = 1;
  job.max_micro_batch = 1;
  const Registries reg;
  EvalOptions opt;
  opt.jobs = 2;
  const PlanResult res = run_plan(job, test::data_dir(), reg, Objective::Throughput, opt);
  ASSERT_FALSE(res.evaluated.rows.empty());
  EXPECT_EQ(res.evaluated.rows.front().status, "ok");
  EXPECT_GE(res.evaluated.rows.front().headroom, job.headroom);
  EXPECT_TRUE(res.evaluated.skipped.empty()) << res.evaluated.skipped.begin()->first;
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST(Plan, TimeToTrainOfTheBestLayoutIncludesGoodput) {
  // The best layout's time to train: never shorter than its tokens at its throughput (the curve's
  // ideal days); failures, restarts and checkpoints only add, so goodput lies in (0, 1].
  const Json j = Json::parse(test::cli_stdout(
      "plan --model llama3-8b --gpu h100-sxm5-80g --gpus 8 --seq 4096 --global-batch 16 --max-vpp 1 --max-micro-batch 1 "
      "--tokens 1e11 --price-per-gpu-hour 2 --json --jobs 2").second);
  const Json& t = j.at("time_to_train");
  ASSERT_TRUE(t.is_object()) << j.dump();
  const double ideal = j.at("curve").at(0).at("days").get<double>();
  EXPECT_GE(t.at("days").get<double>(), ideal * (1 - 1e-9));
  EXPECT_GT(t.at("goodput").get<double>(), 0);
  EXPECT_LE(t.at("goodput").get<double>(), 1);
  EXPECT_NEAR(t.at("cost").get<double>(), 2 * t.at("gpu_hours").get<double>(), 1e-6 * t.at("cost").get<double>());
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

// --search bound: the best `search_top` rows are the exhaustive search's, figure for figure, for
// every objective, while layouts whose step's lower bound ranks them out are not simulated.
TEST(Plan, BoundSearchFindsTheExhaustiveBestRows) {
  PlanJob job = small_job(16, false);
  const Registries reg;
  EvalOptions opt;
  opt.jobs = 2;
  const PlanResult all = run_plan(job, test::data_dir(), reg, Objective::Throughput, opt);
  job.search_top = 4;
  const PlanResult bound = run_plan(job, test::data_dir(), reg, Objective::Throughput, opt);
  ASSERT_GE(all.evaluated.rows.size(), 8u);
  EXPECT_EQ(bound.evaluated.evaluated, all.evaluated.evaluated);  // every layout decided
  EXPECT_GT(bound.evaluated.bound_skipped, 0u);
  EXPECT_EQ(bound.evaluated.rows.size() + bound.evaluated.bound_skipped, all.evaluated.rows.size());
  // Every objective orders layouts of one GPU count by their step, so one search serves them all.
  for (const Objective objective : {Objective::Throughput, Objective::Cost, Objective::StepTime}) {
    std::vector<Row> a = all.evaluated.rows, b = bound.evaluated.rows;
    rank_rows(a, objective);
    rank_rows(b, objective);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(b[i].index, a[i].index) << objective_name(objective) << " " << i;
      EXPECT_EQ(b[i].status, "ok");
      EXPECT_EQ(b[i].step_s, a[i].step_s) << i;
      EXPECT_EQ(b[i].peak_mem_gib, a[i].peak_mem_gib) << i;
    }
  }
}

// The bounds the search skips by hold for every layout of a job (1F1B, interleaved, ZB-H1, DDP;
// recompute, tensor, context and sequence parallel): floor and lowered bound at or below the step.
TEST(Plan, BoundsNeverPassTheStepOfAnyLayout) {
  const PlanJob job = small_job(16, false);
  const Registries reg;
  const Enumeration en = enumerate_layouts(job, base_of(job));
  ASSERT_GE(en.layouts.size(), 20u);
  int floors_above_bound = 0;
  for (const PlanLayout& l : en.layouts) {
    const Scenario sc = parse_scenario(layout_scenario(job, l), job.base_file, test::data_dir());
    const double step = simulate(sc, reg).result.step_time_s;
    const double floor = step_floor_s(sc, reg), bound = step_lower_bound_s(sc, reg);
    EXPECT_LE(floor, step * (1 + 1e-9)) << layout_scenario(job, l)["parallel"].dump();
    EXPECT_LE(bound, step * (1 + 1e-9)) << layout_scenario(job, l)["parallel"].dump();
    floors_above_bound += floor > bound;
  }
  // The floor counts the pipeline's fill and drain, which the lowered bound leaves out.
  EXPECT_GT(floors_above_bound, 0);
}

// The same rows whatever the thread count: the batches simulated do not depend on it.
TEST(Plan, BoundSearchIsTheSameOnOneThreadAndTwo) {
  PlanJob job = small_job(8, false);
  job.search_top = 3;
  const Registries reg;
  EvalOptions one, two;
  two.jobs = 2;
  const PlanResult a = run_plan(job, test::data_dir(), reg, Objective::Throughput, one);
  const PlanResult b = run_plan(job, test::data_dir(), reg, Objective::Throughput, two);
  ASSERT_EQ(a.evaluated.rows.size(), b.evaluated.rows.size());
  for (size_t i = 0; i < a.evaluated.rows.size(); ++i) EXPECT_EQ(row_json(a.evaluated.rows[i], 0), row_json(b.evaluated.rows[i], 0));
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

// A job no layout fits (Mixtral 8x7B's 47B parameters and their Adam states on 8 H100): the plan
// says so and what to change, rather than printing an empty table of the best.
TEST(Plan, NoLayoutThatFitsIsSaidSo) {
  const auto [rc, out] = test::cli_stdout("plan --model mixtral-8x7b --gpu h100-sxm5-80g --gpus 8 --seq 4096 --global-batch 64 --top 3 --jobs 2");
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("no layout of mixtral-8x7b fits in memory with 10 % headroom on 8 GPUs"), std::string::npos) << out;
  EXPECT_EQ(out.find("best 3 by"), std::string::npos) << out;
}

}  // namespace
}  // namespace parasim
