// Pipeline schedules: DeepSpeed's pipeline engine, synced sends, uneven stages, interleaved
// stages' gradient reduction.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <map>

#include "../test_util.h"
#include "sim/memory/memory_model.h"
#include "sim/network/flow_network.h"
#include "sim/parallel/emitter.h"
#include "bytes_network.h"
#include "tools/report.h"

namespace parasim {
namespace {

using test::BytesNetwork;

// Llama 3.1 405B on H100 nodes, a 16-sequence batch of 8k: the uneven-pipeline tests' base.
Json llama405b_h100(int nodes) {
  Json j = test::base_scenario();
  j["model"] = "llama3.1-405b";
  j["cluster"] = {{"gpu", "h100-sxm5-80g"}, {"nodes", nodes}, {"gpus_per_node", 8}};
  j["training"] = {{"global_batch", 16}, {"micro_batch", 1}, {"seq_len", 8192}};
  return j;
}

TEST(Pipeline, DeepSpeedPipeBuffersKeepStageOutputsUntilTheirBackward) {
  // Megatron frees a stage output's data once it is sent; DeepSpeed's PipelineEngine keeps it in a
  // pipe buffer until that microbatch's backward. Under 1F1B stage 0 holds pp microbatches in
  // flight at its peak, so its peak grows by pp outputs of [s, b, h]; the last stage sends nothing.
  Json j = test::base_scenario();
  j["cluster"]["nodes"] = 4;
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 4}, {"schedule", "1f1b"}};
  j["training"]["global_batch"] = 16;
  const Scenario mg = test::scenario_from(j);
  const auto megatron = test::simulate_with(mg, test::FreeNetwork{});
  j["parallel"]["pipeline_impl"] = "deepspeed";
  const auto deepspeed = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  const double out_gib = static_cast<double>(mg.training.micro_batch * mg.training.seq_len * mg.model.hidden) * 2 / kGiB;
  const auto& a = megatron.result.ranks;
  const auto& b = deepspeed.result.ranks;
  ASSERT_EQ(a.size(), 4u);
  EXPECT_NEAR(b[0].peak_mem_gib - a[0].peak_mem_gib, 4 * out_gib, 1e-6);
  EXPECT_NEAR(b[3].peak_mem_gib, a[3].peak_mem_gib, 1e-9);
  EXPECT_DOUBLE_EQ(deepspeed.result.step_time_s, megatron.result.step_time_s);  // memory only
  j["parallel"]["pipeline_impl"] = "colossal";
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/pipeline_impl: expected one of \"megatron\", \"deepspeed\", got \"colossal\"");
}

TEST(Pipeline, DeepSpeedPipelineReducesGradientsAfterTheLastBackward) {
  // DeepSpeed's PipelineEngine disables the backward-hook reduction and reduces every gradient in
  // its ReduceGrads instruction after the step's last backward: with pp > 1 and
  // pipeline_impl "deepspeed", overlap_grad_reduce defaults to false, and no gradient collective of
  // a rank starts before that rank's last backward op ends. Megatron's buckets start during it.
  Json j = test::base_scenario();  // llama2-7b on 8 GPUs
  j["parallel"] = {{"dp", 4}, {"tp", 1}, {"pp", 2}, {"schedule", "1f1b"}, {"zero_stage", 1}};
  j["training"]["global_batch"] = 32;
  auto first_reduce_vs_last_backward = [](const SimulationOutput& out, std::int32_t rank) {
    const Program& p = out.program;
    Time last_bwd = 0, first_reduce = std::numeric_limits<Time>::max();
    for (size_t i = 0; i < p.ops.size(); ++i) {
      if (p.ops[i].rank != rank) continue;
      if (p.ops[i].phase == Phase::Backward) last_bwd = std::max(last_bwd, out.timeline.end[i]);
      const OpRole l = p.role(p.ops[i]);
      if (l == OpRole::GradReduceScatter || l == OpRole::GradAllReduce) first_reduce = std::min(first_reduce, out.timeline.start[i]);
    }
    return std::pair{first_reduce, last_bwd};
  };
  const Scenario mg = test::scenario_from(j);
  EXPECT_TRUE(mg.parallel.overlap_grad_reduce);
  const auto megatron = simulate(mg, Registries{}, nullptr, Detail::Timeline);
  j["parallel"]["pipeline_impl"] = "deepspeed";
  const Scenario ds = test::scenario_from(j);
  EXPECT_FALSE(ds.parallel.overlap_grad_reduce);
  EXPECT_EQ(ds.resolved()["parallel"]["overlap_grad_reduce"], false);
  const auto deepspeed = simulate(ds, Registries{}, nullptr, Detail::Timeline);
  for (std::int32_t r = 0; r < 2; ++r) {
    const auto [reduce_ds, bwd_ds] = first_reduce_vs_last_backward(deepspeed, r);
    EXPECT_GE(reduce_ds, bwd_ds) << "stage " << r;
    const auto [reduce_mg, bwd_mg] = first_reduce_vs_last_backward(megatron, r);
    EXPECT_LT(reduce_mg, bwd_mg) << "stage " << r;
  }
  j["parallel"]["overlap_grad_reduce"] = true;  // an explicit setting wins
  EXPECT_TRUE(test::scenario_from(j).parallel.overlap_grad_reduce);
}

