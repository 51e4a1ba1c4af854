#include "tools/validation.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "sim/uncertainty.h"

namespace parasim {

double Tolerances::of(const std::string& figure) const {
  auto it = per_figure.find(figure);
  return it == per_figure.end() ? default_tolerance : it->second;
}

bool Tolerances::judges(const std::string& figure) const {
  return figure.rfind("component.", 0) != 0 || per_figure.count(figure) > 0;
}

namespace {
// The predicted TFLOP/s per GPU in the convention the measurement counts (MeasuredFigure::detail).
double predicted_tflops(const Scenario& sc, const Result& r, const std::string& convention, double peak_tflops) {
  if (convention == "hardware") return r.hfu_reported * peak_tflops;
  if (convention != "model_causal") return r.tflops_per_gpu;
  const ForwardFlops f = forward_flops(build_model_graph(sc.model, layer_shape(sc)));
  return f.model > 0 ? r.tflops_per_gpu * f.causal / f.model : r.tflops_per_gpu;
}
}  // namespace

std::vector<Comparison> compare_figures(const MeasuredRun& run, const Result& r, const Tolerances& tol) {
  std::vector<Comparison> out;
  const double gpus = static_cast<double>(run.scenario.cluster.gpus());
  const double peak_tflops = run.scenario.profile.peak_flops(name_of(run.scenario.training.dtype)) / 1e12;
  for (const auto& f : run.figures) {
    Comparison cmp;
    cmp.figure = f.name;
    cmp.detail = f.detail;
    cmp.measured = f.value;
    if (f.name == "step_time_s") cmp.predicted = r.step_time_s;
    else if (f.name == "tokens_per_s_per_gpu") cmp.predicted = r.tokens_per_s / gpus;
    else if (f.name == "tflops_per_gpu") cmp.predicted = predicted_tflops(run.scenario, r, f.detail, peak_tflops);
    else if (f.name == "mfu") cmp.predicted = r.mfu;
    else if (f.name == "hfu") cmp.predicted = r.hfu_reported;
    else if (f.name == "peak_mem_gib") {
      // A framework's peak (torch.cuda.max_memory_allocated) excludes the CUDA context and
      // library workspaces that nvidia-smi sees; nvidia-smi also sees the caching allocator's
      // cached blocks (RankResult::reserved_gib).
      double p = 0;
      for (const auto& rr : r.ranks) {
        const double w = rr.mem_breakdown_gib[static_cast<size_t>(MemCat::Workspace)];
        p = std::max(p, f.detail == "framework" ? rr.peak_mem_gib - w : rr.reserved_gib);
      }
      cmp.predicted = p;
    }
    else if (f.name == "component.compute_s") {
      double w = 0;
      for (const auto& rr : r.ranks) {
        cmp.predicted += rr.compute_s * static_cast<double>(rr.count);
        w += static_cast<double>(rr.count);
      }
      cmp.predicted /= std::max(w, 1.0);
    } else if (f.name == "component.comm_exposed_s") cmp.predicted = r.breakdown.count("comm_exposed_s") ? r.breakdown.at("comm_exposed_s") : 0;
    else if (f.name == "component.bubble_fraction") cmp.predicted = r.bubble_fraction;
    cmp.error = cmp.measured > 0 ? (cmp.predicted - cmp.measured) / cmp.measured : (cmp.predicted == 0 ? 0.0 : 1.0);
    cmp.throughput_error = f.name == "step_time_s" ? cmp.measured / cmp.predicted - 1.0 : cmp.error;
    cmp.tolerance = tol.of(f.name);
    // Components explain errors: reported, and judged only against a tolerance given for them.
    cmp.judged = tol.judges(f.name);
    cmp.pass = !cmp.judged || std::abs(cmp.error) <= cmp.tolerance;
    out.push_back(cmp);
  }
  return out;
}

RunCheck check_run(const MeasuredRun& run, const Registries& reg, const Tolerances& tol, std::int64_t interval_samples,
                   bool shares) {
  RunCheck c;
  c.file = run.file;
  c.id = run.id;
  c.source = run.source_title;
  c.gpu = run.scenario.profile.name;
  c.family = run.family;
  c.confidence = run.confidence;
  c.model_class = model_class(run.scenario.model);
  c.gpus = run.scenario.cluster.gpus();
  const SimulationOutput out = simulate(run.scenario, reg);
  c.result = out.result;
  const Result& r = c.result;
  c.comparisons = compare_figures(run, c.result, tol);
  for (const Comparison& cmp : c.comparisons) c.pass = c.pass && cmp.pass;
  // A run that reports a step time or a throughput completed its steps: it fit in memory, and a
  // prediction of out-of-memory for it is as wrong as one for a run that stated it did not fit.
  const bool ran = throughput_comparison(c) != nullptr;
  if (run.has_oom || ran) {
    c.oom_known = true;
    c.oom_implied = !run.has_oom;
    c.oom_measured = run.has_oom && run.oom;
    c.oom_predicted = !r.fits_in_memory;
    c.pass = c.pass && c.oom_measured == c.oom_predicted;
  }
  if (shares) {
    c.has_shares = true;
    c.shares = time_shares(run.scenario, reg, r.step_time_s);
  }
  if (interval_samples > 0) {
    const Interval iv = predict_interval(run.scenario, reg, interval_samples);
    c.has_interval = true;
    c.step_p10_s = iv.step_time_p10_s;
    c.step_p90_s = iv.step_time_p90_s;
    if (const Comparison* t = throughput_comparison(c)) {
      // Throughput figures scale as 1/step: measured throughput error e lies inside the interval
      // when the implied measured step time lies in [p10, p90].
      const double step_meas = r.step_time_s * (1.0 + t->throughput_error);
      c.throughput_inside = step_meas >= c.step_p10_s * (1 - 1e-12) && step_meas <= c.step_p90_s * (1 + 1e-12);
    }
  }
  return c;
}

const Comparison* throughput_comparison(const RunCheck& c) {
  for (const char* f : {"step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "hfu"})
    for (const auto& cmp : c.comparisons)
      if (cmp.figure == f) return &cmp;
  return nullptr;
}

const Comparison* memory_comparison(const RunCheck& c) {
  for (const auto& cmp : c.comparisons)
    if (cmp.figure == "peak_mem_gib") return &cmp;
  return nullptr;
}

void print_checks(std::ostream& os, const std::vector<RunCheck>& checks) {
  fmt::print(os, "{:<44} {:<22} {:>12} {:>12} {:>9} {:>6}  {}\n", "run", "figure", "measured", "predicted", "error", "tol", "");
  int failed = 0;
  for (const auto& c : checks) {
    for (const auto& cmp : c.comparisons)
      fmt::print(os, "{:<44} {:<22} {:>12.4g} {:>12.4g} {:>+8.1f}% {:>6}  {}\n", c.id.substr(0, 44),
                 cmp.figure + (cmp.detail.empty() ? "" : " (" + cmp.detail + ")"), cmp.measured, cmp.predicted, 100 * cmp.error,
                 cmp.judged ? fmt::format("{:.0f}%", 100 * cmp.tolerance) : "-",
                 !cmp.judged ? "not judged (no --tolerance-for)" : cmp.pass ? "pass" : "FAIL");
    if (c.oom_known)
      fmt::print(os, "{:<44} {:<22} {:>12} {:>12} {:>9} {:>6}  {}\n", c.id.substr(0, 44), "out of memory",
                 c.oom_measured ? "yes" : c.oom_implied ? "no (ran)" : "no",
                 c.oom_predicted ? "yes" : "no", "", "", c.oom_measured == c.oom_predicted ? "pass" : "FAIL");
    failed += c.pass ? 0 : 1;
  }
  fmt::print(os, "\n{} passed, {} failed\n", checks.size() - static_cast<size_t>(failed), failed);
  fmt::print(os, "error: predicted / measured - 1; a step time predicted short (negative) is the same optimistic error as a rate "
                 "predicted high (positive)\n");
}

Json checks_json(const std::vector<RunCheck>& checks) {
  Json arr = Json::array();
  for (const auto& c : checks) {
    Json cmps = Json::array();
    for (const auto& cmp : c.comparisons)
      cmps.push_back({{"figure", cmp.figure}, {"detail", cmp.detail}, {"measured", cmp.measured}, {"predicted", cmp.predicted},
                      {"error", cmp.error}, {"abs_error", std::abs(cmp.error)}, {"tolerance", cmp.tolerance}, {"judged", cmp.judged}, {"pass", cmp.pass}});
    Json j = {{"id", c.id}, {"file", c.file}, {"pass", c.pass}, {"comparisons", cmps}};
    if (c.oom_known) j["oom"] = {{"measured", c.oom_measured}, {"predicted", c.oom_predicted}, {"implied", c.oom_implied}};
    if (c.has_shares) {
      Json sh = Json::object();
      for (size_t k = 0; k < kTimeClasses.size(); ++k) sh[kTimeClasses[k].name] = c.shares[k];
      j["time_shares"] = sh;
    }
    arr.push_back(j);
  }
  return {{"schema", "parasim.check/1"}, {"runs", arr}};
}

ErrorStats error_stats(const std::vector<double>& e) {
  ErrorStats s;
  s.n = static_cast<std::int64_t>(e.size());
  if (e.empty()) return s;
  std::vector<double> a;
  for (double x : e) {
    a.push_back(std::abs(x));
    s.mape += std::abs(x);
    s.bias += x;
    s.max = std::max(s.max, std::abs(x));
  }
  s.mape /= static_cast<double>(e.size());
  s.bias /= static_cast<double>(e.size());
  std::sort(a.begin(), a.end());
  const size_t n = a.size();
  s.median = n % 2 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]);
  return s;
}

ValidationReport validate_dir(const std::string& dir, const std::string& data_dir, const Registries& reg,
                              std::int64_t interval_samples, bool shares, const ProgressFn& progress) {
  ValidationReport rep;
  rep.dir = dir;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json" && e.path().filename() != "skipped.json") files.push_back(e.path().string());
  if (ec) throw ConfigError(dir + ": cannot read directory: " + ec.message());
  std::sort(files.begin(), files.end());
  const std::string skipped = dir + "/skipped.json";
  if (std::filesystem::exists(skipped)) rep.converter_skipped = read_json_file(skipped);
  std::vector<double> thr, mem;
  for (const auto& f : files) {
    try {
      const MeasuredRun run = load_measured(f, data_dir);
      RunCheck c = check_run(run, reg, Tolerances{}, interval_samples, shares);
      if (c.has_interval && throughput_comparison(c)) {
        ++rep.with_interval;
        rep.inside += c.throughput_inside;
      }
      if (const Comparison* t = throughput_comparison(c)) thr.push_back(t->throughput_error);
      if (const Comparison* m = memory_comparison(c)) mem.push_back(m->error);
      if (c.oom_known) {
        ++rep.oom_total;
        rep.oom_implied += c.oom_implied;
        rep.oom_agree += c.oom_measured == c.oom_predicted;
      }
      rep.runs.push_back(std::move(c));
    } catch (const ConfigError& e) {
      rep.failures.push_back({f, e.what()});
    }
    if (progress) progress(rep.runs.size() + rep.failures.size(), files.size());
  }
  rep.throughput = error_stats(thr);
  rep.memory = error_stats(mem);
  return rep;
}

namespace {

ModelErrorBand band_of(const std::vector<std::pair<std::string, double>>& runs) {  // (source, r)
  ModelErrorBand me;
  std::set<std::string> sources;
  for (const auto& [s, x] : runs) {
    me.log_ratios.push_back(x);
    sources.insert(s);
  }
  std::sort(me.log_ratios.begin(), me.log_ratios.end());
  me.sources = static_cast<std::int64_t>(sources.size());
  me.p10 = quantile_sorted(me.log_ratios, 0.10);
  me.p90 = quantile_sorted(me.log_ratios, 0.90);
  std::int64_t inside = 0;
  for (const auto& held : sources) {
    std::vector<double> others;
    for (const auto& [s, x] : runs)
      if (s != held) others.push_back(x);
    std::sort(others.begin(), others.end());
    const double lo = quantile_sorted(others, 0.10), hi = quantile_sorted(others, 0.90);
    for (const auto& [s, x] : runs)
      if (s == held && !others.empty()) inside += x >= lo && x <= hi;
  }
  me.held_out_coverage = runs.empty() ? 0.0 : static_cast<double>(inside) / static_cast<double>(runs.size());
  return me;
}

}  // namespace

ModelErrorBands model_error_of(const ValidationReport& r) {
  std::vector<std::pair<std::string, double>> all;
  std::map<std::string, std::vector<std::pair<std::string, double>>> by_class;
  for (const auto& c : r.runs)
    if (const Comparison* t = throughput_comparison(c)) {
      all.push_back({c.source, std::log1p(t->throughput_error)});
      if (!c.model_class.empty()) by_class[c.model_class].push_back(all.back());
    }
  ModelErrorBands me;
  me.all = band_of(all);
  for (const auto& [cls, runs] : by_class) me.classes[cls] = band_of(runs);
  return me;
}

namespace {

// Solves (S^T S + ridge I) x = S^T y over the columns `cols` of the rows' shares (Gaussian
// elimination with partial pivoting; the ridge keeps it regular).
TimeShares ridge_fit(const std::vector<std::pair<TimeShares, double>>& rows, const std::vector<size_t>& cols, double ridge) {
  const size_t m = cols.size();
  std::vector<std::vector<double>> A(m, std::vector<double>(m + 1, 0.0));
  for (const auto& [sh, y] : rows)
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = 0; j < m; ++j) A[i][j] += sh[cols[i]] * sh[cols[j]];
      A[i][m] += sh[cols[i]] * y;
    }
  for (size_t i = 0; i < m; ++i) A[i][i] += ridge;
  for (size_t i = 0; i < m; ++i) {
    size_t piv = i;
    for (size_t r = i + 1; r < m; ++r)
      if (std::abs(A[r][i]) > std::abs(A[piv][i])) piv = r;
    std::swap(A[i], A[piv]);
    for (size_t r = 0; r < m; ++r) {
      if (r == i) continue;
      const double f = A[r][i] / A[i][i];
      for (size_t j = i; j <= m; ++j) A[r][j] -= f * A[i][j];
    }
  }
  TimeShares x{};
  for (size_t i = 0; i < m; ++i) x[cols[i]] = A[i][m] / A[i][i];
  return x;
}

