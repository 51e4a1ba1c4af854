// Prediction intervals from the calibration profile's spread: figures with a range are sampled
// (uniformly, independently, from a fixed-seed generator so the interval is reproducible bit for
// bit) and the scenario re-simulated; the interval is the p10..p90 of the sampled step times.
#pragma once
#include <vector>

#include "sim/simulation.h"

namespace parasim {

struct Interval {
  double step_time_p10_s = 0, step_time_p90_s = 0;  // p10 <= nominal <= p90 is not guaranteed
  std::int64_t samples = 0;
  std::vector<std::string> figures;  // the ranged figures that were sampled
};

Interval predict_interval(const Scenario& sc, const Registries& reg, std::int64_t samples = 32, std::uint64_t seed = 1);

}  // namespace parasim
