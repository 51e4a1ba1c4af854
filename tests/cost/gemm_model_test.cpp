// The GEMM kernel model (sim/cost/cost_model.h) against published measurements: the
// H100 profile's fixed time and epilogue rate are a least-squares fit to OpenXLA's measured sm_90
// matmul table (tests/data/xla_sm90_matmul.json); the fit is reproduced here, the profile's model
// predicts that table, and every shipped profile reproduces its own best-shape measurement.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "../test_util.h"
#include "calibrate/fit/calibration.h"
#include "calibrate/import/gemm_table.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/kernels.h"
#include "sim/config/json_reader.h"

namespace parasim {
namespace {

std::vector<GemmTiming> xla_table(const std::string& file = "xla_sm90_matmul.json") {
  return load_gemm_table(test::test_data(file)).points;
}

// Mean |relative error| of a profile's GEMM model over a published table, and predicted / measured
// total time, in the table's dtype.
std::pair<double, double> table_error(const Profile& p, const std::string& file) {
  const GemmTableError e = gemm_table_error(p, load_gemm_table(test::test_data(file)));
  return {e.mean_abs, e.total_ratio};
}

// Fits a published table and checks the profile carries the fit (to three significant figures)
// and the fit's quality.
void expect_profile_is_the_fit(const std::string& profile, const std::string& table, double main_eff, double mean, double max) {
  const Profile p = load_profile(test::data_dir(), profile, "test");
  const auto pts = xla_table(table);
  ASSERT_EQ(pts.size(), 95u);
  const GemmKernelFit f = fit_gemm_kernel(p, "bf16", pts);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.fixed_s * 1e6, p.gemm_fixed_us.value, 0.01) << profile;
  EXPECT_NEAR(f.epilogue_bytes_per_s / 1e9, p.gemm_epilogue_gbps.value, 10.0) << profile;
  EXPECT_NEAR(f.main_efficiency, main_eff, 0.001) << profile;
  EXPECT_EQ(p.gemm_fixed_us.how, "fitted");
  EXPECT_EQ(p.gemm_epilogue_gbps.how, "fitted");
  EXPECT_LT(f.mean_abs_error, mean) << profile;
  EXPECT_LT(f.max_abs_error, max) << profile;
}

TEST(GemmKernelModel, FitToThePublishedSm90TableGivesTheH100ProfileFigures) {
  expect_profile_is_the_fit("h100-sxm5-80g", "xla_sm90_matmul.json", 0.863, 0.026, 0.10);
}

TEST(GemmKernelModel, H100ProfilePredictsThePublishedTable) {
  const Profile p = load_profile(test::data_dir(), "h100-sxm5-80g", "test");
  const CostModel cm(p, "bf16");
  double sum_abs = 0, t_meas = 0, t_pred = 0;
  std::map<double, std::pair<double, int>> by_k;  // k -> (sum of signed errors, count)
  for (const auto& g : xla_table()) {
    const double pred = cm.benchmark_gemm_s(static_cast<std::int64_t>(g.m), static_cast<std::int64_t>(g.n), static_cast<std::int64_t>(g.k),
                                  static_cast<std::int64_t>(g.batch));
    sum_abs += std::abs(pred / g.time_s - 1);
    t_meas += g.time_s;
    t_pred += pred;
    by_k[g.k].first += pred / g.time_s - 1;
    by_k[g.k].second += 1;
  }
  // The main-loop efficiency is solved from the MAMF measurement (a different source and
  // shape), not from this table: the table is held out for it.
  EXPECT_LT(sum_abs / 95.0, 0.03);
  EXPECT_NEAR(t_pred / t_meas, 1.0, 0.01);
  // Little trend left in the reduction depth: measured mean errors -5.2 % at k = 256 (the
  // time-weighted fit favours long GEMMs) and within +-2 % from k = 512 on. A roofline without
  // the epilogue term (this profile's model before) was 30 % fast at k = 256 and 26 % at 512.
  for (const auto& [k, e] : by_k) EXPECT_NEAR(e.first / e.second, 0.0, k < 512 ? 0.06 : 0.03) << "k = " << k;
}

TEST(GemmKernelModel, FitToThePublishedSm100TableGivesTheB200ProfileFigures) {
  // The B200 profile's fixed time and epilogue rate are this fit (8.41 us, 10,858 GB/s = 1.36x
  // HBM); before, they were the H100 figures scaled by HBM bandwidth, 19.6 % mean error and 18 %
  // fast in total time on the same table.
  expect_profile_is_the_fit("b200-sxm-180g", "xla_sm100_matmul.json", 0.752, 0.061, 0.19);
  const Profile p = load_profile(test::data_dir(), "b200-sxm-180g", "test");
  // The profile solves its main loop from the MAMF best shape (0.7756 of peak at 1792 x 16128 x
  // 3072, larger than any shape of this table), which asks for 0.903 where the table alone gives
  // 0.752: the two published sources disagree, and with MAMF's main loop the model runs 11.5 %
  // faster than this table in total time (mean error 10.5 %).
  const auto [mean, total] = table_error(p, "xla_sm100_matmul.json");
  EXPECT_LT(mean, 0.11);
  EXPECT_NEAR(total, 0.885, 0.01);
}

TEST(GemmKernelModel, B200Fp8HeldOutOnThePublishedSm100Table) {
  // The FP8 column of the same table is used by no profile figure: the B200 model with its
  // bf16-fitted fixed time and epilogue and its main loop solved from the FP8 MAMF best shape
  // (0.7628 of 4.5 PFLOP/s at 15360 x 4096 x 3072), FP8 operands and bf16 outputs, predicts it
  // within 8.2 % mean error and 1.0 % in total time (with the former H100-scaled figures: 16.4 %
  // and 13.5 % fast).
  const Profile p = load_profile(test::data_dir(), "b200-sxm-180g", "test");
  const auto [mean, total] = table_error(p, "xla_sm100_matmul_fp8.json");
  EXPECT_LT(mean, 0.085);
  EXPECT_NEAR(total, 0.99, 0.01);
  // Fitted alone, the FP8 column gives figures near the bf16 fit (7.48 us, 12,419 GB/s against
  // 8.41 us, 10,858 GB/s): one kernel model for both dtypes.
  const GemmKernelFit f = fit_gemm_kernel(p, "fp8", xla_table("xla_sm100_matmul_fp8.json"));
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.fixed_s * 1e6, p.gemm_fixed_us.value, 1.0);
  EXPECT_NEAR(f.epilogue_bytes_per_s / 1e9 / p.gemm_epilogue_gbps.value, 1.0, 0.15);
}