TEST(Pipeline, SyncedSendsBlockTheSendingStage) {
  // Megatron's batched p2p with batch_p2p_sync: after each send the stage waits for it
  // (torch.cuda.synchronize()), so its next forward or backward starts after the send ends. With
  // p2p_sync off the next computation may start while the send is in flight. 1F1B, pp 4, over
  // nodes (tp 8 fills a node) so the sends take visible time.
  Json j = test::base_scenario();
  j["cluster"]["nodes"] = 4;
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 4}, {"schedule", "1f1b"}};
  j["training"]["global_batch"] = 16;
  auto check = [](const SimulationOutput& o, bool synced) {
    const Program& p = o.program;
    std::size_t sends = 0, overlapped = 0;
    for (size_t i = 0; i < p.ops.size(); ++i) {
      if (p.ops[i].stream != Stream::P2P) continue;
      ++sends;
      for (size_t k = i + 1; k < p.ops.size(); ++k)  // the stage's next compute op
        if (p.ops[k].rank == p.ops[i].rank && p.ops[k].stream == Stream::Compute) {
          if (o.timeline.start[k] < o.timeline.end[i]) ++overlapped;
          break;
        }
    }
    EXPECT_GT(sends, 0u);
    if (synced) {
      EXPECT_EQ(overlapped, 0u);
    }
    return overlapped;
  };
  const auto synced = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  check(synced, true);
  j["parallel"]["p2p_sync"] = false;
  const auto async = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  EXPECT_GT(check(async, false), 0u);  // without the sync some computation overlaps a send
  EXPECT_GT(synced.result.step_time_s, async.result.step_time_s);
}

TEST(UnevenPipeline, StageLayersSetPerStageWork) {
  Json j = llama405b_h100(16);
  std::vector<int> layers(16, 8);
  layers.front() = 7;
  layers.back() = 7;
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 16}, {"schedule", "1f1b"}, {"stage_layers", layers}, {"sequence_parallel", true}};
  const auto out = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  ASSERT_EQ(out.result.ranks.size(), 16u);
  // Stage 1 (8 layers) computes more than stage 0 (7 layers + embedding).
  EXPECT_GT(out.result.ranks[1].compute_s, out.result.ranks[0].compute_s);
}

