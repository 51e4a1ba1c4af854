#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include <cmath>
#include <tuple>

#include "../test_util.h"
#include "sim/cost/kernels.h"
#include "sim/memory/memory_model.h"
#include "sim/simulation.h"

namespace parasim {
namespace {

double block_bytes(const Block& blk) {
  double x = 0;
  for (const auto& k : blk.kernels) x += k.bytes;
  return x;
}

TEST(ModelZoo, ParameterCountsMatchPublished) {
  const auto names = zoo_model_names(test::data_dir());
  ASSERT_GE(names.size(), 20u);
  for (const auto& n : names) {
    const ModelSpec m = load_zoo_model(test::data_dir(), n, "test");
    ASSERT_GT(m.published_params, 0) << n << " has no published_params";
    const double ours = count_params(m).total();
    // Within 1 %, or within half the rounding of the published figure (SC'21 prints 0.1B).
    const double tol = std::max(0.01 * m.published_params, 0.5 * m.published_params_rounding);
    EXPECT_NEAR(ours, m.published_params, tol) << n;
    EXPECT_FALSE(m.source.empty()) << n << " names no source";
    // Mixture of experts: the parameters a token passes through (top_k of the experts), within 2 %
    // or half the published figure's rounding (the model cards round to 0.1B or 1B).
    if (m.moe) {
      ASSERT_GT(m.published_active_params, 0) << n << " has no published_active_params";
      const double atol = std::max(0.02 * m.published_active_params, 0.05e9);
      EXPECT_NEAR(active_params(m), m.published_active_params, atol) << n;
    } else {
      EXPECT_DOUBLE_EQ(active_params(m), ours) << n;
    }
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

// FP8 linear layers: 4 bytes per element of each GEMM input (forward) and output gradient
// (backward); FLOPs unchanged, the output layer not cast.
TEST(LayerGraph, Fp8QuantizationTrafficPerLinearLayer) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "llama3-8b", "test");
  LayerShape bf, f8;
  bf.seq_len = f8.seq_len = 4096;
  f8.fp8_gemms = true;
  const LayerGraph a = build_layer_graph(m, bf), b = build_layer_graph(m, f8);
  const double T = 4096, h = static_cast<double>(m.hidden), kv = static_cast<double>(m.kv_dim()), f = static_cast<double>(m.ffn_hidden);
  // Forward inputs: qkv and o-proj read [T, h]; gate/up reads [T, h]; down reads [T, f].
  EXPECT_NEAR(block_bytes(b.attn_fwd) - block_bytes(a.attn_fwd), 4 * (T * h + T * h), 1e-3);
  EXPECT_NEAR(block_bytes(b.mlp_fwd) - block_bytes(a.mlp_fwd), 4 * (T * h + T * f), 1e-3);
  // Backward output gradients: qkv [T, h + 2kv], o-proj [T, h], gate/up [T, 2f], down [T, h].
  EXPECT_NEAR(block_bytes(b.attn_bwd) - block_bytes(a.attn_bwd), 4 * (T * (h + 2 * kv) + T * h), 1e-3);
  EXPECT_NEAR(block_bytes(b.mlp_bwd) - block_bytes(a.mlp_bwd), 4 * (T * 2 * f + T * h), 1e-3);
  EXPECT_DOUBLE_EQ(block_bytes(b.head_fwd), block_bytes(a.head_fwd));
  EXPECT_DOUBLE_EQ(b.attn_fwd.model_flops() + b.mlp_fwd.model_flops(), a.attn_fwd.model_flops() + a.mlp_fwd.model_flops());
}

// FP8 recipes convert the transformer layers' linear layers (Transformer Engine modules, torchao
// float8 with the output layer filtered out); the output layer's three GEMMs stay in bf16 and are
// priced by the bf16 GEMM model, the layers' GEMMs by the fp8 one.
TEST(LayerGraph, Fp8KeepsTheOutputLayerInSixteenBit) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "llama3-8b", "test");
  LayerShape f8;
  f8.seq_len = 4096;
  f8.fp8_gemms = true;
  const LayerGraph g = build_layer_graph(m, f8);
  const Profile p = load_profile(test::data_dir(), "h100-sxm5-80g", "test");
  const CostModel fp8(p, "fp8"), bf16(p, "bf16");
  int head_gemms = 0;
  for (const Block* b : {&g.head_fwd, &g.head_bwd})
    for (const Kernel& k : b->kernels)
      if (k.kind == KernelKind::Gemm) {
        ++head_gemms;
        EXPECT_TRUE(k.sixteen_bit) << k.name;
        EXPECT_DOUBLE_EQ(kernel_seconds(fp8, k), bf16.gemm_s(k.m, k.n, k.k, k.batch)) << k.name;
        EXPECT_GT(kernel_seconds(fp8, k), fp8.gemm_s(k.m, k.n, k.k, k.batch) * 1.2) << k.name;  // fp8 runs them faster
      }
  EXPECT_EQ(head_gemms, 3);  // logits, its data and weight gradients
  for (const Kernel& k : g.mlp_fwd.kernels)
    if (k.kind == KernelKind::Gemm) {
      EXPECT_DOUBLE_EQ(kernel_seconds(fp8, k), fp8.gemm_s(k.m, k.n, k.k, k.batch)) << k.name;
    }
  EXPECT_DOUBLE_EQ(bf16.gemm16_s(4096, 4096, 4096), bf16.gemm_s(4096, 4096, 4096));  // no-op outside fp8
}

