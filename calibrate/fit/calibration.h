// CPU side of the calibration harness: which shapes to measure (derived from the model zoo, not
// hand-listed), and turning measurements into a profile: GEMM points, best-shape efficiency,
// memory and PCIe bandwidth, collective points with fitted piecewise alpha-beta segments.
#pragma once
#include <string>
#include <vector>

#include "calibrate/profile/profile.h"
#include "sim/config/json_reader.h"

namespace parasim {

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool operator<(const GemmShape& o) const { return std::tie(m, n, k) < std::tie(o.m, o.n, o.k); }
  bool operator==(const GemmShape& o) const { return m == o.m && n == o.n && k == o.k; }
};

// Forward and backward GEMM shapes of every zoo model for the given TP degrees and tokens per
// microbatch (b*s), deduplicated and sorted; plus a log2 grid [lo, hi]^3 when grid_lo > 0.
std::vector<GemmShape> calibration_shapes(const std::string& data_dir, const std::vector<std::string>& models,
                                          const std::vector<std::int64_t>& tps, const std::vector<std::int64_t>& tokens,
                                          std::int64_t grid_lo, std::int64_t grid_hi);

struct MeasuredGemm {
  GemmShape shape;
  std::string dtype;
  double p10_s = 0, p50_s = 0, p90_s = 0;
  int algo = -1, tile = -1;
  bool correct = true;
};
struct MeasuredBandwidth {
  std::string what;  // d2d_copy | elementwise_triad | h2d | d2h
  double gbps = 0;
};
struct MeasuredCollective {
  std::string op;
  std::int64_t ranks = 0;
  double bytes = 0, p10_s = 0, p50_s = 0, p90_s = 0;
  std::int64_t nodes = 1;  // distinct hosts the group spans (mpirun across nodes)
};

// One alpha-beta segment: time = alpha + bytes / beta over [lo, hi] bytes (least squares).
struct AlphaBetaSegment {
  double lo = 0, hi = 0, alpha_s = 0, beta_bytes_per_s = 0;
};
// Piecewise fit over points sorted by size: a new segment starts where one line stops
// describing the points within `tolerance` (relative). Fit raw time against size.
std::vector<AlphaBetaSegment> fit_alpha_beta(std::vector<std::pair<double, double>> bytes_time, double tolerance = 0.05);

// The GEMM kernel model's three figures (sim/cost/cost_model.h) fitted to measured GEMM
// times of one dtype by least squares on time (long GEMMs, which dominate a training step, weigh
// most): time = fixed + out bytes / epilogue + flops / (peak x main_efficiency x quantisation).
// Wave quantisation uses the profile's SM count and tiles. ok is false with fewer than 4 points
// or when a figure comes out non-physical (negative time or rate); the errors are relative.
struct GemmTiming {
  double m = 0, n = 0, k = 0, batch = 1, time_s = 0;
};
struct GemmKernelFit {
  bool ok = false;
  double fixed_s = 0, epilogue_bytes_per_s = 0, main_efficiency = 0;
  double mean_abs_error = 0, max_abs_error = 0;
};
GemmKernelFit fit_gemm_kernel(const Profile& p, const std::string& dtype, const std::vector<GemmTiming>& points);

// The same GEMM run on every GPU of the job at once (each board loaded as in training): its
// burst time (a short benchmark) and its sustained time (after seconds at the power limit) per GPU.
struct MeasuredSustained {
  std::string dtype;
  std::int64_t m = 0, n = 0, k = 0;
  double seconds = 0;  // how long each GPU ran the GEMM back to back
  std::int64_t nodes = 1;
  std::vector<double> burst_s, sustained_s;  // per GPU, in one order
};
// Spread of the GPUs' sustained times, estimated as the published figure it replaces was
// (compute.gpu_speed_spread): sigma = IQR / 1.349 / median, quartiles interpolated linearly
// between order statistics. ok is false with fewer than 4 GPUs.
struct SpeedSpreadFit {
  bool ok = false;
  double sigma = 0, median_s = 0, iqr_s = 0, slowest_over_median = 0;
  std::size_t gpus = 0;
};
SpeedSpreadFit fit_speed_spread(std::vector<double> times_s);

// Measurements beside the sweeps: the sustained GEMM on every GPU at once, and the time per kernel
// of back-to-back tiny kernels on one stream (kernel_gap_s, over gap_kernels kernels; 0: not run).
// Unfused attention's QK^T in Megatron's fused-QKV layout at two head dims of about the same
// size, one a 16-byte multiple and one not (times 0: not run).
struct MeasuredHeadPair {
  std::int64_t heads = 0, seq = 0, aligned_dim = 0, unaligned_dim = 0;
  double aligned_s = 0, unaligned_s = 0;
};
struct HarnessExtras {
  MeasuredSustained sustained;
  double kernel_gap_s = 0;
  int gap_kernels = 0;
  MeasuredHeadPair attention_heads;
};

struct HarnessContext {
  std::string gpu_name, driver, cuda, cublas, nccl, cudnn, date, command;
  std::int64_t sms = 0;
  double memory_bytes = 0;
  double clock_mhz = 0, mem_clock_mhz = 0;
};

// Merges measurements into a copy of the base (datasheet) profile JSON; every figure it sets is
// marked how = "measured" with the command and date as its source. Incorrect results are dropped
// and listed in `notes`. A sustained run sets compute.sustained_clock_ratio (the median over GPUs
// of burst / sustained time) and, with 4 GPUs or more, compute.gpu_speed_spread; a kernel-gap run
// sets compute.kernel_overhead_us; a head pair sets compute.attention_gemm_unaligned_ratio (the
// unaligned head dim's FLOP rate over the aligned one's).
Json build_measured_profile(const Json& base, const std::string& name, const HarnessContext& ctx, const std::vector<MeasuredGemm>& gemms,
                            const std::vector<MeasuredBandwidth>& bw, const std::vector<MeasuredCollective>& colls,
                            const Json& extra_notes, std::vector<std::string>& notes, const HarnessExtras& extras = {});

}  // namespace parasim
