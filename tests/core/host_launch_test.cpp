#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "sim/core/engine.h"
#include "sim/host_launch.h"
#include "sim/simulation.h"
#include "tests/test_util.h"

namespace parasim {
namespace {

constexpr double kUs = 1e-6;

// One rank, `n` ops of `us` each on the compute stream, with label 0 ("kernel") unless `sync_at`.
Program chain(int n, double us, int sync_at = -1) {
  Program p;
  p.labels = {"kernel", "after sync"};
  p.ranks.resize(1);
  for (int i = 0; i < n; ++i) {
    Op o;
    o.stream = Stream::Compute;
    o.duration = seconds_to_time(us * kUs);
    o.label = i == sync_at ? 1 : 0;
    if (i > 0) o.deps = {static_cast<OpId>(i - 1)};
    p.add(std::move(o));
  }
  return p;
}

// Each op `per_op` calls of one launch each, `launch_us` per call.
HostLaunch launches(std::int64_t per_op, double launch_us, bool sync_label = false) {
  HostLaunch h;
  h.per_call = h.per_loop = seconds_to_time(launch_us * kUs);
  h.counts = {{per_op, per_op}, {per_op, per_op}};
  h.sync_before = {0, static_cast<char>(sync_label)};
  return h;
}

double makespan_us(const Program& p) { return static_cast<double>(run_program(p, EngineOptions{}).makespan) / kPicosPerSecond / kUs; }

// Kernels of 1 us, each op 3 launches of 5 us: op i's kernels are issued from 15 i + 5 to 15 (i + 1),
// so every op ends at its last kernel's issue and the step is kernels x launch cost: 100 x 3 x 5 us.
TEST(HostLaunch, StepOfShortKernelsIsBoundByKernelsTimesLaunchCost) {
  Program p = chain(100, 1.0);
  EXPECT_NEAR(makespan_us(p), 100.0, 1e-6);  // the GPU alone
  add_host_issue(p, launches(3, 5.0));
  EXPECT_NEAR(makespan_us(p), 100 * 3 * 5.0, 1e-6);
}

// Kernels of 100 us against 15 us of launches per op: the host runs ahead, and only the first
// launch shows: 5 + 100 x 100 us.
TEST(HostLaunch, HostAheadOfLongKernelsCostsOnlyTheFirstLaunch) {
  Program p = chain(100, 100.0);
  add_host_issue(p, launches(3, 5.0));
  EXPECT_NEAR(makespan_us(p), 5.0 + 100 * 100.0, 1e-6);
}

// A sync point before op 50: the host waits for op 49 to end (5 + 50 x 100 us), then issues op 50
// (one launch, 5 us) and runs ahead again: one more launch exposed, 10 + 100 x 100 us.
TEST(HostLaunch, SyncPointExposesTheLaunchAfterIt) {
  Program p = chain(100, 100.0, 50);
  add_host_issue(p, launches(1, 5.0, true));
  EXPECT_NEAR(makespan_us(p), 10.0 + 100 * 100.0, 1e-6);
  // Launches of 50 us against 1 us kernels: op 49 ends at 50 x 50 + 1 us; after the sync the host
  // starts over from there, and op 99 ends 50 x 50 + 1 us later.
  Program q = chain(100, 1.0, 50);
  add_host_issue(q, launches(1, 50.0, true));
  EXPECT_NEAR(makespan_us(q), 2 * (50 * 50.0 + 1), 1e-6);
}

// A sync inside op 1, halfway through its 10 us of GPU work, after the first of its three 20 us
// launches. Host-bound, without it: op i's last kernel is issued at 60 (i + 1) us, the step 180 us.
// With it: op 1 starts at 80 (its first launch), the host reaches the sync at 80 and the GPU at
// 85; its other two launches follow (105, 125), and op 2, counted from the release at 85 (its
// three launches after op 1's two), is issued at 145, 165 and 185: the GPU's 5 us before the sync
// are exposed. With 100 us kernels and 5 us launches the host is ahead: it waits at the sync (155 us),
// and the GPU waits for the launch after it (5 us), 5 + 3 x 100 + 5 us.
TEST(HostLaunch, SyncInsideAnOpExposesTheGpuWorkBeforeIt) {
  auto step_us = [](double kernel_us, double launch_us, bool inner) {
    Program p = chain(3, kernel_us, 1);
    HostLaunch h = launches(3, launch_us);
    h.inner = {InnerSync{}, inner ? InnerSync{{1, 1, 0}, {1, 1, 0}, 0.5} : InnerSync{}};
    add_host_issue(p, h);
    if (inner) {
      EXPECT_EQ(p.host[1].sync_at, seconds_to_time(kernel_us / 2 * kUs));
      EXPECT_EQ(p.host[2].gate, 1);  // op 2 counts from the release inside op 1
    }
    return makespan_us(p);
  };
  EXPECT_NEAR(step_us(10, 20, false), 180.0, 1e-6);
  EXPECT_NEAR(step_us(10, 20, true), 185.0, 1e-6);
  EXPECT_NEAR(step_us(100, 5, false), 305.0, 1e-6);
  EXPECT_NEAR(step_us(100, 5, true), 310.0, 1e-6);
}

// An op on another stream after a sync point waits for the gate's end even without a dependency
// of its own: the host issues it only once the GPU has reached the sync.
TEST(HostLaunch, GateOnAnotherStreamBecomesADependency) {
  Program p = chain(2, 100.0);
  Op c;
  c.stream = Stream::Comm;
  c.duration = seconds_to_time(10 * kUs);
  c.label = 1;
  p.add(std::move(c));  // emitted after op 1, on the comm stream, no dependency
  add_host_issue(p, launches(1, 5.0, true));
  const Timeline t = run_program(p, EngineOptions{});
  // Gate: op 1 (ends at 5 + 200 us); the comm op is issued 5 us later.
  EXPECT_NEAR(static_cast<double>(t.start[2]) / kPicosPerSecond / kUs, 210.0, 1e-6);
}

// The host's waits are attributed to the ops that waited: for one stream of host-bound ops, the
// GPU's own work plus every op's wait (before its start, and within its span until its last kernel
// is issued) is the step; with long kernels only the first launch is a wait.
TEST(HostLaunch, WaitsOnTheHostAddUpToTheStep) {
  for (const double kernel_us : {1.0, 100.0}) {
    Program p = chain(100, kernel_us, 50);
    add_host_issue(p, launches(3, 5.0, true));
    const Timeline t = run_program(p, EngineOptions{});
    Time waits = 0, work = 0;
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const HostWait w = host_wait_of(t, p.ops[i], i);
      waits += w.before + w.within;
      work += p.ops[i].duration;
    }
    EXPECT_EQ(work + waits, t.makespan) << kernel_us;
    if (kernel_us > 50) {
      EXPECT_EQ(waits, 2 * seconds_to_time(5.0 * kUs));  // the first launch, and the first after the sync
    }
  }
}

// A call's further launches from its own loop cost the loop's figure, not a call's: 16 expert
// GEMMs behind one call at 100 us a call and 10 us a loop launch are 100 + 15 x 10 us of host time.
TEST(HostLaunch, CallsAndTheirLoopsCostTheirOwnFigures) {
  Program p = chain(1, 1.0);
  HostLaunch h;
  h.per_call = seconds_to_time(100 * kUs);
  h.per_loop = seconds_to_time(10 * kUs);
  h.counts = {{1, 16}, {1, 16}};
  h.sync_before = {0, 0};
  add_host_issue(p, h);
  EXPECT_NEAR(makespan_us(p), 250.0, 1e-6);  // the kernel, 1 us, runs within its last launch
}

// An op whose own work ends before the host has issued its last kernel waits for that issue, its
// work slowed beside a running collective but not its wait: a collective on the comm stream from
// 5 us, and an op of 10 us of work issued from 10 us to 105 us (20 calls of 5 us) at a slowdown of
// 0.5: its work ends at 25 us, and it holds its stream until 105 us, 80 us of it waiting.
TEST(HostLaunch, WaitForTheLastIssueIsNotSlowedBesideACollective) {
  Program p;
  p.labels = {"collective", "kernel"};
  p.ranks.resize(1);
  Op c;
  c.stream = Stream::Comm;
  c.duration = seconds_to_time(1000 * kUs);
  c.label = 0;
  p.add(std::move(c));
  Op k;
  k.stream = Stream::Compute;
  k.duration = seconds_to_time(10 * kUs);
  k.label = 1;
  p.add(std::move(k));
  HostLaunch h;
  h.per_call = h.per_loop = seconds_to_time(5 * kUs);
  h.counts = {{1, 1}, {20, 20}};
  h.sync_before = {0, 0};
  add_host_issue(p, h);
  EngineOptions eo;
  eo.overlap_compute_slowdown = 0.5;
  const Timeline t = run_program(p, eo);
  EXPECT_NEAR(static_cast<double>(t.end[1]) / kPicosPerSecond / kUs, 105.0, 1e-6);
  EXPECT_NEAR(static_cast<double>(t.host_wait_within[1]) / kPicosPerSecond / kUs, 80.0, 1e-6);
}

// The figures come from the training settings; eager PyTorch modules loop in Python, so each of
// their launches is a call.
TEST(HostLaunch, CostsFromTheTrainingSettings) {
  TrainingSpec t;
  t.host_launch_us = 173;
  EXPECT_EQ(host_costs(t).per_loop, host_costs(t).per_call);  // no loop figure: as a call
  t.host_loop_launch_us = 9.2;
  EXPECT_EQ(host_costs(t).per_call, seconds_to_time(173e-6));
  EXPECT_EQ(host_costs(t).per_loop, seconds_to_time(9.2e-6));
  t.launch_impl = LaunchImpl::Eager;
  EXPECT_EQ(host_costs(t).per_loop, seconds_to_time(173e-6));
}

// The stack's cost per framework call is fitted to Megatron-Bridge's CUDA-graph A/B of the EP 16
// FP8 Qwen3-30B-A3B job on 16 H100 (tests/data/mbridge_qwen3_30b_h100_cuda_graph_ab.json): graphing
// each layer's attention, router and dispatcher preprocessing took 29.18 s eager steps to 20.00 s.
// The host time that removed, 9.18 s, is what parasim's eager step less its graphed step must give;
// a change to the launches counted behind each part moves it, and the stack's figure with it.
TEST(HostLaunch, CudaGraphAbGapAsPublished) {
  const Json ab = read_json_file(test::test_data("mbridge_qwen3_30b_h100_cuda_graph_ab.json"));
  Json sc = read_json_file(test::data_dir() + "/" + ab["scenario"].get<std::string>())["scenario"];
  const double eager = simulate(test::scenario_from(sc), Registries{}).result.step_time_s;
  sc["training"]["cuda_graph_impl"] = "transformer_engine";
  sc["training"]["cuda_graph_scope"] = ab["graphed_scope"];
  const double graphed = simulate(test::scenario_from(sc), Registries{}).result.step_time_s;
  const double measured = ab["eager_step_s"].get<double>() - ab["graphed_step_s"].get<double>();
  std::printf("eager %.2f s, graphed %.2f s: the graphs remove %.2f s of host time, published %.2f s (%+.1f %%)\n", eager, graphed,
              eager - graphed, measured, 100 * ((eager - graphed) / measured - 1));
  EXPECT_NEAR((eager - graphed) / measured, 1.0, 0.15);
}

Kernel kernel(LayerModule m, KernelKind kind = KernelKind::Memory, std::int64_t launches = 1) {
  Kernel k;
  k.module = m;
  k.kind = kind;
  k.launches = launches;
  return k;
}

// Launches of a block: each kernel's real launches, a graphed part once per replay.
TEST(HostLaunch, BlockLaunchesCountExpertGemmsAndGraphReplays) {
  Block b;
  b.kernels = {kernel(LayerModule::BlockNorm), kernel(LayerModule::Router, KernelKind::Gemm), kernel(LayerModule::Router),
               kernel(LayerModule::TokenDispatch), kernel(LayerModule::Experts, KernelKind::Gemm, 16),
               kernel(LayerModule::Experts), kernel(LayerModule::Experts, KernelKind::Gemm, 16)};
  // A call per priced kernel; the expert GEMMs' 16 launches each from their own loop.
  EXPECT_EQ(block_launches(b, {}), (LaunchCount{7, 1 + 2 + 1 + 16 + 1 + 16}));
  // The router's two kernels replayed as one graph: one call.
  EXPECT_EQ(block_launches(b, graphed_modules({CudaGraphScope::MoeRouter})), (LaunchCount{6, 1 + 1 + 1 + 16 + 1 + 16}));
  // A block entirely inside one graph is one call of one launch.
  Block a;
  a.kernels = {kernel(LayerModule::QkvProj, KernelKind::Gemm), kernel(LayerModule::FusedAttn), kernel(LayerModule::AttnOut, KernelKind::Gemm)};
  EXPECT_EQ(block_launches(a, graphed_modules({CudaGraphScope::Attn})), (LaunchCount{1, 1}));
}

// Megatron-Core with Transformer Engine: a grouped expert GEMM is one cuBLAS GEMM per local
// expert, and under FP8 current scaling each expert's input is quantized by four kernels (zero
// amax, amax, scale, cast), so the experts' forward launches grow with the local experts.
TEST(HostLaunch, TransformerEngineLaunchesPerLocalExpert) {
  Json j = read_json_file(test::data_dir() + "/calibrate/measurements/h200-sxm-141g-moe-2026-12-04/scenarios/qwen3-30b-a3b-l4-mb1.json");
  j["training"]["dtype"] = "fp8";
  j["training"]["fp8_recipe"] = "current";
  auto expert_launches = [&](std::int64_t ep) {
    LayerShape sh = layer_shape(test::scenario_from(j));
    sh.ep = ep;
    std::int64_t n = 0;
    for (const Kernel& k : build_layer_graph(test::scenario_from(j).model, sh).mlp_fwd.kernels)
      if (k.module == LayerModule::Experts) n += k.launches;
    return n;
  };
  // 128 / ep local experts: two GEMMs and two input quantizations of 4 kernels each, the activation once.
  EXPECT_EQ(expert_launches(8), 16 * (2 + 2 * 4) + 1);
  EXPECT_EQ(expert_launches(16), 8 * (2 + 2 * 4) + 1);
}

// A bare PyTorch op of a module's Python loop costs the op figure, neither a call's nor a loop
// launch's: one call of 2 launches and 10 ops at 100 / 10 / 30 us is 100 + 10 + 10 x 30 us.
TEST(HostLaunch, BareOpsCostTheirOwnFigure) {
  Program p = chain(1, 1.0);
  HostLaunch h;
  h.per_call = seconds_to_time(100 * kUs);
  h.per_loop = seconds_to_time(10 * kUs);
  h.per_op = seconds_to_time(30 * kUs);
  h.counts = {{1, 12, 10}, {1, 12, 10}};
  h.sync_before = {0, 0};
  add_host_issue(p, h);
  EXPECT_NEAR(makespan_us(p), 410.0, 1e-6);
  TrainingSpec t;
  t.host_launch_us = 173;
  EXPECT_EQ(host_costs(t).per_op, host_costs(t).per_call);  // no op figure: as a call
  t.host_op_us = 35.6;
  EXPECT_EQ(host_costs(t).per_op, seconds_to_time(35.6e-6));
  t.launch_impl = LaunchImpl::Eager;
  EXPECT_EQ(host_costs(t).per_op, host_costs(t).per_call);
}

// A loop or op cost with no cost per call, or under eager PyTorch's modules, and any host cost when
// the whole step is one CUDA graph, acts on nothing: the run says so (and only then).
TEST(HostLaunch, InertHostSettingsAreTold) {
  auto notes = [](double call, double loop, double op, const char* impl) {
    Json j = test::base_scenario();
    j["training"]["host_launch_us"] = call;
    j["training"]["host_loop_launch_us"] = loop;
    j["training"]["host_op_us"] = op;
    j["training"]["launch_impl"] = impl;
    std::string all;
    for (const std::string& w : simulate(test::scenario_from(j), Registries{}).result.warnings)
      if (w.find("has no effect") != std::string::npos) all += w + "\n";
    return all;
  };
  const std::string none = notes(0, 9.2, 35.6, "megatron-te");
  EXPECT_NE(none.find("training.host_loop_launch_us has no effect without training.host_launch_us"), std::string::npos) << none;
  EXPECT_NE(none.find("training.host_op_us has no effect without"), std::string::npos) << none;
  const std::string eager = notes(35.6, 9.2, 0, "eager");
  EXPECT_NE(eager.find("training.host_loop_launch_us has no effect with launch_impl \"eager\""), std::string::npos) << eager;
  EXPECT_EQ(eager.find("host_op_us"), std::string::npos) << eager;
  EXPECT_EQ(notes(173, 9.2, 35.6, "megatron-te"), "");
  Json j = test::base_scenario();
  j["training"]["host_launch_us"] = 173;
  j["training"]["cuda_graph_impl"] = "full_iteration";
  const std::vector<std::string> w = simulate(test::scenario_from(j), Registries{}).result.warnings;
  EXPECT_EQ(std::count_if(w.begin(), w.end(), [](const std::string& n) { return n.find("\"full_iteration\" (the step is one CUDA graph)") != std::string::npos; }), 1);
}

// Megatron-Core's TEGroupedMLP adds the experts' fc2 biases in a Python loop over the local experts
// (experts.py _apply_bias: a multiply and an add each, then one cat); autograd's backward runs
// four ops per expert and two concatenations (the two splits' gradients), and the DDP hook adds
// each of the fc1 and fc2 bias gradients into its main_grad. GPT-OSS 120B (128 experts, biases)
// at EP 8 and EP 64: 16 and 2 local experts. Without biases, under eager PyTorch's own modules or
// with Transformer Engine's fused grouped MLP (te_op_fuser) there is no loop, and fc2's bias
// gradient is its own reduction kernel again; with the loop, autograd's products give it.
TEST(HostLaunch, ExpertBiasesAddedInAPythonLoopPerLocalExpert) {
  Json j = read_json_file(test::data_dir() + "/scenarios/measured/pub-mbridge-26.04-dgx-h100-gpt_oss_120b-bf16-64gpu-tp1pp4cp1.json")["scenario"];
  j.erase("stack");
  j["model"].erase("activation_clamp");  // its clamps are PyTorch ops too (the next test)
  struct Counts {
    std::int64_t fwd_ops, bwd_ops;
    bool fc2_bias_grad;
    bool operator==(const Counts&) const = default;
  };
  auto counts = [&](std::int64_t ep, bool bias, LaunchImpl impl, bool fuser = false) {
    j["model"]["bias"] = bias;
    Scenario sc = test::scenario_from(j);
    sc.training.launch_impl = impl;
    sc.training.te_op_fuser = fuser;
    LayerShape sh = layer_shape(sc);
    sh.ep = ep;
    const LayerGraph g = build_layer_graph(sc.model, sh);
    const bool grad = std::any_of(g.mlp_bwd.kernels.begin(), g.mlp_bwd.kernels.end(),
                                  [](const Kernel& k) { return k.name == "experts.down.bias_grad"; });
    return Counts{block_launches(g.mlp_fwd, {}).ops, block_launches(g.mlp_bwd, {}).ops, grad};
  };
  EXPECT_EQ(counts(8, true, LaunchImpl::MegatronTe), (Counts{2 * 16 + 1, 6 * 16 + 2, false}));
  EXPECT_EQ(counts(64, true, LaunchImpl::MegatronTe), (Counts{2 * 2 + 1, 6 * 2 + 2, false}));
  EXPECT_EQ(counts(8, false, LaunchImpl::MegatronTe), (Counts{0, 0, false}));
  EXPECT_EQ(counts(8, true, LaunchImpl::Eager), (Counts{0, 0, true}));
  EXPECT_EQ(counts(8, true, LaunchImpl::MegatronTe, true), (Counts{0, 0, true}));
}

// GPT-OSS clamps both inputs of its experts' gated activation (activation_clamp 7). Megatron-Core's
// weighted_bias_quick_geglu_impl does so before its fused kernel, as PyTorch ops: two clamps, a
// cat and the linear offset's copy to the GPU forward; backward autograd's clamp_backward (a
// comparison and a where for the gate, two comparisons, an and and a where for the linear half,
// each with a one-element zero) and the chunk's gradient (a cat). In passes over one half of fc1's
// output (the activation's ffb: the fused activation reads both halves and writes one, 3; its
// backward 5): 8 forward (each clamp reads and writes its half, the cat both), 15 backward (each
// comparison reads 2 bytes and writes 1 per element, 1.5; the and 1.5; each where reads the mask
// and the gradient and writes, 2.5; the cat 4). moe_act recompute replays the forward's. TE's fused
// grouped MLP (te_op_fuser) clamps inside its own kernel.
TEST(HostLaunch, ClampedExpertActivationRunsItsClampsAsPyTorchOps) {
  Json j = read_json_file(test::data_dir() + "/scenarios/measured/pub-mbridge-26.04-dgx-h100-gpt_oss_120b-bf16-64gpu-tp1pp4cp1.json")["scenario"];
  j.erase("stack");
  j["model"]["bias"] = false;
  auto graph = [&](bool fuser) {
    Scenario sc = test::scenario_from(j);
    sc.training.te_op_fuser = fuser;
    return build_layer_graph(sc.model, layer_shape(sc));
  };
  auto index_of = [](const Block& b, const std::string& name) {
    const auto it = std::find_if(b.kernels.begin(), b.kernels.end(), [&](const Kernel& k) { return k.name == name; });
    return it == b.kernels.end() ? -1 : static_cast<int>(it - b.kernels.begin());
  };
  const LayerGraph g = graph(false);
  const int fc1 = index_of(g.mlp_fwd, "experts.gate_up"), clamp = index_of(g.mlp_fwd, "experts.gate_up.clamp");
  const int act = index_of(g.mlp_fwd, "experts.swiglu"), clamp_bwd = index_of(g.mlp_bwd, "experts.gate_up.clamp.bwd");
  ASSERT_GE(clamp, 0);
  ASSERT_GE(clamp_bwd, 0);
  EXPECT_EQ(clamp, fc1 + 1);
  EXPECT_EQ(act, clamp + 1);
  EXPECT_EQ(index_of(g.mlp_bwd, "experts.swiglu.bwd") + 1, clamp_bwd);
  const Kernel& c = g.mlp_fwd.kernels[static_cast<size_t>(clamp)];
  const Kernel& cb = g.mlp_bwd.kernels[static_cast<size_t>(clamp_bwd)];
  EXPECT_DOUBLE_EQ(c.bytes, 8.0 / 3.0 * g.mlp_fwd.kernels[static_cast<size_t>(act)].bytes);
  EXPECT_DOUBLE_EQ(cb.bytes, 15.0 / 5.0 * g.mlp_bwd.kernels[static_cast<size_t>(index_of(g.mlp_bwd, "experts.swiglu.bwd"))].bytes);
  // Without biases, the clamps are the only PyTorch ops the module runs itself.
  EXPECT_EQ(block_launches(g.mlp_fwd, {}).ops, 4);
  EXPECT_EQ(block_launches(g.mlp_bwd, {}).ops, 9);
  EXPECT_TRUE(replays({RecomputeModule::MoeAct}, c, false));
  // The host waits once, before the fused activation (the offset's synchronising copy), not in backward.
  for (const Block* b : {&g.mlp_fwd, &g.mlp_bwd})
    for (size_t i = 0; i < b->kernels.size(); ++i) EXPECT_EQ(b->kernels[i].host_sync, b == &g.mlp_fwd && static_cast<int>(i) == act) << i;
  const LayerGraph fused = graph(true);
  EXPECT_TRUE(std::none_of(fused.mlp_fwd.kernels.begin(), fused.mlp_fwd.kernels.end(), [](const Kernel& k) { return k.host_sync; }));
  EXPECT_LT(index_of(fused.mlp_fwd, "experts.gate_up.clamp"), 0);
  EXPECT_LT(index_of(fused.mlp_bwd, "experts.gate_up.clamp.bwd"), 0);
  j["model"].erase("activation_clamp");
  EXPECT_LT(index_of(graph(false).mlp_fwd, "experts.gate_up.clamp"), 0);
}

// GPT-OSS on H100 (TEGroupedMLP, moe_act recompute): the host waits inside every MoE layer's
// forward and inside every replay of its activation, partway through the op's GPU work, and the
// ops after it count from there.
TEST(HostLaunch, ClampedActivationSyncsInEveryExpertForwardAndReplay) {
  const Json j = read_json_file(test::data_dir() + "/scenarios/measured/pub-mbridge-26.04-dgx-h100-gpt_oss_120b-bf16-64gpu-tp1pp4cp1.json")["scenario"];
  const Scenario sc = test::scenario_from(j);
  const SimulationOutput out = simulate(sc, Registries{}, nullptr, Detail::Timeline);
  const Program& p = out.program;
  ASSERT_EQ(p.host.size(), p.ops.size());
  int mlp = 0, replay = 0, synced = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.rank != 0) continue;
    const OpRole role = p.role(op);
    mlp += role == OpRole::MlpFwd;
    replay += role == OpRole::RecomputeSelective;
    const HostIssue& h = p.host[i];
    if (h.sync_at < 0) continue;
    ++synced;
    EXPECT_TRUE(role == OpRole::MlpFwd || role == OpRole::RecomputeSelective) << p.labels[static_cast<size_t>(op.label)];
    EXPECT_GT(h.sync_at, 0);
    EXPECT_LT(h.sync_at, op.duration);
    EXPECT_GT(h.after, 0);
    if (i + 1 < p.ops.size() && p.ops[i + 1].rank == 0 && p.ops[i + 1].stream == op.stream) {
      // The next op counts from the release, unless it syncs on this op's end itself (the dispatch).
      EXPECT_EQ(p.host[i + 1].gate, static_cast<OpId>(i));
      EXPECT_EQ(p.host[i + 1].at_release, p.role(p.ops[i + 1]) != OpRole::EpAllToAllFwd);
    }
  }
  EXPECT_GT(mlp, 0);
  EXPECT_EQ(replay, mlp);  // moe_act replays every MoE layer
  EXPECT_EQ(synced, mlp + replay);
}

