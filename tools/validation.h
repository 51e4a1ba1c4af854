// Predicted vs measured: `parasim check` (pass/fail per run, for users' CI) and
// `parasim validate` (accuracy report over a directory of measured runs).
#pragma once
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "sim/scenario/measured.h"
#include "sim/simulation.h"
#include "sim/uncertainty.h"
#include "tools/progress.h"

namespace parasim {

struct Comparison {
  std::string figure;
  std::string detail;
  double measured = 0;
  double predicted = 0;
  double error = 0;             // (predicted - measured) / measured
  double throughput_error = 0;  // the same error expressed on throughput (step time inverted)
  double tolerance = 0.1;
  bool judged = true;  // false: a component figure reported without a tolerance (pass stays true)
  bool pass = true;
};

struct RunCheck {
  std::string file, id, source, gpu, family, confidence;
  std::string model_class;  // model_class(): "dense" or "moe"
  std::int64_t gpus = 0;  // the job's GPU count
  Result result;
  std::vector<Comparison> comparisons;
  bool oom_known = false, oom_measured = false, oom_predicted = false;
  // No OOM flag in the file, but a measured step time or throughput: the run ran, so it fit.
  bool oom_implied = false;
  bool pass = true;
  bool has_interval = false;
  double step_p10_s = 0, step_p90_s = 0;  // prediction interval from the profile's spread
  bool throughput_inside = false;         // the measured throughput figure falls inside it
  bool has_shares = false;
  TimeShares shares{};                    // of the predicted step, per class of priced time
};

struct Tolerances {
  double default_tolerance = 0.10;
  std::map<std::string, double> per_figure;
  double of(const std::string& figure) const;
  // The headline figures always; a component.* figure only when given its own tolerance.
  bool judges(const std::string& figure) const;
};

// Each measured figure of the run beside the prediction `r` of its scenario.
std::vector<Comparison> compare_figures(const MeasuredRun& run, const Result& r, const Tolerances& tol);
// interval_samples > 0: also the p10..p90 interval; shares: also the time shares (time_shares).
RunCheck check_run(const MeasuredRun& run, const Registries& reg, const Tolerances& tol, std::int64_t interval_samples = 0,
                   bool shares = false);
void print_checks(std::ostream& os, const std::vector<RunCheck>& checks);
Json checks_json(const std::vector<RunCheck>& checks);

// The throughput comparison of a run: the first of step time, tokens/s per GPU, TFLOP/s, MFU.
const Comparison* throughput_comparison(const RunCheck& c);
const Comparison* memory_comparison(const RunCheck& c);

struct ErrorStats {
  std::int64_t n = 0;
  double mape = 0, median = 0, max = 0, bias = 0;  // fractions
};
ErrorStats error_stats(const std::vector<double>& signed_errors);

struct LoadFailure {
  std::string file, reason;
};
struct ValidationReport {
  std::string dir;
  std::vector<RunCheck> runs;
  std::vector<LoadFailure> failures;
  Json converter_skipped;  // from skipped.json beside the runs, if present
  ErrorStats throughput, memory;
  std::int64_t oom_agree = 0, oom_total = 0, oom_implied = 0;
  std::int64_t inside = 0, with_interval = 0;  // measured throughput inside the p10..p90 interval
};
ValidationReport validate_dir(const std::string& dir, const std::string& data_dir, const Registries& reg,
                              std::int64_t interval_samples = 16, bool shares = true, const ProgressFn& progress = {});

// parasim's error on the report's runs with a throughput figure: r = ln(measured step / predicted
// step), the band p10..p90 of r, and the fraction of runs inside the band computed from the runs
// of the other sources alone (held out by source; a source with all runs is its own fold); for all
// runs and for the runs of each model class.
ModelErrorBands model_error_of(const ValidationReport& r);

// Error attribution over a group of runs with time shares and a throughput comparison: the
// multiplier m_c on each class's priced time that best explains the measured step times, from
// least squares of ln(measured / predicted step) = sum over classes of share_c x ln(m_c). It is a
// ridge regression toward m_c = 1 whose weight is the residual variance of the plain fit over
// kAttributionPriorSpread^2 (empirical Bayes: each ln(m_c) a priori N(0, 0.25^2)), so a class the
// runs cannot tell from another stays near 1 while exact data are fitted exactly. Classes whose
// mean share is under kAttributionMinShare stay at 1 (not fitted), and at most half as many
// classes as runs are fitted (those with the largest shares). In-sample: it says which class
// of work the measurements disagree with, not a correction to apply.
inline constexpr double kAttributionPriorSpread = 0.25;
inline constexpr double kAttributionMinShare = 0.02;
struct Attribution {
  std::string group;
  std::int64_t n = 0;
  TimeShares mean_share{};
  TimeShares multiplier{1, 1, 1, 1};
  std::array<bool, kTimeClasses.size()> fitted{};
  double mape_before = 0, mape_after = 0;  // throughput MAPE, and with the multipliers applied
};
Attribution attribute(const std::string& group, const std::vector<const RunCheck*>& runs);
// One per group of runs (key: the run's source, GPU profile, ...), then one over all runs ("all
// runs"); empty when no run has shares.
std::vector<Attribution> attribution_by(const ValidationReport& r, const std::function<std::string(const RunCheck&)>& key);
void print_validation_markdown(std::ostream& os, const ValidationReport& r, const std::string& command);
Json validation_json(const ValidationReport& r);

}  // namespace parasim
