// Fused ops (Program::segments, LoweringInput::fuse): a layer's forward and backward on the compute
// stream lowered as one op give the step, memory and every figure that the layer's ops one by one
// give, bit for bit, while the program holds fewer ops. EveryScenarioFused checks it on every
// shipped scenario and measured run (ctest label "slow").
#include <filesystem>
#include <memory>

#include <gtest/gtest.h>

#include "../test_util.h"
#include "sim/core/engine.h"
#include "sim/network/flow_network.h"
#include "sim/parallel/schedule.h"

namespace parasim {
namespace {

struct Step {
  Program program;
  Timeline timeline;
  Result result;
};

// The whole step (no fold) of `sc`, its layers fused or not, run and measured as simulate() does.
Step whole_step(const Scenario& sc, bool fuse) {
  static const Registries reg;
  const ModelGraph layers = build_model_graph(sc.model, layer_shape(sc));
  const CostModel cost(sc.profile, sc.training.gemm_dtype(), sc.training.priced_attention_kernel(), sc.slowest_gpu);
  const std::unique_ptr<NetworkModel> base = make_network(sc.network, sc.profile, sc.cluster);
  const ScaledNetwork scaled(*base, sc.profile.time_scale.network);
  const NetworkModel& net = sc.profile.time_scale.network != 1.0 ? static_cast<const NetworkModel&>(scaled) : *base;
  const LoweringInput in{sc, layers.kinds.front(), layers, cost, net, fuse};
  Step s;
  s.program = lower(reg.schedules, in);
  EngineOptions eo;
  eo.overlap_compute_slowdown = sc.profile.overlap_compute_slowdown.value;
  s.timeline = run_program(s.program, eo);
  MetricsInput mi;
  mi.tokens_per_step = static_cast<double>(sc.training.global_batch) * static_cast<double>(sc.training.seq_len);
  mi.gpus = sc.cluster.gpus();
  mi.peak_flops = cost.peak_flops();
  mi.capacity_bytes = sc.profile.device.memory_bytes;
  s.result = compute_metrics(mi, s.program, s.timeline);
  return s;
}

// Every figure of the two steps the same, bit for bit.
void expect_same_step(const Step& fused, const Step& ops, const std::string& what) {
  SCOPED_TRACE(what);
  const Result& a = fused.result;
  const Result& b = ops.result;
  EXPECT_EQ(fused.timeline.makespan, ops.timeline.makespan);
  EXPECT_EQ(a.ops, b.ops);
  EXPECT_EQ(a.events, b.events);
  for (const auto& [name, x, y] : std::initializer_list<std::tuple<const char*, double, double>>{
           {"step", a.step_time_s, b.step_time_s}, {"window", a.window_s, b.window_s}, {"mfu", a.mfu, b.mfu}, {"hfu", a.hfu, b.hfu},
           {"hfu reported", a.hfu_reported, b.hfu_reported}, {"bubble", a.bubble_fraction, b.bubble_fraction},
           {"exposed tp", a.exposed.tp, b.exposed.tp}, {"exposed dp", a.exposed.dp, b.exposed.dp}, {"exposed pp", a.exposed.pp, b.exposed.pp},
           {"exposed ep", a.exposed.ep, b.exposed.ep}, {"exposed cp", a.exposed.cp, b.exposed.cp}})
    EXPECT_EQ(x, y) << name;
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_EQ(fused.timeline.memory[r].peak, ops.timeline.memory[r].peak) << "rank " << r;
    EXPECT_EQ(fused.timeline.memory[r].peak_time, ops.timeline.memory[r].peak_time) << "rank " << r;
    EXPECT_EQ(fused.timeline.memory[r].high_water, ops.timeline.memory[r].high_water) << "rank " << r;
    EXPECT_EQ(fused.timeline.memory[r].at_peak, ops.timeline.memory[r].at_peak) << "rank " << r;
    EXPECT_EQ(a.ranks[r].compute_s, b.ranks[r].compute_s) << "rank " << r;
    EXPECT_EQ(a.ranks[r].comm_exposed_s, b.ranks[r].comm_exposed_s) << "rank " << r;
    EXPECT_EQ(a.ranks[r].bubble_fraction, b.ranks[r].bubble_fraction) << "rank " << r;
    EXPECT_EQ(a.ranks[r].phase_s, b.ranks[r].phase_s) << "rank " << r;
  }
  EXPECT_EQ(a.breakdown, b.breakdown);
  const TimePartition pa = partition_time(fused.program, fused.timeline, a);
  const TimePartition pb = partition_time(ops.program, ops.timeline, b);
  EXPECT_EQ(pa.compute_stream_s, pb.compute_stream_s);
  EXPECT_EQ(pa.other_streams_s, pb.other_streams_s);
}

// Megatron-style 1F1B with tensor parallelism and full recompute: per layer six forward ops (with
// the replay) and five backward ones, each run as one op.
Json pipeline_job() {
  Json j = test::base_scenario();
  j["cluster"]["nodes"] = 2;
  j["training"]["global_batch"] = 32;
  j["parallel"] = {{"dp", 2}, {"tp", 4}, {"pp", 2}, {"schedule", "1f1b"}, {"recompute", "full"}};
  return j;
}

TEST(FusedOps, ALayerRunsAsOneOpWithTheStepOfItsOps) {
  const Scenario sc = test::scenario_from(pipeline_job());
  const Step fused = whole_step(sc, true);
  const Step ops = whole_step(sc, false);
  expect_same_step(fused, ops, "1f1b");
  EXPECT_EQ(ops.program.fused_ops, 0);
  EXPECT_GT(fused.program.fused_ops, 0);
  // Per layer and microbatch: forward (attention, its all-reduce, MLP, its all-reduce) and backward
  // (the replay, the same four) each one op.
  const std::int64_t layer_passes = 2 * sc.model.layers * sc.microbatches();  // both stages' layers, forward and backward
  EXPECT_EQ(fused.program.fused_ops, layer_passes);
  EXPECT_EQ(fused.program.fused_segments, layer_passes / 2 * (4 + 5));
  EXPECT_EQ(static_cast<std::int64_t>(fused.program.ops.size()), static_cast<std::int64_t>(ops.program.ops.size()) - layer_passes / 2 * (4 + 5) + layer_passes);
  // One forward and one backward layer's segments, shared by every fused op.
  EXPECT_EQ(fused.program.segments.size(), 4u + 5u);
}

// The overlap slowdown re-times a fused op's segments when the rank's collective stream starts or
// stops in the middle of it: data parallelism's gradient buckets, all-reduced while the backward
// runs, stretch the layers' compute segments and not their TP communication, each rounded as its op.
TEST(FusedOps, TheOverlapSlowdownStretchesEachSegmentAsItsOp) {
  const Scenario sc = test::scenario_from(pipeline_job());
  ASSERT_GT(sc.profile.overlap_compute_slowdown.value, 0.0);
  expect_same_step(whole_step(sc, true), whole_step(sc, false), "slowed");
  Scenario unslowed = sc;
  unslowed.profile.overlap_compute_slowdown.value = 0;
  const Step plain = whole_step(unslowed, true);
  EXPECT_GT(whole_step(sc, true).result.step_time_s, plain.result.step_time_s);  // the slowdown did stretch the step
  expect_same_step(plain, whole_step(unslowed, false), "unslowed");
  for (const double slowdown : {0.05, 0.37, 1.0}) {
    Scenario s = sc;
    s.profile.overlap_compute_slowdown.value = slowdown;
    expect_same_step(whole_step(s, true), whole_step(s, false), "slowdown " + std::to_string(slowdown));
  }
}

// Every way a layer's ops can differ (partial full recompute, selective and op-level recompute,
// split weight gradients, interleaved chunks, context parallelism that hangs an op inside the layer
// or before it, offloaded activations, experts, a hybrid model's kinds of layer, FSDP): the same step.
TEST(FusedOps, EveryKindOfLayerGivesTheStepOfItsOps) {
  const std::vector<std::pair<const char*, Json>> variants = {
      {"partial recompute", {{"parallel", {{"recompute_num_layers", 5}}}}},
      {"selective", {{"parallel", {{"recompute", "selective"}}}}},
      {"op SAC", {{"parallel", {{"recompute", "selective_op"}}}}},
      {"no recompute", {{"parallel", {{"recompute", "none"}}}}},
      {"zero bubble", {{"parallel", {{"schedule", "zb-h1"}}}}},
      {"interleaved", {{"parallel", {{"schedule", "interleaved"}, {"vpp", 2}}}}},
      {"cp ring", {{"parallel", {{"cp", 2}, {"dp", 1}}}}},
      {"cp all-gather", {{"parallel", {{"cp", 2}, {"dp", 1}, {"cp_impl", "allgather"}}}}},
      {"offload", {{"parallel", {{"recompute", "none"}, {"pp", 1}, {"dp", 4}, {"schedule", "ddp"}, {"activation_offload_layers", 4}}}}},
      {"experts", {{"model", "mixtral-8x7b"}, {"parallel", {{"ep", 2}, {"recompute", "selective"}}}}},
      {"hybrid", {{"model", "nemotron-h-8b"}, {"parallel", {{"recompute", "none"}}}}},
      {"fsdp", {{"parallel", {{"tp", 1}, {"dp", 16}, {"schedule", "ddp"}, {"pp", 1}, {"fsdp", {{"version", 2}}}, {"recompute", "full"}}}}},
  };
  for (const auto& [name, patch] : variants) {
    Json j = pipeline_job();
    j.merge_patch(patch);
    const Scenario sc = test::scenario_from(j);
    const Step fused = whole_step(sc, true);
    expect_same_step(fused, whole_step(sc, false), name);
    if (std::string(name) != "cp ring") {
      EXPECT_GT(fused.program.fused_ops, 0) << name;
    }
  }
}

// A trace and the host launch model read the program op by op: nothing fused there.
TEST(FusedOps, ATimelineAndTheHostModelKeepEveryOp) {
  Json j = pipeline_job();
  j["training"]["global_batch"] = 4;  // two microbatches: too short to fold, so the output holds the step's program
  const Scenario sc = test::scenario_from(j);
  const Registries reg;
  EXPECT_EQ(simulate(sc, reg, nullptr, Detail::Timeline).program.fused_ops, 0);
  EXPECT_GT(simulate(sc, reg, nullptr, Detail::Summary).program.fused_ops, 0);
  EXPECT_GT(simulate(sc, reg, nullptr, Detail::Partition).program.fused_ops, 0);
  j["training"]["host_launch_us"] = 9.2;
  EXPECT_EQ(simulate(test::scenario_from(j), reg, nullptr, Detail::Summary).program.fused_ops, 0);
}

TEST(EveryScenarioFused, EveryShippedAndMeasuredStepIsTheSameFused) {
  int fused = 0;
  for (const auto& f : test::scenario_and_measured_files()) {
    Json j = read_json_file(f.string());
    if (j.value("schema", "") == "parasim.measured/1") j = j["scenario"];
    else if (j.value("schema", "") != "parasim.scenario/1") continue;
    const Scenario sc = parse_scenario(j, f.string(), test::data_dir());
    const Step a = whole_step(sc, true);
    fused += a.program.fused_ops > 0;
    expect_same_step(a, whole_step(sc, false), f.filename().string());
  }
  EXPECT_GE(fused, 250);  // nearly every step has layers to fuse
}

}  // namespace
}  // namespace parasim
