// Hybrid Mamba-Transformer models (Nemotron-H): the Mamba-2 mixer as a layer kind beside
// attention-only and MLP-only layers, its parameters against the HF config's closed form, its
// FLOPs' scaling in sequence length and tensor parallelism, and the inputs it refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <numeric>

#include "../test_util.h"
#include "models/mamba2.h"
#include "sim/cost/kernels.h"
#include "sim/host_launch.h"
#include "sim/memory/memory_model.h"
#include "sim/simulation.h"

namespace parasim {
namespace {

using test::kernel_named;


// The graph of layer i's kind at micro batch 1, seq `seq`, tp `tp`.
LayerGraph layer_graph(const ModelSpec& m, std::int64_t i, std::int64_t seq, std::int64_t tp) {
  LayerShape sh;
  sh.seq_len = seq;
  sh.micro_batch = 1;
  sh.tp = tp;
  return build_layer_graph(m.of_kind(m.layer_kind(i)), sh);
}

Json zoo_json(const std::string& name) {
  std::ifstream f(test::data_dir() + "/models/" + name + ".json");
  return Json::parse(f);
}

// Nemotron-H-8B-Base-8K's config.json: hidden 4096, Mamba-2 heads 128 x head dim 64 (d_inner 8192),
// state 128, 8 groups, conv kernel 4, no linear biases but a conv bias; attention 32 heads, 8 KV
// heads of 128; squared-ReLU MLP of 21504; RMSNorm; vocab 131072, untied.
//   Mamba-2 layer: in_proj 4096 x (2 x 8192 + 2 x 8 x 128 + 128) = 4096 x 18560; conv1d weight and
//   bias (8192 + 2 x 8 x 128) x (4 + 1); dt_bias, A_log, D 3 x 128; gated norm 8192; out_proj
//   8192 x 4096; the layer's norm 4096.
//   attention layer: 4096 x (4096 + 2 x 1024) + 4096 x 4096 + 4096; MLP layer: 2 x 4096 x 21504 + 4096.
TEST(Mamba2, NemotronH8BParametersFollowTheHfConfig) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "nemotron-h-8b", "test");
  const double h = 4096;
  const double mamba = h * 18560 + 10240.0 * 5 + 3 * 128 + 8192 + 8192 * h + h;
  const double attn = h * (4096 + 2 * 1024) + h * h + h;
  const double mlp = 2 * h * 21504 + h;
  EXPECT_EQ(m.layer_kind(0).type, LayerType::Mamba);
  EXPECT_EQ(m.layer_kind(1).type, LayerType::Mlp);
  EXPECT_EQ(m.layer_kind(7).type, LayerType::Attention);
  EXPECT_DOUBLE_EQ(layer_params(m, 0), mamba);
  EXPECT_DOUBLE_EQ(layer_params(m, 7), attn);
  EXPECT_DOUBLE_EQ(layer_params(m, 1), mlp);
  // The paper's Table 1: 24 Mamba-2, 4 attention and 24 MLP layers.
  EXPECT_NEAR(count_params(m).total(), 24 * mamba + 4 * attn + 24 * mlp + 2 * 131072 * h + h, 1.0);
  for (const std::int64_t i : {0, 1, 7}) {
    const std::vector<double> t = layer_tensor_params(m, i);
    EXPECT_DOUBLE_EQ(std::accumulate(t.begin(), t.end(), 0.0), layer_params(m, i)) << i;
  }
}

// The model cards state 8B and 56B parameters; rounded to the billion, the count is within 0.5B.
// The 56B's pattern holds 54 Mamba-2, 10 attention and 54 MLP layers (the paper, section 2.1).
TEST(Mamba2, NemotronHTotalsMatchThePublishedSizes) {
  const ModelSpec m8 = load_zoo_model(test::data_dir(), "nemotron-h-8b", "test");
  const ModelSpec m56 = load_zoo_model(test::data_dir(), "nemotron-h-56b", "test");
  EXPECT_NEAR(count_params(m8).total(), 8e9, 0.5e9);
  EXPECT_NEAR(count_params(m56).total(), 56e9, 0.5e9);
  std::int64_t mamba = 0, attn = 0, mlp = 0;
  for (std::int64_t i = 0; i < m56.layers; ++i) {
    const LayerType t = m56.layer_kind(i).type;
    mamba += t == LayerType::Mamba;
    attn += t == LayerType::Attention;
    mlp += t == LayerType::Mlp;
  }
  EXPECT_EQ(mamba, 54);
  EXPECT_EQ(attn, 10);
  EXPECT_EQ(mlp, 54);
  EXPECT_EQ(m56.kinds().size(), 3u);
}

