#include <gtest/gtest.h>

#include "../test_util.h"
#include "sim/memory/memory_model.h"

namespace parasim {
namespace {

// A GPT layer as Korthikanti et al. 2022 assume it: 4h MLP, GeLU, multi-head attention, dropout,
// unfused attention, 16-bit activations.
ModelSpec korthikanti_gpt() {
  ModelSpec m;
  m.name = "k";
  m.layers = 1;
  m.hidden = 12288;
  m.heads = 96;
  m.kv_heads = 96;
  m.ffn_hidden = 4 * 12288;
  m.vocab = 51200;
  m.dropout = true;
  return m;
}

LayerShape shape(std::int64_t t, bool sp) {
  LayerShape sh;
  sh.tp = t;
  sh.sequence_parallel = sp;
  sh.micro_batch = 1;
  sh.seq_len = 2048;
  sh.flash_attention = false;
  return sh;
}

// Table 2 of Korthikanti et al. 2022, bytes per layer: s, b, h, a as in the paper.
TEST(Activations, KorthikantiTable2) {
  const ModelSpec m = korthikanti_gpt();
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const double sbh = s * b * h;
  EXPECT_DOUBLE_EQ(activation_bytes(m, shape(1, false), Recompute::None).layer_stored, sbh * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(activation_bytes(m, shape(8, false), Recompute::None).layer_stored, sbh * (10 + 24 / t + 5 * a * s / (h * t)));
  EXPECT_DOUBLE_EQ(activation_bytes(m, shape(8, true), Recompute::None).layer_stored, sbh * (34 + 5 * a * s / h) / t);
  EXPECT_DOUBLE_EQ(activation_bytes(m, shape(8, true), Recompute::Selective).layer_stored, sbh * 34 / t);
  EXPECT_DOUBLE_EQ(activation_bytes(m, shape(8, false), Recompute::Selective).layer_stored, sbh * (10 + 24 / t));
  // Full recompute keeps the layer input, 2sbh (divided by t with sequence parallel).
  EXPECT_DOUBLE_EQ(activation_bytes(m, shape(8, false), Recompute::Full).layer_stored, 2 * sbh);
  EXPECT_DOUBLE_EQ(activation_bytes(m, shape(8, true), Recompute::Full).layer_stored, 2 * sbh / t);
}

TEST(Activations, FlashAttentionStoresNoScoreMatrix) {
  ModelSpec m = korthikanti_gpt();
  LayerShape sh = shape(1, false);
  sh.flash_attention = true;
  const double s = 2048, h = 12288, a = 96;
  // 34 sbh plus the fp32 log-sum-exp per (head, query).
  EXPECT_DOUBLE_EQ(activation_bytes(m, sh, Recompute::None).layer_stored, s * h * 34 + 4 * a * s);
}

// FP8 linear layers save their inputs as the 1-byte copy the weight-gradient GEMM reads (plus a
// scale byte per 32 elements under MXFP8): the QKV and fc1 inputs (replicated unless sequence
// parallel) and the attention-projection and fc2 inputs (split by t) shrink from e to that.
TEST(Activations, Fp8LinearLayersSaveTheirInputsInFp8) {
  ModelSpec m = korthikanti_gpt();
  m.activation = Activation::SwiGlu;
  m.ffn_hidden = 28672;
  m.dropout = false;
  const double s = 2048, h = 12288, f = 28672, e = 2;
  for (const bool sp : {false, true}) {
    LayerShape bf = shape(8, sp);
    bf.flash_attention = true;
    LayerShape f8 = bf, mx = bf, nv = bf;
    f8.fp8_gemms = mx.fp8_gemms = nv.fp8_gemms = true;
    f8.fp8_saved_input_bytes = fp8_saved_input_bytes(Fp8Recipe::Current);
    mx.fp8_saved_input_bytes = fp8_saved_input_bytes(Fp8Recipe::Mxfp8);
    nv.fp8_saved_input_bytes = fp8_saved_input_bytes(Fp8Recipe::Nvfp4);
    // Bytes per saved element li by format: FP8 1; MXFP8 1 and an E8M0 scale per 32; NVFP4 0.5 (FP4)
    // and an E4M3 scale per 16.
    const double t = 8, sp_div = sp ? t : 1;
    for (const auto& [shp, li] : {std::pair{f8, 1.0}, std::pair{mx, 1 + 1.0 / 32}, std::pair{nv, 0.5625}}) {
      const double saved = (e - li) * (2 * s * h / sp_div + (s * h + s * f) / t);
      EXPECT_DOUBLE_EQ(activation_bytes(m, bf, Recompute::None).layer_stored - activation_bytes(m, shp, Recompute::None).layer_stored, saved) << sp;
    }
    // Full recompute keeps only the 16-bit layer input either way.
    EXPECT_DOUBLE_EQ(activation_bytes(m, f8, Recompute::Full).layer_stored, activation_bytes(m, bf, Recompute::Full).layer_stored);
  }
}

// ZeRO paper (Rajbhandari et al. 2020) per-GPU bytes with mixed-precision Adam, K = 12.
TEST(ModelStates, ZeroStagesMatchThePaper) {
  const double psi = 7.5e9, nd = 64;
  const StateBytesPerParam b = state_bytes(Dtype::Bf16, Optimizer::Adam, false);
  EXPECT_DOUBLE_EQ(model_states(psi, b, sharding_for(0, std::nullopt, 64, 0)).total(), 16 * psi);
  EXPECT_DOUBLE_EQ(model_states(psi, b, sharding_for(1, std::nullopt, 64, 0)).total(), 4 * psi + 12 * psi / nd);
  EXPECT_DOUBLE_EQ(model_states(psi, b, sharding_for(2, std::nullopt, 64, 0)).total(), 2 * psi + 14 * psi / nd);
  EXPECT_DOUBLE_EQ(model_states(psi, b, sharding_for(3, std::nullopt, 64, 0)).total(), 16 * psi / nd);
  EXPECT_DOUBLE_EQ(model_states(psi, b, sharding_for(0, FsdpSharding::Full, 64, 0)).total(), 16 * psi / nd);
  EXPECT_DOUBLE_EQ(model_states(psi, b, sharding_for(0, FsdpSharding::GradOp, 64, 0)).total(), 2 * psi + 14 * psi / nd);
  EXPECT_DOUBLE_EQ(model_states(psi, b, sharding_for(0, FsdpSharding::Hybrid, 64, 8)).total(), 16 * psi / 8);
}

TEST(ModelStates, MegatronDistributedOptimizerWithFp32Grads) {
  // Megatron-LM theoretical_memory_usage: 6 + 12/N_d bytes per parameter.
  const double psi = 1e9, nd = 8;
  const StateBytesPerParam b = state_bytes(Dtype::Bf16, Optimizer::Adam, true);
  EXPECT_DOUBLE_EQ(model_states(psi, b, sharding_for(1, std::nullopt, 8, 0)).total(), (6 + 12 / nd) * psi);
}

}  // namespace
}  // namespace parasim
