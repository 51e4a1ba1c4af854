// Models whose layers differ: dense layers before the MoE ones (DeepSeek-V3, Kimi K2), MoE every
// n-th layer, sliding-window attention between full-attention layers (GPT-OSS), shared experts and
// multi-head latent attention. Each kind of layer gets its own graph; the schedules take each
// layer's blocks, activations and parameters from its kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "../test_util.h"
#include "models/recompute.h"
#include "sim/cost/kernels.h"
#include "sim/memory/memory_model.h"

namespace parasim {
namespace {

using test::kernel_named;

double gemm_flops(const Block& b) {
  double f = 0;
  for (const auto& k : b.kernels)
    if (k.kind == KernelKind::Gemm) f += k.flops;
  return f;
}

TEST(LayerKinds, EachLayersKindFollowsTheModel) {
  const ModelSpec ds = load_zoo_model(test::data_dir(), "deepseek-v3", "test");
  for (std::int64_t i = 0; i < ds.layers; ++i) EXPECT_EQ(ds.layer_kind(i).moe, i >= 3) << i;
  EXPECT_FALSE(ds.uniform());
  EXPECT_EQ(ds.kinds().size(), 2u);
  const ModelSpec oss = load_zoo_model(test::data_dir(), "gpt-oss-120b", "test");
  for (std::int64_t i = 0; i < oss.layers; ++i) {
    EXPECT_EQ(oss.layer_kind(i).windowed, i % 2 == 0) << i;  // sliding first, full every 2nd
    EXPECT_TRUE(oss.layer_kind(i).moe);
  }
  ModelSpec step = load_zoo_model(test::data_dir(), "llama3-8b", "test");
  step.moe = MoeSpec{8, 2, 7168, 0, 2, 2};  // two dense layers, then MoE every 2nd layer
  for (std::int64_t i = 0; i < step.layers; ++i) EXPECT_EQ(step.layer_kind(i).moe, i >= 2 && (i - 2 + 1) % 2 == 0) << i;
  EXPECT_TRUE(load_zoo_model(test::data_dir(), "qwen3-30b-a3b", "test").uniform());
  EXPECT_TRUE(load_zoo_model(test::data_dir(), "llama3-8b", "test").uniform());
}

// DeepSeek-V3 per layer, from its dimensions: MLA (query down 7168 x 1536, its norm, up 1536 x 128
// x 192; key-value down 7168 x 576, its norm, up 512 x 128 x 256; output 128 x 128 x 7168), two
// RMSNorms; dense SwiGLU 3 x 7168 x 18432, or 256 routed and one shared SwiGLU expert of 2048 and
// the 7168 x 256 router.
TEST(LayerKinds, DeepSeekV3ParametersFollowTheirClosedForm) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "deepseek-v3", "test");
  const double h = 7168;
  const double attn = h * 1536 + 1536 + 1536.0 * 128 * 192 + h * 576 + 512 + 512.0 * 128 * 256 + 128.0 * 128 * h;
  const double dense = attn + 3 * h * 18432 + 2 * h;
  const double moe = attn + 256 * 3 * h * 2048 + 3 * h * 2048 + h * 256 + 2 * h;
  EXPECT_DOUBLE_EQ(layer_params(m, 0), dense);
  EXPECT_DOUBLE_EQ(layer_params(m, 2), dense);
  EXPECT_DOUBLE_EQ(layer_params(m, 3), moe);
  EXPECT_DOUBLE_EQ(expert_params(m, 0), 0.0);
  EXPECT_DOUBLE_EQ(expert_params(m, 60), 256 * 3 * h * 2048);
  const ParamCount pc = count_params(m);
  EXPECT_NEAR(pc.total(), 3 * dense + 58 * moe + 2 * 129280 * h + h, 1.0);
  // The active parameters leave out 248 of the 256 routed experts in each of the 58 MoE layers.
  EXPECT_NEAR(active_params(m), pc.total() - 58 * 248 * 3 * h * 2048, 1.0);
  // The per-tensor list of each kind sums to its layer's count.
  for (const std::int64_t i : {0, 3})
    for (const char* name : {"deepseek-v3", "gpt-oss-120b", "kimi-k2", "deepseek-v2-lite", "gpt-oss-20b"}) {
      const ModelSpec z = load_zoo_model(test::data_dir(), name, "test");
      const std::vector<double> t = layer_tensor_params(z, i);
      EXPECT_DOUBLE_EQ(std::accumulate(t.begin(), t.end(), 0.0), layer_params(z, i)) << name << " layer " << i;
    }
}