TEST(UnevenPipeline, InterleavedChunksCanBeUnevenPerVirtualStage) {
  // Llama 3 405B's layout: 126 layers, interleaved, the first and last virtual stages one layer
  // short (Megatron-Core's --decoder-first/last-pipeline-num-layers with VPP).
  Json j = llama405b_h100(8);
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 8}, {"vpp", 2}, {"schedule", "interleaved"}, {"sequence_parallel", true}};
  const test::FreeNetwork free;
  auto run = [&](const Json& layers) {
    Json k = j;
    if (!layers.is_null()) k["parallel"]["stage_layers"] = layers;
    return test::simulate_with(test::scenario_from(k), free);
  };
  // 128 layers so that the even split exists: per stage (pp entries), per virtual stage
  // (pp*vpp entries) and no list give the same step, bit for bit.
  j["model"] = {{"name", "405b-128"}, {"layers", 128}, {"hidden", 16384}, {"heads", 128}, {"kv_heads", 8}, {"ffn_hidden", 53248},
                {"vocab", 128256}, {"activation", "swiglu"}, {"position_embedding", "rope"}, {"norm", "rmsnorm"}, {"bias", false},
                {"dropout", false}};
  const auto even = run(Json());
  const auto per_stage = run(Json(std::vector<int>(8, 16)));
  const auto per_chunk = run(Json(std::vector<int>(16, 8)));
  EXPECT_EQ(even.result.step_time_s, per_stage.result.step_time_s);
  EXPECT_EQ(even.result.step_time_s, per_chunk.result.step_time_s);
  EXPECT_EQ(even.result.peak_mem_gib, per_chunk.result.peak_mem_gib);
  // Move one layer from the first virtual stage (chunk 0 of stage 0) to chunk 1 of stage 0
  // (virtual stage 8): stage 0 does the same work, in a different order; and one layer from the
  // last virtual stage (chunk 1 of stage 7) to stage 3's chunk 1: stage 7 computes one layer less.
  std::vector<int> moved(16, 8);
  moved[0] = 7;
  moved[8] = 9;
  moved[15] = 7;
  moved[11] = 9;
  const auto uneven = run(Json(moved));
  const auto& r0 = uneven.result.ranks;
  const auto& e0 = even.result.ranks;
  EXPECT_NEAR(r0[0].compute_s / e0[0].compute_s, 1.0, 1e-9);
  EXPECT_LT(r0[7].compute_s, e0[7].compute_s);
  EXPECT_GT(r0[3].compute_s, e0[3].compute_s);
  // One layer's forward and backward moved from stage 7 to stage 3 (both stages without the
  // embedding or the output layer's work in the moved layer): equal and opposite changes.
  EXPECT_NEAR(e0[7].compute_s - r0[7].compute_s, r0[3].compute_s - e0[3].compute_s, 1e-9 * e0[3].compute_s);
}

TEST(UnevenPipeline, EmbeddingAndLossTakeALayersSlot) {
  // Megatron's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split with
  // one slot per virtual stage: the first virtual stage holds only the embedding and the last only
  // the output layer and loss (126 + 2 slots over pp 8 x vpp 16 = 128 virtual stages).
  Json j = llama405b_h100(8);
  std::vector<int> layers(128, 1);
  layers.front() = 0;
  layers.back() = 0;
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 8}, {"vpp", 16}, {"schedule", "interleaved"}, {"sequence_parallel", true},
                   {"stage_layers", layers}};
  const test::FreeNetwork free;
  const Scenario sc = test::scenario_from(j);
  EXPECT_EQ(sc.layers_per_stage(), (std::vector<std::int64_t>{15, 16, 16, 16, 16, 16, 16, 15}));
  const auto out = test::simulate_with(sc, free);
  const auto& r = out.result.ranks;
  ASSERT_EQ(r.size(), 8u);
  // Stage 0 runs 15 layers and the embedding, stage 7 15 layers and the output layer with its loss
  // (three GEMMs of a quarter of a layer's size each at tp 8, plus the loss), stage 1 16 layers.
  EXPECT_LT(r[0].compute_s, r[7].compute_s);
  EXPECT_LT(r[7].compute_s, r[1].compute_s);
  EXPECT_GT(out.result.step_time_s, 0);
  EXPECT_GT(out.result.bubble_fraction, 0);
}

// Interleaved 1F1B with data parallelism: each stage all-reduces the gradients of its parameters
// once per step, its chunks' layers and, with the chunk that holds them, the embedding (first
// virtual stage) and the output layer (last): 2 bytes per parameter, whatever the number of chunks.
TEST(Schedule, InterleavedStagesReduceEachGradientOnce) {
  Json j = test::base_scenario();
  j["model"] = "llama3-8b";
  j["training"] = {{"global_batch", 16}, {"micro_batch", 1}, {"seq_len", 2048}};
  for (const int vpp : {1, 2, 4}) {
    j["parallel"] = {{"dp", 4}, {"tp", 1}, {"pp", 2}, {"vpp", vpp}, {"schedule", vpp > 1 ? "interleaved" : "1f1b"}, {"zero_stage", 0}};
    const Scenario sc = test::scenario_from(j);
    const SimulationOutput out = test::simulate_with(sc, BytesNetwork{});
    std::vector<double> reduced(2, 0.0);
    for (const Op& o : out.program.ops)
      if (out.program.role(o) == OpRole::GradAllReduce)
        reduced[static_cast<size_t>(o.rank)] += time_to_seconds(o.duration) * 1e9;
    const ParamCount pc = count_params(sc.model);
    EXPECT_NEAR(reduced[0], 2 * (16 * pc.per_layer + pc.embedding), 64.0) << "vpp " << vpp;
    EXPECT_NEAR(reduced[1], 2 * (16 * pc.per_layer + pc.head), 64.0) << "vpp " << vpp;
  }
}

}  // namespace
}  // namespace parasim