TEST(SustainedClock, ComputeBoundKernelsRunAtTheSustainedRateMemoryBoundOnesDoNot) {
  // H200: bf16 MSMF 755 / MAMF 834 TFLOP/s. A training step prices GEMMs and attention at the
  // benchmarked rate times that ratio; HBM-bound kernels keep their rate; a profile without the
  // figure is not derated.
  Profile p = load_profile(test::data_dir(), "h200-sxm-141g", "test");
  EXPECT_NEAR(p.sustained_clock_ratio.value, 755.0 / 834.0, 1e-4);
  const CostModel derated(p, "bf16");
  const double g = derated.gemm_s(8192, 28672, 8192), a = derated.attention_s(1e13, false, 4096), m = derated.memory_s(1e9);
  EXPECT_NEAR(g * p.sustained_clock_ratio.value, derated.benchmark_gemm_s(8192, 28672, 8192), 1e-15);
  Profile burst = p;
  burst.sustained_clock_ratio.value = 1.0;
  const CostModel plain(burst, "bf16");
  EXPECT_NEAR(g / plain.gemm_s(8192, 28672, 8192), 834.0 / 755.0, 1e-3);
  const double overhead = p.kernel_overhead_us.value * 1e-6;
  EXPECT_NEAR((a - overhead) / (plain.attention_s(1e13, false, 4096) - overhead), 834.0 / 755.0, 1e-3);
  EXPECT_EQ(m, plain.memory_s(1e9));
  Json j = read_json_file(test::data_dir() + "/calibrate/profiles/a100-sxm4-80g.json");
  j["compute"].erase("sustained_clock_ratio");
  EXPECT_EQ(parse_profile(j, "a100.json").sustained_clock_ratio.value, 1.0);
  j = read_json_file(test::data_dir() + "/calibrate/profiles/h200-sxm-141g.json");
  j["compute"]["sustained_clock_ratio"]["value"] = 1.5;
  try {
    parse_profile(j, "h200.json");
    ADD_FAILURE() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "h200.json: /compute/sustained_clock_ratio/value: expected a number in [0.3, 1], got 1.5");
  }
}

TEST(MemoryKernel, EachRealKernelPaysItsOwnOverhead) {
  // A priced kernel standing for n real ones (Kernel::launches: an FP8 quantization's amax, scale
  // and cast per expert) costs what n kernels splitting its bytes cost, each with the profile's
  // per-kernel overhead: not one overhead for all n.
  const Profile p = load_profile(test::data_dir(), "h100-sxm5-80g", "test");
  ASSERT_GT(p.kernel_overhead_us.value, 0.0);
  const CostModel c(p, "fp8");
  Kernel k;
  k.kind = KernelKind::Memory;
  k.bytes = 32e6;
  k.launches = 32;
  Kernel piece = k;
  piece.launches = 1;
  piece.bytes = k.bytes / 32;
  EXPECT_NEAR(kernel_seconds(c, k), 32 * kernel_seconds(c, piece), 1e-12);
  // `run --kernels` says how many kernels' overheads its row carries.
  LayerGraph g;
  g.mlp_fwd.kernels = {k, piece};
  const std::vector<KernelRow> rows = kernel_rows(g, c);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].priced_by, "HBM bandwidth, 32 kernels' overheads");
  EXPECT_EQ(rows[1].priced_by, "HBM bandwidth");
}

// E[max of n standard normals]: n = 2 and 3 in closed form (1 / sqrt(pi), 3 / (2 sqrt(pi))), the
// others from Harter 1961's table of expected normal order statistics.
TEST(SlowestGpu, ExpectedMaximumOfNormalDrawsMatchesItsTable) {
  const double pi = std::acos(-1.0);
  EXPECT_EQ(expected_max_standard_normal(1), 0.0);
  EXPECT_NEAR(expected_max_standard_normal(2), 1.0 / std::sqrt(pi), 1e-6);
  EXPECT_NEAR(expected_max_standard_normal(3), 1.5 / std::sqrt(pi), 1e-6);
  EXPECT_NEAR(expected_max_standard_normal(10), 1.53875, 1e-5);
  EXPECT_NEAR(expected_max_standard_normal(100), 2.50759, 1e-5);
  EXPECT_NEAR(expected_max_standard_normal(1000), 3.24144, 1e-5);
  // It grows without bound but slowly (about sqrt(2 ln n)): monotone up to 16,384 GPUs.
  double last = 0;
  for (std::int64_t n = 2; n <= 16384; n *= 2) {
    const double z = expected_max_standard_normal(n);
    EXPECT_GT(z, last) << n;
    EXPECT_LT(z, std::sqrt(2.0 * std::log(static_cast<double>(n)))) << n;
    last = z;
  }
}

// A synchronous job waits for its slowest GPU: every kernel of a job of N GPUs (GEMMs, attention,
// memory-bound passes) takes 1 + spread x E[max of N] times the profile's time; one GPU runs at
// the profile's speed, as does a profile without the figure.
TEST(SlowestGpu, EveryKernelOfAJobRunsAtItsSlowestGpusPace) {
  const Profile p = load_profile(test::data_dir(), "a100-sxm4-80g", "test");
  EXPECT_NEAR(p.gpu_speed_spread.value, 0.08 / (4 * 1.349), 1e-4);  // Sinha et al.'s 8 % whisker span over 4 IQR
  const CostModel one(p, "bf16"), many(p, "bf16", kAttentionDefault, 64);
  const double pace = 1.0 + p.gpu_speed_spread.value * expected_max_standard_normal(64);
  EXPECT_NEAR(slowest_gpu_pace(p, 64), pace, 1e-15);
  EXPECT_NEAR(many.pace(), pace, 1e-15);
  EXPECT_EQ(one.pace(), 1.0);
  EXPECT_NEAR(many.gemm_s(8192, 8192, 8192) / one.gemm_s(8192, 8192, 8192), pace, 1e-12);
  EXPECT_NEAR(many.attention_s(1e13, true, 4096) / one.attention_s(1e13, true, 4096), pace, 1e-12);
  EXPECT_NEAR(many.memory_s(1e9) / one.memory_s(1e9), pace, 1e-12);
  EXPECT_EQ(many.benchmark_gemm_s(8192, 8192, 8192), one.benchmark_gemm_s(8192, 8192, 8192));  // what a benchmark times
  Json j = read_json_file(test::data_dir() + "/calibrate/profiles/a100-sxm4-80g.json");
  j["compute"].erase("gpu_speed_spread");
  const Profile alike = parse_profile(j, "a100.json");
  EXPECT_EQ(alike.gpu_speed_spread.value, 0.0);
  EXPECT_EQ(CostModel(alike, "bf16", kAttentionDefault, 4096).pace(), 1.0);
  j["compute"]["gpu_speed_spread"] = {{"value", 0.6}, {"how", "assumed"}, {"source", "x"}};
  try {
    parse_profile(j, "a100.json");
    ADD_FAILURE() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "a100.json: /compute/gpu_speed_spread/value: expected a number in [0, 0.5], got 0.6");
  }
}