// The attention block's GEMMs do 2 x tokens x its weight parameters in forward, twice that in
// backward; MLA's scores are qk_nope + qk_rope wide and its values v_head_dim wide.
TEST(LayerKinds, MlaAttentionFlopsFollowItsDimensions) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "deepseek-v3", "test");
  LayerShape sh;
  sh.seq_len = 4096;
  sh.micro_batch = 1;
  const ModelGraph g = build_model_graph(m, sh);
  ASSERT_EQ(g.kinds.size(), 2u);
  const double T = 4096, h = 7168;
  const double weights = h * 1536 + 1536.0 * 128 * 192 + h * 576 + 512.0 * 128 * 256 + 128.0 * 128 * h;
  for (const LayerGraph& k : g.kinds) {
    EXPECT_NEAR(gemm_flops(k.attn_fwd), 2 * T * weights, 1.0);
    EXPECT_NEAR(gemm_flops(k.attn_bwd), 4 * T * weights, 1.0);
    const Kernel& a = kernel_named(k.attn_fwd, "attention");
    EXPECT_DOUBLE_EQ(a.model_flops, 2 * T * T * 128 * (192 + 128));  // QK^T over 192, PV over 128
    EXPECT_DOUBLE_EQ(a.flops, 0.5 * a.model_flops);                    // causal
    EXPECT_EQ(a.head_dim, 192);
  }
  // Dense layers: 3 x 7168 x 18432; MoE layers: 8 routed and the shared expert per token, and the router.
  EXPECT_NEAR(gemm_flops(g.layer(0).mlp_fwd), 2 * T * 3 * h * 18432, 1.0);
  EXPECT_NEAR(gemm_flops(g.layer(3).mlp_fwd), 2 * T * (9 * 3 * h * 2048 + h * 256), 1.0);
  // Kinds are shared, not copied per layer.
  EXPECT_EQ(&g.layer(5), &g.layer(60));
}

// A causal window of w keys computes w s - w (w - 1) / 2 of the s x w band's score entries; the
// windowed layers' attention core is cheaper than the full layers' and the rest of the layer is
// the same.
TEST(LayerKinds, SlidingWindowAttentionComputesItsBand) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "gpt-oss-120b", "test");
  LayerShape sh;
  sh.seq_len = 8192;
  sh.micro_batch = 2;
  const ModelGraph g = build_model_graph(m, sh);
  const LayerGraph& win = g.layer(0);
  const LayerGraph& full = g.layer(1);
  const double s = 8192, w = 128, heads = 64, d = 64, b = 2;
  const Kernel& aw = kernel_named(win.attn_fwd, "attention");
  EXPECT_DOUBLE_EQ(aw.model_flops, 2 * b * heads * s * w * (d + d));
  EXPECT_NEAR(aw.flops, 2 * b * heads * (w * s - w * (w - 1) / 2) * (d + d), 1e-3 * aw.flops);
  // Priced as the causal attention whose queries see as many keys on average: 2 w - w (w - 1) / s.
  EXPECT_EQ(aw.seq, 254);
  const Kernel& af = kernel_named(full.attn_fwd, "attention");
  EXPECT_DOUBLE_EQ(af.flops, 0.5 * 2 * b * heads * s * s * (d + d));
  EXPECT_NEAR(gemm_flops(win.attn_fwd), gemm_flops(full.attn_fwd), 1e-6);
  EXPECT_NEAR(gemm_flops(win.mlp_fwd), gemm_flops(full.mlp_fwd), 1e-6);
  const Scenario sc = test::scenario_from(test::base_scenario());
  const CostModel c(sc.profile, "bf16", sc.training.priced_attention_kernel());
  EXPECT_LT(c.attention_s(aw.flops, false, static_cast<double>(aw.seq), 1, 64), 0.2 * c.attention_s(af.flops, false, s, 1, 64));
  // A window one short of the sequence is priced as the full causal attention it almost is.
  ModelSpec wide = m;
  wide.sliding_window = 8191;
  const ModelGraph wide_graph = build_model_graph(wide, sh);
  const Kernel& near_full = kernel_named(wide_graph.layer(0).attn_fwd, "attention");
  EXPECT_NEAR(static_cast<double>(near_full.seq), 8192, 1);
  EXPECT_NEAR(c.attention_s(near_full.flops, false, static_cast<double>(near_full.seq), 1, 64), c.attention_s(af.flops, false, s, 1, 64),
              1e-3 * c.attention_s(af.flops, false, s, 1, 64));
}