// Selective recompute re-runs the recomputed modules' forward before their backward
// (Megatron-Core's tensor_parallel.checkpoint, CheckpointWithoutOutput), so the host issues their
// kernels again. Replaying "layernorm" as well as the expert activation costs an MoE layer's host the
// calls of its pre-MLP norm per layer pass; the input norm, which Transformer Engine runs inside
// linear_qkv (LayerNormLinear; the TE layer spec's input_layernorm is an IdentityOp), is not replayed,
// so on a dense layer, whose pre-MLP norm is fused into linear_fc1 too, "layernorm" replays nothing.
TEST(HostLaunch, SelectiveRecomputeReplaysItsCallsOnTheHost) {
  struct R {
    double host_s = 0, passes = 0, norm_calls = 0;
  };
  auto host = [](Json j, const std::vector<std::string>& modules) {
    j.erase("stack");
    j["parallel"]["recompute"] = "selective";
    j["parallel"]["recompute_modules"] = modules;
    j["training"]["host_launch_us"] = 100.0;
    const Scenario sc = test::scenario_from(j);
    const SimulationOutput out = simulate(sc, Registries{}, nullptr, Detail::Timeline);
    const std::vector<LayerModule> graphed = graphed_modules(sc.training.cuda_graph_scope);
    const ModelGraph g = build_model_graph(sc.model, layer_shape(sc));
    const HostLaunch h = host_launch_model(out.program, g, host_costs(sc.training), graphed, host_replay(sc), nullptr);
    R r;
    r.host_s = host_issue_s(out.program, h)[0];
    for (const Op& op : out.program.ops)
      if (op.rank == 0 && out.program.role(op) == OpRole::AttnBwd) r.passes += 1;
    Block norm2;
    for (const Kernel& k : g.kinds.back().mlp_fwd.kernels)
      if (k.module == LayerModule::BlockNorm) norm2.kernels.push_back(k);
    r.norm_calls = static_cast<double>(block_launches(norm2, graphed).calls);
    return r;
  };
  const Json moe = read_json_file(test::data_dir() + "/scenarios/moe-qwen3-30b-a3b-16xh100-fp8.json");
  const R act = host(moe, {"moe_act"}), both = host(moe, {"moe_act", "layernorm"});
  ASSERT_GT(act.passes, 0);
  ASSERT_GT(both.norm_calls, 0);
  EXPECT_DOUBLE_EQ(act.passes, both.passes);
  EXPECT_NEAR(both.host_s - act.host_s, act.passes * both.norm_calls * 100e-6, 1e-9);
  const Json dense = read_json_file(test::data_dir() + "/scenarios/default.json");
  const R attn = host(dense, {"core_attn"}), norms = host(dense, {"core_attn", "layernorm"});
  ASSERT_GT(attn.passes, 0);
  EXPECT_NEAR(norms.host_s, attn.host_s, 1e-12);
}