TEST(GemmKernelModel, EveryShippedProfileReproducesItsBestShapeMeasurement) {
  for (const auto& name : profile_names(test::data_dir())) {
    const Profile p = load_profile(test::data_dir(), name, "test");
    for (const auto& [dt, shape] : p.gemm_best_shape) {
      const CostModel cm(p, dt);
      const auto [m, n, k] = shape;
      const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
      const double expect = flops / (p.peak_flops(dt) * p.gemm_efficiency(dt));
      EXPECT_NEAR(cm.benchmark_gemm_s(m, n, k) / expect, 1.0, 1e-12) << name << " " << dt;
      const GemmKernelModel g = gemm_kernel_model(p, dt);
      EXPECT_GT(g.main_efficiency, p.gemm_efficiency(dt)) << name << " " << dt;
      EXPECT_LE(g.main_efficiency, 1.0) << name << " " << dt;
    }
    // A figure without its shape is the main-loop efficiency itself (no published shape: V100;
    // GB200's small-k FP8 best shape, see tools/data/derive_blackwell_profiles.py).
    for (const auto& [dt, f] : p.gemm_max_efficiency)
      if (!p.gemm_best_shape.count(dt)) {
        EXPECT_DOUBLE_EQ(gemm_kernel_model(p, dt).main_efficiency, f.value) << name << " " << dt;
      }
  }
}

TEST(GemmKernelModel, DeeperReductionAddsOnlyMainLoopTime) {
  // Closed form: for a compute-bound shape below the best-efficiency cap, t(k2) - t(k1) =
  // 2 m n (k2 - k1) / (peak e q); the fixed time and the epilogue do not depend on k.
  const Profile p = load_profile(test::data_dir(), "a100-sxm4-80g", "test");
  const CostModel cm(p, "bf16");
  const GemmKernelModel g = gemm_kernel_model(p, "bf16");
  const double m = 16384, n = 8192, q = wave_quantisation(p, m, n, 1);
  auto eff_at = [&](std::int64_t k) { return 2.0 * m * n * static_cast<double>(k) / (cm.benchmark_gemm_s(16384, 8192, k) * 312e12); };
  ASSERT_LT(eff_at(2048), p.gemm_efficiency("bf16"));
  const double dt = cm.benchmark_gemm_s(16384, 8192, 2048) - cm.benchmark_gemm_s(16384, 8192, 512);
  EXPECT_NEAR(dt / (2.0 * m * n * (2048 - 512) / (312e12 * g.main_efficiency * q)), 1.0, 1e-12);
  // Efficiency grows with k toward the main-loop efficiency until it meets the best measured
  // efficiency (MAMF, 0.8692 for this GPU), where it stays.
  double last = 0;
  for (std::int64_t k : {256, 512, 1024, 2048, 4096, 8192, 16384, 65536}) {
    const double eff = eff_at(k);
    EXPECT_GE(eff, last) << k;
    EXPECT_LE(eff, p.gemm_efficiency("bf16") * (1 + 1e-12)) << k;
    last = eff;
  }
  EXPECT_NEAR(last, p.gemm_efficiency("bf16"), 1e-12);
}

// The expert GEMMs of an MoE layer measured on one H200 (calibrate/measurements/h200-sxm-141g-moe-2026-12-04,
// run 3: CUDA-graph replays of torch._grouped_mm, forward, data gradient and weight gradient timed apart,
// 5 models' widths, 4-128 local experts, 64-4,096 tokens per expert). Each row's three GEMMs as
// {m, n, k}: the weight gradient has k = tokens per expert and writes every local expert's weights.
struct ExpertGemmRow {
  std::string model;
  std::int64_t experts, tokens;
  std::array<std::int64_t, 3> fwd, dgrad, wgrad;
  double fwd_s, dgrad_s, wgrad_s;
};

std::vector<ExpertGemmRow> h200_expert_gemms() {
  const Json doc = read_json_file(test::data_dir() + "/calibrate/measurements/h200-sxm-141g-moe-2026-12-04/run3/graph.json");
  std::vector<ExpertGemmRow> rows;
  for (const Json& r : doc["rows"]) {
    if (!r.contains("gemm")) continue;
    const std::int64_t m = r["m"].get<std::int64_t>(), n = r["n"].get<std::int64_t>(), k = r["k"].get<std::int64_t>();
    rows.push_back({r["model"].get<std::string>() + " " + r["gemm"].get<std::string>(), r["local_experts"].get<std::int64_t>(),
                    r["tokens_per_expert"].get<std::int64_t>(), {m, n, k}, {m, k, n}, {k, n, m}, r["fwd_s"].get<double>(),
                    r["dgrad_s"].get<double>(), r["wgrad_s"].get<double>()});
  }
  return rows;
}

TEST(ExpertGemm, WeightGradientsAtFewTokensPerExpertReproduceTheH200Measurements) {
  const Profile p = load_profile(test::data_dir(), "h200-sxm-141g", "test");
  const CostModel cm(p, "bf16");
  const auto rows = h200_expert_gemms();
  ASSERT_EQ(rows.size(), 54u);
  // predicted / measured, log-averaged per tokens per expert: the expert GEMMs as priced now, and the
  // weight gradient as a dense GEMM of the same shape (its output tiles at the L2-absorbed epilogue rate).
  std::map<std::int64_t, std::array<double, 4>> log_sum;  // tokens -> fwd, dgrad, wgrad, wgrad as dense
  std::map<std::int64_t, int> count;
  for (const auto& r : rows) {
    auto price = [&](const std::array<std::int64_t, 3>& s) { return cm.expert_gemm_s(s[0], s[1], s[2], r.experts); };
    const double wgrad = price(r.wgrad) / r.wgrad_s;
    // Every weight gradient within 25 % of its measurement (before: 0.49-0.66 of it at 64 tokens).
    EXPECT_GT(wgrad, 0.74) << r.model << " " << r.experts << " experts x " << r.tokens;
    EXPECT_LT(wgrad, 1.2) << r.model << " " << r.experts << " experts x " << r.tokens;
    auto& s = log_sum[r.tokens];
    s[0] += std::log(price(r.fwd) / r.fwd_s);
    s[1] += std::log(price(r.dgrad) / r.dgrad_s);
    s[2] += std::log(wgrad);
    s[3] += std::log(cm.gemm_s(r.wgrad[0], r.wgrad[1], r.wgrad[2], r.experts) / r.wgrad_s);
    ++count[r.tokens];
  }
  for (const auto& [tokens, s] : log_sum) {
    const double n = count.at(tokens);
    // The weight gradients within 10 % on average at every size; the forward and data gradient within 15 %
    // (their 4-expert, 256-token rows run 1.6-2.3x slower than priced, a cause this model does not hold).
    EXPECT_NEAR(std::exp(s[2] / n), 1.0, 0.10) << "weight gradient, tokens per expert " << tokens;
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(std::exp(s[i] / n), 1.0, 0.15) << "tokens per expert " << tokens << ", GEMM " << i;
    // Written at the epilogue rate, the weight gradients were 1.7x fast at 64 tokens per expert.
    if (tokens <= 256) {
      EXPECT_LT(std::exp(s[3] / n), 0.75) << tokens;
    }
  }
}