// Llama 3 8B with its first 16 layers dense and the last 16 MoE (8 experts, top 2), on 2 pipeline
// stages with 2 virtual stages each: virtual stages 0 and 1 (chunk 0 of both stages) hold the dense
// layers 0-15, virtual stages 2 and 3 (chunk 1) the MoE layers 16-31. Every MLP op on a stage takes
// its duration from its own layer's kind; each stage's weights are its 8 dense and 8 MoE layers.
TEST(LayerKinds, ScheduleTakesEachLayersBlocksFromItsKind) {
  Json j = test::base_scenario();
  j["model"] = "llama3-8b";
  j["cluster"] = {{"gpu", "h100-sxm5-80g"}, {"nodes", 1}, {"gpus_per_node", 8}};
  j["training"] = {{"global_batch", 16}, {"micro_batch", 1}, {"seq_len", 2048}};
  j["parallel"] = {{"dp", 4}, {"tp", 1}, {"pp", 2}, {"vpp", 2}, {"schedule", "interleaved"}, {"zero_stage", 1}, {"ep", 4}};
  Json model = Json::parse(R"({"name": "llama3-8b-moe-half", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8,
      "ffn_hidden": 14336, "vocab": 128256, "activation": "swiglu", "norm": "rmsnorm", "bias": false,
      "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 14336, "first_dense_layers": 16}})");
  j["model"] = model;
  const Scenario sc = test::scenario_from(j);
  EXPECT_EQ(sc.first_layer_in_chunk(0, 0), 0);
  EXPECT_EQ(sc.first_layer_in_chunk(1, 0), 8);
  EXPECT_EQ(sc.first_layer_in_chunk(0, 1), 16);
  EXPECT_EQ(sc.first_layer_in_chunk(1, 1), 24);
  const SimulationOutput out = test::simulate_with(sc, test::FreeNetwork{});
  const ModelGraph g = build_model_graph(sc.model, layer_shape(sc));
  const CostModel cost(sc.profile, sc.training.gemm_dtype(), sc.training.priced_attention_kernel(), sc.cluster.gpus());
  double dense_mlp = 0, moe_mlp = 0;
  for (const auto& k : g.layer(0).mlp_fwd.kernels) dense_mlp += kernel_seconds(cost, k);
  for (const auto& k : g.layer(31).mlp_fwd.kernels) moe_mlp += kernel_seconds(cost, k);
  ASSERT_GT(std::abs(dense_mlp - moe_mlp), 1e-5);
  int dense_ops = 0, moe_ops = 0;
  for (const Op& o : out.program.ops) {
    if (out.program.role(o) != OpRole::MlpFwd) continue;
    const double s = time_to_seconds(o.duration);
    if (o.chunk == 0) {
      EXPECT_NEAR(s, dense_mlp, 1e-9);
      ++dense_ops;
    } else {
      EXPECT_NEAR(s, moe_mlp, 1e-9);
      ++moe_ops;
    }
  }
  EXPECT_EQ(dense_ops, 2 * 8 * 4);  // 2 stages x 8 layers x 4 microbatches
  EXPECT_EQ(moe_ops, dense_ops);
  // Static weights per stage: 8 dense and 8 MoE layers (experts split over ep = 4), plus the
  // embedding on stage 0 and the final norm and output layer on stage 1, 2 bytes each.
  const ParamCount pc = count_params(sc.model);
  const double dense_l = layer_params(sc.model, 0), moe_l = layer_params(sc.model, 31), experts = expert_params(sc.model, 31);
  const double per_stage = 8 * dense_l + 8 * (moe_l - experts + experts / 4);
  EXPECT_NEAR(static_cast<double>(out.program.ranks[0].static_mem[static_cast<size_t>(MemCat::Weights)]),
              2 * (per_stage + pc.embedding), 16.0);
  EXPECT_NEAR(static_cast<double>(out.program.ranks[1].static_mem[static_cast<size_t>(MemCat::Weights)]),
              2 * (per_stage + pc.head), 16.0);
}