double fitted(const TimeShares& sh, const TimeShares& x) {
  double f = 0;
  for (size_t k = 0; k < sh.size(); ++k) f += sh[k] * x[k];
  return f;
}

}  // namespace

Attribution attribute(const std::string& group, const std::vector<const RunCheck*>& runs) {
  constexpr size_t K = kTimeClasses.size();
  Attribution a;
  a.group = group;
  std::vector<std::pair<TimeShares, double>> rows;  // shares, ln(measured step / predicted step)
  for (const RunCheck* c : runs) {
    const Comparison* t = throughput_comparison(*c);
    if (!c->has_shares || !t || !(t->throughput_error > -1)) continue;
    rows.push_back({c->shares, std::log1p(t->throughput_error)});
    for (size_t k = 0; k < K; ++k) a.mean_share[k] += c->shares[k];
  }
  a.n = static_cast<std::int64_t>(rows.size());
  if (rows.empty()) return a;
  const double n = static_cast<double>(a.n);
  for (double& m : a.mean_share) m /= n;
  std::vector<size_t> cols;
  for (size_t k = 0; k < K; ++k)
    if (a.mean_share[k] >= kAttributionMinShare) cols.push_back(k);
  // A group tells apart at most half as many classes as it has runs: the largest shares are kept.
  std::stable_sort(cols.begin(), cols.end(), [&](size_t i, size_t j) { return a.mean_share[i] > a.mean_share[j]; });
  cols.resize(std::min(cols.size(), rows.size() / 2));
  std::sort(cols.begin(), cols.end());
  // Empirical Bayes: the least-squares fit's residual variance over the prior's spread sets the
  // ridge (a ln-multiplier prior N(0, kAttributionPriorSpread^2) under residual noise N(0, tau^2)).
  const TimeShares x0 = ridge_fit(rows, cols, 1e-9 * n);
  double rss = 0;
  for (const auto& [sh, y] : rows) {
    const double r = y - fitted(sh, x0);
    rss += r * r;
  }
  const double dof = std::max(1.0, n - static_cast<double>(cols.size()));
  const double ridge = rss / dof / (kAttributionPriorSpread * kAttributionPriorSpread);
  const TimeShares x = ridge_fit(rows, cols, std::max(ridge, 1e-9 * n));
  for (size_t k : cols) {
    a.fitted[k] = true;
    a.multiplier[k] = std::exp(x[k]);
  }
  for (const auto& [sh, y] : rows) {
    a.mape_before += std::abs(std::expm1(y));
    a.mape_after += std::abs(std::expm1(y - fitted(sh, x)));
  }
  a.mape_before /= n;
  a.mape_after /= n;
  return a;
}