// The FP8 scaling recipe sets the traffic of each operand's quantization: delayed scaling casts and
// transposes in one pass (read 2 B, write 1 + 1 B), current scaling adds an amax read of the tensor
// (6 B), MXFP8 writes one E8M0 scale per 32 elements of each copy (4 + 2/32 B), NVFP4 reads the
// tensor twice (amax, then cast) and writes two FP4 copies with one E4M3 scale per 16 elements each
// (2 + 2 + 2 x (0.5 + 1/16) B). Per element of the GEMM input in forward and of the output gradient
// in backward.
TEST(LayerGraph, Fp8RecipesSetTheCastTraffic) {
  // Per element: each read of the 16-bit tensor (2 B) plus the row-wise and column-wise copies,
  // each an element of the format (FP8 1 B, FP4 0.5 B) and its share of a block scale (MXFP8: 1 B
  // per 32, OCP MX v1.0; NVFP4: 1 B per 16).
  struct Format {
    const char* recipe;
    double reads, element, scale;
  };
  const Format formats[] = {{"delayed", 1, 1, 0}, {"current", 2, 1, 0}, {"mxfp8", 1, 1, 1.0 / 32}, {"nvfp4", 2, 0.5, 1.0 / 16}};
  const ModelSpec m = load_zoo_model(test::data_dir(), "llama3-8b", "test");
  LayerShape sh;
  sh.seq_len = 4096;
  sh.fp8_gemms = true;
  const double T = 4096, h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  for (const auto& [recipe, reads, element, scale] : formats) {
    sh.fp8_cast_bytes = fp8_cast_bytes(fp8_recipes().find(recipe)->factory.value);
    const LayerGraph g = build_layer_graph(m, sh);
    std::map<std::string, double> bytes;
    for (const Block* b : {&g.attn_fwd, &g.attn_bwd, &g.mlp_fwd, &g.mlp_bwd})
      for (const Kernel& k : b->kernels)
        if (k.name.find("fp8_cast") != std::string::npos) bytes[k.name] = k.bytes;
    ASSERT_EQ(bytes.size(), 8u) << recipe;  // four linear layers, forward and backward
    const double c = 2 * reads + 2 * (element + scale);
    EXPECT_DOUBLE_EQ(bytes["qkv.fp8_cast"], c * T * h) << recipe;            // input [T, h]
    EXPECT_DOUBLE_EQ(bytes["mlp_down.fp8_cast"], c * T * f) << recipe;       // input [T, f]
    EXPECT_DOUBLE_EQ(bytes["mlp_down.fp8_cast.bwd"], c * T * h) << recipe;   // output gradient [T, h]
  }
}

// MXFP8 GEMMs are priced from the profile's mxfp8 figures; a GPU without them cannot price one.
TEST(CostModel, Mxfp8UsesTheProfilesBlockScaledFigures) {
  const Profile b200 = load_profile(test::data_dir(), "b200-sxm-180g", "test");
  const CostModel mx(b200, "mxfp8"), f8(b200, "fp8");
  EXPECT_DOUBLE_EQ(mx.peak_flops(), b200.peak_tflops.at("mxfp8").value * 1e12);
  // Same datasheet rate and (assumed) efficiency as per-tensor FP8 on this GPU: same GEMM time.
  EXPECT_DOUBLE_EQ(mx.gemm_s(8192, 8192, 8192), f8.gemm_s(8192, 8192, 8192));
  // Its output-layer GEMMs stay in 16-bit like any FP8 recipe's.
  EXPECT_DOUBLE_EQ(mx.gemm16_s(8192, 8192, 8192), CostModel(b200, "bf16").gemm_s(8192, 8192, 8192));
  const Profile h100 = load_profile(test::data_dir(), "h100-sxm5-80g", "test");
  EXPECT_THROW(CostModel(h100, "mxfp8"), ProfileError);
}