TEST(LayerKinds, InvalidCombinationsAreTold) {
  Json j = test::base_scenario();
  j["model"] = Json::parse(R"({"name": "w", "layers": 4, "hidden": 1024, "heads": 8, "vocab": 1000, "sliding_window": 64})");
  j["parallel"]["cp"] = 2;
  j["parallel"]["dp"] = static_cast<std::int64_t>(j["parallel"]["dp"]) / 2;
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/cp: context parallelism with sliding-window attention "
                                     "(model.sliding_window) is not modelled");
  j = test::base_scenario();
  j["model"] = Json::parse(R"({"name": "w", "layers": 4, "hidden": 1024, "heads": 8, "vocab": 1000, "full_attention_interval": 2})");
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/full_attention_interval: needs sliding_window > 0 (the layers between the "
                                     "full-attention ones are windowed)");
  j["model"] = Json::parse(R"({"name": "m", "layers": 4, "hidden": 1024, "heads": 8, "kv_heads": 2, "vocab": 1000, "bias": false,
      "mla": {"kv_lora_rank": 64, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64}})");
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/kv_heads: multi-head latent attention (mla) gives every head its own key "
                                     "and value: kv_heads must equal heads (8)");
  j["model"]["kv_heads"] = 8;
  j["model"]["bias"] = true;
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/bias: multi-head latent attention (mla) is modelled without biases "
                                     "(DeepSeek-V2/V3, Kimi K2 have none)");
  j["model"]["bias"] = false;
  Json no_moe = test::base_scenario();
  no_moe["model"] = Json::parse(R"({"name": "n", "layers": 4, "hidden": 1024, "heads": 8, "vocab": 1000,
      "moe": {"experts": 4, "top_k": 1, "expert_ffn_hidden": 512, "first_dense_layers": 3, "interval": 2}})");
  EXPECT_EQ(test::scenario_error(no_moe), "test.json: /model/moe: no layer is a mixture-of-experts layer with first_dense_layers 3 and "
                                          "interval 2 over 4 layers");
  j["model"]["mla"]["extra"] = 1;
  EXPECT_NE(test::scenario_error(j).find("/model/mla"), std::string::npos) << test::scenario_error(j);
  Json gelu = test::base_scenario();
  gelu["model"] = Json::parse(R"({"name": "g", "layers": 4, "hidden": 1024, "heads": 8, "vocab": 1000, "activation_clamp": 7})");
  EXPECT_EQ(test::scenario_error(gelu), "test.json: /model/activation_clamp: clamps a gated activation's two inputs; the model's "
                                        "activation is \"gelu\", not gated");
  // Megatron-Core clamps apart only in its experts (TEGroupedMLP); a dense MLP's fused path has no
  // quick-GEGLU (mlp.py), so a dense model with the clamp is refused rather than priced without it.
  gelu["model"]["activation"] = "swiglu";
  EXPECT_EQ(test::scenario_error(gelu), "test.json: /model/activation_clamp: is modelled for a mixture-of-experts model's routed "
                                        "experts (GPT-OSS's clamped quick-GEGLU); the model has no experts (model.moe)");
}

