#include "sim/cost/cost_model.h"

#include <algorithm>
#include <cmath>

namespace parasim {

namespace {
double expected_max_by_quadrature(std::int64_t n) {
  // The integrand x n phi(x) Phi(x)^(n-1) lives within [-9, 9] for any n below 10^15 (its peak
  // sits near sqrt(2 ln n) < 8.4); Simpson's rule on 7,200 steps of 0.0025.
  const double nn = static_cast<double>(n);
  constexpr double lo = -9.0, hi = 9.0;
  constexpr int steps = 7200;
  const double h = (hi - lo) / steps;
  const double inv_sqrt2 = 1.0 / std::sqrt(2.0), inv_sqrt2pi = 1.0 / std::sqrt(2.0 * std::acos(-1.0));
  auto f = [&](double x) {
    const double log_cdf = std::log1p(-0.5 * std::erfc(x * inv_sqrt2));  // ln Phi(x), exact near 1
    return x * nn * inv_sqrt2pi * std::exp(-0.5 * x * x + (nn - 1.0) * log_cdf);
  };
  double sum = f(lo) + f(hi);
  for (int i = 1; i < steps; ++i) sum += (i % 2 ? 4.0 : 2.0) * f(lo + i * h);
  return sum * h / 3.0;
}
}  // namespace

double expected_max_standard_normal(std::int64_t n) { return n <= 1 ? 0.0 : expected_max_by_quadrature(n); }

SlowestGpu slowest_gpu(const Profile& p, std::int64_t gpus) {
  return {p.gpu_speed_spread.value > 0 ? expected_max_standard_normal(gpus) : 0.0};
}

double slowest_gpu_pace(const Profile& p, SlowestGpu slowest) {
  return p.gpu_speed_spread.value > 0 ? 1.0 + p.gpu_speed_spread.value * slowest.draw : 1.0;
}

CostModel::CostModel(const Profile& profile, std::string dtype, const std::string& attention_kernel, SlowestGpu slowest)
    : p_(profile),
      dtype_(std::move(dtype)),
      peak_(profile.peak_flops(dtype_)),
      // FP8 / FP4 recipes (Transformer Engine, torchao float8) run the linear layers in low precision
      // and keep attention in 16-bit; fp32 training runs attention at the fp32/tf32 rate.
      attention_peak_(profile.peak_flops(is_low_precision(dtype_) ? "bf16" : dtype_)),
      pace_(slowest_gpu_pace(profile, slowest)) {
  gemm_ = gemm_kernel_model(profile, dtype_);  // fails early if the profile cannot price this dtype
  expert_gemm_ = gemm_;
  expert_gemm_.epilogue_bytes_per_s =
      std::min(gemm_.epilogue_bytes_per_s, profile.hbm_gbps.value * 1e9 * profile.hbm_efficiency.value);
  // A profile without fused attention prices unfused attention only (as GEMMs and memory passes):
  // attention_s then names the missing figures.
  if (attention_kernel != kAttentionDefault || profile.has_fused_attention)
    attention_ = &profile.attention_kernel(attention_kernel);
  if (is_low_precision(dtype_)) sixteen_bit_ = std::make_unique<CostModel>(profile, "bf16", attention_kernel, slowest);
}

double CostModel::gemm16_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, bool* measured) const {
  return sixteen_bit_ ? sixteen_bit_->gemm_s(m, n, k, batch, measured) : gemm_s(m, n, k, batch, measured);
}

double CostModel::expert_gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, bool* measured,
                                bool sixteen_bit) const {
  if (sixteen_bit && sixteen_bit_) return sixteen_bit_->expert_gemm_s(m, n, k, batch, measured, false);
  return gemm_in_step_s(benchmark_gemm_s(m, n, k, batch, measured, expert_gemm_));
}

double CostModel::memory_s(double bytes, double class_ratio, std::int64_t launches) const {
  return p_.time_scale.memory * pace_ *
         (bytes / (p_.hbm_gbps.value * 1e9 * p_.hbm_efficiency.value * class_ratio) +
          static_cast<double>(launches) * p_.kernel_overhead_us.value * 1e-6);
}