std::vector<Attribution> attribution_by(const ValidationReport& r, const std::function<std::string(const RunCheck&)>& key) {
  std::map<std::string, std::vector<const RunCheck*>> by;
  std::vector<const RunCheck*> all;
  for (const auto& c : r.runs)
    if (c.has_shares && throughput_comparison(c)) {
      by[key(c)].push_back(&c);
      all.push_back(&c);
    }
  std::vector<Attribution> out;
  if (all.empty()) return out;
  for (const auto& [k, v] : by) out.push_back(attribute(k, v));
  out.push_back(attribute("all runs", all));
  return out;
}

namespace {

// How the error attribution groups runs: title in the Markdown report, key in the JSON.
struct AttributionGrouping {
  const char* title;
  const char* json;
  std::string (*key)(const RunCheck&);
};
const AttributionGrouping kAttributionGroupings[] = {
    {"source", "by_source", [](const RunCheck& c) { return c.source; }},
    {"GPU", "by_gpu", [](const RunCheck& c) { return c.gpu; }},
};

using Groups = std::map<std::string, std::pair<std::vector<double>, std::vector<double>>>;

Groups group_by(const ValidationReport& r, const std::function<std::string(const RunCheck&)>& key) {
  Groups g;
  for (const auto& c : r.runs) {
    auto& [t, m] = g[key(c)];
    if (const Comparison* x = throughput_comparison(c)) t.push_back(x->throughput_error);
    if (const Comparison* x = memory_comparison(c)) m.push_back(x->error);
  }
  return g;
}

std::string pct(double x) { return fmt::format("{:.1f}%", 100 * x); }

// Job size: a synchronous step waits for its slowest GPU, so errors that grow with it show here.
const std::vector<std::pair<std::int64_t, std::string>>& job_sizes() {
  static const std::vector<std::pair<std::int64_t, std::string>> sizes = {
      {1, "1 GPU"}, {8, "2-8 GPUs"}, {64, "9-64 GPUs"}, {512, "65-512 GPUs"}, {4096, "513-4,096 GPUs"},
      {std::numeric_limits<std::int64_t>::max(), "over 4,096 GPUs"}};
  return sizes;
}
std::string job_size_of(const RunCheck& c) {
  for (const auto& [upto, label] : job_sizes())
    if (c.gpus <= upto) return label;
  return job_sizes().back().second;
}

// Rows in `order` when given (groups not named there are left out), else in key order.
void print_group_table(std::ostream& os, const std::string& title, const Groups& g, const std::vector<std::string>& order = {}) {
  fmt::print(os, "\n### By {}\n\n| {} | runs | throughput MAPE | median | max | bias | memory runs | memory MAPE | memory bias |\n|---|---|---|---|---|---|---|---|---|\n", title, title);
  std::vector<std::string> keys = order;
  if (keys.empty())
    for (const auto& kv : g) keys.push_back(kv.first);
  for (const auto& k : keys) {
    const auto it = g.find(k);
    if (it == g.end()) continue;
    const auto& v = it->second;
    const ErrorStats t = error_stats(v.first), m = error_stats(v.second);
    fmt::print(os, "| {} | {} | {} | {} | {} | {:+.1f}% | {} | {} | {} |\n", k, t.n, t.n ? pct(t.mape) : "-", t.n ? pct(t.median) : "-",
               t.n ? pct(t.max) : "-", 100 * t.bias, m.n, m.n ? pct(m.mape) : "-", m.n ? fmt::format("{:+.1f}%", 100 * m.bias) : "-");
  }
}

}  // namespace