// The memory model and the layer graph read one rule for which block norms "layernorm" recomputes
// (input_norm_in_linear, pre_mlp_norm_in_linear, mamba_norm_in_linear): on every layer kind of a
// dense, an MoE, an MLA and two hybrid models, under Megatron-Core's Transformer Engine specs, the
// activation bytes it frees are exactly one norm output (the next linear's 16-bit input) per norm
// kernel it replays.
TEST(SelectiveRecompute, LayernormFreesTheOutputOfEachNormItReplays) {
  LayerShape sh;
  sh.seq_len = 4096;
  sh.norm_in_linear = true;
  const RecomputeModules layernorm = RecomputeModules::from_names({"layernorm"});
  std::int64_t replaying_kinds = 0, kinds = 0;
  for (const char* name : {"llama3-8b", "qwen3-30b-a3b", "deepseek-v3", "nemotron-h-8b", "nemotron-3-nano-30b-a3b"}) {
    const ModelSpec m = load_zoo_model(test::data_dir(), name, "test");
    for (const LayerKind& k : m.kinds()) {
      const ModelSpec mk = m.of_kind(k);
      const Block replayed = replayed_kernels(build_layer_graph(mk, sh), layernorm, false);
      const auto norms = std::count_if(replayed.kernels.begin(), replayed.kernels.end(),
                                       [](const Kernel& x) { return x.module == LayerModule::BlockNorm; });
      const double freed = activation_bytes(mk, sh, Recompute::Selective, {}).layer_stored -
                           activation_bytes(mk, sh, Recompute::Selective, layernorm).layer_stored;
      EXPECT_NEAR(freed, static_cast<double>(norms) * 2 * 4096 * static_cast<double>(mk.hidden), 1.0)
          << name << " kind '" << layer_symbol(k) << "'";
      replaying_kinds += norms > 0;
      ++kinds;
    }
  }
  EXPECT_GT(replaying_kinds, 0);       // MoE and MLA layers replay a norm
  EXPECT_LT(replaying_kinds, kinds);  // dense, Mamba-2 and attention-only layers run theirs inside a linear
}