double CostModel::scan_s(double flops, double bytes) const {
  const GemmKernelModel& g16 = sixteen_bit_ ? sixteen_bit_->gemm_ : gemm_;
  const double compute = p_.time_scale.gemm * flops / (attention_peak_ * g16.max_efficiency * p_.sustained_clock_ratio.value);
  const double memory = p_.time_scale.memory * bytes / (p_.hbm_gbps.value * 1e9 * p_.hbm_efficiency.value);
  return pace_ * (std::max(compute, memory) + p_.kernel_overhead_us.value * 1e-6);
}

double CostModel::attention_s(double flops, bool backward, double seq_len, std::int64_t cp, double head_dim) const {
  if (!attention_) p_.attention_kernel(kAttentionDefault);  // throws: the profile prices no fused attention
  const Profile::AttentionKernel& a = *attention_;
  // A head narrower than the kernel's next built width runs at that width: its work scales up.
  const double padded = a.padded_head_dim(head_dim);
  if (head_dim > 0 && padded > head_dim) {
    flops *= padded / head_dim;
    head_dim = padded;
  }
  const double h = (backward ? a.bwd_head_dim_overhead : a.fwd_head_dim_overhead).value;
  const double d = std::min(head_dim, kAttentionHeadDim);
  const double eff = (backward ? a.bwd_efficiency : a.fwd_efficiency).value * (d / (d + h)) / (kAttentionHeadDim / (kAttentionHeadDim + h));
  const double seq_oh = (backward ? a.bwd_seq_overhead : a.fwd_seq_overhead).value;
  const double causal_oh = (backward ? a.bwd_causal_overhead : a.fwd_causal_overhead).value;
  // Causal attention over the whole sequence, or context parallel's load-balanced ring (each rank
  // holds chunks i and 2cp-1-i of the sequence): of its cp steps, each with an equal share of the
  // work, one is causal over the rank's s/cp tokens and cp-1 are unmasked blocks against key (or
  // query) lengths s/cp and s/(2 cp), for half the ranks each: a mean of 1.5 a cp / s extra.
  const double cpd = static_cast<double>(cp), local = seq_len / cpd;
  const double stretch = (1.0 / cpd) * (local + causal_oh) / local + ((cpd - 1.0) / cpd) * (1.0 + 1.5 * seq_oh / local);
  return p_.time_scale.attention * pace_ *
         (flops * stretch / (attention_peak_ * eff * p_.sustained_clock_ratio.value) + p_.kernel_overhead_us.value * 1e-6);
}

double CostModel::gemm_in_step_s(double benchmark_s) const {
  return p_.time_scale.gemm * pace_ * benchmark_s / p_.sustained_clock_ratio.value;
}

double CostModel::gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, bool* measured) const {
  return gemm_in_step_s(benchmark_gemm_s(m, n, k, batch, measured));
}

double CostModel::attention_gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, std::int64_t head_dim,
                                   bool* measured) const {
  if (head_dim <= 0 || std::fmod(static_cast<double>(head_dim), gemm_.align_elems) == 0) return gemm_s(m, n, k, batch, measured);
  ++lookups_;
  ++fallbacks_;
  if (measured) *measured = false;
  return gemm_in_step_s(gemm_.time_s(p_, static_cast<double>(m), static_cast<double>(n), static_cast<double>(k), static_cast<double>(batch),
                                    (p_.has_attention_gemm_unaligned_ratio ? p_.attention_gemm_unaligned_ratio : p_.gemm_unaligned_ratio).value));
}

double CostModel::benchmark_gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, bool* measured) const {
  return benchmark_gemm_s(m, n, k, batch, measured, gemm_);
}

