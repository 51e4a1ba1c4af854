// Activation recompute: full (all layers or Megatron's block method) and torchtitan's op-level SAC.
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

TEST(Recompute, FullRecomputeTradesTimeForMemory) {
  Json j = test::base_scenario();
  const auto none = simulate(test::scenario_from(j), Registries{});
  j["parallel"]["recompute"] = "full";
  const auto full = simulate(test::scenario_from(j), Registries{});
  EXPECT_LT(full.result.peak_mem_gib, none.result.peak_mem_gib);
  EXPECT_GT(full.result.step_time_s, none.result.step_time_s);
  // Reported hardware FLOPs count the replayed forward, MFU does not (Megatron's convention): the
  // step runs forward + backward (3 forward's worth) plus one more forward, 4/3 of the model FLOPs.
  EXPECT_NEAR(full.result.hfu_reported / full.result.mfu, 4.0 / 3.0, 0.02);
  // Executed FLOPs: the replay adds the same share of the executed count.
  EXPECT_NEAR(full.result.hfu / none.result.hfu * full.result.step_time_s / none.result.step_time_s, 4.0 / 3.0, 0.02);
}

TEST(Recompute, BlockMethodRecomputesTheFirstNLayersOfEachChunk) {
  // Megatron's --recompute-method block --recompute-num-layers N: N layers of each chunk replay
  // their forward; the rest keep their activations. With free communication the step grows
  // linearly in N from "none" to "full", and the peak falls by N x (kept - checkpointed) bytes.
  Json j = test::base_scenario();
  j["parallel"]["recompute"] = "none";
  const auto none = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  j["parallel"]["recompute"] = "full";
  const Scenario full_sc = test::scenario_from(j);
  const auto full = test::simulate_with(full_sc, test::FreeNetwork{});
  const double layers = static_cast<double>(full_sc.model.layers);
  const LayerShape sh = layer_shape(full_sc);
  const double kept = activation_bytes(full_sc.model, sh, Recompute::None).layer_stored;
  const double ckpt = activation_bytes(full_sc.model, sh, Recompute::Full).layer_stored;
  for (std::int64_t n : {0, 8, 16}) {
    j["parallel"]["recompute_num_layers"] = n;
    const auto part = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
    const double frac = static_cast<double>(n) / layers;
    EXPECT_NEAR(part.result.step_time_s, none.result.step_time_s + frac * (full.result.step_time_s - none.result.step_time_s),
                1e-9 * full.result.step_time_s) << n;
    EXPECT_NEAR(part.result.peak_mem_gib, none.result.peak_mem_gib - static_cast<double>(n) * (kept - ckpt) / kGiB, 1e-3) << n;
  }
  j["parallel"]["recompute_num_layers"] = 32;  // every layer: the same as plain full recompute
  const auto all = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  EXPECT_DOUBLE_EQ(all.result.step_time_s, full.result.step_time_s);
  EXPECT_DOUBLE_EQ(all.result.peak_mem_gib, full.result.peak_mem_gib);
}

TEST(Recompute, OpLevelSacReplaysEveryOtherMatmulAndTheElementwiseOps) {
  // torchtitan's op-level selective AC on Llama 2 7B (SwiGLU, MHA): per layer the replay is wk
  // (a third of the fused QKV GEMM), wo, w3 (half of the fused gate/up GEMM) and every elementwise
  // kernel; the step grows by exactly that, and the stored activations are the layer input,
  // q, v, the attention output and log-sum-exp, w1's and w2's outputs.
  Json j = test::base_scenario();
  const Scenario none_sc = test::scenario_from(j);
  const double base = test::simulate_with(none_sc, test::FreeNetwork{}).result.step_time_s;
  j["parallel"]["recompute"] = "selective_op";
  const Scenario sac = test::scenario_from(j);
  const auto out = test::simulate_with(sac, test::FreeNetwork{});
  const LayerGraph g = build_layer_graph(sac.model, layer_shape(sac));
  const CostModel cost(sac.profile, sac.training.gemm_dtype(), kAttentionDefault, sac.cluster.gpus());
  double replay = 0;
  for (const Block* b : {&g.attn_fwd, &g.mlp_fwd})
    for (const auto& k : b->kernels) {
      if (k.kind == KernelKind::Memory) replay += kernel_seconds(cost, k);
      if (k.name == "qkv") replay += cost.gemm_s(k.m, k.n, k.k) / 3;  // h = kv: wk is a third
      if (k.name == "attn_out") replay += cost.gemm_s(k.m, k.n, k.k);
      if (k.name == "mlp_gate_up") replay += cost.gemm_s(k.m, k.n, k.k) / 2;
    }
  const double per_step = static_cast<double>(sac.model.layers) * static_cast<double>(sac.microbatches());
  EXPECT_NEAR(out.result.step_time_s - base, per_step * replay, 1e-9 * base);
  // Stored bytes per layer (t = 1, no dropout): x, q, attention out, v, w2 out (sbh each, bf16)
  // plus w1 out (sbf) and the fp32 log-sum-exp per head and query.
  const LayerShape sh = layer_shape(sac);
  const double sbh = static_cast<double>(sh.seq_len) * static_cast<double>(sh.micro_batch) * static_cast<double>(sac.model.hidden);
  const double sbf = sbh / static_cast<double>(sac.model.hidden) * static_cast<double>(sac.model.ffn_hidden);
  const double lse = 4.0 * static_cast<double>(sac.model.heads) * static_cast<double>(sh.seq_len) * static_cast<double>(sh.micro_batch);
  EXPECT_DOUBLE_EQ(activation_bytes(sac.model, sh, Recompute::SelectiveOp).layer_stored, 2 * (5 * sbh + sbf) + lse);
  // Between no recompute and full recompute in memory, and in time.
  j["parallel"]["recompute"] = "full";
  const auto full = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  const auto none = test::simulate_with(none_sc, test::FreeNetwork{});
  EXPECT_LT(out.result.peak_mem_gib, none.result.peak_mem_gib);
  EXPECT_GT(out.result.peak_mem_gib, full.result.peak_mem_gib);
  EXPECT_LT(out.result.step_time_s, full.result.step_time_s);
  EXPECT_GT(out.result.hfu_reported, out.result.mfu);  // the replayed matmuls count as hardware FLOPs
}

}  // namespace
}  // namespace parasim