// A Mamba-2 layer's work is linear in the sequence (the scan carries a fixed-size state from chunk
// to chunk), an attention layer's is not: doubling the sequence (a multiple of the chunk) doubles
// the Mamba-2 layer's FLOPs and bytes exactly and more than doubles the attention layer's.
TEST(Mamba2, FlopsScaleLinearlyWithSequenceUnlikeAttention) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "nemotron-h-8b", "test");
  const LayerGraph a = layer_graph(m, 0, 4096, 1), b = layer_graph(m, 0, 8192, 1);
  EXPECT_NEAR(b.attn_fwd.flops() / a.attn_fwd.flops(), 2.0, 1e-12);
  EXPECT_NEAR(b.attn_bwd.flops() / a.attn_bwd.flops(), 2.0, 1e-12);
  EXPECT_NEAR(kernel_named(b.attn_fwd, "mamba.ssd_scan").bytes / kernel_named(a.attn_fwd, "mamba.ssd_scan").bytes, 2.0, 1e-12);
  EXPECT_NEAR(kernel_named(b.attn_bwd, "mamba.ssd_scan.bwd").bytes / kernel_named(a.attn_bwd, "mamba.ssd_scan.bwd").bytes, 2.0, 1e-12);
  const LayerGraph qa = layer_graph(m, 7, 4096, 1), qb = layer_graph(m, 7, 8192, 1);
  EXPECT_GT(qb.attn_fwd.flops() / qa.attn_fwd.flops(), 2.1);
  // Megatron's MFU count of the scan, 7 tokens d_inner d_state, is what the forward reports.
  EXPECT_DOUBLE_EQ(kernel_named(b.attn_fwd, "mamba.ssd_scan").model_flops, 7.0 * 8192 * 8192 * 128);
}

// What a Mamba-2 layer keeps for backward grows linearly with the sequence (no score matrix, even
// unfused); tensor parallelism splits all of it but the block's norm input and in_proj input
// (without sequence parallelism those are replicated, 2 x 2 B per token and hidden channel).
TEST(Mamba2, ActivationsAreLinearInSequenceAndSplitByTp) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "nemotron-h-8b", "test");
  const ModelSpec mamba = m.of_kind(m.layer_kind(0));
  LayerShape sh;
  sh.micro_batch = 1;
  sh.flash_attention = false;
  sh.seq_len = 4096;
  const double a = activation_bytes(mamba, sh, Recompute::None).layer_stored;
  sh.seq_len = 8192;
  const double b = activation_bytes(mamba, sh, Recompute::None).layer_stored;
  EXPECT_NEAR(b / a, 2.0, 1e-12);
  sh.tp = 2;
  const double replicated = 2.0 * 2 * 8192 * 4096;
  EXPECT_NEAR(activation_bytes(mamba, sh, Recompute::None).layer_stored - replicated, (b - replicated) / 2, 1.0);
}

