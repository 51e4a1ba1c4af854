#include "sim/uncertainty.h"

#include <algorithm>
#include <cmath>

namespace parasim {

namespace {

// splitmix64: tiny, portable and fully specified, unlike std::uniform_real_distribution.
struct SplitMix {
  std::uint64_t s;
  double next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }
};

// The profile figures with a spread that this scenario's prediction reads.
std::vector<std::pair<std::string, Figure*>> ranged(Profile& p, const TrainingSpec& t) {
  std::vector<std::pair<std::string, Figure*>> out;
  for (auto& [dt, f] : p.gemm_max_efficiency) out.push_back({"gemm_max_efficiency." + dt, &f});
  const std::string kernel = t.priced_attention_kernel();
  if (kernel != kAttentionDefault || p.has_fused_attention) {
    const auto [fwd, bwd] = p.attention_efficiency(kernel);
    const std::string prefix = kernel == kAttentionDefault ? "attention_" : "attention_kernels." + kernel + ".";
    out.push_back({prefix + "fwd_efficiency", fwd});
    out.push_back({prefix + "bwd_efficiency", bwd});
  }
  for (auto& [name, f] : std::initializer_list<std::pair<const char*, Figure*>>{
           {"hbm_efficiency", &p.hbm_efficiency}, {"kernel_overhead_us", &p.kernel_overhead_us},
           {"gemm_fixed_us", &p.gemm_fixed_us}, {"gemm_epilogue_gbps", &p.gemm_epilogue_gbps},
           {"gemm_unaligned_ratio", &p.gemm_unaligned_ratio}, {"overlap_compute_slowdown", &p.overlap_compute_slowdown},
           {"intra_bus_efficiency", &p.intra_bus_efficiency},
           {"inter_bus_efficiency", &p.inter_bus_efficiency}, {"inter_alpha_us", &p.inter_alpha_us},
           {"sustained_clock_ratio", &p.sustained_clock_ratio}})
    out.push_back({name, f});
  for (const auto& f : Profile::kKernelClassFigures) out.push_back({std::string("kernel_class_ratio.") + f.name, &(p.kernel_class_ratio.*f.member)});
  std::erase_if(out, [](const auto& x) { return !x.second->has_range(); });
  return out;
}

}  // namespace

Interval predict_interval(const Scenario& sc, const Registries& reg, std::int64_t samples, std::uint64_t seed) {
  Interval iv;
  Scenario s = sc;
  auto figs = ranged(s.profile, s.training);
  for (const auto& f : figs) iv.figures.push_back(f.first);
  std::vector<double> steps;
  if (figs.empty()) {
    const double t = simulate(sc, reg).result.step_time_s;
    iv.step_time_p10_s = iv.step_time_p90_s = t;
    iv.samples = 1;
    return iv;
  }
  SplitMix rng{seed};
  for (std::int64_t i = 0; i < samples; ++i) {
    for (auto& [name, f] : figs) f->value = f->low + (f->high - f->low) * rng.next();
    steps.push_back(simulate(s, reg).result.step_time_s);
  }
  std::sort(steps.begin(), steps.end());
  auto q = [&](double p) {
    const double x = p * static_cast<double>(steps.size() - 1);
    const auto i = static_cast<size_t>(x);
    const double w = x - static_cast<double>(i);
    return i + 1 < steps.size() ? steps[i] * (1 - w) + steps[i + 1] * w : steps[i];
  };
  iv.step_time_p10_s = q(0.10);
  iv.step_time_p90_s = q(0.90);
  iv.samples = samples;
  return iv;
}

TimeShares time_shares(const Scenario& sc, const Registries& reg, double step_s) {
  constexpr double kStep = 1.02;
  TimeShares out{};
  if (!(step_s > 0)) return out;
  for (size_t i = 0; i < kTimeClasses.size(); ++i) {
    Scenario s = sc;
    s.profile.time_scale.*kTimeClasses[i].member = kStep;
    out[i] = std::log(simulate(s, reg).result.step_time_s / step_s) / std::log(kStep);
  }
  return out;
}

}  // namespace parasim