void print_validation_markdown(std::ostream& os, const ValidationReport& r, const std::string& command) {
  fmt::print(os, "# parasim validation report\n\nGenerated by `{}`. Throughput error is predicted/measured - 1 on "
                 "throughput (step time inverted); memory error on peak memory. MAPE = mean absolute percentage error; "
                 "bias = mean signed error (positive: parasim predicts faster / more memory).\n\n", command);
  fmt::print(os, "## Headline\n\n| figure | runs | MAPE | median | max | bias |\n|---|---|---|---|---|---|\n");
  fmt::print(os, "| throughput | {} | {} | {} | {} | {:+.1f}% |\n", r.throughput.n, pct(r.throughput.mape), pct(r.throughput.median),
             pct(r.throughput.max), 100 * r.throughput.bias);
  fmt::print(os, "| peak memory | {} | {} | {} | {} | {:+.1f}% |\n", r.memory.n, pct(r.memory.mape), pct(r.memory.median),
             pct(r.memory.max), 100 * r.memory.bias);
  if (r.oom_total)
    fmt::print(os, "| out-of-memory verdict | {} | {} of {} agree ({} stated in the source, {} that ran and so fit) | | | |\n", r.oom_total,
               r.oom_agree, r.oom_total, r.oom_total - r.oom_implied, r.oom_implied);
  if (r.with_interval)
    fmt::print(os, "\nPrediction intervals (p10..p90 over the calibration profiles' published spread, fixed seed): the measured "
                   "throughput falls inside for {} of {} runs ({:.0f}%).\n", r.inside, r.with_interval,
               100.0 * static_cast<double>(r.inside) / static_cast<double>(r.with_interval));
  if (const ModelErrorBands error = model_error_of(r); !error.all.log_ratios.empty()) {
    const ModelErrorBand& me = error.all;
    fmt::print(os, "\nModel error band (parasim's own error on these runs, r = ln(measured step / predicted step)): p10..p90 of r "
                   "= {:+.3f}..{:+.3f}, i.e. the measured step took {:.2f}x to {:.2f}x the predicted one for 80% of the {} runs. "
                   "Held out by source (each run judged against the band of the other {} sources' runs), {} of runs fall inside "
                   "({}); `parasim run --interval` combines this band with the profile's spread.\n",
               me.p10, me.p90, std::exp(me.p10), std::exp(me.p90), me.log_ratios.size(), me.sources - 1,
               pct(me.held_out_coverage), kModelErrorFile);
    if (!error.classes.empty()) {
      fmt::print(os, "\nThe error differs by model class, so `run --interval` takes the band of the scenario's class when that "
                     "class holds at least {} runs:\n\n| model class | runs | sources | p10..p90 of r | measured / predicted step "
                     "| held out by source | inside the all-runs band |\n|---|---|---|---|---|---|---|\n",
                 kMinClassRuns);
      for (const auto& [cls, band] : error.classes) {
        const auto inside = std::count_if(band.log_ratios.begin(), band.log_ratios.end(),
                                          [&](double x) { return x >= me.p10 && x <= me.p90; });
        fmt::print(os, "| {} | {} | {} | {:+.3f}..{:+.3f} | {:.2f}x..{:.2f}x | {} | {} of {} |\n", cls, band.log_ratios.size(),
                   band.sources, band.p10, band.p90, std::exp(band.p10), std::exp(band.p90), pct(band.held_out_coverage), inside,
                   band.log_ratios.size());
      }
    }
  }
  fmt::print(os, "\n## Coverage\n\n{} measured runs simulated from `{}`; {} could not be loaded.\n", r.runs.size(), r.dir, r.failures.size());
  if (r.converter_skipped.is_object() && r.converter_skipped.contains("by_reason")) {
    fmt::print(os, "\nThe converter skipped {} of {} published rows (by missing feature):\n\n| rows | reason |\n|---|---|\n",
               r.converter_skipped.value("skipped", 0), r.converter_skipped.value("total", 0));
    for (const auto& [k, v] : r.converter_skipped["by_reason"].items()) fmt::print(os, "| {} | {} |\n", v.get<int>(), k);
  }
  for (const auto& f : r.failures) fmt::print(os, "- `{}`: {}\n", f.file, f.reason);
  print_group_table(os, "source", group_by(r, [](const RunCheck& c) { return c.source; }));
  print_group_table(os, "GPU", group_by(r, [](const RunCheck& c) { return c.gpu; }));
  print_group_table(os, "parallelism", group_by(r, [](const RunCheck& c) { return c.family; }));
  std::vector<std::string> size_order;
  for (const auto& sz : job_sizes()) size_order.push_back(sz.second);
  print_group_table(os, "job size", group_by(r, job_size_of), size_order);
  // The source's own transcription confidence: "low" rows are values read off figures.
  print_group_table(os, "confidence", group_by(r, [](const RunCheck& c) { return c.confidence.empty() ? std::string("unstated") : c.confidence; }));
  if (std::any_of(r.runs.begin(), r.runs.end(), [](const RunCheck& c) { return c.has_shares; })) {
    fmt::print(os, "\n## Error attribution\n\nEach run is simulated again with one class of priced time 2 % longer: GEMMs "
                   "(with the unfused attention's batched GEMMs), fused attention, memory-bound kernels, and collectives and "
                   "transfers; the change in the predicted step is that class's share of the step on the critical path "
                   "(hidden communication has none). Per group of runs, a least-squares fit of ln(measured / predicted step) = "
                   "sum of share x ln(multiplier) gives the multiplier on each class's time that "
                   "the measurements imply: above 1, parasim prices that class faster than these runs ran it. The fit is a ridge "
                   "regression toward 1 whose weight is the residual variance over a prior spread of {} in ln(multiplier) "
                   "(empirical Bayes), so classes a group's runs cannot tell apart stay near 1. Classes with a mean share under "
                   "{:.0f}% are not fitted (-), nor more classes than half the group's runs (the largest shares are kept). "
                   "In-sample: read it as where the error sits, not as a correction.\n",
               kAttributionPriorSpread, 100 * kAttributionMinShare);
    for (const auto& g : kAttributionGroupings) {
      fmt::print(os, "\n### By {}\n\n| {} | runs | GEMM share | attention share | memory share | network share | GEMM x | "
                     "attention x | memory x | network x | MAPE | MAPE with the multipliers |\n"
                     "|---|---|---|---|---|---|---|---|---|---|---|---|\n", g.title, g.title);
      for (const auto& a : attribution_by(r, g.key)) {
        fmt::print(os, "| {} | {} |", a.group, a.n);
        for (double m : a.mean_share) fmt::print(os, " {} |", pct(m));
        for (size_t k = 0; k < kTimeClasses.size(); ++k)
          fmt::print(os, " {} |", a.fitted[k] ? fmt::format("{:.3f}", a.multiplier[k]) : std::string("-"));
        fmt::print(os, " {} | {} |\n", pct(a.mape_before), pct(a.mape_after));
      }
    }
  }
  std::vector<const RunCheck*> worst;
  for (const auto& c : r.runs)
    if (throughput_comparison(c)) worst.push_back(&c);
  std::sort(worst.begin(), worst.end(), [](auto* a, auto* b) {
    return std::abs(throughput_comparison(*a)->throughput_error) > std::abs(throughput_comparison(*b)->throughput_error);
  });
  fmt::print(os, "\n## Largest throughput errors\n\n| run | figure | measured | predicted | throughput error |\n|---|---|---|---|---|\n");
  for (size_t i = 0; i < std::min<size_t>(15, worst.size()); ++i) {
    const Comparison* t = throughput_comparison(*worst[i]);
    fmt::print(os, "| {} | {} | {:.4g} | {:.4g} | {:+.1f}% |\n", worst[i]->id, t->figure, t->measured, t->predicted, 100 * t->throughput_error);
  }
}