// The SSD's chunk matmuls by hand for one sequence of 256 tokens in two chunks of 128, 2 heads of
// 4 channels, one group, state 8 (tp 1): C^T B 2 x 128^2 x 8 per chunk; chunk states and the
// states' contribution 2 x 128 x 4 x 8 per head each; the intra-chunk product 2 x 128^2 x 4 per
// head; the state passing one multiply-add per state element and chunk, 2 x 2 x 4 x 8.
TEST(Mamba2, ScanFlopsFollowTheChunkedAlgorithm) {
  MambaSpec s;
  s.heads = 2;
  s.head_dim = 4;
  s.state = 8;
  s.groups = 1;
  s.chunk = 128;
  const double per_chunk = 2.0 * 128 * 128 * 8 + 2 * (2 * 2.0 * 128 * 4 * 8) + 2 * (2.0 * 128 * 128 * 4);
  const double passing = 2.0 * 2 * 2 * 4 * 8;
  EXPECT_DOUBLE_EQ(ssd_scan_forward(s, 1, 256, 1, 2).flops, 2 * per_chunk + passing);
  // Backward: two gradient matmuls per forward matmul, the recomputed C^T B and chunk states.
  const double recompute = 2 * (2.0 * 128 * 128 * 8 + 2 * (2.0 * 128 * 4 * 8));
  EXPECT_DOUBLE_EQ(ssd_scan_backward(s, 1, 256, 1, 2).flops, 2 * (2 * per_chunk) + recompute + passing);
  // Three sequences are three times one.
  EXPECT_DOUBLE_EQ(ssd_scan_forward(s, 3, 256, 1, 2).bytes, 3 * ssd_scan_forward(s, 1, 256, 1, 2).bytes);
  // A last chunk of 64 tokens: its within-chunk products are 64^2, its per-token ones 64.
  const double half = 2.0 * 64 * 64 * 8 + 2 * (2 * 2.0 * 64 * 4 * 8) + 2 * (2.0 * 64 * 64 * 4);
  EXPECT_DOUBLE_EQ(ssd_scan_forward(s, 1, 192, 1, 2).flops, per_chunk + half + passing);
  // A chunk longer than the sequence is one chunk of the sequence's tokens (the kernels mask the
  // rest): the same cost as chunks of exactly the sequence.
  MambaSpec wide = s;
  wide.chunk = 16384;
  MambaSpec exact = s;
  exact.chunk = 256;
  for (auto f : {&ssd_scan_forward, &ssd_scan_backward}) {
    EXPECT_DOUBLE_EQ(f(wide, 1, 256, 1, 2).flops, f(exact, 1, 256, 1, 2).flops);
    EXPECT_DOUBLE_EQ(f(wide, 1, 256, 1, 2).bytes, f(exact, 1, 256, 1, 2).bytes);
  }
}

// Megatron splits in_proj by columns and out_proj by rows over tp ranks, heads and groups with
// them: at tp 2 each rank does half of each projection and of the scan.
TEST(Mamba2, TensorParallelHalvesTheMixerPerRank) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "nemotron-h-8b", "test");
  const LayerGraph one = layer_graph(m, 0, 8192, 1), two = layer_graph(m, 0, 8192, 2);
  for (const char* name : {"mamba.in_proj", "mamba.out_proj", "mamba.ssd_scan"})
    EXPECT_DOUBLE_EQ(kernel_named(two.attn_fwd, name).flops, kernel_named(one.attn_fwd, name).flops / 2) << name;
  // in_proj: 8192 tokens x (2 x 8192 + 2 x 8 x 128 + 128) / 2 columns x 4096.
  EXPECT_DOUBLE_EQ(kernel_named(two.attn_fwd, "mamba.in_proj").flops, 2.0 * 8192 * 9280 * 4096);
  // The mixer keeps the block's tensor-parallel collectives; a Mamba-2 layer has no MLP block and
  // an MLP layer no attention block, nor their collectives.
  EXPECT_TRUE(two.attn_tp_comm);
  EXPECT_FALSE(two.mlp_tp_comm);
  EXPECT_TRUE(two.mlp_fwd.kernels.empty());
  const LayerGraph mlp = layer_graph(m, 1, 8192, 2);
  EXPECT_FALSE(mlp.attn_tp_comm);
  EXPECT_TRUE(mlp.attn_fwd.kernels.empty());
  EXPECT_TRUE(mlp.mlp_tp_comm);
}

// A step of the 8B on 8 GPUs at TP 2: one tensor-parallel collective per layer and pass (a
// transformer layer has two), one attention kernel per attention layer.
TEST(Mamba2, ScheduleRunsEachLayerAsItsOneBlock) {
  Json j = test::base_scenario();
  j["model"] = "nemotron-h-8b";
  j["training"] = {{"global_batch", 4}, {"micro_batch", 1}, {"seq_len", 8192}};
  j["parallel"] = {{"dp", 4}, {"tp", 2}, {"pp", 1}, {"schedule", "ddp"}};
  const Scenario sc = test::scenario_from(j);
  const Registries reg;
  const SimulationOutput out = simulate(sc, reg, nullptr, Detail::Timeline);  // op by op: a timeline's program is not fused
  int tp_fwd = 0, tp_bwd = 0;
  for (const Op& o : out.program.ops) {
    if (o.rank != 0) continue;
    const OpRole label = out.program.role(o);
    tp_fwd += label == OpRole::TpCommFwd;
    tp_bwd += label == OpRole::TpCommBwd;
  }
  EXPECT_EQ(tp_fwd, 52);  // one microbatch per rank, 52 layers
  EXPECT_EQ(tp_bwd, 52);
  // The trace and --dump-program name a Mamba-2 layer's mixer ops as such (they were "attention"):
  // one forward and one backward per 'M' of the pattern (24 in Nemotron-H 8B), the role unchanged.
  const std::string pattern = sc.model.hybrid_pattern;
  const auto mambas = std::count(pattern.begin(), pattern.end(), 'M');
  int fwd = 0, bwd = 0;
  for (const Op& o : out.program.ops) {
    if (o.rank != 0) continue;
    const std::string& text = out.program.labels[static_cast<size_t>(o.label)];
    if (text == "mamba fwd") fwd += out.program.role(o) == OpRole::AttnFwd;
    if (text == "mamba bwd") bwd += out.program.role(o) == OpRole::AttnBwd;
  }
  EXPECT_EQ(fwd, mambas);
  EXPECT_EQ(bwd, mambas);
}