// Megatron-Core's --recompute-modules: each recomputed module keeps none of its activations and its
// forward kernels run again before the layer's backward.
TEST(SelectiveRecompute, EachModuleDropsItsActivationsAndReplaysItsKernels) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "deepseek-v3", "test");
  const ModelSpec moe = m.of_kind(m.layer_kind(10));
  const ModelSpec dense = m.of_kind(m.layer_kind(0));
  LayerShape sh;
  sh.seq_len = 4096;
  sh.ep = 64;
  const double s = 4096, e = 2, h = 7168, H = 128;
  auto stored = [&](const ModelSpec& x, std::vector<std::string> mods) {
    return activation_bytes(x, sh, Recompute::Selective, RecomputeModules::from_names(mods)).layer_stored;
  };
  const double base = stored(moe, {"core_attn"});
  // layernorm: the two norm outputs (the attention's and the MLP's input), 2 bytes per element.
  EXPECT_NEAR(base - stored(moe, {"layernorm"}), 2 * e * s * h, 1.0);
  // Under Megatron-Core's Transformer Engine spec a norm run inside the next linear (LayerNormLinear)
  // is not recomputed and keeps its output: MLA's input norm and an MoE block's pre-MLP norm are
  // modules of their own (both go), a dense MLP's pre-MLP norm is not (the MLA dense layer frees one),
  // and a GQA layer's input norm is not (a Qwen3 MoE layer frees one, a Llama layer none).
  sh.norm_in_linear = true;
  EXPECT_NEAR(base - stored(moe, {"layernorm"}), 2 * e * s * h, 1.0);
  EXPECT_NEAR(stored(dense, {"core_attn"}) - stored(dense, {"core_attn", "layernorm"}), e * s * h, 1.0);
  const ModelSpec qwen = load_zoo_model(test::data_dir(), "qwen3-30b-a3b", "test");
  const ModelSpec llama = load_zoo_model(test::data_dir(), "llama3-8b", "test");
  EXPECT_NEAR(stored(qwen, {"core_attn"}) - stored(qwen, {"core_attn", "layernorm"}), e * s * 2048, 1.0);
  EXPECT_DOUBLE_EQ(stored(llama, {"core_attn"}), stored(llama, {"core_attn", "layernorm"}));
  sh.norm_in_linear = false;
  // mla_up_proj: Q and K (128 heads x 192) and V (128 x 128).
  EXPECT_NEAR(base - stored(moe, {"mla_up_proj"}), e * s * H * (192 + 192 + 128), 1.0);
  // moe_act: fc2's input for each of the 8 routed copies of every token, 2048 wide.
  EXPECT_NEAR(base - stored(moe, {"moe_act"}), s * 8 * e * 2048, 1.0);
  // moe: everything the MoE block kept (router scores, routed copies, shared expert).
  EXPECT_NEAR(base - stored(moe, {"moe"}),
              s * (4 * 256 + 8 * (e * h + 2 * e * 2048 + e * 2048 + e * h)) + s * (2 * e + e) * 2048, 1.0);
  // mlp: a dense layer's MLP internals (SwiGLU's gate and up outputs and fc2's input, 18432 wide).
  EXPECT_NEAR(stored(dense, {"core_attn"}) - stored(dense, {"mlp"}), s * (2 * e + e) * 18432, 1.0);
  EXPECT_DOUBLE_EQ(stored(moe, {"mlp"}), base);  // no dense MLP in an MoE layer

  // The replay: one "recompute (selective)" op per layer, as long as the module's forward kernels; a norm
  // Transformer Engine runs inside the next linear (the dense layer's pre-MLP norm) is no module to replay.
  Json j = test::base_scenario();
  j["model"] = "deepseek-v3";
  j["model"] = Json::parse(R"({"name": "ds-4", "layers": 4, "hidden": 7168, "heads": 128, "kv_heads": 128, "ffn_hidden": 18432,
      "vocab": 129280, "activation": "swiglu", "norm": "rmsnorm", "bias": false,
      "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128},
      "moe": {"experts": 16, "top_k": 8, "expert_ffn_hidden": 2048, "shared_expert_ffn_hidden": 2048, "first_dense_layers": 1}})");
  j["training"] = {{"global_batch", 8}, {"micro_batch", 1}, {"seq_len", 4096}};
  j["parallel"] = {{"dp", 8}, {"tp", 1}, {"pp", 1}, {"ep", 8}, {"schedule", "ddp"}, {"zero_stage", 1}, {"recompute", "selective"},
                   {"recompute_modules", {"layernorm", "mla_up_proj", "moe_act"}}};
  const Scenario sc = test::scenario_from(j);
  const SimulationOutput out = test::simulate_with(sc, test::FreeNetwork{});
  const ModelGraph g = build_model_graph(sc.model, layer_shape(sc));
  const CostModel cost(sc.profile, sc.training.gemm_dtype(), sc.training.priced_attention_kernel(), sc.cluster.gpus());
  auto replay = [&](const LayerGraph& lg) {
    double t = 0;
    for (const Block* b : {&lg.attn_fwd, &lg.mlp_fwd})
      for (const auto& k : b->kernels)
        if ((k.module == LayerModule::BlockNorm && !k.in_linear) || k.module == LayerModule::MlaUpProj || k.module == LayerModule::Rope ||
            k.module == LayerModule::MlaQkConcat || (k.module == LayerModule::Experts && k.ffn == FfnStep::Activation))
          t += kernel_seconds(cost, k);
    return t;
  };
  std::vector<double> seen;
  for (const Op& o : out.program.ops)
    if (o.phase == Phase::Recompute) seen.push_back(time_to_seconds(o.duration));
  ASSERT_EQ(seen.size(), 4u);  // one microbatch, 4 layers, backward from the last
  EXPECT_NEAR(seen[0], replay(g.layer(3)), 1e-9);
  EXPECT_NEAR(seen[3], replay(g.layer(0)), 1e-9);
  EXPECT_GT(seen[0], seen[3]);  // the MoE layer also replays its experts' activation

  j["parallel"]["recompute"] = "full";
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/recompute_modules: applies to recompute \"selective\" (Megatron-Core's "
                                     "--recompute-modules), but recompute is \"full\"");
  j["parallel"]["recompute"] = "selective";
  j["parallel"]["recompute_modules"] = {"layernorm", "moe_ac"};
  EXPECT_EQ(test::scenario_error(j).rfind("test.json: /parallel/recompute_modules/1: expected one of \"core_attn\"", 0), 0u)
      << test::scenario_error(j);
  EXPECT_NE(test::scenario_error(j).find("did you mean \"moe_act\"?"), std::string::npos);
}

