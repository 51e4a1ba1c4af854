#include <gtest/gtest.h>

#include <cmath>

#include "../test_util.h"

namespace parasim {
namespace {

TEST(ModelZoo, ParameterCountsMatchPublished) {
  const auto names = zoo_model_names(test::data_dir());
  ASSERT_GE(names.size(), 20u);
  for (const auto& n : names) {
    const ModelSpec m = load_zoo_model(test::data_dir(), n, "test");
    ASSERT_GT(m.published_params, 0) << n << " has no published_params";
    const double ours = count_params(m).total(m.layers);
    // Within 1 %, or within half the rounding of the published figure (SC'21 prints 0.1B).
    const double tol = std::max(0.01 * m.published_params, 0.5 * m.published_params_rounding);
    EXPECT_NEAR(ours, m.published_params, tol) << n;
    EXPECT_FALSE(m.source.empty()) << n << " names no source";
  }
}

TEST(ModelZoo, RequiredFamiliesArePresent) {
  for (const char* n : {"gpt3-175b", "megatron-gpt-1.7b", "megatron-gpt-1008b", "llama2-7b", "llama2-13b", "llama2-70b",
                        "llama3-8b", "llama3-70b", "llama3.1-405b", "bloom-176b", "mpt-7b", "mpt-30b"})
    EXPECT_NO_THROW(load_zoo_model(test::data_dir(), n, "test")) << n;
}

TEST(ModelZoo, UnknownNameSuggestsClosest) {
  try {
    load_zoo_model(test::data_dir(), "llama2-7", "s.json: /model");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("s.json: /model: unknown model \"llama2-7\"; did you mean \"llama2-7b\"? Zoo: "), std::string::npos) << e.what();
  }
}

// Megatron-LM SC'21 Eq. 3 without recompute: 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)) per step.
TEST(LayerGraph, ModelFlopsMatchMegatronFormula) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "gpt3-175b", "test");
  LayerShape sh;
  sh.seq_len = 2048;
  const LayerGraph g = build_layer_graph(m, sh);
  const double l = static_cast<double>(m.layers), h = static_cast<double>(m.hidden), s = 2048, V = static_cast<double>(m.vocab);
  const double ours = 3.0 * (l * (g.attn_fwd.model_flops() + g.mlp_fwd.model_flops()) + g.head_fwd.model_flops());
  const double megatron = 72.0 * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(ours / megatron, 1.0, 1e-9);
}

TEST(LayerGraph, TensorParallelSplitsGemmsEvenly) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "llama3-70b", "test");
  LayerShape one, eight;
  eight.tp = 8;
  const LayerGraph a = build_layer_graph(m, one), b = build_layer_graph(m, eight);
  EXPECT_NEAR(a.attn_fwd.model_flops() / b.attn_fwd.model_flops(), 8.0, 1e-9);
  EXPECT_NEAR(a.mlp_fwd.model_flops() / b.mlp_fwd.model_flops(), 8.0, 1e-9);
  // GQA: QKV is [T, h] x [h, (h + 2 kv)/t]; Llama 3 70B kv = 8 * 128 = 1024.
  EXPECT_EQ(b.attn_fwd.kernels[1].name, "qkv");
  EXPECT_EQ(b.attn_fwd.kernels[1].n, (8192 + 2 * 1024) / 8);
}

// Simulated throughput counts exactly the model FLOPs of the global batch.
TEST(LayerGraph, SimulatedTflopsIntegrateToModelFlops) {
  Json j = test::base_scenario();
  j["model"] = "megatron-gpt-1.7b";
  j["training"]["seq_len"] = 2048;
  j["parallel"] = {{"dp", 2}, {"tp", 2}, {"pp", 2}, {"schedule", "1f1b"}};
  const Scenario sc = test::scenario_from(j);
  const auto out = simulate(sc, Registries{});
  const double l = 24, h = 2304, s = 2048, V = 51200, B = 64;
  const double megatron = 72.0 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  const double ours = out.result.tflops_per_gpu * 1e12 * 8 * out.result.step_time_s;
  EXPECT_NEAR(ours / megatron, 1.0, 1e-6);
}

}  // namespace
}  // namespace parasim