TEST(Mamba2, InvalidHybridModelsAreTold) {
  Json j = test::base_scenario();
  Json model = zoo_json("nemotron-h-8b");
  model["mamba"]["groups"] = 4;  // tp 8 divides the attention's 8 KV heads, not 4 groups
  j["model"] = model;
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 1}, {"schedule", "ddp"}};
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/tp: tp (8) must divide the model's mamba heads (128) and groups (4): "
                                     "Megatron-Core splits the Mamba-2 mixer by heads and groups");
  j = test::base_scenario();
  model = zoo_json("nemotron-h-8b");
  model["hybrid_pattern"] = "M-M*";
  j["model"] = model;
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/hybrid_pattern: has 4 symbols for 52 layers (one per layer)");
  model["layers"] = 4;
  model["hybrid_pattern"] = "M-E*";
  j["model"] = model;
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/moe: hybrid_pattern has mixture-of-experts layers ('E'): give the experts (moe)");
  model["hybrid_pattern"] = "M-G*";
  j["model"] = model;
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/hybrid_pattern: symbol 'G' at layer 2 is not modelled: 'M' Mamba-2, "
                                     "'*' attention, '-' MLP, 'E' mixture of experts (Megatron-Core's symbols)");
  // A character outside ASCII is one symbol, named whole at its layer (not counted as its bytes).
  model["hybrid_pattern"] = "M-\u2192*";
  j["model"] = model;
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/hybrid_pattern: symbol '\u2192' at layer 2 is not modelled: 'M' Mamba-2, "
                                     "'*' attention, '-' MLP, 'E' mixture of experts (Megatron-Core's symbols)");
  model["hybrid_pattern"] = "M-\t*";  // a tab does not break the one-line message
  j["model"] = model;
  EXPECT_NE(test::scenario_error(j).find("symbol '\\x09' at layer 2"), std::string::npos) << test::scenario_error(j);
  model["hybrid_pattern"] = "M-M*";
  model.erase("mamba");
  j["model"] = model;
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/mamba: hybrid_pattern has Mamba-2 layers ('M'): give the mamba mixer");
  model = zoo_json("nemotron-h-8b");
  model["mamba"]["groups"] = 3;
  j["model"] = model;
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/mamba/groups: mamba heads (128) must be divisible by groups (3)");
  j = test::base_scenario();
  j["model"] = "nemotron-h-8b";
  j["parallel"] = {{"dp", 4}, {"tp", 1}, {"cp", 2}, {"pp", 1}, {"schedule", "ddp"}};
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/cp: context parallelism with Mamba-2 layers (model.mamba) is not modelled");
}

// `run --kernels` prices the mixer's kernels, the scan by its roofline.
TEST(Mamba2, RunKernelsListsTheMixer) {
  const auto [rc, out] = test::cli_stdout("--data-dir " + test::data_dir() + " run " + test::data_dir() +
                                          "/scenarios/nemotron-h-8b-8xh100.json --kernels");
  EXPECT_EQ(rc, 0);
  for (const char* k : {"mamba.in_proj", "mamba.conv1d", "mamba.ssd_scan", "mamba.norm", "mamba.out_proj", "mamba.ssd_scan.bwd"})
    EXPECT_NE(out.find(k), std::string::npos) << k;
  EXPECT_NE(out.find("scan roofline"), std::string::npos);
  EXPECT_NE(out.find("mamba fwd [Mamba-2]"), std::string::npos);
}