double CostModel::benchmark_gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, bool* measured,
                                   const GemmKernelModel& model) const {
  ++lookups_;
  if (measured) *measured = true;
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                       static_cast<double>(batch);
  // 1. Measured points of the same dtype: inverse-distance weighting of efficiency in log-shape
  //    space, used only when the nearest point is within a factor of two in every dimension.
  double wsum = 0, esum = 0, nearest = 1e9;
  for (const auto& g : p_.gemm_points) {
    if (g.dtype != dtype_) continue;
    const double dm = std::log2(static_cast<double>(g.m) / static_cast<double>(m));
    const double dn = std::log2(static_cast<double>(g.n) / static_cast<double>(n));
    const double dk = std::log2(static_cast<double>(g.k) / static_cast<double>(k));
    const double dist = std::sqrt(dm * dm + dn * dn + dk * dk);
    const double cheb = std::max({std::abs(dm), std::abs(dn), std::abs(dk)});
    nearest = std::min(nearest, cheb);
    const double eff = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) /
                       (g.time_s * peak_);
    if (dist < 1e-9) return flops / (peak_ * eff);
    const double w = 1.0 / (dist * dist * dist * dist);
    wsum += w;
    esum += w * eff;
  }
  if (wsum > 0 && nearest <= 1.0) return flops / (peak_ * (esum / wsum));
  // 2. The kernel model.
  ++fallbacks_;
  if (measured) *measured = false;
  return model.time_s(p_, static_cast<double>(m), static_cast<double>(n), static_cast<double>(k), static_cast<double>(batch));
}

double wave_quantisation(const Profile& p, double m, double n, double batch) {
  const double sms = static_cast<double>(p.device.sms);
  double quant = 0;
  for (double scale : {1.0, 0.5}) {
    const double tm = p.gemm_tile_m.value * scale, tn = p.gemm_tile_n.value * scale;
    const double tiles = std::ceil(m / tm) * std::ceil(n / tn) * batch;
    quant = std::max(quant, tiles / (std::ceil(tiles / sms) * sms));
  }
  return quant;
}

double GemmKernelModel::time_s(const Profile& p, double m, double n, double k, double batch) const {
  // Row-major C[m,n] = A[m,k] B[k,n]: the leading dimensions are k (A) and n (B and C).
  return time_s(p, m, n, k, batch, std::fmod(n, align_elems) != 0 || std::fmod(k, align_elems) != 0 ? unaligned_ratio : 1.0);
}

double GemmKernelModel::time_s(const Profile& p, double m, double n, double k, double batch, double ar) const {
  const double flops = 2.0 * m * n * k * batch;
  const double t_main = flops / (peak_flops * main_efficiency * ar * wave_quantisation(p, m, n, batch));
  const double t_reads = in_elem_bytes * batch * (m * k + k * n) / (p.hbm_gbps.value * 1e9 * p.hbm_efficiency.value);
  const double t = fixed_s + std::max(t_main, t_reads) + out_elem_bytes * batch * m * n / epilogue_bytes_per_s;
  return std::max(t, flops / (peak_flops * max_efficiency * ar));
}

GemmKernelModel gemm_kernel_model(const Profile& p, const std::string& dtype) {
  GemmKernelModel g;
  g.peak_flops = p.peak_flops(dtype);
  g.main_efficiency = p.gemm_efficiency(dtype);
  g.max_efficiency = g.main_efficiency;
  g.fixed_s = p.gemm_fixed_us.value * 1e-6;
  g.epilogue_bytes_per_s = p.gemm_epilogue_gbps.value * 1e9;
  const bool wide = dtype == "fp32" || dtype == "tf32";
  g.out_elem_bytes = wide ? 4.0 : 2.0;
  g.in_elem_bytes = gemm_operand_bytes(dtype);
  // 16-byte aligned rows of the operands' data (NVFP4: 32 elements; its scales live apart).
  g.align_elems = dtype == "nvfp4" ? 32.0 : 16.0 / g.in_elem_bytes;
  g.unaligned_ratio = p.gemm_unaligned_ratio.value;
  const auto shape = p.gemm_best_shape.find(dtype);
  if (shape == p.gemm_best_shape.end()) return g;
  const auto [m, n, k] = shape->second;
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
  const double flops = 2.0 * dm * dn * dk;
  const double measured = flops / (g.peak_flops * g.main_efficiency);
  const double main = measured - g.fixed_s - g.out_elem_bytes * dm * dn / g.epilogue_bytes_per_s;
  const double eff = main > 0 ? flops / (g.peak_flops * wave_quantisation(p, dm, dn, 1) * main) : 2.0;
  if (eff > 1.0)
    throw ProfileError(p.file + ": /compute/gemm_max_efficiency/" + dtype + ": " + std::to_string(g.main_efficiency) +
                       " of peak at " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                       " leaves no time for the main loop after compute.gemm_fixed_us and compute.gemm_epilogue_gbps "
                       "(it would need more than the peak)");
  g.main_efficiency = eff;
  return g;
}

}  // namespace parasim
