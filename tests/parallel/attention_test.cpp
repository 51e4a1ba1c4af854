// The attention kernels: fused against unfused, unaligned head dims.
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

TEST(AttentionKernels, StepChangesByTheAttentionKernelsTimeOnly) {
  // Free communication, DDP: the step is pure compute, so switching the attention kernel moves it
  // by exactly (layers x microbatches) x sum over attention kernels of
  // flops / (peak x efficiency x s / (s + causal overhead) x sustained clock ratio).
  Json j = test::base_scenario();
  const Scenario flash = test::scenario_from(j);
  const double base = test::simulate_with(flash, test::FreeNetwork{}).result.step_time_s;
  const LayerGraph g = build_layer_graph(flash.model, layer_shape(flash));
  const double peak = flash.profile.peak_flops("bf16");
  const double per_mb_layers = static_cast<double>(flash.model.layers) * static_cast<double>(flash.microbatches());
  for (const std::string kernel : {"triton", "flash3"}) {
    j["training"]["attention_kernel"] = kernel;
    const Scenario sc = test::scenario_from(j);
    // Causal attention over the whole sequence (cp = 1) at efficiency x s / (s + causal overhead).
    const auto seconds = [&](const Profile::AttentionKernel& a, const Kernel& k) {
      EXPECT_EQ(k.cp, 1);
      const double e = k.backward ? a.bwd_efficiency.value : a.fwd_efficiency.value;
      const double c = k.backward ? a.bwd_causal_overhead.value : a.fwd_causal_overhead.value;
      const double s = static_cast<double>(k.seq);
      return slowest_gpu_pace(sc.profile, sc.cluster.gpus()) * k.flops / (peak * sc.profile.sustained_clock_ratio.value * e * s / (s + c));
    };
    double delta = 0;
    for (const Block* b : {&g.attn_fwd, &g.attn_bwd})
      for (const auto& k : b->kernels)
        if (k.kind == KernelKind::Attention)
          delta += seconds(sc.profile.attention_kernel(kernel), k) - seconds(sc.profile.attention, k);
    const double step = test::simulate_with(sc, test::FreeNetwork{}).result.step_time_s;
    EXPECT_NEAR(step - base, per_mb_layers * delta, 1e-9 * base) << kernel;
  }
}

// BigScience's head-count pair on A100 80GB (train/tr11-176B-ml/chronicles-prequel.md, 2022-02-26,
// Megatron-DeepSpeed with unfused attention): hidden 13824, 78 layers, dp 8 x tp 4 x pp 12, micro
// batch 2, measured 147.41 s per step with 128 heads (head dim 108: 216 bytes, off 16) and 103.51 s
// with 64 (head dim 216, aligned), 1.424x. The A100's attention_gemm_unaligned_ratio is fitted to
// another pair of the same document (hidden 14400 against 13824, 2022-02-20), so this one is held
// out: the predicted ratio is within 5 % of the measured one, where the general unaligned ratio
// (an H100 large-GEMM measurement) gives under 1.1x. Only the batched attention GEMMs change:
// with flash attention the two head counts cost within 5 % of each other.
TEST(UnalignedHeads, BloomHeadCountPairIsPredictedOutOfSample) {
  const std::string file = test::data_dir() + "/scenarios/measured/pub-bloom-prequel-0226-h13824l78a128-dp8tp4pp12mbs2gbs2048.json";
  const Json measured = read_json_file(file);
  const auto step = [&](std::int64_t heads, bool general_ratio, bool flash) {
    Json j = measured["scenario"];
    j["model"]["heads"] = j["model"]["kv_heads"] = heads;
    if (flash) j["training"]["flash_attention"] = true;
    Scenario sc = parse_scenario(j, file, test::data_dir());
    if (general_ratio) sc.profile.attention_gemm_unaligned_ratio = sc.profile.gemm_unaligned_ratio;
    static const Registries reg;
    return simulate(sc, reg).result.step_time_s;
  };
  const double measured_ratio = 147.41 / 103.51;
  EXPECT_EQ(measured["measured"]["step_time_s"].get<double>(), 147.41);
  EXPECT_NEAR(step(128, false, false) / step(64, false, false) / measured_ratio, 1.0, 0.05);
  EXPECT_LT(step(128, true, false) / step(64, true, false), 1.1);
  EXPECT_NEAR(step(128, false, true) / step(64, false, true), 1.0, 0.05);
}

}  // namespace
}  // namespace parasim
