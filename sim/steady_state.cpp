#include "sim/steady_state.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace parasim {

namespace {

// A figure is on the line when the three runs' steps differ by no more than this fraction of its
// size, plus a picosecond (the engine's time unit; seconds and GiB alike) for sums of doubles.
constexpr double kRelTolerance = 1e-9;
constexpr double kAbsTolerance = 1e-12;

// Ratios to the step or to the pipeline window, as the totals they are ratios of.
Result to_totals(Result r) {
  const double s = r.step_time_s;
  r.mfu *= s;
  r.hfu *= s;
  r.hfu_reported *= s;
  r.tflops_per_gpu *= s;
  for (auto& rr : r.ranks) rr.bubble_fraction *= r.window_s;
  return r;
}

// Back from totals to ratios, and the figures that are maxima or means over ranks recomputed.
void from_totals(Result& r, double tokens_per_step) {
  const double s = r.step_time_s;
  const auto per_step = [s](double x) { return s > 0 ? x / s : 0.0; };
  r.mfu = per_step(r.mfu);
  r.hfu = per_step(r.hfu);
  r.hfu_reported = per_step(r.hfu_reported);
  r.tflops_per_gpu = per_step(r.tflops_per_gpu);
  r.tokens_per_s = per_step(tokens_per_step);
  double gpus = 0, bubble = 0;
  r.peak_mem_gib = r.reserved_gib = 0;
  for (auto& rr : r.ranks) {
    rr.bubble_fraction = r.window_s > 0 ? rr.bubble_fraction / r.window_s : 0.0;
    gpus += static_cast<double>(rr.count);
    bubble += static_cast<double>(rr.count) * rr.bubble_fraction;
    r.peak_mem_gib = std::max(r.peak_mem_gib, rr.peak_mem_gib);
    r.reserved_gib = std::max(r.reserved_gib, rr.reserved_gib);
  }
  r.bubble_fraction = gpus > 0 ? bubble / gpus : 0.0;
  r.fits_in_memory = r.peak_mem_gib <= r.capacity_gib;
}

// Calls f on every extensive figure of a Result in its totals form, in one fixed order.
template <class F>
void each_total(Result& r, F&& f) {
  for (double* x : {&r.step_time_s, &r.window_s, &r.mfu, &r.hfu, &r.hfu_reported, &r.tflops_per_gpu, &r.exposed.tp,
                    &r.exposed.dp, &r.exposed.pp, &r.exposed.ep, &r.exposed.cp})
    f(*x);
  for (auto& rr : r.ranks) {
    for (double* x : {&rr.peak_mem_gib, &rr.peak_time_s, &rr.reserved_gib, &rr.compute_s, &rr.comm_exposed_s, &rr.idle_s,
                      &rr.bubble_fraction})
      f(*x);
    for (double& x : rr.mem_breakdown_gib) f(x);
    for (double& x : rr.phase_s) f(x);
  }
  for (auto& kv : r.breakdown) f(kv.second);
}

std::vector<double> totals(const Result& r) {
  Result t = to_totals(r);
  std::vector<double> v{static_cast<double>(r.ops), static_cast<double>(r.events)};
  each_total(t, [&v](double& x) { v.push_back(x); });
  return v;
}

bool same_shape(const Result& a, const Result& b) {
  if (a.ranks.size() != b.ranks.size() || a.breakdown.size() != b.breakdown.size()) return false;
  for (size_t i = 0; i < a.ranks.size(); ++i)
    if (a.ranks[i].rank != b.ranks[i].rank || a.ranks[i].count != b.ranks[i].count) return false;
  return std::equal(a.breakdown.begin(), a.breakdown.end(), b.breakdown.begin(),
                    [](const auto& x, const auto& y) { return x.first == y.first; });
}

// The step of a max-plus system is convex and piecewise affine in m, so three points on one
// piece still leave a steeper piece possible beyond them (seen with uneven interleaved stages,
// where the fill's path and the busiest stage's rate cross late). Once periodic the step grows at
// least as fast as any rank's compute stream, whose ops run one after another: a step growing
// slower than the busiest of them has a steeper piece ahead.
bool steeper_piece_ahead(const std::array<Result, 3>& at) {
  const double step = at[2].step_time_s - at[0].step_time_s;
  double busiest = 0;
  for (size_t r = 0; r < at[0].ranks.size(); ++r) busiest = std::max(busiest, at[2].ranks[r].compute_s - at[0].ranks[r].compute_s);
  return step < busiest - kRelTolerance * at[2].step_time_s - kAbsTolerance;
}

// The figures at m on the line through three points' figures, or nothing where one of them is off
// that line: groups of `spacing` microbatches from the last point to m, each adding half of v2 - v0.
std::optional<std::vector<double>> extend_line(const std::vector<double>& v0, const std::vector<double>& v1,
                                               const std::vector<double>& v2, const FoldPoints& points, std::int64_t m) {
  const double k = static_cast<double>(m - points.at(2)) / static_cast<double>(points.spacing);
  std::vector<double> out(v2.size());
  for (size_t i = 0; i < v2.size(); ++i) {
    const double size = std::max({std::abs(v0[i]), std::abs(v1[i]), std::abs(v2[i])});
    if (std::abs((v2[i] - v1[i]) - (v1[i] - v0[i])) > kRelTolerance * size + kAbsTolerance) return std::nullopt;
    out[i] = v2[i] + k * (v2[i] - v0[i]) / 2.0;
    // Every figure is a time, a size or a share, none below zero: a line of zeros extended can land
    // a rounding error below it (idle -1.7e-15 s), which is zero.
    if (out[i] < 0 && out[i] > -(kRelTolerance * size + kAbsTolerance)) out[i] = 0;
  }
  return out;
}

// A partition's lines in one fixed order (its maps are ordered by phase name).
template <class P, class F>
void each_line(P& t, F&& f) {
  for (auto& kv : t.compute_stream_s) f(kv.first, kv.second);
  f(std::string("exposed"), t.exposed_s);
  f(std::string("idle"), t.idle_s);
  for (auto& kv : t.other_streams_s) f("other " + kv.first, kv.second);
}

}  // namespace

