// CPU side of the calibration harness on recorded data: zoo-derived shapes, piecewise alpha-beta
// fits of the recorded 8x A100 nccl-tests sweep, and a measured profile built from recorded results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../test_util.h"
#include "calibrate/fit/calibration.h"
#include "sim/cost/cost_model.h"
#include "sim/cost/kernels.h"

namespace parasim {
namespace {

TEST(CalibrationShapes, DerivedFromTheZoo) {
  const auto s = calibration_shapes(test::data_dir(), {"llama3-70b"}, {8}, {4096}, 0, 0);
  // Llama 3 70B, TP 8, 4096 tokens: QKV [4096, 8192] x [8192, (8192 + 2*1024)/8].
  EXPECT_TRUE(std::find(s.begin(), s.end(), GemmShape{4096, 1280, 8192}) != s.end());
  // MLP down [4096, 28672/8] x [3584, 8192] and its weight gradient [3584 x 4096] x [4096 x 8192].
  EXPECT_TRUE(std::find(s.begin(), s.end(), GemmShape{4096, 8192, 3584}) != s.end());
  EXPECT_TRUE(std::find(s.begin(), s.end(), GemmShape{3584, 8192, 4096}) != s.end());
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  const auto g = calibration_shapes(test::data_dir(), {}, {}, {}, 256, 1024);
  EXPECT_EQ(g.size(), 27u);  // {256, 512, 1024}^3
}

TEST(AlphaBetaFit, PiecewiseSegmentsReproduceRecordedNcclTestsSweep) {
  // The recorded sweep: nccl-tests all_reduce on 8x A100 (shared/validation/published_microbench.json).
  const Profile p = load_profile(test::data_dir(), "a100-sxm4-80g", "test");
  std::vector<std::pair<double, double>> pts;
  for (const auto& c : p.collective_points) pts.push_back({c.bytes, c.time_s});
  ASSERT_EQ(pts.size(), 20u);
  const auto segs = fit_alpha_beta(pts, 0.05);
  ASSERT_GE(segs.size(), 2u);  // one line cannot describe LL, LL128 and Simple protocols
  ASSERT_LE(segs.size(), 8u);
  for (const auto& [b, t] : pts) {
    const auto s = std::find_if(segs.begin(), segs.end(), [bytes = b](const auto& x) { return bytes >= x.lo && bytes <= x.hi; });
    ASSERT_NE(s, segs.end());
    const double pred = s->alpha_s + (std::isinf(s->beta_bytes_per_s) ? 0 : b / s->beta_bytes_per_s);
    EXPECT_NEAR(pred / t, 1.0, 0.05) << b;
  }
  // The largest segment's bandwidth is the sweep's asymptote: algbw ~134 GB/s at 16 GiB.
  EXPECT_NEAR(segs.back().beta_bytes_per_s / 1e9, 134.2, 15.0);
}

TEST(MeasuredProfile, BuiltFromRecordedResultsLoadsAndIsUsed) {
  const Json base = read_json_file(test::data_dir() + "/calibrate/profiles/h200-sxm-141g.json");
  const HarnessContext ctx =
      test::harness_context("NVIDIA H200", 132, 150754820096.0, "2026-11-29", "parasim-calibrate --quick (recorded test data)");
  // Recorded: 8192^3 bf16 at 1.6 ms (687 TFLOP/s = 0.695 of 989), a smaller shape slower, one
  // wrong result that must be dropped, and a faster shape with n = 8190 (not a multiple of 8: the
  // kernel model would read it as an unaligned leading dimension), which is not the best shape.
  std::vector<MeasuredGemm> g = {{{8192, 8192, 8192}, "bf16", 1.55e-3, 1.6e-3, 1.7e-3, 1, 20, true},
                                 {{1024, 1024, 1024}, "bf16", 9e-6, 1e-5, 1.1e-5, 2, 18, true},
                                 {{4096, 4096, 4096}, "bf16", 1e-4, 1e-4, 1e-4, 3, 20, false},
                                 {{8192, 8190, 8192}, "bf16", 1.3e-3, 1.3e-3, 1.3e-3, 4, 20, true}};
  std::vector<MeasuredBandwidth> bw = {{"elementwise_triad", 4100}, {"h2d", 55.4}};
  std::vector<MeasuredCollective> c = {{"all_reduce", 8, 1 << 20, 4e-5, 4.5e-5, 5e-5}, {"all_reduce", 8, 1 << 30, 3.8e-3, 3.9e-3, 4e-3}};
  std::vector<std::string> notes;
  const Json prof = build_measured_profile(base, "h200-measured", ctx, g, bw, c, Json::object(), notes);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("dropped bf16 4096x4096x4096"), std::string::npos);
  // Two good shapes are too few to fit the GEMM kernel model: the base profile's figures stay.
  EXPECT_NE(notes[1].find("GEMM kernel model not fitted (3 bf16 shapes"), std::string::npos) << notes[1];
  const Profile p = parse_profile(prof, "h200-measured.json");
  EXPECT_EQ(p.device.how, "measured");
  EXPECT_EQ(p.gemm_points.size(), 3u);
  EXPECT_EQ(p.gemm_best_shape.at("bf16"), (std::array<std::int64_t, 3>{8192, 8192, 8192}));
  const double eff = 2.0 * 8192.0 * 8192 * 8192 / 1.6e-3 / 989e12;
  EXPECT_NEAR(p.gemm_efficiency("bf16"), eff, 1e-12);
  EXPECT_EQ(p.gemm_max_efficiency.at("bf16").how, "measured");
  EXPECT_NEAR(p.hbm_efficiency.value, 4100.0 / 4800.0, 1e-12);
  // The cost model now prices the measured shape at its measured time (no fallback); a training
  // step runs it at the base profile's sustained clock.
  const CostModel cm(p, "bf16");
  EXPECT_NEAR(cm.benchmark_gemm_s(8192, 8192, 8192), 1.6e-3, 1e-12);
  EXPECT_NEAR(cm.gemm_s(8192, 8192, 8192), 1.6e-3 / p.sustained_clock_ratio.value, 1e-12);
  EXPECT_LT(p.sustained_clock_ratio.value, 1.0);
  EXPECT_EQ(cm.fallbacks(), 0);
}

TEST(AttentionKernels, EachKernelIsPricedByItsOwnProfileFigures) {
  const Profile p = load_profile(test::data_dir(), "a100-sxm4-80g", "test");
  // The sustained clock scales the benchmarked (burst) rate of every attention kernel alike.
  const double flops = 1e12, peak = 312e12 * p.sustained_clock_ratio.value, launch = p.kernel_overhead_us.value * 1e-6;
  const CostModel flash(p, "bf16");
  const CostModel triton(p, "bf16", "triton");
  const auto& t = p.attention_kernels.at("triton");
  // Causal attention over s = 4096 tokens runs at efficiency x s / (s + causal overhead).
  const double s = 4096;
  const auto causal = [&](const Figure& e, const Figure& c) { return flops * (s + c.value) / s / (peak * e.value) + launch; };
  EXPECT_NEAR(flash.attention_s(flops, false, s), causal(p.attention.fwd_efficiency, p.attention.fwd_causal_overhead), 1e-15);
  EXPECT_NEAR(triton.attention_s(flops, false, s), causal(t.fwd_efficiency, t.fwd_causal_overhead), 1e-15);
  EXPECT_NEAR(triton.attention_s(flops, true, s), causal(t.bwd_efficiency, t.bwd_causal_overhead), 1e-15);
  // The published ratios the A100 figures encode (FlashAttention-2 paper, section 4.1): Triton is
  // 1.3-1.5x slower in forward and about 2x slower in backward than FlashAttention-2.
  const double fwd_ratio = (triton.attention_s(flops, false, s) - launch) / (flash.attention_s(flops, false, s) - launch);
  const double bwd_ratio = (triton.attention_s(flops, true, s) - launch) / (flash.attention_s(flops, true, s) - launch);
  EXPECT_GE(fwd_ratio, 1.3 - 1e-3);
  EXPECT_LE(fwd_ratio, 1.5 + 1e-3);
  EXPECT_NEAR(bwd_ratio, 2.0, 1e-3);
  EXPECT_THROW(CostModel(p, "bf16", "cudnn"), ProfileError);
}

TEST(AttentionKernels, SequenceLengthSetsTheKernelsEfficiency) {
  // H100, FlashAttention-3: causal forward efficiency e x s / (s + c) against the FlashAttention-3
  // paper's causal forward bars (Shah et al. 2024, Fig. 5, head dim 128, BF16), within 6 %; the
  // profile's e and c were fitted to them (tools/data/fit_attention_shapes.py).
  const Profile p = load_profile(test::data_dir(), "h100-sxm5-80g", "test");
  const CostModel fa3(p, "bf16", "flash3");
  const double peak = 989e12 * p.sustained_clock_ratio.value, launch = p.kernel_overhead_us.value * 1e-6, flops = 1e13;
  const auto tflops = [&](double s, bool bwd, std::int64_t cp) {
    return flops / (fa3.attention_s(flops, bwd, s, cp) - launch) / p.sustained_clock_ratio.value / 1e12;
  };
  const std::vector<std::pair<double, double>> causal_fwd = {{512, 292}, {1024, 423}, {2048, 521}, {4096, 579}, {8192, 602}, {16384, 616}};
  for (const auto& [s, measured] : causal_fwd) EXPECT_NEAR(tflops(s, false, 1) / measured, 1.0, 0.06) << s;
  // Longer sequences approach the asymptote from below, forward and backward.
  for (const bool bwd : {false, true}) {
    double last = 0;
    for (const double s : {512.0, 2048.0, 8192.0, 131072.0}) {
      EXPECT_GT(tflops(s, bwd, 1), last);
      last = tflops(s, bwd, 1);
    }
    const auto& a = p.attention_kernel("flash3");
    EXPECT_LT(last, 989 * (bwd ? a.bwd_efficiency.value : a.fwd_efficiency.value));
    EXPECT_GT(last, 0.98 * 989 * (bwd ? a.bwd_efficiency.value : a.fwd_efficiency.value));
  }
  // Head dim 64 with the default kernel (FlashAttention-2): the same paper's causal forward bars at
  // head dim 64, within 10 % (the sequence shape is head dim 128's; the asymptote scales by
  // d / (d + h) over 128 / (128 + h)); head dims above 128 are priced at 128's.
  const CostModel fa2(p, "bf16");
  const auto fa2_tflops = [&](double s, double d) {
    return flops / (fa2.attention_s(flops, false, s, 1, d) - launch) / p.sustained_clock_ratio.value / 1e12;
  };
  const std::vector<std::pair<double, double>> causal_fwd_64 = {{512, 180}, {1024, 229}, {2048, 262}, {4096, 284}, {8192, 295}, {16384, 299}};
  for (const auto& [s, measured] : causal_fwd_64) EXPECT_NEAR(fa2_tflops(s, 64) / measured, 1.0, 0.10) << s;
  const double h = p.attention.fwd_head_dim_overhead.value;
  EXPECT_NEAR(fa2_tflops(4096, 64) / fa2_tflops(4096, 128), (64 / (64 + h)) / (128 / (128 + h)), 1e-12);
  EXPECT_DOUBLE_EQ(fa2.attention_s(flops, true, 4096, 1, 256), fa2.attention_s(flops, true, 4096, 1, 128));
  // Context parallel over cp ranks (load-balanced ring): one causal step over s/cp tokens and cp-1
  // unmasked steps, half against keys s/cp and half s/(2 cp) long, equal work each.
  const auto& a = p.attention_kernel("flash3");
  for (const std::int64_t cp : {2, 4, 8}) {
    const double s = 32768, l = s / static_cast<double>(cp), c = a.fwd_causal_overhead.value, ov = a.fwd_seq_overhead.value;
    const double stretch = ((l + c) / l + static_cast<double>(cp - 1) * (1 + 1.5 * ov / l)) / static_cast<double>(cp);
    EXPECT_NEAR(fa3.attention_s(flops, false, s, cp) - launch, flops * stretch / (peak * a.fwd_efficiency.value), 1e-15) << cp;
  }
}

TEST(AttentionKernels, ProfileRejectsUnknownOrDefaultKernelEntries) {
  Json j = read_json_file(test::data_dir() + "/calibrate/profiles/a100-sxm4-80g.json");
  auto error_of = [](const Json& prof) {
    try {
      parse_profile(prof, "p.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  Json bad = j;
  bad["compute"]["attention_kernels"]["tritonn"] = bad["compute"]["attention_kernels"]["triton"];
  EXPECT_EQ(error_of(bad), "p.json: /compute/attention_kernels/tritonn: unknown key; did you mean \"triton\"?");
  bad = j;
  bad["compute"]["attention_kernels"]["flash"] = bad["compute"]["attention_kernels"]["triton"];
  EXPECT_EQ(error_of(bad), "p.json: /compute/attention_kernels/flash: the default kernel is priced by "
                          "compute.attention_fwd_efficiency and compute.attention_bwd_efficiency, not listed here");
  EXPECT_EQ(error_of(j), "(no error)");
}

// A figure's range_source names the source of its range: without a range it is refused as that, not
// as an unknown key.
TEST(MeasuredProfile, RangeSourceWithoutARangeIsRefusedAsSuch) {
  Json j = read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json");
  Json& f = j["network"]["intra_bus_efficiency"];
  ASSERT_FALSE(f.contains("range"));
  f["range_source"] = "a sweep";
  try {
    parse_profile(j, "p.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "p.json: /network/intra_bus_efficiency/range_source: names the source of a range, but the figure has "
                                     "no \"range\": [low, high]");
  }
}

TEST(MeasuredProfile, MultiNodeRunAddsItsGroupsToTheBaseProfilesPoints) {
  // What `mpirun ... parasim-calibrate --mpi --base <single-node measured profile>` writes: the
  // base's points stay, the 16-rank 2-node groups are added, GEMM points are untouched.
  const Json base = read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json");
  const size_t before = base["network"]["collective_points"].size();
  const HarnessContext ctx = test::harness_context("NVIDIA H100 80GB HBM3", 132, 85520809984.0);
  MeasuredCollective a{"all_reduce", 16, 1 << 20, 9e-5, 1e-4, 1.1e-4};
  MeasuredCollective b{"all_reduce", 16, 1 << 30, 1.05e-2, 1.1e-2, 1.15e-2};
  a.nodes = b.nodes = 2;
  std::vector<std::string> notes;
  const Json prof = build_measured_profile(base, "h100-2node", ctx, {}, {}, {a, b}, Json::object(), notes);
  EXPECT_EQ(prof["network"]["collective_points"].size(), before + 2);
  EXPECT_TRUE(prof["notes"]["alpha_beta_fits"].contains("all_reduce/16/2nodes"));
  const Profile p = parse_profile(prof, "h100-2node.json");
  ClusterSpec c;
  c.nodes = 2;
  const AlphaBetaNetwork net(p, c);
  EXPECT_NEAR(net.time_s({CollOp::AllReduce, 16, 8, 1, 1 << 30}), 1.1e-2, 1e-12);
}

// The spread estimator of the published figure it replaces: sigma = IQR / 1.349 / median, with
// quartiles interpolated between order statistics; fewer than 4 GPUs give no estimate.
TEST(SpeedSpread, InterquartileRangeOverTheMedianGivesSigma) {
  // Eight GPUs, sorted 1.00 .. 1.07 ms: Q1 = 1.0175, median 1.035, Q3 = 1.0525 (positions 1.75,
  // 3.5, 5.25 of 0..7), IQR 0.035 ms.
  const SpeedSpreadFit f = fit_speed_spread({1.03e-3, 1.00e-3, 1.07e-3, 1.01e-3, 1.05e-3, 1.02e-3, 1.06e-3, 1.04e-3});
  ASSERT_TRUE(f.ok);
  EXPECT_EQ(f.gpus, 8u);
  EXPECT_NEAR(f.median_s, 1.035e-3, 1e-12);
  EXPECT_NEAR(f.iqr_s, 0.035e-3, 1e-12);
  EXPECT_NEAR(f.sigma, 0.035 / 1.349 / 1.035, 1e-9);
  EXPECT_NEAR(f.slowest_over_median, 1.07 / 1.035, 1e-12);
  EXPECT_NEAR(fit_speed_spread({2e-3, 2e-3, 2e-3, 2e-3}).sigma, 0.0, 1e-15);  // GPUs alike
  EXPECT_FALSE(fit_speed_spread({1e-3, 1.1e-3, 1.2e-3}).ok);
  EXPECT_FALSE(fit_speed_spread({}).ok);
}

// A sustained run sets the sustained clock (median over GPUs of burst / sustained time) and, from
// 4 GPUs on, the spread between them; the profile loads and a job's kernels take the measured pace.
// The kernel-gap run sets the per-kernel overhead.
TEST(MeasuredProfile, SustainedGemmAndKernelGapSetTheClockRatioTheSpreadAndTheKernelOverhead) {
  const Json base = read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json");
  const HarnessContext ctx =
      test::harness_context("NVIDIA H100 80GB HBM3", 132, 85520809984.0, "2026-12-01", "parasim-calibrate (recorded test data)");
  HarnessExtras extras;
  MeasuredSustained& sus = extras.sustained;
  sus.dtype = "bf16";
  sus.m = sus.n = sus.k = 8192;
  sus.seconds = 20;
  sus.burst_s = std::vector<double>(8, 1.40e-3);
  sus.sustained_s = {1.50e-3, 1.52e-3, 1.54e-3, 1.56e-3, 1.58e-3, 1.60e-3, 1.62e-3, 1.70e-3};
  std::vector<std::string> notes;
  const Json prof = build_measured_profile(base, "h100-measured", ctx, {}, {}, {}, Json::object(), notes, extras);
  const Profile p = parse_profile(prof, "h100-measured.json");
  EXPECT_EQ(p.sustained_clock_ratio.how, "measured");
  EXPECT_NEAR(p.sustained_clock_ratio.value, 0.5 * (1.40 / 1.56 + 1.40 / 1.58), 1e-12);  // the median of the eight ratios
  EXPECT_EQ(p.gpu_speed_spread.how, "measured");
  const SpeedSpreadFit f = fit_speed_spread(sus.sustained_s);
  EXPECT_NEAR(p.gpu_speed_spread.value, f.sigma, 1e-12);
  EXPECT_NE(p.gpu_speed_spread.source.find("8 GPUs at once"), std::string::npos) << p.gpu_speed_spread.source;
  EXPECT_NEAR(slowest_gpu_pace(p, 64), 1.0 + f.sigma * expected_max_standard_normal(64), 1e-12);
  EXPECT_EQ(p.kernel_overhead_us.how, parse_profile(base, "base.json").kernel_overhead_us.how);  // no gap measured
  // The back-to-back kernel gap becomes the per-kernel overhead: an empty memory pass costs it.
  extras.kernel_gap_s = 3.1e-6;
  extras.gap_kernels = 256;
  notes.clear();
  const Profile gap = parse_profile(build_measured_profile(base, "h100-gap", ctx, {}, {}, {}, Json::object(), notes, extras), "gap.json");
  EXPECT_EQ(gap.kernel_overhead_us.how, "measured");
  EXPECT_NEAR(gap.kernel_overhead_us.value, 3.1, 1e-12);
  EXPECT_NE(gap.kernel_overhead_us.source.find("256 dependent kernels"), std::string::npos) << gap.kernel_overhead_us.source;
  EXPECT_NEAR(CostModel(gap, "bf16").memory_s(0), 3.1e-6, 1e-15);
  extras.kernel_gap_s = 0;
  // Two GPUs: the clock ratio is measured, the spread is not (the base figure stays, with a note).
  sus.burst_s.resize(2);
  sus.sustained_s.resize(2);
  notes.clear();
  const Profile two = parse_profile(build_measured_profile(base, "h100-two", ctx, {}, {}, {}, Json::object(), notes, extras), "two.json");
  EXPECT_EQ(two.sustained_clock_ratio.how, "measured");
  EXPECT_EQ(two.gpu_speed_spread.how, parse_profile(base, "base.json").gpu_speed_spread.how);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("gpu_speed_spread not measured: 2 GPU(s)"), std::string::npos) << notes[0];
}

// A timed head pair (QK^T in the fused-QKV layout at head dims 112 and 108) sets
// compute.attention_gemm_unaligned_ratio to the FLOP-rate ratio; without it the base figure (here:
// none, so the general unaligned ratio) stays.
TEST(MeasuredProfile, AttentionHeadPairSetsTheUnalignedAttentionRatio) {
  const Json base = read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json");
  const HarnessContext ctx =
      test::harness_context("NVIDIA H100 80GB HBM3", 132, 85520809984.0, "2026-12-01", "parasim-calibrate (recorded test data)");
  std::vector<std::string> notes;
  HarnessExtras extras;
  EXPECT_FALSE(parse_profile(build_measured_profile(base, "h100", ctx, {}, {}, {}, Json::object(), notes, extras), "h.json")
                   .has_attention_gemm_unaligned_ratio);
  extras.attention_heads = {32, 2048, 112, 108, 0.20e-3, 2.70e-3};
  const Profile p = parse_profile(build_measured_profile(base, "h100", ctx, {}, {}, {}, Json::object(), notes, extras), "h.json");
  ASSERT_TRUE(p.has_attention_gemm_unaligned_ratio);
  EXPECT_EQ(p.attention_gemm_unaligned_ratio.how, "measured");
  EXPECT_NEAR(p.attention_gemm_unaligned_ratio.value, (108 / 2.70e-3) / (112 / 0.20e-3), 1e-12);  // 0.0714
  EXPECT_NE(p.attention_gemm_unaligned_ratio.source.find("head dim 108 (216 bytes, off 16)"), std::string::npos)
      << p.attention_gemm_unaligned_ratio.source;
  // A pathological timing is held inside the figure's valid range.
  extras.attention_heads.unaligned_s = 1.0;
  EXPECT_EQ(parse_profile(build_measured_profile(base, "h100", ctx, {}, {}, {}, Json::object(), notes, extras), "h.json")
                .attention_gemm_unaligned_ratio.value,
            0.01);
}

TEST(Harness, BuildsWithCudaAndFailsCleanlyWithoutAGpu) {
#ifdef PARASIM_CALIBRATE_BINARY
  const auto [code, out] = test::run_shell(std::string(PARASIM_CALIBRATE_BINARY) + " --base h100-sxm5-80g -o " + ::testing::TempDir() + "never-written.json");
  if (code == 0) GTEST_SKIP() << "a GPU is present: the harness ran";
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("parasim-calibrate: error: "), std::string::npos) << out;
  EXPECT_NE(out.find("main.cpp:"), std::string::npos) << out;  // file:line of the failing call
#else
  GTEST_SKIP() << "CUDA Toolkit not found at configure time: parasim-calibrate not built";
#endif
}

TEST(Harness, MpiModeAbortsEveryRankCleanlyWithoutAGpu) {
#if defined(PARASIM_CALIBRATE_BINARY) && defined(PARASIM_MPIEXEC)
  const std::string cmd = std::string(PARASIM_MPIEXEC) + " --allow-run-as-root --oversubscribe -np 2 " + PARASIM_CALIBRATE_BINARY +
                          " --mpi --base h100-sxm5-80g -o " + ::testing::TempDir() + "never-written-mpi.json";
  const auto [code, out] = test::run_shell(cmd);
  if (code == 0) GTEST_SKIP() << "GPUs are present: the MPI sweep ran";
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("parasim-calibrate: rank "), std::string::npos) << out;
  EXPECT_NE(out.find("nccl_mpi.cpp:"), std::string::npos) << out;  // file:line of the failing call
#else
  GTEST_SKIP() << "parasim-calibrate built without MPI (libopenmpi-dev not found at configure time)";
#endif
}

TEST(MemoryKernelClasses, EachKindRunsAtItsRatioOfTheStreamingRate) {
  // A memory-bound kernel of kind c moving B bytes takes B / (hbm x efficiency x ratio_c) plus the
  // launch; streaming passes run at ratio 1; a profile without memory.kernel_class_ratio prices
  // every kind at the streaming rate.
  const Profile p = load_profile(test::data_dir(), "h200-sxm-141g", "test");
  const CostModel cm(p, "bf16");
  const double bytes = 1e9, launch = p.kernel_overhead_us.value * 1e-6;
  const double stream = bytes / (p.hbm_gbps.value * 1e9 * p.hbm_efficiency.value);
  Kernel k;
  k.kind = KernelKind::Memory;
  k.bytes = bytes;
  EXPECT_NEAR(kernel_seconds(cm, k), stream + launch, 1e-15);
  for (const auto& [cls, f] : {std::pair<MemClass, const Figure*>{MemClass::Norm, &p.kernel_class_ratio.norm}, {MemClass::Activation, &p.kernel_class_ratio.activation},
                               {MemClass::Reduction, &p.kernel_class_ratio.reduction}, {MemClass::Cast, &p.kernel_class_ratio.cast}}) {
    k.mem_class = cls;
    EXPECT_LT(f->value, 1.0);
    EXPECT_NEAR(kernel_seconds(cm, k), stream / f->value + launch, 1e-15);
  }
  Json j = read_json_file(test::data_dir() + "/calibrate/profiles/h200-sxm-141g.json");
  j["memory"].erase("kernel_class_ratio");
  const Profile bare = parse_profile(j, "bare.json");
  const CostModel cb(bare, "bf16");
  EXPECT_NEAR(kernel_seconds(cb, k), stream + launch, 1e-15);
  EXPECT_EQ(bare.kernel_class_ratio.cast.how, "assumed");
}

TEST(MemoryKernelClasses, TheLayerGraphTagsEachMemoryKernel) {
  // Norm passes (the two-pass weight gradient too), activations, bias-gradient sums and the eager
  // loss's casts carry their kinds; residual adds and the log-softmax passes stream.
  const ModelSpec m = load_zoo_model(test::data_dir(), "megatron-gpt-1.7b", "test");  // GELU, biased linears
  LayerShape sh;
  sh.seq_len = 2048;
  sh.two_pass_norm = true;
  sh.loss = LossImpl::Eager;
  const LayerGraph g = build_layer_graph(m, sh);
  std::map<std::string, MemClass> seen;
  for (const Block* b : {&g.attn_fwd, &g.attn_bwd, &g.mlp_fwd, &g.mlp_bwd, &g.head_fwd, &g.head_bwd})
    for (const auto& k : b->kernels)
      if (k.kind == KernelKind::Memory) seen[k.name] = k.mem_class;
  EXPECT_EQ(seen.at("norm1"), MemClass::Norm);
  EXPECT_EQ(seen.at("norm1.bwd"), MemClass::Norm);
  EXPECT_EQ(seen.at("norm1.bwd.weight_grad"), MemClass::Norm);
  EXPECT_EQ(seen.at("gelu"), MemClass::Activation);
  EXPECT_EQ(seen.at("gelu.bwd"), MemClass::Activation);
  EXPECT_EQ(seen.at("mlp_up.bias_grad"), MemClass::Reduction);
  EXPECT_EQ(seen.at("cross_entropy.upcast"), MemClass::Cast);
  EXPECT_EQ(seen.at("cross_entropy.bwd.downcast"), MemClass::Cast);
  EXPECT_EQ(seen.at("cross_entropy.log_softmax"), MemClass::Stream);
  EXPECT_EQ(seen.at("residual1"), MemClass::Stream);
}

}  // namespace
}  // namespace parasim