// Nemotron 3 Nano (Megatron-Bridge's recipe: pattern MEMEM*EMEMEM*..., 128 experts of 1856, top 6,
// a shared expert of 3712, squared ReLU, hidden 2688): its 'E' layers are the MoE layers and only
// they hold experts. An MoE layer: a norm (2688), the router (2688 x 128) and 129 two-matrix MLPs
// without biases, 128 x 2 x 2688 x 1856 + 2 x 2688 x 3712.
TEST(HybridMoe, ExpertLayersAreThePatternsE) {
  const ModelSpec m = load_zoo_model(test::data_dir(), "nemotron-3-nano-30b-a3b", "test");
  std::int64_t moe = 0, mamba = 0, attn = 0;
  for (std::int64_t i = 0; i < m.layers; ++i) {
    const LayerKind k = m.layer_kind(i);
    EXPECT_EQ(k.moe, m.hybrid_pattern[static_cast<size_t>(i)] == 'E') << i;
    moe += k.moe;
    mamba += k.type == LayerType::Mamba;
    attn += k.type == LayerType::Attention;
  }
  EXPECT_EQ(moe, 23);
  EXPECT_EQ(mamba, 23);
  EXPECT_EQ(attn, 6);
  EXPECT_EQ(layer_params(m, 1), 2688.0 + 2688.0 * 128 + 128 * 2 * 2688.0 * 1856 + 2 * 2688.0 * 3712);
  EXPECT_EQ(expert_params(m, 0), 0.0);  // a Mamba-2 layer
  const std::vector<double> t = layer_tensor_params(m, 1);
  EXPECT_EQ(std::accumulate(t.begin(), t.end(), 0.0), layer_params(m, 1));
  // Active: every layer but the 122 idle experts of each MoE layer.
  EXPECT_NEAR(active_params(m), count_params(m).total() - 23 * 122 * 2 * 2688.0 * 1856, 1.0);
}

TEST(HybridMoe, InvalidExpertLayersAreTold) {
  Json j = test::base_scenario();
  Json model = zoo_json("nemotron-3-nano-30b-a3b");
  model["moe"]["first_dense_layers"] = 1;
  j["model"] = model;
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/moe/first_dense_layers: with a hybrid_pattern the pattern places the expert "
                                     "layers ('E'): give no first_dense_layers or interval");
  model = zoo_json("nemotron-3-nano-30b-a3b");
  model["hybrid_pattern"] = "";
  j["model"] = model;
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/hybrid_pattern: is empty: give one symbol per layer, or leave it out");
  std::string p = zoo_json("nemotron-3-nano-30b-a3b")["hybrid_pattern"];
  model["hybrid_pattern"] = p.substr(0, 26) + "|" + p.substr(26);
  j["model"] = model;
  EXPECT_NE(test::scenario_error(j).find("/model/hybrid_pattern: pipeline-stage boundaries ('|')"), std::string::npos);
  model = zoo_json("nemotron-3-nano-30b-a3b");
  for (char& c : p)
    if (c == 'E') c = '-';
  model["hybrid_pattern"] = p;
  j["model"] = model;
  EXPECT_EQ(test::scenario_error(j), "test.json: /model/moe: hybrid_pattern has no mixture-of-experts layer ('E')");
}