Json validation_json(const ValidationReport& r) {
  auto stats = [](const ErrorStats& s) { return Json{{"n", s.n}, {"mape", s.mape}, {"median", s.median}, {"max", s.max}, {"bias", s.bias}}; };
  // Error statistics per group of runs: by source, GPU profile and job size.
  auto per_group = [&](const std::function<std::string(const RunCheck&)>& key) {
    Json per = Json::object();
    for (const auto& [k, v] : group_by(r, key)) per[k] = {{"throughput", stats(error_stats(v.first))}, {"memory", stats(error_stats(v.second))}};
    return per;
  };
  Json fails = Json::array();
  for (const auto& f : r.failures) fails.push_back({{"file", f.file}, {"reason", f.reason}});
  Json attribution = Json::object();
  for (const auto& g : kAttributionGroupings) {
    Json rows = Json::array();
    for (const auto& a : attribution_by(r, g.key)) {
      Json share = Json::object(), mult = Json::object();
      for (size_t k = 0; k < kTimeClasses.size(); ++k) {
        share[kTimeClasses[k].name] = a.mean_share[k];
        mult[kTimeClasses[k].name] = a.fitted[k] ? Json(a.multiplier[k]) : Json(nullptr);
      }
      rows.push_back({{"group", a.group}, {"runs", a.n}, {"mean_share", share}, {"multiplier", mult},
                      {"mape", a.mape_before}, {"mape_with_multipliers", a.mape_after}});
    }
    attribution[g.json] = rows;
  }
  return {{"schema", "parasim.validation/1"}, {"runs", r.runs.size()}, {"throughput", stats(r.throughput)},
          {"interval", {{"inside", r.inside}, {"with_interval", r.with_interval}}},
          {"model_error", [&] {
             const ModelErrorBands error = model_error_of(r);
             const auto band = [](const ModelErrorBand& me) {
               return Json{{"p10", me.p10}, {"p90", me.p90}, {"runs", me.log_ratios.size()}, {"sources", me.sources},
                           {"held_out_coverage", me.held_out_coverage}};
             };
             Json j = band(error.all);
             j["classes"] = Json::object();
             for (const auto& [cls, me] : error.classes) j["classes"][cls] = band(me);
             return j;
           }()},
          {"memory", stats(r.memory)},
          {"oom", {{"agree", r.oom_agree}, {"total", r.oom_total}, {"implied", r.oom_implied}}},
          {"by_source", per_group([](const RunCheck& c) { return c.source; })},
          {"by_gpu", per_group([](const RunCheck& c) { return c.gpu; })}, {"by_job_size", per_group(job_size_of)},
          {"attribution", attribution}, {"load_failures", fails}, {"checks", checks_json(r.runs)["runs"]}};
}

}  // namespace parasim