// Selective recompute of core_attn under fused attention: Megatron-Core replays the fused kernel
// (attention.py's checkpoint_core_attention wraps whatever kernel runs), legacy Megatron-LM did not
// (recompute_fused_attention false). Each layer's recompute op is then exactly its fused attention
// kernel's time, or there is none and the step is the step without recompute, to the bit.
TEST(SelectiveRecompute, CoreAttnReplaysTheFusedKernelWhereTheStackDoes) {
  Json j = test::base_scenario();
  j["training"] = {{"global_batch", 8}, {"micro_batch", 1}, {"seq_len", 4096}};
  j["parallel"] = {{"dp", 8}, {"tp", 1}, {"pp", 1}, {"schedule", "ddp"}, {"recompute", "selective"}};
  const Scenario sc = test::scenario_from(j);
  ASSERT_TRUE(sc.training.flash_attention);
  ASSERT_TRUE(sc.parallel.recompute_fused_attention);  // the default: Megatron-Core's behaviour
  const ModelGraph g = build_model_graph(sc.model, layer_shape(sc));
  const CostModel cost(sc.profile, sc.training.gemm_dtype(), sc.training.priced_attention_kernel(), sc.cluster.gpus());
  const Kernel& attn = kernel_named(g.layer(0).attn_fwd, "attention");
  EXPECT_TRUE(replays(sc.parallel.recompute_modules, attn, true));
  EXPECT_FALSE(replays(sc.parallel.recompute_modules, attn, false));
  const SimulationOutput out = test::simulate_with(sc, test::FreeNetwork{});
  int n = 0;
  for (const Op& o : out.program.ops)
    if (o.phase == Phase::Recompute) {
      EXPECT_NEAR(time_to_seconds(o.duration), kernel_seconds(cost, attn), 1e-12);
      // The replay counts the full score matrix in the model convention (reported hardware FLOPs),
      // the causal half it executes for HFU.
      EXPECT_DOUBLE_EQ(o.model_flops, attn.model_flops);
      EXPECT_DOUBLE_EQ(o.hw_flops, attn.flops);
      EXPECT_DOUBLE_EQ(attn.model_flops, 2 * attn.flops);
      ++n;
    }
  EXPECT_EQ(n, sc.model.layers);  // one microbatch per rank, one replay per layer

  j["parallel"]["recompute_fused_attention"] = false;
  const SimulationOutput legacy = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  j["parallel"]["recompute"] = "none";
  j["parallel"].erase("recompute_fused_attention");
  const SimulationOutput none = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  EXPECT_EQ(legacy.result.step_time_s, none.result.step_time_s);
  EXPECT_NEAR(out.result.step_time_s - none.result.step_time_s, static_cast<double>(n) * kernel_seconds(cost, attn), 1e-9);
  EXPECT_EQ(legacy.result.peak_mem_gib, out.result.peak_mem_gib);  // a fused kernel stores no scores to drop
}

// Selective recompute selects kernels by their module tag: in a DeepSeek-V3 layer (MLA, routed and
// shared experts; unfused attention so the core has kernels of its own) every module Megatron-Core
// names replays some forward kernels, and none replays what no module owns (the residual adds) or
// the output projection.
TEST(SelectiveRecompute, EveryModuleReplaysKernelsOfALayerThatHasIt) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "deepseek-v3", "test");
  LayerShape sh;
  sh.seq_len = 4096;
  sh.ep = 64;
  sh.flash_attention = false;
  const LayerGraph moe = build_layer_graph(m.of_kind(m.layer_kind(10)), sh);
  const LayerGraph dense = build_layer_graph(m.of_kind(m.layer_kind(0)), sh);
  const RecomputeModules all = RecomputeModules::from_names(recompute_module_names());
  EXPECT_EQ(all.names(), recompute_module_names());
  for (const auto& r : kRecomputeModules) {
    const LayerGraph& g = r.module == RecomputeModule::Mlp ? dense : moe;
    int n = 0;
    for (const Block* b : {&g.attn_fwd, &g.mlp_fwd})
      for (const Kernel& k : b->kernels) n += replays(RecomputeModules{r.module}, k, true) ? 1 : 0;
    EXPECT_GT(n, 0) << r.name;
  }
  for (const LayerGraph* g : {&moe, &dense})
    for (const Block* b : {&g->attn_fwd, &g->mlp_fwd})
      for (const Kernel& k : b->kernels)
        if (k.module == LayerModule::None || k.module == LayerModule::AttnOut) {
          EXPECT_FALSE(replays(all, k, true)) << k.name;
        }
  EXPECT_THROW(recompute_module_from_name("moe_ac"), std::invalid_argument);
  // mla_up_proj names MLA's module: on a layer without it, nothing is replayed, its RoPE included
  // (the run's note says the module changes nothing; a hostile tester found 96 ms of replayed RoPE).
  const ModelSpec qwen = load_zoo_model(test::data_dir(), "qwen3-30b-a3b", "test");
  EXPECT_TRUE(replayed_kernels(build_layer_graph(qwen, sh), RecomputeModules{RecomputeModule::MlaUpProj}, true).kernels.empty());
  EXPECT_FALSE(replayed_kernels(moe, RecomputeModules{RecomputeModule::MlaUpProj}, true).kernels.empty());
}