TEST(ExpertGemm, WeightGradientEfficiencyRisesWithTokensPerExpertAsMeasured) {
  // With k = tokens per expert, the output (the experts' weight gradient) is the same at every k while
  // the FLOPs grow with k: the rate rises with the tokens per expert, measured and priced alike.
  const Profile p = load_profile(test::data_dir(), "h200-sxm-141g", "test");
  const CostModel cm(p, "bf16");
  std::map<std::string, std::vector<std::pair<double, double>>> by_gemm;  // measured, priced TFLOP/s by tokens
  for (const auto& r : h200_expert_gemms()) {
    const double flops = 2.0 * static_cast<double>(r.wgrad[0] * r.wgrad[1] * r.wgrad[2] * r.experts);
    by_gemm[r.model + " x" + std::to_string(r.experts)].push_back(
        {flops / r.wgrad_s, flops / cm.expert_gemm_s(r.wgrad[0], r.wgrad[1], r.wgrad[2], r.experts)});
  }
  for (const auto& [name, v] : by_gemm) {
    ASSERT_GE(v.size(), 3u) << name;  // 64, 256, 1,024 (and 4,096) tokens per expert, in that order
    for (size_t i = 1; i < v.size(); ++i) EXPECT_GT(v[i].second, v[i - 1].second) << name << " " << i;
    // Measured: from 64 tokens per expert to the most the rate rises 3.4-9.1x; priced within a factor 1.4 of that.
    const double measured_gain = v.back().first / v.front().first, priced_gain = v.back().second / v.front().second;
    EXPECT_GT(measured_gain, 3.0) << name;
    EXPECT_NEAR(std::log(priced_gain / measured_gain), 0.0, std::log(1.4)) << name;
  }
}

TEST(ExpertGemm, OnlyTheOutputWritesChange) {
  // Closed form: the expert GEMM and the plain GEMM of one shape differ by the output bytes written at
  // the HBM streaming rate instead of the epilogue rate, times the step's clock derating.
  const Profile p = load_profile(test::data_dir(), "h100-sxm5-80g", "test");
  const CostModel cm(p, "bf16");
  const double m = 2048, n = 1536, batch = 16;  // k = 256 tokens per expert (no term depends on it)
  const double stream = p.hbm_gbps.value * 1e9 * p.hbm_efficiency.value, epilogue = p.gemm_epilogue_gbps.value * 1e9;
  ASSERT_LT(stream, epilogue);
  const double extra = 2.0 * m * n * batch * (1 / stream - 1 / epilogue) / p.sustained_clock_ratio.value;
  EXPECT_NEAR((cm.expert_gemm_s(2048, 1536, 256, 16) - cm.gemm_s(2048, 1536, 256, 16)) / extra, 1.0, 1e-9);
  Kernel experts{"experts.gate_up.wgrad", KernelKind::Gemm, 2048, 1536, 256, 16};
  experts.module = LayerModule::Experts;
  EXPECT_DOUBLE_EQ(kernel_seconds(cm, experts), cm.expert_gemm_s(2048, 1536, 256, 16));
  experts.module = LayerModule::SharedExperts;
  EXPECT_DOUBLE_EQ(kernel_seconds(cm, experts), cm.gemm_s(2048, 1536, 256, 16));
}

TEST(GemmKernelModel, UnalignedLeadingDimensionsReproduceThePublishedSwigluPair) {
  // ml-engineering's SwiGLU benchmark on H100: torch.bmm 4 x [4096 x d_ff] @ [d_ff x 4096] runs at
  // 272.73 TFLOP/s for d_ff = 10922 (not a multiple of 8 elements) and 398.38 for d_ff = 10944
  // (shared/validation/published_microbench.json ids swiglu-bench-h100-dff10922 / -dff10944).
  // The model's rate ratio of the pair is the profile's ratio up to the FLOP difference, and every
  // published multiple of 32 (10848-11008) is priced as aligned.
  const Profile p = load_profile(test::data_dir(), "h100-sxm5-80g", "test");
  const CostModel cm(p, "bf16");
  auto tflops = [&](std::int64_t dff) {
    return 2.0 * 4 * 4096.0 * 4096.0 * static_cast<double>(dff) / cm.benchmark_gemm_s(4096, 4096, dff, 4) / 1e12;
  };
  EXPECT_NEAR(tflops(10922) / tflops(10944), 272.73 / 398.38, 0.01);
  for (const std::int64_t dff : {10848, 10880, 10912, 11008}) EXPECT_NEAR(tflops(dff) / tflops(10944), 1.0, 0.01) << dff;
  // The leading dimensions are k and n of C[m,n] = A[m,k] B[k,n]: an odd m (tokens) costs nothing
  // beyond its tiles; an odd n does.
  EXPECT_NEAR(cm.benchmark_gemm_s(8191, 8192, 8192) / cm.benchmark_gemm_s(8192, 8192, 8192), 1.0, 0.01);
  EXPECT_GT(cm.benchmark_gemm_s(8192, 8190, 8192) / cm.benchmark_gemm_s(8192, 8192, 8192), 1.3);
  // The alignment is 16 bytes: fp8 operands need a multiple of 16 elements.
  const CostModel f8(p, "fp8");
  EXPECT_GT(f8.benchmark_gemm_s(8192, 8184, 8192) / f8.benchmark_gemm_s(8192, 8192, 8192), 1.3);
  EXPECT_NEAR(cm.benchmark_gemm_s(8192, 8184, 8192) / cm.benchmark_gemm_s(8192, 8192, 8192), 8184.0 / 8192, 0.01);
}

