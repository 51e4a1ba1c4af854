// Prediction intervals from the calibration profile's spread: figures with a range are sampled
// (uniformly, independently, from a fixed-seed generator so the interval is reproducible bit for
// bit) and the scenario re-simulated; the interval is the p10..p90 of the sampled step times.
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/simulation.h"

namespace parasim {

struct Interval {
  double step_time_p10_s = 0, step_time_p90_s = 0;  // p10 <= nominal <= p90 is not guaranteed
  std::int64_t samples = 0;
  std::vector<std::string> figures;  // the ranged figures that were sampled
  std::vector<double> steps;         // the sampled step times, sorted (the nominal one without ranged figures)
};

// The samples run on `jobs` threads (0: one per core); the interval is the same for any count.
Interval predict_interval(const Scenario& sc, const Registries& reg, std::int64_t samples = 32, std::uint64_t seed = 1, int jobs = 0);

// The p-quantile (0..1) of sorted values, interpolated linearly between neighbours.
double quantile_sorted(const std::vector<double>& sorted, double p);

// parasim's own error on measured runs, as `parasim validate --write-model-error` wrote it
// (calibrate/model_error.json): r = ln(measured step / predicted step) of each run with a measured
// throughput, the band p10..p90 of r, and how often a run's r fell inside the band computed from
// the other sources' runs alone (held out by source). The profile's spread says how far its own
// figures may be off; this says how far the model has been off on real runs.
struct ModelErrorBand {
  std::vector<double> log_ratios;  // sorted
  double p10 = 0, p90 = 0;
  double held_out_coverage = 0;  // fraction of runs inside the band of the other sources
  std::int64_t sources = 0;
};
// The band over all runs and one per model class (model_class: "dense", "moe"), since the model's
// error differs by class: a scenario's interval takes its class's band when that class has at
// least kMinClassRuns runs (a p10..p90 needs about ten values to mean anything), else all runs'.
struct ModelErrorBands {
  ModelErrorBand all;
  std::map<std::string, ModelErrorBand> classes;
  // The band for a scenario of class `cls`, and which one it is ("moe", or "all" as the fallback).
  std::pair<const ModelErrorBand*, std::string> band_for(const std::string& cls) const;
};
inline constexpr std::int64_t kMinClassRuns = 10;
inline constexpr std::array<const char*, 2> kModelClasses = {"dense", "moe"};
// "moe" when the model has mixture-of-experts layers, else "dense" (one of kModelClasses).
std::string model_class(const ModelSpec& model);
inline constexpr const char* kModelErrorFile = "calibrate/model_error.json";
// <data_dir>/calibrate/model_error.json, or std::nullopt when there is none; a malformed file is a
// ConfigError naming it and the JSON path.
std::optional<ModelErrorBands> load_model_error(const std::string& data_dir);
ModelErrorBands read_model_error(const std::string& path);  // a missing file is a ConfigError too
Json model_error_json(const ModelErrorBands& me, const std::string& generated_by);
// p10..p90 of every sampled step time times exp(r) for every run's r: the profile's spread and
// the model's measured error taken as independent.
std::pair<double, double> combined_interval(const std::vector<double>& step_samples, const ModelErrorBand& me);

// The classes of priced time: Profile::TimeScale::kClasses (shares are indexed in its order).
inline constexpr const auto& kTimeClasses = Profile::TimeScale::kClasses;
using TimeShares = std::array<double, kTimeClasses.size()>;
// How much of the predicted step each class carries on the critical path: the step's elasticity
// d ln(step) / d ln(class time), from re-simulating with that class's time 2 % longer (overlap
// and pipeline waits included: hidden communication carries no share). A class the step does not
// run has share 0; the shares of a purely additive step sum to 1.
TimeShares time_shares(const Scenario& sc, const Registries& reg, double step_s);

}  // namespace parasim
