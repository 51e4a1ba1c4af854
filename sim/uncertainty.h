// Prediction intervals from the calibration profile's spread: figures with a range are sampled
// (uniformly, independently, from a fixed-seed generator so the interval is reproducible bit for
// bit) and the scenario re-simulated; the interval is the p10..p90 of the sampled step times.
#pragma once
#include <array>
#include <vector>

#include "sim/simulation.h"

namespace parasim {

struct Interval {
  double step_time_p10_s = 0, step_time_p90_s = 0;  // p10 <= nominal <= p90 is not guaranteed
  std::int64_t samples = 0;
  std::vector<std::string> figures;  // the ranged figures that were sampled
};

Interval predict_interval(const Scenario& sc, const Registries& reg, std::int64_t samples = 32, std::uint64_t seed = 1);

// The classes of priced time: Profile::TimeScale::kClasses (shares are indexed in its order).
inline constexpr const auto& kTimeClasses = Profile::TimeScale::kClasses;
using TimeShares = std::array<double, kTimeClasses.size()>;
// How much of the predicted step each class carries on the critical path: the step's elasticity
// d ln(step) / d ln(class time), from re-simulating with that class's time 2 % longer (overlap
// and pipeline waits included: hidden communication carries no share). A class the step does not
// run has share 0; the shares of a purely additive step sum to 1.
TimeShares time_shares(const Scenario& sc, const Registries& reg, double step_s);

}  // namespace parasim