// Unfused attention's batched GEMMs over heads whose width is not a 16-byte multiple: every one
// of the six (QK^T, PV and their gradients) holds the head dimension in a view off 16 bytes, so
// each runs its main loop at compute.attention_gemm_unaligned_ratio of the aligned speed, whichever
// of m, n, k the head dimension is; aligned heads price exactly as plain GEMMs. A profile without
// the figure prices them at compute.gemm_unaligned_ratio; the figure is range-checked.
TEST(GemmKernelModel, UnalignedAttentionHeadsRunTheirBatchedGemmsAtTheAttentionRatio) {
  Json j = read_json_file(test::data_dir() + "/calibrate/profiles/a100-sxm4-80g.json");
  const Profile p = parse_profile(j, "a100.json");
  ASSERT_TRUE(p.has_attention_gemm_unaligned_ratio);
  EXPECT_EQ(p.attention_gemm_unaligned_ratio.how, "fitted");
  EXPECT_LT(p.attention_gemm_unaligned_ratio.value, p.gemm_unaligned_ratio.value);
  const CostModel cm(p, "bf16");
  // Aligned heads (128, 216 elements): the plain GEMM price, measured points and all.
  for (const std::int64_t hd : {128, 216}) {
    EXPECT_EQ(cm.attention_gemm_s(2048, 2048, hd, 64, hd), cm.gemm_s(2048, 2048, hd, 64)) << hd;
    EXPECT_EQ(cm.attention_gemm_s(hd, 2048, 2048, 64, hd), cm.gemm_s(hd, 2048, 2048, 64)) << hd;
  }
  // Without fixed time and epilogue, and with the general unaligned ratio 1, the main loop of a
  // compute-bound shape is all there is: the attention GEMM takes exactly 1 / ratio its time.
  for (const char* f : {"gemm_fixed_us", "gemm_epilogue_gbps", "gemm_unaligned_ratio"})
    for (const char* key : {"range", "range_source"}) j["compute"][f].erase(key);
  j["compute"]["gemm_fixed_us"]["value"] = 0.0;
  j["compute"]["gemm_epilogue_gbps"]["value"] = 1e6;
  j["compute"]["gemm_unaligned_ratio"]["value"] = 1.0;
  const Profile bare = parse_profile(j, "a100.json");
  const CostModel b(bare, "bf16");
  const double r = bare.attention_gemm_unaligned_ratio.value;
  EXPECT_NEAR(b.attention_gemm_s(2048, 2048, 225, 64, 225) / b.gemm_s(2048, 2048, 225, 64), 1.0 / r, 1e-9);
  EXPECT_NEAR(b.attention_gemm_s(2048, 225, 2048, 64, 225) / b.gemm_s(2048, 225, 2048, 64), 1.0 / r, 1e-9);
  // The head dimension as m (dK = dS^T Q, computed transposed): a plain GEMM would not see it.
  EXPECT_NEAR(b.attention_gemm_s(225, 2048, 2048, 64, 225) / b.gemm_s(225, 2048, 2048, 64), 1.0 / r, 1e-9);
  // Absent: the general ratio, shown with a note and no range of its own (not sampled twice).
  j["compute"].erase("attention_gemm_unaligned_ratio");
  j["compute"]["gemm_unaligned_ratio"]["value"] = 0.5;
  const Profile general = parse_profile(j, "a100.json");
  EXPECT_FALSE(general.has_attention_gemm_unaligned_ratio);
  EXPECT_EQ(general.attention_gemm_unaligned_ratio.value, 0.5);
  EXPECT_FALSE(general.attention_gemm_unaligned_ratio.has_range());
  EXPECT_EQ(general.attention_gemm_unaligned_ratio.source.rfind("not in the profile: compute.gemm_unaligned_ratio", 0), 0u);
  const CostModel g(general, "bf16");
  EXPECT_NEAR(g.attention_gemm_s(2048, 2048, 225, 64, 225), g.gemm_s(2048, 2048, 225, 64), 1e-15);
  EXPECT_NEAR(g.attention_gemm_s(2048, 2048, 225, 64, 225) / b.gemm_s(2048, 2048, 225, 64), 2.0, 1e-9);
  j["compute"]["attention_gemm_unaligned_ratio"] = {{"value", 0.001}, {"how", "assumed"}, {"source", "x"}};
  try {
    parse_profile(j, "a100.json");
    ADD_FAILURE() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "a100.json: /compute/attention_gemm_unaligned_ratio/value: expected a number in [0.01, 1], got 0.001");
  }
}

// A fused attention kernel is built for a few head widths; a head between two runs the next one up
// at that width's work (FlashAttention-2: multiples of 32 to 256; the Triton kernel: powers of two
// to 128; FlashAttention-3: 64, 96, 128, 192, 256). A listed width, a kernel without a list (cuDNN),
// and a head above the list run at their own width. The list is checked when the profile loads.
TEST(AttentionKernel, HeadsBetweenTheKernelsWidthsRunAtTheNextWidth) {
  const Profile h100 = load_profile(test::data_dir(), "h100-sxm5-80g", "test");
  const CostModel fa2(h100, "bf16"), tri(h100, "bf16", "triton"), fa3(h100, "bf16", "flash3"), cudnn(h100, "bf16", "cudnn");
  const double f = 1e12, s = 4096;
  for (bool bwd : {false, true}) {
    EXPECT_DOUBLE_EQ(fa2.attention_s(f, bwd, s, 1, 112), fa2.attention_s(f * 128 / 112, bwd, s, 1, 128)) << bwd;
    EXPECT_DOUBLE_EQ(fa2.attention_s(f, bwd, s, 1, 80), fa2.attention_s(f * 96 / 80, bwd, s, 1, 96)) << bwd;
    EXPECT_DOUBLE_EQ(tri.attention_s(f, bwd, s, 1, 80), tri.attention_s(f * 128 / 80, bwd, s, 1, 128)) << bwd;
    EXPECT_DOUBLE_EQ(fa3.attention_s(f, bwd, s, 1, 160), fa3.attention_s(f * 192 / 160, bwd, s, 1, 192)) << bwd;
    EXPECT_GT(fa2.attention_s(f, bwd, s, 1, 112), fa2.attention_s(f, bwd, s, 1, 128)) << bwd;  // more work, not less
  }
  EXPECT_EQ(h100.attention.padded_head_dim(128), 128);
  EXPECT_EQ(h100.attention.padded_head_dim(300), 300);  // above FlashAttention-2's widths
  EXPECT_TRUE(h100.attention_kernels.at("cudnn").head_dims.empty());
  EXPECT_EQ(h100.attention_kernels.at("cudnn").padded_head_dim(112), 112);
  Json j = read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json");
  j["compute"]["attention_kernels"]["triton"]["head_dims"]["values"] = {64, 32};
  try {
    parse_profile(j, "h100.json");
    ADD_FAILURE() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "h100.json: /compute/attention_kernels/triton/head_dims/values: expected the kernel's head widths, ascending and distinct");
  }
}