// NVFP4 GEMMs are priced from the profile's nvfp4 figures: on a large GEMM the FP4 rate (twice the
// FP8 one on GB200, three times on GB300) makes it faster than FP8 by less than the peak ratio, as the
// fixed time and the 16-bit epilogue do not shrink; operands are read at 0.5625 B per element (data
// and one scale per 16). Output-layer GEMMs stay in 16-bit, and GPUs without FP4 tensor cores cannot
// price one.
TEST(CostModel, Nvfp4UsesTheProfilesFp4FiguresAndStaysBelowThePeakRatio) {
  EXPECT_DOUBLE_EQ(gemm_operand_bytes("nvfp4"), 0.5625);
  EXPECT_DOUBLE_EQ(gemm_operand_bytes("mxfp8"), 1.0);
  EXPECT_DOUBLE_EQ(gemm_operand_bytes("bf16"), 2.0);
  for (const char* gpu : {"b200-sxm-180g", "b300-sxm-288g", "gb200-nvl72-186g", "gb300-nvl72-288g"}) {
    const Profile p = load_profile(test::data_dir(), gpu, "test");
    const CostModel nv(p, "nvfp4"), mx(p, "mxfp8");
    EXPECT_DOUBLE_EQ(nv.peak_flops(), p.peak_tflops.at("nvfp4").value * 1e12) << gpu;
    const double ratio = p.peak_tflops.at("nvfp4").value / p.peak_tflops.at("mxfp8").value;
    EXPECT_GE(ratio, 2.0) << gpu;
    const double speedup = mx.gemm_s(16384, 16384, 16384) / nv.gemm_s(16384, 16384, 16384);
    EXPECT_GT(speedup, 1.5) << gpu;
    EXPECT_LT(speedup, ratio) << gpu;
    EXPECT_DOUBLE_EQ(nv.gemm16_s(8192, 8192, 8192), CostModel(p, "bf16").gemm_s(8192, 8192, 8192)) << gpu;
  }
  const Profile h100 = load_profile(test::data_dir(), "h100-sxm5-80g", "test");
  EXPECT_THROW(CostModel(h100, "nvfp4"), ProfileError);
}

// Volta runs no fused attention: its profile prices unfused attention (GEMMs and memory passes)
// and fp16 GEMMs; asking it for a fused kernel's time names the missing figure.
TEST(CostModel, ProfileWithoutFusedAttentionPricesUnfusedOnly) {
  const Profile v100 = load_profile(test::data_dir(), "v100-sxm3-32g", "test");
  EXPECT_FALSE(v100.has_fused_attention);
  const CostModel fp16(v100, "fp16");
  EXPECT_GT(fp16.gemm_s(4096, 4096, 4096), 2.0 * 4096 * 4096 * 4096 / 125e12);
  EXPECT_THROW(fp16.attention_s(1e12, false, 2048), ProfileError);
  EXPECT_THROW(CostModel(v100, "bf16"), ProfileError);
}

// Biased linear layers pay one read of each output gradient for the bias gradient (PyTorch's
// addmm backward, Megatron's grad_output.sum(0)); hidden dropout writes a 1-byte mask per
// element in forward and runs its own backward pass (read gradient and mask, write). Row-parallel
// biases and dropout act on T/t tokens with sequence parallel.
TEST(LayerGraph, BiasGradientsAndDropoutTraffic) {
  ModelSpec plain = load_zoo_model(test::data_dir(), "megatron-gpt-1.7b", "test");
  plain.bias = false;
  plain.dropout = false;
  ModelSpec biased = plain, dropped = plain;
  biased.bias = true;
  dropped.dropout = true;
  for (const bool sp : {false, true}) {
    LayerShape sh;
    sh.seq_len = 2048;
    sh.micro_batch = 2;
    sh.tp = 4;
    sh.sequence_parallel = sp;
    const LayerGraph a = build_layer_graph(plain, sh), b = build_layer_graph(biased, sh), d = build_layer_graph(dropped, sh);
    const double T = 4096, t = 4, h = static_cast<double>(plain.hidden), f = static_cast<double>(plain.ffn_hidden), e = 2;
    const double T_row = sp ? T / t : T;  // tokens a row-parallel output and its bias see
    EXPECT_NEAR(block_bytes(b.attn_bwd) - block_bytes(a.attn_bwd), e * (T * 3 * h / t + T_row * h), 1e-3) << sp;
    EXPECT_NEAR(block_bytes(b.mlp_bwd) - block_bytes(a.mlp_bwd), e * (T * f / t + T_row * h), 1e-3) << sp;
    EXPECT_DOUBLE_EQ(block_bytes(b.attn_fwd), block_bytes(a.attn_fwd));
    for (auto [fa, fd, ba, bd] : {std::tuple{&a.attn_fwd, &d.attn_fwd, &a.attn_bwd, &d.attn_bwd},
                                  std::tuple{&a.mlp_fwd, &d.mlp_fwd, &a.mlp_bwd, &d.mlp_bwd}}) {
      EXPECT_NEAR(block_bytes(*fd) - block_bytes(*fa), 1.0 * T_row * h, 1e-3) << sp;
      EXPECT_NEAR(block_bytes(*bd) - block_bytes(*ba), (2 * e + 1) * T_row * h, 1e-3) << sp;
    }
    EXPECT_DOUBLE_EQ(b.attn_bwd.model_flops(), a.attn_bwd.model_flops());
  }
}

