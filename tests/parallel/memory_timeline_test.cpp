// Activation memory in flight, read from the simulated timeline: 1F1B's stage i holds
// min(p-i, m) microbatches, GPipe holds m (MODELING.md, Narayanan et al. 2021).
#include <gtest/gtest.h>

#include "../test_util.h"
#include "sim/cost/kernels.h"
#include "sim/memory/memory_model.h"

namespace parasim {
namespace {

Scenario pipe(std::int64_t p, std::int64_t m, const std::string& schedule) {
  Json j = test::base_scenario();
  j["model"] = {{"name", "eq"}, {"layers", 16}, {"hidden", 2048}, {"heads", 16}, {"vocab", 64}};
  j["cluster"] = {{"gpu", "a100-sxm4-80g"}, {"nodes", 1}, {"gpus_per_node", p}};
  j["training"] = {{"global_batch", m}, {"micro_batch", 1}, {"seq_len", 2048}};
  j["parallel"] = {{"dp", 1}, {"pp", p}, {"schedule", schedule}};
  return test::scenario_from(j);
}

double peak_activations(const Scenario& sc, std::int32_t stage) {
  const auto out = test::simulate_with(sc, test::FreeNetwork{});
  return static_cast<double>(out.timeline.memory[static_cast<size_t>(stage)].at_peak[static_cast<size_t>(MemCat::Activations)]);
}

double per_microbatch(const Scenario& sc, bool with_head) {
  const ActivationBytes a = activation_bytes(sc.model, layer_shape(sc), Recompute::None);
  const double layers = static_cast<double>(sc.model.layers / sc.parallel.pp);
  return layers * static_cast<double>(static_cast<Bytes>(a.layer_stored)) + (with_head ? static_cast<double>(static_cast<Bytes>(a.head)) : 0);
}

TEST(ActivationsInFlight, OneFOneBFirstStageHoldsP) {
  const std::int64_t p = 4, m = 8;
  const Scenario sc = pipe(p, m, "1f1b");
  for (std::int32_t i = 0; i < p - 1; ++i)
    EXPECT_DOUBLE_EQ(peak_activations(sc, i), static_cast<double>(std::min(p - i, m)) * per_microbatch(sc, false)) << "stage " << i;
  // The last stage runs F then B per microbatch: one in flight (plus its logits, and the loss's
  // gradient buffers while the loss runs backward).
  const ActivationBytes a = activation_bytes(sc.model, layer_shape(sc), Recompute::None);
  EXPECT_DOUBLE_EQ(peak_activations(sc, p - 1), per_microbatch(sc, true) + static_cast<double>(static_cast<Bytes>(a.head_working)));
}

TEST(ActivationsInFlight, LossBackwardBuffersPerImplementation) {
  // Peak on one GPU = all layers' stored activations + the saved logits + the loss backward's new
  // buffers per logit: eager PyTorch (nll_loss_backward's fp32 gradient and log_softmax_backward's
  // fp32 input gradient) 8 bytes, Megatron (in place on its saved softmax; the bf16 downcast) 2,
  // eager PyTorch on 16-bit logits (eager16: the same two gradients, 16-bit) 4, a fused kernel (in place on the logits) 0,
  // FlashAttention's xentropy (a new 16-bit gradient beside the saved logits) 2. Measured on an H200 with eager PyTorch
  // (calibrate/measurements/h200-sxm-141g-2026-11-30): 12 bytes per logit in all, as here.
  for (const auto& [impl, per_logit] : {std::pair<std::string, double>{"eager", 8.0}, {"eager16", 4.0}, {"megatron", 2.0}, {"fused", 0.0}, {"xentropy", 2.0}}) {
    Json j = test::base_scenario();
    j["model"] = {{"name", "eq"}, {"layers", 4}, {"hidden", 1024}, {"heads", 8}, {"vocab", 32000}};
    j["cluster"] = {{"gpu", "a100-sxm4-80g"}, {"nodes", 1}, {"gpus_per_node", 1}};
    j["training"] = {{"global_batch", 2}, {"micro_batch", 2}, {"seq_len", 1024}, {"loss_impl", impl}};
    j["parallel"] = {{"dp", 1}};
    const Scenario sc = test::scenario_from(j);
    const ActivationBytes a = activation_bytes(sc.model, layer_shape(sc), Recompute::None);
    EXPECT_DOUBLE_EQ(a.head_working, per_logit * 1024 * 2 * 32000) << impl;
    EXPECT_DOUBLE_EQ(peak_activations(sc, 0), per_microbatch(sc, true) + static_cast<double>(static_cast<Bytes>(a.head_working))) << impl;
  }
}

TEST(TrainMetrics, EachMetricIsOneEagerCrossEntropyAfterEveryMicrobatchsBackward) {
  // Composer evaluates its training metrics on each microbatch's logits after that microbatch's
  // backward, under autocast: each metric is an upcast (2 + 4 B per logit) and log_softmax's three
  // fp32 row passes (16 B). With m microbatches and n metrics the step grows by exactly m x n of
  // them (one GPU, nothing to overlap), and the peak activations by what the metric holds beside
  // the 16-bit logits it reads: the fp32 upcast and log_softmax output (8 B per logit).
  Json j = test::base_scenario();
  j["model"] = {{"name", "eq"}, {"layers", 4}, {"hidden", 1024}, {"heads", 8}, {"vocab", 32000}};
  j["cluster"] = {{"gpu", "a100-sxm4-80g"}, {"nodes", 1}, {"gpus_per_node", 1}};
  j["training"] = {{"global_batch", 8}, {"micro_batch", 2}, {"seq_len", 1024}, {"loss_impl", "xentropy"}};
  j["parallel"] = {{"dp", 1}};
  const double logits = 2.0 * 1024 * 32000, m = 4;
  const Scenario none = test::scenario_from(j);
  const auto base = test::simulate_with(none, test::FreeNetwork{});
  const CostModel cost(none.profile, none.training.gemm_dtype(), kAttentionDefault, 1);
  for (const auto& names : {std::vector<std::string>{"cross_entropy"}, std::vector<std::string>{"cross_entropy", "perplexity"}}) {
    j["training"]["train_metrics"] = names;
    const Scenario sc = test::scenario_from(j);
    const LayerGraph g = build_layer_graph(sc.model, layer_shape(sc));
    ASSERT_EQ(g.metrics.kernels.size(), 2 * names.size());
    EXPECT_DOUBLE_EQ(g.metrics.kernels[0].bytes, 6 * logits);
    EXPECT_DOUBLE_EQ(g.metrics.kernels[1].bytes, 16 * logits);
    EXPECT_EQ(g.metrics.kernels[0].mem_class, MemClass::Cast);
    const double one = kernel_seconds(cost, g.metrics.kernels[0]) + kernel_seconds(cost, g.metrics.kernels[1]);
    // Two kernels behind the second: log_softmax and nll_loss's own (one element per row), each
    // paying the profile's per-kernel overhead.
    EXPECT_NEAR(one, cost.memory_s(6 * logits, none.profile.kernel_class_ratio.cast.value) + cost.memory_s(16 * logits, 1.0, 2), 1e-12);
    const auto out = test::simulate_with(sc, test::FreeNetwork{});
    int ops = 0;
    for (const Op& op : out.program.ops)
      if (op.phase == Phase::Other && out.program.role(op) == OpRole::TrainMetrics) {
        ++ops;
        EXPECT_NEAR(time_to_seconds(op.duration), static_cast<double>(names.size()) * one, 1e-9);
      }
    EXPECT_EQ(ops, m);
    EXPECT_NEAR(out.result.step_time_s - base.result.step_time_s, m * static_cast<double>(names.size()) * one, 1e-6);
    // The xentropy loss saves the 16-bit logits, the tensor the metrics read: nothing more is held
    // from forward to backward. After the backward, when the layers' activations are gone, the
    // metric holds those logits (2 B) and its upcast and log_softmax output (8 B per logit): with
    // this large vocabulary that is the new peak.
    const ActivationBytes a = activation_bytes(sc.model, layer_shape(sc), Recompute::None);
    EXPECT_DOUBLE_EQ(a.head, activation_bytes(none.model, layer_shape(none), Recompute::None).head);
    EXPECT_DOUBLE_EQ(a.metrics_working, 8 * logits);
    EXPECT_GT(10 * logits, peak_activations(none, 0));
    EXPECT_DOUBLE_EQ(peak_activations(sc, 0), 10 * logits);
  }
  j["parallel"] = {{"dp", 1}, {"pp", 2}, {"schedule", "1f1b"}};
  j["cluster"]["gpus_per_node"] = 2;
  EXPECT_EQ(test::scenario_error(j), "test.json: /training/train_metrics: training metrics are modelled for a training loop without "
                                     "pipeline parallelism (Composer's trainer, which has none): pp must be 1, got 2");
  j["parallel"] = {{"dp", 1}};
  j["cluster"]["gpus_per_node"] = 1;
  j["training"]["train_metrics"] = {"cross_entropy", "cross_entropy"};
  EXPECT_EQ(test::scenario_error(j), "test.json: /training/train_metrics/1: \"cross_entropy\" is listed twice");
  j["training"]["train_metrics"] = {"accuracy"};
  EXPECT_NE(test::scenario_error(j).find("test.json: /training/train_metrics/0: "), std::string::npos);
}

TEST(ActivationsInFlight, GPipeHoldsAllM) {
  const std::int64_t p = 4, m = 8;
  const Scenario sc = pipe(p, m, "gpipe");
  EXPECT_DOUBLE_EQ(peak_activations(sc, 0), static_cast<double>(m) * per_microbatch(sc, false));
  EXPECT_DOUBLE_EQ(peak_activations(sc, 1), static_cast<double>(m) * per_microbatch(sc, false));
}

TEST(StaticMemory, DeepSpeedZeroStepAddsTheFlatAndFp32GradientPartitions) {
  // DeepSpeed's ZeRO-1/2 step flattens this rank's 16-bit gradient partition into a new tensor and
  // casts that into a new fp32 one (stage_1_and_2.py: self.flatten(...).to(fp32)): 2 + 4 bytes per
  // parameter of the partition on top of the states at the cast, and a flatten (read and write
  // 2 B) and a cast (read 2 B, write 4 B) per element before the Adam update.
  for (std::int64_t stage : {1, 2}) {
    Json j = test::base_scenario();
    j["parallel"]["zero_stage"] = stage;
    j["parallel"]["recompute"] = "full";
    j["training"]["micro_batch"] = 1;
    const Scenario meg = test::scenario_from(j);
    j["parallel"]["zero_impl"] = "deepspeed";
    const Scenario ds = test::scenario_from(j);
    const auto a = test::simulate_with(meg, test::FreeNetwork{});
    const auto b = test::simulate_with(ds, test::FreeNetwork{});
    const double psi = count_params(meg.model).total(), nd = 8;
    const auto opt = static_cast<size_t>(MemCat::Optimizer);
    const double grown = static_cast<double>(b.timeline.memory[0].at_peak[opt] - a.timeline.memory[0].at_peak[opt]);
    EXPECT_NEAR(grown, 6 * psi / nd, 2.0) << "ZeRO-" << stage;
    // Time: DeepSpeed's flatten and cast (10 B per element, a kernel of its own) against Megatron's
    // cast of its 16-bit gradients into fp32 main gradients inside its step (read 2 B, write 4 B,
    // and its Adam pass reading 4 B instead of 2: 8 B); both copy the master back afterwards.
    EXPECT_NEAR(b.result.breakdown.at("optimizer_s") - a.result.breakdown.at("optimizer_s"),
                slowest_gpu_pace(meg.profile, meg.cluster.gpus()) *
                    (meg.profile.kernel_overhead_us.value * 1e-6 +
                     (10 - 8) * psi / nd / (meg.profile.hbm_gbps.value * 1e9 * meg.profile.hbm_efficiency.value)),
                1e-9)
        << "ZeRO-" << stage;
  }
}

TEST(StaticMemory, ZeroStagesOnTheTimelineMatchFormulas) {
  // 8-way DP of Llama 2 7B: model states per GPU from the run equal the ZeRO formulas.
  for (std::int64_t stage : {0, 1, 2, 3}) {
    Json j = test::base_scenario();
    j["parallel"]["zero_stage"] = stage;
    const Scenario sc = test::scenario_from(j);
    const auto out = test::simulate_with(sc, test::FreeNetwork{});
    const auto& sm = out.program.ranks[0].static_mem;
    const double psi = count_params(sc.model).total(), nd = 8;
    const double states = static_cast<double>(sm[static_cast<size_t>(MemCat::Weights)] + sm[static_cast<size_t>(MemCat::Grads)] +
                                              sm[static_cast<size_t>(MemCat::Optimizer)]);
    const double expect[4] = {16 * psi, 4 * psi + 12 * psi / nd, 2 * psi + 14 * psi / nd, 16 * psi / nd};
    EXPECT_NEAR(states, expect[stage], 4.0) << "ZeRO-" << stage;  // bytes truncated per category
  }
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST(ActivationsInFlight, EveryScheduleFreesWhatItAllocatesUnderPartialRecompute) {
  // Conservation: at the end of the step each rank holds its static memory again, whatever the
  // schedule splits (ZB-H1 frees activations at W) and whichever layers are recomputed.
  for (const std::string schedule : {"gpipe", "1f1b", "interleaved", "zb-h1"}) {
    for (const std::int64_t n : {-2, -1, 0, 1}) {  // -2: torchtitan's op-level SAC instead of full recompute
      Json j = test::base_scenario();
      j["model"] = {{"name", "eq"}, {"layers", 16}, {"hidden", 2048}, {"heads", 16}, {"vocab", 64}};
      j["cluster"] = {{"gpu", "a100-sxm4-80g"}, {"nodes", 1}, {"gpus_per_node", 4}};
      j["training"] = {{"global_batch", 8}, {"micro_batch", 1}, {"seq_len", 2048}};
      j["parallel"] = {{"dp", 1}, {"pp", 4}, {"schedule", schedule}, {"recompute", n == -2 ? "selective_op" : "full"}};
      if (schedule == "interleaved") j["parallel"]["vpp"] = 2;
      if (n >= 0) j["parallel"]["recompute_num_layers"] = n;
      const auto out = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
      for (size_t r = 0; r < out.program.ranks.size(); ++r) {
        Bytes fixed = 0;
        for (Bytes b : out.program.ranks[r].static_mem) fixed += b;
        ASSERT_FALSE(out.timeline.memory[r].curve.empty());
        EXPECT_EQ(out.timeline.memory[r].curve.back().total, fixed) << schedule << " n=" << n << " rank " << r;
        EXPECT_GT(out.timeline.memory[r].peak, fixed);
      }
    }
  }
}

}  // namespace
}  // namespace parasim