// The GB200 and GB300 profiles' cuDNN attention is fitted (tools/data/fit_attention_shapes.py, cudnn_blackwell) to
// NVIDIA's own SDPA training sweep on each part, the same cuDNN release on the same day
// (tests/data/cudnn_sdpa_llama31_gb200_gb300.json): the profiles give the measured causal kernel times back, at the
// benchmark's burst clock, within 4.3 % from seq 2k to 16k (mean within 1.5 %). The 32k kernels, which run tens of ms,
// are 2.5-16 % slower than the curve and were left out of the fit; a training step prices every kernel at the sustained
// clock instead (compute.sustained_clock_ratio). Both parts keep their measured kernel times at the B200's training
// throttle: the GB300's higher sustained ratio restates its fits rather than speeding them a second time.
TEST(AttentionKernel, GraceBlackwellCudnnFiguresReproduceNvidiasSweep) {
  const Json t = read_json_file(test::test_data("cudnn_sdpa_llama31_gb200_gb300.json"));
  ASSERT_EQ(t.at("columns"), Json::array({"seq_len", "fwd_causal", "bwd_causal", "fwd_noncausal", "bwd_noncausal"}));
  const double clock = load_profile(test::data_dir(), "b200-sxm-180g", "test").sustained_clock_ratio.value;
  for (const auto& [gpu, rows] : t.at("gpus").items()) {
    const Profile p = load_profile(test::data_dir(), gpu, "test");
    EXPECT_EQ(p.attention_kernels.at("cudnn").fwd_efficiency.how, "fitted") << gpu;
    const CostModel cm(p, "bf16", "cudnn");
    double sum = 0;
    int n = 0;
    for (const auto& r : rows) {
      const double s = r.at(0).get<double>();
      // Batch 2, 64 query heads of width 128, causal: the executed half of 4 b h s^2 d; the backward does 2.5x the work.
      const double fwd_flops = 2.0 * 2 * 64 * s * s * 128;
      for (bool bwd : {false, true}) {
        const double flops = fwd_flops * (bwd ? 2.5 : 1.0);
        const double measured = flops / (r.at(bwd ? 2 : 1).get<double>() * 1e12);
        const double predicted = cm.attention_s(flops, bwd, s) * clock;  // at the benchmark's burst clock
        const double err = measured / predicted - 1;
        if (s <= 16384) {
          EXPECT_LT(std::abs(err), 0.045) << gpu << " seq " << s << (bwd ? " bwd" : " fwd");
          sum += err;
          ++n;
        } else {
          EXPECT_GT(err, 0.0) << gpu << " seq " << s << (bwd ? " bwd" : " fwd");
        }
      }
    }
    EXPECT_LT(std::abs(sum / n), 0.015) << gpu;
  }
  // Blackwell Ultra's doubled exponential throughput shows in the forward pass: at seq 8k the GB300's kernel runs the
  // same causal forward 1.18x as fast as the GB200's (1856 against 1574 TFLOP/s), the backward 1.08x (1435 / 1332);
  // the two profiles keep those ratios (at equal BF16 peaks and sustained clocks).
  const auto at_8k = [&](const std::string& gpu, size_t col) {
    for (const auto& r : t.at("gpus").at(gpu))
      if (r.at(0).get<int>() == 8192) return r.at(col).get<double>();
    ADD_FAILURE() << gpu << ": no seq 8192 row";
    return 1.0;
  };
  const Profile gb200 = load_profile(test::data_dir(), "gb200-nvl72-186g", "test");
  const Profile gb300 = load_profile(test::data_dir(), "gb300-nvl72-288g", "test");
  const CostModel c200(gb200, "bf16", "cudnn"), c300(gb300, "bf16", "cudnn");
  for (bool bwd : {false, true}) {
    const size_t col = bwd ? 2 : 1;
    const double measured = at_8k("gb300-nvl72-288g", col) / at_8k("gb200-nvl72-186g", col);
    EXPECT_NEAR(c200.attention_s(1e12, bwd, 8192) / c300.attention_s(1e12, bwd, 8192), measured, 0.03) << (bwd ? "bwd" : "fwd");
  }
  // The GB300's GEMM figures are the GB200's; what sets them apart in a training step is the GB300's sustained clock,
  // taken from the backward passes both parts ran in the same sweep (tests/data/cudnn_sdpa_bwd_gb200_gb300.json, 70
  // BF16 shapes of four models), which by FLOP counts the tensor cores bind, not the exponential units Blackwell Ultra
  // doubled: a large BF16 or FP8 GEMM is priced faster on the GB300 by their median time ratio (1.1109), and this
  // table's llama3.1 backward passes alone (seq 2k-32k, causal and not: 1.092) lie inside the pairs' interquartile range.
  const Json pairs = read_json_file(test::test_data("cudnn_sdpa_bwd_gb200_gb300.json"));
  const auto& cols = pairs.at("columns");
  const auto col_of = [&](const char* name) {
    return static_cast<size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  const size_t k200 = col_of("gb200_ms"), k300 = col_of("gb300_ms");
  std::vector<double> ratios;
  for (const auto& r : pairs.at("rows")) ratios.push_back(r.at(k200).get<double>() / r.at(k300).get<double>());
  ASSERT_EQ(ratios.size(), 70u);
  std::sort(ratios.begin(), ratios.end());
  const double median = 0.5 * (ratios[34] + ratios[35]);
  for (const char* dtype : {"bf16", "fp8"}) {
    const CostModel g200(gb200, dtype), g300(gb300, dtype);
    EXPECT_NEAR(g200.gemm_s(8192, 8192, 8192) / g300.gemm_s(8192, 8192, 8192), median, 1e-3) << dtype;
  }
  std::vector<double> llama;
  const auto& r200 = t.at("gpus").at("gb200-nvl72-186g");
  const auto& r300 = t.at("gpus").at("gb300-nvl72-288g");
  ASSERT_EQ(r200.size(), r300.size());
  for (size_t i = 0; i < r200.size(); ++i)
    for (size_t col : {2, 4}) llama.push_back(r300[i].at(col).get<double>() / r200[i].at(col).get<double>());
  std::sort(llama.begin(), llama.end());
  const double llama_median = 0.5 * (llama[llama.size() / 2 - 1] + llama[llama.size() / 2]);
  EXPECT_GT(llama_median, ratios[ratios.size() / 4]);
  EXPECT_LT(llama_median, ratios[(3 * ratios.size()) / 4]);
}

// A sliding-window layer's fused attention (GPT-OSS, Mistral): the layer graph prices its kernel as the causal
// attention whose queries see as many keys on average (Kernel::seq), so its fixed cost per query is the causal kernel's.
// NVIDIA's cuDNN sweep of banded windows (tests/data/cudnn_sdpa_window_gpt_oss.json: window 128 on a GB200 and a GB300,
// 1024 on an H200, head dim 64, seq 2k-32k) comes back at 0.60-1.08x the measured kernel times at the benchmark's
// burst clock, 0.86x in the geometric mean (forward 0.81x, backward 0.90x). The GB300's forward is the outlier
// (0.60-0.62x): its profile's causal figures carry Blackwell Ultra's doubled exponential rate (1.18x the GB200's
// forward at head dim 128), which this banded head-dim-64 kernel does not show (1.04x the GB200's). Pricing the window
// as a causal attention of its own length, as parasim did, charged the fixed cost per query twice: 1.01-1.70x.
TEST(AttentionKernel, SlidingWindowReproducesCudnnBandedSweep) {
  const Json t = read_json_file(test::test_data("cudnn_sdpa_window_gpt_oss.json"));
  ASSERT_EQ(t.at("columns"), Json::array({"seq_len", "fwd_ms", "bwd_ms"}));
  const double b200_clock = load_profile(test::data_dir(), "b200-sxm-180g", "test").sustained_clock_ratio.value;
  double log_sum = 0;
  int n = 0;
  for (const auto& [gpu, g] : t.at("gpus").items()) {
    const Profile p = load_profile(test::data_dir(), gpu, "test");
    const CostModel cm(p, "bf16", "cudnn");
    // The benchmark's burst clock: the Blackwell fits are at the B200's throttle (GraceBlackwellCudnnFigures...).
    const double clock = gpu == "h200-sxm-141g" ? p.sustained_clock_ratio.value : b200_clock;
    ModelSpec m = load_zoo_model(test::data_dir(), "gpt-oss-120b", "test");
    m.heads = g.at("heads").get<std::int64_t>();
    m.kv_heads = g.at("kv_heads").get<std::int64_t>();
    m.sliding_window = g.at("window").get<std::int64_t>();
    m.full_attention_interval = 0;
    for (const auto& r : g.at("rows")) {
      LayerShape sh;
      sh.micro_batch = 2;
      sh.seq_len = r.at(0).get<std::int64_t>();
      const LayerGraph lg = build_layer_graph(m, sh);
      for (int bwd = 0; bwd < 2; ++bwd) {
        if (r.at(1 + bwd).is_null()) continue;  // a row left out (the file's "what" says which)
        const Kernel& k = test::kernel_named(bwd ? lg.attn_bwd : lg.attn_fwd, bwd ? "attention.bwd" : "attention");
        const double ratio = kernel_seconds(cm, k) * clock / (r.at(1 + bwd).get<double>() * 1e-3);
        EXPECT_GT(ratio, 0.55) << gpu << " seq " << sh.seq_len << (bwd ? " bwd" : " fwd");
        EXPECT_LT(ratio, 1.2) << gpu << " seq " << sh.seq_len << (bwd ? " bwd" : " fwd");
        log_sum += std::log(ratio);
        ++n;
      }
    }
  }
  ASSERT_EQ(n, 28);
  EXPECT_LT(std::abs(log_sum / n), 0.2);  // geometric mean within 0.82-1.22x
}

// The B200's NVFP4 GEMM figure is cuBLAS's block-scaled FP4 GEMM at 8192^3 (deepseek-ai/DeepGEMM PR #348,
// tests/data/cublas_b200_fp4_gemm.json); the kernel model anchored there prices the table's six smaller shapes
// within -9..+16 % in throughput but one (1024 x 7168 x 2048, 37 % fast): 8.6 % mean time error, 4 % fast in total
// time. With the per-tensor FP8 figure it assumed before (0.7628 as the main loop) it was 12.2 % and 14 % fast.
TEST(GemmKernelModel, B200Fp4ReproducesThePublishedCublasTable) {
  const Profile p = load_profile(test::data_dir(), "b200-sxm-180g", "test");
  const GemmTable table = load_gemm_table(test::test_data("cublas_b200_fp4_gemm.json"));
  ASSERT_EQ(table.dtype, "nvfp4");
  ASSERT_EQ(table.points.size(), 7u);
  EXPECT_EQ(p.gemm_max_efficiency.at("nvfp4").how, "published");
  const CostModel cm(p, "nvfp4");
  EXPECT_NEAR(2.0 * 8192.0 * 8192.0 * 8192.0 / cm.benchmark_gemm_s(8192, 8192, 8192) / 1e12, 5239.0, 1.0);
  const GemmTableError e = gemm_table_error(p, table);
  EXPECT_LT(e.mean_abs, 0.09);
  EXPECT_NEAR(e.total_ratio, 0.96, 0.01);
}

TEST(GemmKernelModel, NoShapeIsPricedAboveTheBestMeasuredEfficiency) {
  // Without the cap the model would price a 65536 x 8192 x 8192 H100 GEMM at 0.85 of peak where
  // the best published shape reached 0.803.
  for (const auto& name : profile_names(test::data_dir())) {
    const Profile p = load_profile(test::data_dir(), name, "test");
    for (const auto& [dt, shape] : p.gemm_best_shape) {
      const CostModel cm(p, dt);
      for (std::int64_t m : {256, 4096, 65536})
        for (std::int64_t n : {768, 8192, 53248})
          for (std::int64_t k : {128, 4096, 65536}) {
            const double eff = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) /
                               (cm.benchmark_gemm_s(m, n, k) * p.peak_flops(dt));
            EXPECT_LE(eff, p.gemm_efficiency(dt) * (1 + 1e-12)) << name << " " << dt << " " << m << "x" << n << "x" << k;
          }
    }
  }
}