// Two-pass norm backward (PyTorch's native LayerNorm, Apex): the input-gradient kernel (reads x and
// dy, writes dx: 3 B x e per element) and a weight-gradient reduction reading x and dy again (2e):
// one more kernel and 2e more bytes per norm in backward, the forward and the memory unchanged.
TEST(LayerGraph, TwoPassNormBackwardRereadsInputAndGradient) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "mpt-7b", "test");
  LayerShape fused, two;
  fused.seq_len = two.seq_len = 2048;
  two.two_pass_norm = true;
  const LayerGraph a = build_layer_graph(m, fused), b = build_layer_graph(m, two);
  const double per_norm = 2 * 2 * 2048 * static_cast<double>(m.hidden);  // 2e bytes x tokens x hidden
  EXPECT_NEAR(block_bytes(b.attn_bwd) - block_bytes(a.attn_bwd), per_norm, 1e-3);
  EXPECT_NEAR(block_bytes(b.mlp_bwd) - block_bytes(a.mlp_bwd), per_norm, 1e-3);
  EXPECT_NEAR(block_bytes(b.head_bwd) - block_bytes(a.head_bwd), per_norm, 1e-3);
  EXPECT_EQ(b.attn_bwd.kernels.size(), a.attn_bwd.kernels.size() + 1);
  EXPECT_DOUBLE_EQ(block_bytes(b.attn_fwd), block_bytes(a.attn_fwd));
  EXPECT_DOUBLE_EQ(activation_bytes(m, two, Recompute::None).layer_stored, activation_bytes(m, fused, Recompute::None).layer_stored);
}

// Eager RMSNorm (Llama reference code): forward upcast, pow, mean, scale, downcast and weight
// multiply, 36 B per bf16 element in six kernels; backward 76 B in nine. Eager RoPE: upcast,
// complex multiply and downcast, 20 B per query or key element each way. Fused: 4 / 6 and 4 B.
TEST(LayerGraph, EagerRmsNormAndRopeTraffic) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "llama3-8b", "test");
  LayerShape fused, eager;
  fused.seq_len = eager.seq_len = 4096;
  eager.eager_norm = true;
  eager.rope = RopeImpl::Eager;
  const LayerGraph a = build_layer_graph(m, fused), b = build_layer_graph(m, eager);
  const double T = 4096, h = static_cast<double>(m.hidden), kv = static_cast<double>(m.kv_dim());
  const double norm_f = (36 - 4) * T * h, norm_b = (76 - 6) * T * h, rope = (20 - 4) * T * (h + kv);
  EXPECT_NEAR(block_bytes(b.attn_fwd) - block_bytes(a.attn_fwd), norm_f + rope, 1e-3);
  EXPECT_NEAR(block_bytes(b.attn_bwd) - block_bytes(a.attn_bwd), norm_b + rope, 1e-3);
  EXPECT_NEAR(block_bytes(b.mlp_fwd) - block_bytes(a.mlp_fwd), norm_f, 1e-3);
  EXPECT_NEAR(block_bytes(b.mlp_bwd) - block_bytes(a.mlp_bwd), norm_b, 1e-3);
  EXPECT_NEAR(block_bytes(b.head_fwd) - block_bytes(a.head_fwd), norm_f, 1e-3);
  // Kernels: norm 1 -> 6 forward, 1 -> 9 backward; RoPE 2 -> 6 each way.
  EXPECT_EQ(b.attn_fwd.kernels.size() - a.attn_fwd.kernels.size(), 5u + 4u);
  EXPECT_EQ(b.attn_bwd.kernels.size() - a.attn_bwd.kernels.size(), 8u + 4u);
  EXPECT_DOUBLE_EQ(b.attn_fwd.model_flops(), a.attn_fwd.model_flops());
  // Memory: each eager norm keeps its input's fp32 copy and its pre-weight output instead of its
  // input, 4 B more per element; two per layer, one before the head. Full recompute keeps only the
  // layer input; op-level SAC replays the elementwise ops.
  const double sbh = T * h;
  const ActivationBytes fa = activation_bytes(m, fused, Recompute::None), ea = activation_bytes(m, eager, Recompute::None);
  EXPECT_NEAR(ea.layer_stored - fa.layer_stored, 8 * sbh, 1e-3);
  EXPECT_NEAR(ea.head - fa.head, 4 * sbh, 1e-3);
  EXPECT_DOUBLE_EQ(activation_bytes(m, eager, Recompute::Full).layer_stored, activation_bytes(m, fused, Recompute::Full).layer_stored);
  EXPECT_DOUBLE_EQ(activation_bytes(m, eager, Recompute::SelectiveOp).layer_stored, activation_bytes(m, fused, Recompute::SelectiveOp).layer_stored);
}