FoldPoints fold_points(const Periodicity& p, std::int64_t pp) {
  const std::int64_t group = p.groups_of_stages ? pp : 1;
  return {std::max(p.fill_stages * pp, group), group};
}

FoldPoints fold_points(const Scenario& sc, const ScheduleRegistry& schedules) {
  const ScheduleDef& def = schedule_def(schedules, sc.parallel.schedule);
  return fold_points(def.periodicity, sc.parallel.pp);
}

void set_microbatches(Scenario& s, std::int64_t m) {
  s.step_microbatches_kept = s.step_microbatches();
  s.training.global_batch = m * s.training.micro_batch * s.parallel.dp;
}

Scenario with_microbatches(const Scenario& sc, std::int64_t m) {
  Scenario s = sc;
  set_microbatches(s, m);
  return s;
}

std::optional<Result> extrapolate_steady_state(const std::array<Result, 3>& at, const FoldPoints& points, std::int64_t m,
                                               double tokens_per_step) {
  if (!same_shape(at[0], at[1]) || !same_shape(at[0], at[2])) return std::nullopt;
  if (steeper_piece_ahead(at)) return std::nullopt;
  const std::optional<std::vector<double>> line = extend_line(totals(at[0]), totals(at[1]), totals(at[2]), points, m);
  if (!line) return std::nullopt;
  const std::vector<double>& out = *line;
  Result r = to_totals(at[2]);
  r.ops = std::llround(out[0]);
  r.events = std::llround(out[1]);
  size_t i = 2;
  each_total(r, [&](double& x) { x = out[i++]; });
  from_totals(r, tokens_per_step);
  return r;
}

std::optional<TimePartition> extrapolate_partition(const std::array<TimePartition, 3>& at, const FoldPoints& points, std::int64_t m) {
  std::array<std::vector<std::string>, 3> names;
  std::array<std::vector<double>, 3> values;
  for (size_t k = 0; k < 3; ++k)
    each_line(at[k], [&](const std::string& name, double x) {
      names[k].push_back(name);
      values[k].push_back(x);
    });
  if (names[0] != names[1] || names[0] != names[2]) return std::nullopt;
  const std::optional<std::vector<double>> line = extend_line(values[0], values[1], values[2], points, m);
  if (!line) return std::nullopt;
  TimePartition t = at[2];
  size_t i = 0;
  each_line(t, [&](const std::string&, double& x) { x = (*line)[i++]; });
  return t;
}

}  // namespace parasim