TEST(GemmKernelModel, ProfileErrorsNameTheFigure) {
  const Json j = read_json_file(test::data_dir() + "/calibrate/profiles/a100-sxm4-80g.json");
  auto error_of = [](const Json& prof) {
    try {
      const Profile p = parse_profile(prof, "p.json");
      CostModel cm(p, "bf16");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_of(j), "(no error)");
  Json bad = j;
  bad["compute"]["gemm_max_efficiency"]["bf16"]["shape_mnk"] = Json::array({1024, 0, 5120});
  EXPECT_EQ(error_of(bad), "p.json: /compute/gemm_max_efficiency/bf16/shape_mnk: expected [m, n, k]: the GEMM shape the "
                           "best-shape efficiency was measured at, positive integers");
  bad = j;
  bad["compute"]["gemm_fixed_us"]["value"] = 500.0;  // more than the whole 396 us best-shape GEMM
  EXPECT_EQ(error_of(bad), "p.json: /compute/gemm_max_efficiency/bf16: 0.869200 of peak at 1024x10240x5120 leaves no time "
                           "for the main loop after compute.gemm_fixed_us and compute.gemm_epilogue_gbps (it would need "
                           "more than the peak)");
  bad = j;
  bad["compute"].erase("gemm_epilogue_gbps");
  EXPECT_NE(error_of(bad).find("/compute/gemm_epilogue_gbps"), std::string::npos) << error_of(bad);
}

TEST(MeasuredProfile, HarnessFitsTheGemmKernelModelToItsSweep) {
  // Synthetic sweep from known figures: the fit recovers them.
  const Json base = read_json_file(test::data_dir() + "/calibrate/profiles/h200-sxm-141g.json");
  const Profile bp = parse_profile(base, "h200.json");
  const double fixed = 4e-6, epi = 7.5e12, eff = 0.84;
  std::vector<MeasuredGemm> g;
  for (std::int64_t m : {2048, 8192})
    for (std::int64_t n : {4096, 16384})
      for (std::int64_t k : {512, 2048, 8192}) {
        const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
        const double t = fixed + 2.0 * dm * dn / epi + 2.0 * dm * dn * dk / (989e12 * eff * wave_quantisation(bp, dm, dn, 1));
        g.push_back({{m, n, k}, "bf16", t, t, t, 1, 1, true});
      }
  const HarnessContext ctx = test::harness_context("NVIDIA H200", 132, 150754820096.0, "2026-11-29", "synthetic sweep");
  std::vector<std::string> notes;
  const Json prof = build_measured_profile(base, "h200-fit", ctx, g, {}, {}, Json::object(), notes);
  EXPECT_TRUE(notes.empty());
  const Profile p = parse_profile(prof, "h200-fit.json");
  EXPECT_EQ(p.gemm_fixed_us.how, "fitted");
  EXPECT_NEAR(p.gemm_fixed_us.value, 4.0, 1e-6);
  EXPECT_NEAR(p.gemm_epilogue_gbps.value, 7500.0, 1e-3);
  // The best measured shape is recorded with its efficiency, and the model solves the same
  // main-loop efficiency back from it.
  ASSERT_EQ(p.gemm_best_shape.count("bf16"), 1u);
  EXPECT_NEAR(gemm_kernel_model(p, "bf16").main_efficiency, eff, 1e-9);
}

TEST(GemmKernelModel, B300ReproducesItsPublishedMamfBestShapes) {
  // The B300 profile (tools/data/derive_blackwell_profiles.py) keeps the B200's fitted fixed time
  // and epilogue rate and solves its main loop from the B300's own MAMF best shapes: the model
  // gives those measurements back (1,769.0 bf16 and 3,353.3 fp8 TFLOP/s), and at a large square
  // GEMM the B300 runs faster than the B200 by about the ratio of their MAMFs (1769 / 1745).
  const Profile b300 = load_profile(test::data_dir(), "b300-sxm-288g", "test");
  const Profile b200 = load_profile(test::data_dir(), "b200-sxm-180g", "test");
  struct Point {
    const char* dtype;
    std::int64_t m, n, k;
    double tflops;
  };
  for (const Point& pt : {Point{"bf16", 12288, 18432, 1024, 1769.0}, Point{"fp8", 3072, 6144, 7168, 3353.3}}) {
    const CostModel c(b300, pt.dtype);
    const double flops = 2.0 * static_cast<double>(pt.m) * static_cast<double>(pt.n) * static_cast<double>(pt.k);
    EXPECT_NEAR(flops / c.benchmark_gemm_s(pt.m, pt.n, pt.k) / 1e12, pt.tflops, 0.5) << pt.dtype;
  }
  const double ratio = CostModel(b200, "bf16").gemm_s(16384, 16384, 16384) / CostModel(b300, "bf16").gemm_s(16384, 16384, 16384);
  EXPECT_NEAR(ratio, 1769.0 / 1745.0, 0.03);
  EXPECT_EQ(b300.device.memory_bytes, 288000000000LL);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

// Seeded mutation fuzzing of the GEMM-table importer: numbers replaced by extremes, zeros, words
// or nulls, rows dropped or cut, keys removed, the dtype changed. Every mutant either fails with a
// ConfigError naming the table, or fits figures that are finite and leave the profile loadable.
TEST(Fuzz, MutatedGemmTablesFailCleanlyOrFitFinitely) {
  const Json good = read_json_file(test::test_data("xla_sm100_matmul.json"));
  const Json base_json = read_json_file(test::data_dir() + "/calibrate/profiles/b200-sxm-180g.json");
  const Profile base = parse_profile(base_json, "b200.json");
  const Json values[] = {0, -1, 1e308, 1e-300, 2.5, 1e12, "x", nullptr, Json::array(), 4096, 1, 3e15};
  const char* dtypes[] = {"bf16", "fp8", "fp16", "fp32", "int4", ""};
  const char* keys[] = {"schema", "dtype", "columns", "rows", "source"};
  std::mt19937_64 rng(11);
  test::FuzzTally tally;
  for (int i = 0; i < 800 && !HasFailure(); ++i) {
    Json t = good;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      auto& rows = t["rows"];
      switch (rng() % 6) {
        case 0: t.erase(keys[rng() % std::size(keys)]); break;
        case 1: t["dtype"] = dtypes[rng() % std::size(dtypes)]; break;
        case 2:
          if (rows.is_array() && !rows.empty()) rows.erase(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(rng() % rows.size()));
          break;
        case 3:
          if (rows.is_array() && !rows.empty()) rows[rng() % rows.size()] = values[rng() % std::size(values)];
          break;
        default:
          if (rows.is_array() && !rows.empty()) {
            Json& r = rows[rng() % rows.size()];
            if (r.is_array() && !r.empty()) r[rng() % r.size()] = values[rng() % std::size(values)];
          }
      }
    }
    test::fuzz_case(tally, {"fuzz.json"}, t.dump(), [&](bool&) {
      const GemmTable table = parse_gemm_table(t, "fuzz.json");
      Json prof = base_json;
      merge_gemm_fit(prof, base, table);
      const Profile out = parse_profile(prof, "fitted.json");  // what the importer writes must load
      ASSERT_TRUE(std::isfinite(out.gemm_fixed_us.value) && std::isfinite(out.gemm_epilogue_gbps.value));
    });
  }
  EXPECT_GT(tally.rejected, 100);
  EXPECT_GT(tally.accepted, 50);
  std::printf("gemm-table fuzz: %d rejected, %d fitted\n", tally.rejected, tally.accepted);
}

}  // namespace
}  // namespace parasim