// Megatron-Core's unfused RoPE (rope_utils.py _apply_rotary_pos_emb_bshd, core_v0.16.0), per query or
// key tensor of E elements, its ops read off the function and the autograd graph PyTorch builds for
// it: forward t * cos, the rotate-half's negation of one half and its cat, * sin, the add and the cat
// with the (empty) non-rotary part, 12 e per element over fused RoPE's 2 e, in 6 PyTorch ops, after
// the cos and sin tables (cos or sin, the scale, the cast: 6 ops over the [s, d] fp32 table, 44 B per
// table element); backward the gradient times cos and times sin, the negation's, the split's cat, the
// two paths' sum, and the empty slice's SliceBackward (a zero fill and an add): 14 e in 7 ops. It is
// what Megatron runs for a YaRN-scaled model (GPT-OSS), whatever rope_impl says.
TEST(LayerGraph, MegatronUnfusedRopeTrafficAndOps) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "gpt-oss-120b", "test");
  EXPECT_TRUE(m.rope_yarn);
  EXPECT_TRUE(load_zoo_model(test::data_dir(), "gpt-oss-20b", "test").rope_yarn);
  LayerShape fused, unfused;
  fused.seq_len = unfused.seq_len = 4096;
  unfused.rope = RopeImpl::Unfused;
  const ModelSpec full = m.of_kind(m.layer_kind(1));  // a full-attention layer
  const LayerGraph a = build_layer_graph(full, fused), b = build_layer_graph(full, unfused);
  const double T = 4096, E = T * static_cast<double>(m.q_dim() + m.kv_dim()), table = T * 64;
  EXPECT_NEAR(block_bytes(b.attn_fwd) - block_bytes(a.attn_fwd), (12 - 2) * 2 * E + 2 * 44 * table, 1e-3);
  EXPECT_NEAR(block_bytes(b.attn_bwd) - block_bytes(a.attn_bwd), (14 - 2) * 2 * E, 1e-3);
  auto rope_ops = [](const Block& blk) {
    std::int64_t n = 0;
    for (const Kernel& k : blk.kernels)
      if (k.module == LayerModule::Rope) n += k.python_ops ? k.launches : 0;
    return n;
  };
  EXPECT_EQ(rope_ops(b.attn_fwd), 2 * 12);
  EXPECT_EQ(rope_ops(b.attn_bwd), 2 * 7);
}

// "fused" RoPE resolves to Megatron-Core's unfused one for a YaRN-scaled model, and only then; a
// model without rotary embeddings takes neither YaRN nor the unfused kernels.
TEST(Scenario, YarnRopeRunsMegatronsUnfusedRope) {
  Json j = test::base_scenario();  // llama2-7b
  EXPECT_EQ(rope_impl(test::scenario_from(j)), RopeImpl::Fused);
  j["model"] = "gpt-oss-20b";
  j["parallel"]["ep"] = 1;
  const Scenario oss = test::scenario_from(j);
  EXPECT_EQ(oss.training.rope_impl, RopeImpl::Fused);
  EXPECT_EQ(rope_impl(oss), RopeImpl::Unfused);
  const Registries reg;
  const auto notes = simulate(oss, reg).result.warnings;
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) { return n.starts_with("RoPE: the model's RoPE is YaRN-scaled"); }));
  j["training"]["rope_impl"] = "eager";
  EXPECT_EQ(rope_impl(test::scenario_from(j)), RopeImpl::Eager);
  j = test::base_scenario();
  j["model"] = "megatron-gpt-1.7b";
  j["training"]["rope_impl"] = "unfused";
  EXPECT_EQ(test::scenario_error(j), "test.json: /training/rope_impl: \"unfused\" is Megatron-Core's rotary embedding; the model's "
                                     "position_embedding is \"learned\"");
  Json mj = read_json_file(test::data_dir() + "/models/megatron-gpt-1.7b.json");
  mj["rope_scaling"] = "yarn";
  j = test::base_scenario();
  j["model"] = mj;
  EXPECT_NE(test::scenario_error(j).find("/model/rope_scaling"), std::string::npos) << test::scenario_error(j);
}