// An op of bare PyTorch ops only (no framework call) starts after the first op's host time, not a
// call's: a 1 ms kernel behind one op of 30 us ends at 1,030 us (behind one call of 100 us, 1,100).
TEST(HostLaunch, FirstKernelOfBareOpsAfterOneOp) {
  for (const auto& [count, end_us] : {std::pair{LaunchCount{0, 1, 1}, 1030.0}, std::pair{LaunchCount{1, 1, 0}, 1100.0}}) {
    Program p = chain(1, 1000.0);
    HostLaunch h;
    h.per_call = seconds_to_time(100 * kUs);
    h.per_loop = seconds_to_time(10 * kUs);
    h.per_op = seconds_to_time(30 * kUs);
    h.counts = {count, count};
    h.sync_before = {0, 0};
    add_host_issue(p, h);
    EXPECT_NEAR(makespan_us(p), end_us, 1e-6);
  }
}

// The host issue time of our eager MoE training steps on one H200 (tools/scripts/torch_moe_bench.py,
// calibrate/measurements/h200-sxm-141g-moe-2026-12-04): the scenarios of those steps with eager
// PyTorch's launches (training.launch_impl "eager") and the benchmark's gradient zeroing and
// accumulation predict the host time of their forward and backward (fwd_bwd_host_s, mean of run 1
// and run 2: from the call until the host has issued the last backward kernel, the waits for each
// MoE layer's token counts included) within 30 %: -6 % (Qwen3 mb 1), -25 % (mb 2, whose own two
// runs measured 32.7 and 40.2 ms), -17 % (Mixtral). The host cost per kernel is the same machine's
// eager autograd figure, 35.6 us: run1/launch.json's nn.Linear(64, 64) forward, sum and backward
// took 249.0 us of host time per iteration for its 7 kernels (addmm, sum; the backward's ones fill,
// weight-gradient mm, bias-gradient sum and the two gradient accumulations into the existing
// .grad). A bare back-to-back launch (9.2 us) is a floor: it predicts 37-49 % of the measured time.
// What the count leaves out keeps the prediction low: the sorts' and FlashAttention's memsets (about
// 100 per step in the profile), the embedding's backward (one kernel here), the host time of the
// syncs' copies.
constexpr double kEagerAutogradUsPerKernel = 249.0 / 7;