// Multi-token prediction: per microbatch the last stage runs, per module, its input kernels, one
// more layer of the last layer's kind and the output layer again; its weights add a layer, the
// 2h -> h projection, three norms, and with pp > 1 a copy of the (untied) embedding.
TEST(MultiTokenPrediction, AddsALayerAndAPredictionOnTheLastStage) {
  Json j = test::base_scenario();
  j["model"] = "llama3-8b";
  j["training"] = {{"global_batch", 16}, {"micro_batch", 1}, {"seq_len", 4096}};
  j["parallel"] = {{"dp", 4}, {"tp", 1}, {"pp", 2}, {"schedule", "1f1b"}, {"zero_stage", 1}};
  const Scenario plain = test::scenario_from(j);
  j["training"]["mtp_layers"] = 1;
  const Scenario mtp = test::scenario_from(j);
  const SimulationOutput a = test::simulate_with(plain, test::FreeNetwork{});
  const SimulationOutput b = test::simulate_with(mtp, test::FreeNetwork{});
  auto compute = [](const SimulationOutput& o, std::int32_t rank) {
    double t = 0;
    for (const Op& op : o.program.ops)
      if (op.rank == rank && op.stream == Stream::Compute && op.phase != Phase::Optimizer) t += time_to_seconds(op.duration);
    return t;
  };
  const ModelGraph g = build_model_graph(mtp.model, layer_shape(mtp));
  const CostModel cost(mtp.profile, mtp.training.gemm_dtype(), mtp.training.priced_attention_kernel(), mtp.cluster.gpus());
  double module = 0;
  for (const Block* blk : {&g.kinds[0].mtp_fwd, &g.kinds[0].mtp_bwd, &g.kinds[0].attn_fwd, &g.kinds[0].attn_bwd, &g.kinds[0].mlp_fwd,
                           &g.kinds[0].mlp_bwd, &g.kinds[0].head_fwd, &g.kinds[0].head_bwd})
    for (const auto& k : blk->kernels) module += kernel_seconds(cost, k);
  const double microbatches = 4;  // the optimizer step, longer by the added weights, is left out
  EXPECT_NEAR(compute(b, 1) - compute(a, 1), microbatches * module, 1e-6);
  EXPECT_NEAR(compute(b, 0), compute(a, 0), 1e-9);  // the first stage is unchanged
  EXPECT_GT(time_to_seconds(b.timeline.makespan), time_to_seconds(a.timeline.makespan));
  const double h = 4096;
  const double added = layer_params(mtp.model, 31) + 2 * h * h + 3 * h + count_params(mtp.model).embedding;
  const auto weights = [](const SimulationOutput& o, size_t r) {
    return static_cast<double>(o.program.ranks[r].static_mem[static_cast<size_t>(MemCat::Weights)]);
  };
  EXPECT_NEAR(weights(b, 1) - weights(a, 1), 2 * added, 16.0);
  EXPECT_DOUBLE_EQ(weights(b, 0), weights(a, 0));
  j["parallel"]["zero_stage"] = 3;
  EXPECT_NE(test::scenario_error(j).find("/training/mtp_layers: multi-token prediction is modelled with"), std::string::npos);
}

}  // namespace
}  // namespace parasim