// Hidden dropout then the residual add, eager (nn.Dropout, then x + b: the dropout kernel reads the
// branch and writes it, 2e per [T, h] element, before the add's 3e) against Megatron's fused
// bias_dropout_add (3e): 2e more per residual in forward, one after attention and one after the MLP,
// the 1-byte keep mask either way; backward (the add passes the gradient through) and the stored
// activations unchanged. Without dropout nn.Dropout is not run and nothing changes.
TEST(LayerGraph, EagerDropoutAddWritesTheDroppedBranch) {
  ModelSpec m = load_zoo_model(test::data_dir(), "mpt-7b", "test");
  m.dropout = true;
  LayerShape fused, eager;
  fused.seq_len = eager.seq_len = 2048;
  eager.eager_dropout_add = true;
  const LayerGraph a = build_layer_graph(m, fused), b = build_layer_graph(m, eager);
  const double per_residual = 2 * 2 * 2048 * static_cast<double>(m.hidden);  // 2e bytes x tokens x hidden
  EXPECT_NEAR(block_bytes(b.attn_fwd) - block_bytes(a.attn_fwd), per_residual, 1e-3);
  EXPECT_NEAR(block_bytes(b.mlp_fwd) - block_bytes(a.mlp_fwd), per_residual, 1e-3);
  EXPECT_EQ(b.attn_fwd.kernels.size(), a.attn_fwd.kernels.size() + 1);
  EXPECT_DOUBLE_EQ(block_bytes(b.attn_bwd), block_bytes(a.attn_bwd));
  EXPECT_DOUBLE_EQ(block_bytes(b.mlp_bwd), block_bytes(a.mlp_bwd));
  EXPECT_DOUBLE_EQ(activation_bytes(m, eager, Recompute::None).layer_stored, activation_bytes(m, fused, Recompute::None).layer_stored);
  m.dropout = false;
  EXPECT_DOUBLE_EQ(block_bytes(build_layer_graph(m, eager).attn_fwd), block_bytes(build_layer_graph(m, fused).attn_fwd));
}

// Cross entropy over T x V/t logits, bytes per logit element in bf16: Megatron-LM (upcast, max,
// subtract, exp, sum, divide) 38 forward in six kernels, 14 backward in two (multiply, downcast);
// eager PyTorch (upcast, log_softmax) 22 in two, 26 in three (zero-fill, log_softmax backward,
// downcast); fused 6 and 4, one kernel each. In fp32 the casts disappear (Megatron 32 / 8). The
// saved tensor is the fp32 softmax (4 B) except for the fused kernel's 16-bit gradient.
TEST(LayerGraph, CrossEntropyTrafficPerImplementation) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "llama3-8b", "test");
  LayerShape sh;
  sh.seq_len = 4096;
  sh.micro_batch = 2;
  sh.tp = 2;
  const double logits = 8192.0 * static_cast<double>(m.vocab / 2);
  auto loss_bytes = [&](const Block& b, const std::string& prefix = "cross_entropy") {
    double bytes = 0;
    std::size_t kernels = 0;
    std::int64_t launches = 0;
    for (const Kernel& k : b.kernels)
      if (k.name.rfind(prefix, 0) == 0) {
        bytes += k.bytes;
        ++kernels;
        launches += k.launches;
      }
    return std::tuple{bytes / logits, kernels, launches};
  };
  // Bytes per logit, priced kernels and launched kernels, forward and backward: eager
  // F.cross_entropy launches nll_loss beside log_softmax in forward and after the zero fill in
  // backward (PyTorch's nll_loss_forward / nll_loss_backward kernels), priced with them.
  const std::vector<std::tuple<LossImpl, double, double, std::size_t, std::size_t, std::int64_t, std::int64_t>> want = {
      {LossImpl::Megatron, 38, 14, 6, 2, 6, 2}, {LossImpl::Eager, 22, 26, 2, 3, 3, 4}, {LossImpl::Eager16, 8, 10, 1, 2, 2, 3},
      {LossImpl::Fused, 6, 4, 1, 1, 1, 1},
      {LossImpl::Xentropy, 4, 4, 1, 1, 1, 1}};
  for (const auto& [impl, fwd, bwd, nf, nb, lf, lb] : want) {
    sh.loss = impl;
    const LayerGraph g = build_layer_graph(m, sh);
    EXPECT_NEAR(std::get<0>(loss_bytes(g.head_fwd)), fwd, 1e-9);
    EXPECT_NEAR(std::get<0>(loss_bytes(g.head_bwd)), bwd, 1e-9);
    EXPECT_EQ(std::get<1>(loss_bytes(g.head_fwd)), nf);
    EXPECT_EQ(std::get<1>(loss_bytes(g.head_bwd)), nb);
    EXPECT_EQ(std::get<2>(loss_bytes(g.head_fwd)), lf);
    EXPECT_EQ(std::get<2>(loss_bytes(g.head_bwd)), lb);
    const double saved = activation_bytes(m, sh, Recompute::None).head - 2.0 * 8192 * static_cast<double>(m.hidden);
    EXPECT_NEAR(saved / logits, impl == LossImpl::Fused || impl == LossImpl::Xentropy || impl == LossImpl::Eager16 ? 2.0 : 4.0, 1e-9);
  }
  // Composer's training metrics: each an eager cross entropy's forward with its upcast.
  sh.train_metrics = 2;
  const LayerGraph metrics = build_layer_graph(m, sh);
  EXPECT_NEAR(std::get<0>(loss_bytes(metrics.metrics, "train_metric")), 2 * 22.0, 1e-9);
  EXPECT_EQ(std::get<2>(loss_bytes(metrics.metrics, "train_metric")), 2 * 3);
  sh.train_metrics = 0;
  sh.loss = LossImpl::Megatron;
  sh.dtype_bytes = 4;
  const LayerGraph fp32 = build_layer_graph(m, sh);
  EXPECT_NEAR(std::get<0>(loss_bytes(fp32.head_fwd)), 32, 1e-9);
  EXPECT_NEAR(std::get<0>(loss_bytes(fp32.head_bwd)), 8, 1e-9);
}