double measured_fwd_bwd_host_s(const std::string& dir, const std::string& name) {
  double sum = 0;
  int n = 0;
  for (const char* run : {"run1", "run2"}) {
    const Json train = read_json_file(dir + "/" + run + "/train.json");
    for (const Json& row : train["rows"])
      if (row["name"].get<std::string>() == name)
        for (const Json& s : row["fwd_bwd_host_s"]) {
          sum += s.get<double>();
          ++n;
        }
  }
  return n > 0 ? sum / n : 0.0;
}

double predicted_fwd_bwd_host_s(Json j, double us_per_kernel) {
  j["training"]["host_launch_us"] = us_per_kernel;
  j["training"]["launch_impl"] = "eager";
  const SimulationOutput out = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  const Program& p = out.program;
  Time done = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const OpRole r = p.role(p.ops[i]);
    if (r < OpRole::EmbeddingFwd || r > OpRole::MtpHeadBwd) continue;  // the optimizer step is timed apart
    const OpId g = p.host[i].gate;
    done = std::max(done, (g >= 0 ? out.timeline.end[static_cast<size_t>(g)] : 0) + p.host[i].last);
  }
  return static_cast<double>(done) / kPicosPerSecond;
}

// The benchmark's own host work in fwd_bwd() around the model: `p.grad.zero_()` for every
// parameter tensor before the forward (a bare in-place launch each, 9.2 us), and autograd's
// accumulation of each gradient into that existing .grad (one add each, at the autograd cost).
// Parameter tensors: per layer two RMSNorms, q, kv and o, the QK-norms, the router and the two
// stacked expert weights (torch_moe_bench.py Block, MoE, Experts); the embedding, final norm and output.
double grad_zero_and_accumulate_s(const Json& sc) {
  const Json& m = sc["model"];
  const double per_layer = 2 + 3 + (m.value("qk_norm", false) ? 2 : 0) + 1 + 2;
  const double tensors = per_layer * m["layers"].get<double>() + 3;
  return tensors * (9.2 + kEagerAutogradUsPerKernel) * 1e-6;
}

