#include "calibrate/profile/cost_model.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace parasim {

CostModel::CostModel(const Profile& profile, std::string dtype, const std::string& attention_kernel)
    : p_(profile),
      dtype_(std::move(dtype)),
      peak_(profile.peak_flops(dtype_)),
      // FP8 recipes (Transformer Engine, torchao float8) run the linear layers in FP8 and keep
      // attention in 16-bit; fp32 training runs attention at the fp32/tf32 rate.
      attention_peak_(profile.peak_flops(dtype_ == "fp8" ? "bf16" : dtype_)) {
  profile.gemm_efficiency(dtype_);  // fail early if the profile cannot price this dtype
  std::tie(attention_fwd_, attention_bwd_) = profile.attention_efficiency(attention_kernel);
}

double CostModel::memory_s(double bytes) const {
  return bytes / (p_.hbm_gbps.value * 1e9 * p_.hbm_efficiency.value) + p_.kernel_overhead_us.value * 1e-6;
}

double CostModel::attention_s(double flops, bool backward) const {
  const double eff = backward ? attention_bwd_->value : attention_fwd_->value;
  return flops / (attention_peak_ * eff) + p_.kernel_overhead_us.value * 1e-6;
}

double CostModel::gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) const {
  ++lookups_;
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
  // 2. Roofline fallback: best-shape efficiency, reduced by wave quantisation of output tiles
  //    over the SMs, bounded below by the memory traffic of the operands.
  ++fallbacks_;
  // cuBLAS's heuristic also picks half-size tiles when they fill the SMs better; take the better.
  const double sms = static_cast<double>(p_.device.sms);
  double quant = 0;
  for (double scale : {1.0, 0.5}) {
    const double tm = p_.gemm_tile_m.value * scale, tn = p_.gemm_tile_n.value * scale;
    const double tiles = std::ceil(static_cast<double>(m) / tm) * std::ceil(static_cast<double>(n) / tn) *
                         static_cast<double>(batch);
    quant = std::max(quant, tiles / (std::ceil(tiles / sms) * sms));
  }
  const double eff = p_.gemm_efficiency(dtype_) * quant;
  const double elem = dtype_ == "fp8" ? 1.0 : (dtype_ == "fp32" || dtype_ == "tf32" ? 4.0 : 2.0);
  const double bytes = elem * static_cast<double>(batch) *
                       (static_cast<double>(m) * static_cast<double>(k) + static_cast<double>(k) * static_cast<double>(n) +
                        static_cast<double>(m) * static_cast<double>(n));
  const double t_compute = flops / (peak_ * eff);
  const double t_mem = bytes / (p_.hbm_gbps.value * 1e9 * p_.hbm_efficiency.value);
  return std::max(t_compute, t_mem) + p_.kernel_overhead_us.value * 1e-6;
}

}  // namespace parasim