// The per-tensor list sums to the per-layer count for every zoo model and one MoE model.
TEST(Model, LayerTensorsSumToTheLayerParameters) {
  for (const char* name : {"gpt3-175b", "llama3-8b", "llama2-70b", "bloom-176b", "mpt-7b", "megatron-gpt-1.7b"}) {
    const ModelSpec m = load_zoo_model(test::data_dir(), name, "test");
    const std::vector<double> t = layer_tensor_params(m, 0);
    double sum = 0;
    for (const double x : t) sum += x;
    EXPECT_DOUBLE_EQ(sum, count_params(m).per_layer) << name;
    // Norm gains (+ biases), QKV, projection, MLP in, MLP out (+ biases).
    const std::size_t norms = m.norm == NormKind::LayerNorm ? 4 : 2, linears = m.bias ? 8 : 4;
    EXPECT_EQ(t.size(), norms + linears) << name;
  }
  ModelSpec moe = load_zoo_model(test::data_dir(), "llama3-8b", "test");
  moe.moe = MoeSpec{8, 2, 7168};
  double sum = 0;
  for (const double x : layer_tensor_params(moe, 0)) sum += x;
  EXPECT_DOUBLE_EQ(sum, count_params(moe).per_layer);
}

TEST(Scenario, LossImplIsAChoice) {
  Json j = test::base_scenario();
  EXPECT_EQ(test::scenario_from(j).training.loss_impl, LossImpl::Megatron);
  j["training"]["loss_impl"] = "eager";
  EXPECT_EQ(test::scenario_from(j).training.loss_impl, LossImpl::Eager);
  j["training"]["loss_impl"] = "liger";
  EXPECT_EQ(test::scenario_error(j), "test.json: /training/loss_impl: expected one of \"megatron\", \"eager\", \"eager16\", \"fused\", \"xentropy\", got \"liger\"; did you mean \"eager\"?");
}

// Every name the parser accepts is priced as its own kernels: no two names move the same loss
// traffic, and the implementations that upcast the 16-bit logits to fp32 (Megatron's, PyTorch's
// eager F.cross_entropy on .float() logits) move more bytes per logit than any that stay 16-bit.
TEST(Scenario, EveryLossImplNameIsPricedAsItsOwnKernel) {
  std::map<std::string, double> traffic;  // loss bytes per logit, forward and backward
  for (const std::string& name : loss_impls().names()) {
    Json j = test::base_scenario();
    j["training"]["loss_impl"] = name;
    const Scenario sc = test::scenario_from(j);
    const LayerShape sh = layer_shape(sc);
    const LayerGraph g = build_layer_graph(sc.model, sh);
    double bytes = 0;
    for (const Block* b : {&g.head_fwd, &g.head_bwd})
      for (const Kernel& k : b->kernels)
        if (k.kind == KernelKind::Memory) bytes += k.bytes;
    const double logits = static_cast<double>(sh.micro_batch * sh.seq_len * (sc.model.vocab / sh.tp));
    traffic[name] = bytes / logits;
  }
  std::set<double> distinct;
  for (const auto& [name, b] : traffic) EXPECT_TRUE(distinct.insert(b).second) << name << " is priced like another name";
  for (const char* fp32 : {"megatron", "eager"})
    for (const char* b16 : {"eager16", "fused", "xentropy"}) EXPECT_GT(traffic.at(fp32), traffic.at(b16)) << fp32 << " vs " << b16;
  EXPECT_EQ(loss_impls().find("liger"), nullptr);
}