// The host launches a layer's own blocks: a Mamba-2 layer's empty MLP op and an MoE layer's empty
// attention op issue no kernel (not the largest of the layer kinds' blocks), the MoE layer's MLP
// op and the Mamba-2 layer's mixer op their many. Under the largest-over-kinds count the empty ops
// cost the host the MoE block's launches.
TEST(HybridMoe, TheHostLaunchesEachLayerKindsOwnKernels) {
  Json j = read_json_file(test::data_dir() + "/scenarios/nemotron-3-nano-30b-a3b-16xh100-fp8.json");
  j["training"]["global_batch"] = 32;
  const Scenario sc = test::scenario_from(j);
  const SimulationOutput out = simulate(sc, Registries{}, nullptr, Detail::Timeline);
  const Program& p = out.program;
  ASSERT_EQ(p.host.size(), p.ops.size());
  const std::vector<LayerKind> kinds = sc.model.kinds();
  int empty = 0, full = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.rank != 0 || op.layer_kind < 0) continue;
    const LayerKind& k = kinds[static_cast<size_t>(op.layer_kind)];
    const OpRole r = p.role(op);
    const bool no_block = (r == OpRole::MlpFwd && !k.has_mlp()) || (r == OpRole::AttnFwd && k.type == LayerType::Mlp);
    const bool big_block = (r == OpRole::MlpFwd && k.moe) || (r == OpRole::AttnFwd && k.type == LayerType::Mamba);
    const Time issued = p.host[i].last - p.host[i].first;  // the op's host issue time less its first call
    if (no_block) {
      EXPECT_EQ(op.duration, 0) << i;
      EXPECT_EQ(issued, 0) << i;
      ++empty;
    }
    if (big_block) {
      EXPECT_GT(issued, 0) << i;
      ++full;
    }
  }
  EXPECT_GT(empty, 0);
  EXPECT_GT(full, 0);
  // Every layer op carries its kind under each schedule (pipelined, interleaved, zero-bubble).
  for (const char* schedule : {"1f1b", "interleaved", "zb-h1"}) {
    Json v = j;
    v["parallel"]["pp"] = 2;
    v["parallel"]["dp"] = 8;
    v["parallel"]["schedule"] = schedule;
    if (std::string(schedule) == "interleaved") v["parallel"]["vpp"] = 2;
    const SimulationOutput o = simulate(test::scenario_from(v), Registries{}, nullptr, Detail::Timeline);
    int layer_ops = 0;
    for (const Op& op : o.program.ops) {
      const OpRole r = o.program.role(op);
      if (r != OpRole::AttnFwd && r != OpRole::AttnBwd && r != OpRole::MlpFwd && r != OpRole::MlpBwd && r != OpRole::RecomputeFwd &&
          r != OpRole::EpAllToAllFwd)
        continue;
      EXPECT_GE(op.layer_kind, 0) << schedule << " " << o.program.labels[static_cast<size_t>(op.label)];
      ++layer_ops;
    }
    EXPECT_GT(layer_ops, 0) << schedule;
  }
}

// `run --kernels` of the Nemotron 3 Nano example prices each kind of layer apart.
TEST(HybridMoe, RunKernelsListsEachKindOfLayer) {
  const auto [rc, out] = test::cli_stdout("--data-dir " + test::data_dir() + " run " + test::data_dir() +
                                          "/scenarios/nemotron-3-nano-30b-a3b-16xh100-fp8.json --kernels");
  EXPECT_EQ(rc, 0);
  for (const char* k : {"mamba fwd [Mamba-2]", "attention fwd [attention]", "mlp fwd [MoE]", "experts.up", "shared_experts.up", "mamba.ssd_scan"})
    EXPECT_NE(out.find(k), std::string::npos) << k;
}

// Recompute modules that name what the model does not have change nothing (Megatron accepts them):
// the run says so, and only for those. (The MoE CUDA-graph scopes on a model without experts are
// refused, as Megatron-Core's transformer_config.py refuses them: tests/parallel/moe_test.cpp.)
TEST(HybridMoe, SettingsThatApplyToNoLayerAreTold) {
  Json j = test::base_scenario();
  j["model"] = "nemotron-h-8b";  // Mamba-2, attention and dense MLP layers; no experts, no MLA
  j["parallel"] = {{"dp", 8}, {"tp", 1}, {"pp", 1}, {"schedule", "ddp"}, {"recompute", "selective"},
                   {"recompute_modules", {"mla_up_proj", "mlp", "moe_act"}}};
  j["training"]["cuda_graph_impl"] = "transformer_engine";
  j["training"]["cuda_graph_scope"] = {"mamba"};
  const std::vector<std::string> w = simulate(test::scenario_from(j), Registries{}).result.warnings;
  const auto note = std::find_if(w.begin(), w.end(), [](const std::string& n) { return n.find("changes nothing") != std::string::npos; });
  ASSERT_NE(note, w.end());
  EXPECT_NE(note->find("recompute_modules mla_up_proj, recompute_modules moe_act"), std::string::npos) << *note;
  EXPECT_EQ(note->find("cuda_graph_scope mamba"), std::string::npos);  // the model has Mamba-2 layers
  EXPECT_EQ(note->find("recompute_modules mlp"), std::string::npos);     // and dense MLP layers
}

}  // namespace
}  // namespace parasim