TEST(HostLaunch, EagerMoeStepsHostIssueTimeAsMeasuredOnH200) {
  const std::string dir = test::data_dir() + "/calibrate/measurements/h200-sxm-141g-moe-2026-12-04";
  for (const std::string name : {"qwen3-30b-a3b-l4-mb1", "qwen3-30b-a3b-l4-mb2", "mixtral-8x7b-l2-mb1"}) {
    const double measured = measured_fwd_bwd_host_s(dir, name);
    ASSERT_GT(measured, 0) << name;
    const Json sc = read_json_file(dir + "/scenarios/" + name + ".json");
    const double predicted = predicted_fwd_bwd_host_s(sc, kEagerAutogradUsPerKernel) + grad_zero_and_accumulate_s(sc);
    const double floor = predicted_fwd_bwd_host_s(sc, 9.2);
    std::printf("%s: host fwd+bwd predicted %.1f ms (%.1f at a bare 9.2 us launch), measured %.1f ms (%+.1f %%)\n", name.c_str(),
                1e3 * predicted, 1e3 * floor, 1e3 * measured, 100 * (predicted / measured - 1));
    EXPECT_LT(floor, measured) << name;  // the bare launch is a floor
    EXPECT_NEAR(predicted / measured, 1.0, 0.30) << name;
  }
}

}  // namespace
}  // namespace parasim
