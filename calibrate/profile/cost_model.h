// Kernel -> seconds, from a calibration profile. Measured GEMM points are interpolated; where the
// profile has none near a shape, a roofline with the profile's fitted efficiency and wave
// quantisation is used, and counted as a fallback.
#pragma once
#include <cstdint>
#include <string>

#include "calibrate/profile/profile.h"

namespace parasim {

class CostModel {
 public:
  // attention_kernel: kAttentionDefault or a kernel in the profile's compute.attention_kernels.
  CostModel(const Profile& profile, std::string dtype, const std::string& attention_kernel = kAttentionDefault);

  double gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1) const;
  double attention_s(double flops, bool backward) const;
  double memory_s(double bytes) const;
  // Elementwise update over `bytes` of optimizer state traffic.
  double optimizer_s(double bytes) const { return memory_s(bytes); }

  double peak_flops() const { return peak_; }
  std::int64_t fallbacks() const { return fallbacks_; }
  std::int64_t lookups() const { return lookups_; }
  const Profile& profile() const { return p_; }

 private:
  const Profile& p_;
  std::string dtype_;
  double peak_;
  double attention_peak_;
  const Figure* attention_fwd_;
  const Figure* attention_bwd_;
  mutable std::int64_t fallbacks_ = 0;
  mutable std::int64_t lookups_ = 0;
};

}  // namespace parasim