TEST(Scenario, EagerNormAndRopeNeedAnRmsNormRopeModel) {
  Json j = test::base_scenario();  // llama2-7b: rmsnorm, rope
  j["training"]["norm_impl"] = "eager";
  j["training"]["rope_impl"] = "eager";
  EXPECT_EQ(test::scenario_from(j).training.norm_impl, NormImpl::Eager);
  j["model"] = "megatron-gpt-1.7b";
  EXPECT_EQ(test::scenario_error(j), "test.json: /training/norm_impl: \"eager\" is the Llama reference RMSNorm; the model's norm is \"layernorm\"");
  j["training"].erase("norm_impl");
  EXPECT_EQ(test::scenario_error(j), "test.json: /training/rope_impl: \"eager\" is the Llama reference rotary embedding; the model's "
                         "position_embedding is \"learned\"");
  j["training"]["rope_impl"] = "compiled";
  EXPECT_NE(test::scenario_error(j).find("/training/rope_impl"), std::string::npos);
}

TEST(Scenario, MegatronPadsTheVocabularyToAMultipleOfDivisorTimesTp) {
  // Megatron's _vocab_size_with_padding: GPT-2's 50257 tokens become the familiar 50304 (128 x 393)
  // on one GPU; BLOOM's 250680 become 250880 with tp 8 (1024 x 245) and with tp 4 (512 x 490). The
  // padded rows are parameters and logits columns like any other; the default keeps the vocabulary.
  Json j = test::base_scenario();
  j["model"] = "megatron-gpt-1.7b";
  j["training"]["seq_len"] = 2048;  // within its learned position table (max_positions 2048)
  const ModelSpec base = test::scenario_from(j).model;
  Json m = test::scenario_from(j).resolved()["model"];
  m["vocab"] = 50257;
  j["model"] = m;
  EXPECT_EQ(test::scenario_from(j).model.vocab, 50257);
  j["training"]["make_vocab_size_divisible_by"] = 128;
  const Scenario padded = test::scenario_from(j);
  EXPECT_EQ(padded.model.vocab, 50304);
  EXPECT_DOUBLE_EQ(count_params(padded.model).embedding - count_params(base).embedding,
                   static_cast<double>(50304 - base.vocab) * static_cast<double>(base.hidden));
  j["model"]["vocab"] = 250680;
  j["parallel"]["tp"] = 8;
  j["parallel"]["dp"] = 1;
  j["training"]["global_batch"] = 8;
  EXPECT_EQ(test::scenario_from(j).model.vocab, 250880);
  j["parallel"]["tp"] = 4;
  j["parallel"]["dp"] = 2;
  EXPECT_EQ(test::scenario_from(j).model.vocab, 250880);
  EXPECT_EQ(test::scenario_from(test::scenario_from(j).resolved()).model.vocab, 250880);  // idempotent
  j["training"]["make_vocab_size_divisible_by"] = 0;
  EXPECT_EQ(test::scenario_error(j), "test.json: /training/make_vocab_size_divisible_by: expected an integer in [1, 1048576], got 0");
}

// No kernel of any shape runs faster than the hardware: GEMMs and attention at most the dtype's
// peak, memory-bound kernels at most the HBM peak. (The unfused attention's backward GEMMs were
// once priced as one GEMM with two GEMMs' FLOPs: 369 TFLOP/s on a 312 TFLOP/s A100.)
TEST(LayerGraph, NoKernelRunsAboveThePeak) {
  for (const char* model : {"megatron-gpt-1.7b", "llama3-8b", "gpt3-175b", "llama2-70b"})
    for (const char* gpu : {"a100-sxm4-80g", "h100-sxm5-80g", "b200-sxm-180g"})
      for (const bool flash : {true, false})
        for (const std::int64_t tp : {1, 8}) {
          const ModelSpec m = load_zoo_model(test::data_dir(), model, "test");
          const Profile p = load_profile(test::data_dir(), gpu, "test");
          LayerShape sh;
          sh.tp = tp;
          sh.sequence_parallel = tp > 1;
          sh.micro_batch = 2;
          sh.seq_len = 2048;
          sh.flash_attention = flash;
          const LayerGraph g = build_layer_graph(m, sh);
          const CostModel cm(p, "bf16");
          for (const auto& r : kernel_rows(g, cm)) {
            const Kernel& k = *r.kernel;
            ASSERT_GT(r.seconds, 0) << k.name;
            if (k.kind == KernelKind::Memory)
              EXPECT_LE(k.bytes / r.seconds, p.hbm_gbps.value * 1e9) << model << " " << gpu << " " << k.name;
            else
              EXPECT_LE(k.flops / r.seconds, p.peak_flops("bf16") * (1 + 1e-12))
                  << model << " " << gpu << " " << k.name << " flash " << flash << " tp " << tp;
          }
        }
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
