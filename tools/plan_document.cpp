#include "tools/plan_document.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "sim/scenario/measured.h"
#include "tools/cli_checks.h"
#include "tools/time_to_train.h"

namespace parasim {

namespace {

// "A..B" -> A, 2A, 4A, ... up to B.
std::vector<std::int64_t> gpu_counts(const PlanOpts& o) {
  if (o.range.empty()) return {o.gpus};
  const size_t dots = o.range.find("..");
  std::int64_t a = 0, b = 0;
  try {
    if (dots == std::string::npos) throw std::invalid_argument("no ..");
    a = std::stoll(o.range.substr(0, dots));
    b = std::stoll(o.range.substr(dots + 2));
  } catch (const std::exception&) {
    throw ConfigError("--gpus-range " + o.range + ": expected A..B, e.g. 64..1024");
  }
  if (a <= 0 || b < a) throw ConfigError("--gpus-range " + o.range + ": expected 0 < A <= B");
  std::vector<std::int64_t> v;
  for (std::int64_t g = a; g <= b; g *= 2) v.push_back(g);
  return v;
}

// Time to train on the best fitting layout, with goodput (sim/planning/goodput.h): its scenario
// is rebuilt from the layout it was simulated from. Null without --tokens or a fitting layout.
Json best_time_to_train(const PlanJob& job, const PlanResult& res, const PlanOpts& o, const std::string& data_dir) {
  const auto& rows = res.evaluated.rows;
  if (o.tokens <= 0 || rows.empty() || rows.front().status != "ok") return nullptr;
  const Row& best = rows.front();
  const Scenario sc = parse_scenario(layout_scenario(job, res.enumeration.layouts.at(best.index)), job.base_file, data_dir);
  TimeToTrainOptions t;
  t.tokens = o.tokens;
  if (o.price > 0) t.price_per_gpu_hour = o.price;
  return ttt_json(t.evaluate(sc, best.step_s, data_dir));
}

// A point of the GPU-count curve: the best layout at that count and, with --tokens, its time to
// train with goodput (interruptions grow with the GPU count; ideal_days leaves them out).
Json curve_point(const PlanJob& job, const PlanResult& res, const PlanOpts& o, const std::string& data_dir) {
  Json p = {{"gpus", job.gpus}, {"evaluated", res.evaluated.evaluated}};
  const auto& rows = res.evaluated.rows;
  p["step_s"] = nullptr, p["days"] = nullptr, p["ideal_days"] = nullptr, p["goodput"] = nullptr, p["gpu_hours"] = nullptr,
  p["cost"] = nullptr;
  if (rows.empty() || rows.front().status != "ok") return p;
  const Row& b = rows.front();
  p["step_s"] = b.step_s;
  p["tokens_per_s"] = b.tokens_per_s;
  p["settings"] = b.settings;
  const Json t = best_time_to_train(job, res, o, data_dir);
  if (t.is_null()) return p;
  for (const char* k : {"days", "ideal_days", "goodput", "gpu_hours"}) p[k] = t[k];
  p["cost"] = o.price > 0 ? Json(o.price * t["gpu_hours"].get<double>()) : Json(nullptr);
  return p;
}

}  // namespace

PlanJob plan_job_of(const PlanOpts& o, const std::string& data_dir) {
  for (const auto& [name, v] : {std::pair{"--tokens", o.tokens}, std::pair{"--price-per-gpu-hour", o.price}, std::pair{"--deadline-days", o.deadline_days}})
    checked_number(name, v, 0, false);  // the one check of these options, for the CLI and the Python module
  if (o.deadline_days > 0 && o.tokens <= 0) throw ConfigError("--deadline-days needs --tokens");
  if (!(o.headroom >= 0 && o.headroom < 1)) throw ConfigError("--headroom: expected a fraction in [0, 1), got " + fmt::format("{}", o.headroom));
  for (const auto& [name, v] : {std::pair{"--top", o.top}, std::pair{"--max-micro-batch", o.max_mb}, std::pair{"--max-vpp", o.max_vpp}})
    if (v < 1) throw ConfigError(fmt::format("{}: expected an integer >= 1, got {}", name, v));
  PlanJob job;
  job.model = o.model, job.gpu = o.gpu, job.gpus = o.gpus, job.seq = o.seq, job.global_batch = o.global_batch, job.tokens = o.tokens;
  job.headroom = o.headroom, job.allow_cross_node_tp = o.cross_node_tp, job.max_micro_batch = o.max_mb, job.max_vpp = o.max_vpp;
  if (o.search != "exhaustive" && o.search != "bound") throw ConfigError("--search: expected exhaustive or bound, got '" + o.search + "'");
  job.search_top = o.search == "bound" ? std::max<std::int64_t>(1, o.top) : 0;
  if (o.base.empty()) {
    choose_base(job, data_dir + "/scenarios");
    return job;
  }
  const Json file = read_json_file(o.base);
  // A measured run plans on its scenario's cluster.
  const Json& j = is_measured_document(file) && file.contains("scenario") ? file["scenario"] : file;
  if (!j.is_object() || !j.contains("cluster"))
    throw ConfigError(o.base + ": expected a scenario (or a measured run, parasim.measured/1) with a cluster block");
  job.base = {{"schema", "parasim.scenario/1"}, {"cluster", j.at("cluster")}, {"training", j.value("training", Json::object())}};
  if (j.contains("network")) job.base["network"] = j.at("network");
  if (j.contains("stack")) job.base["stack"] = j.at("stack");  // its framework's settings (the host thread among them)
  job.base["cluster"]["gpu"] = o.gpu;
  job.base_file = o.base;
  return job;
}

PlanOutcome plan_outcome(const PlanOpts& o, const std::string& data_dir, const Registries& reg, EvalOptions opt,
                         const PlanHooks& hooks) {
  const Objective objective = parse_objective(o.objective, "--objective");
  PlanOutcome out;
  out.job = plan_job_of(o, data_dir);
  PlanJob job = out.job;
  std::vector<std::int64_t> counts = {o.gpus};
  for (std::int64_t g : gpu_counts(o))
    if (g != o.gpus) counts.push_back(g);
  std::optional<PlanResult> main_result;
  for (std::int64_t g : counts) {
    job.gpus = g;
    if (hooks.progress) opt.progress = hooks.progress(g);
    const auto start = std::chrono::steady_clock::now();
    PlanResult res = run_plan(job, data_dir, reg, objective, opt);
    if (hooks.planned) hooks.planned(g, res, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    out.interrupted = out.interrupted || res.evaluated.interrupted;
    if (hooks.root) out.curve.push_back(curve_point(job, res, o, data_dir));
    if (g == o.gpus) main_result = std::move(res);
    if (out.interrupted) break;
  }
  out.result = std::move(*main_result);
  if (!hooks.root) return out;
  std::sort(out.curve.begin(), out.curve.end(), [](const Json& a, const Json& b) { return a["gpus"] < b["gpus"]; });
  out.deadline = nullptr;
  if (o.deadline_days > 0)
    for (const Json& p : out.curve)
      if (p["days"].is_number() && p["days"].get<double>() <= o.deadline_days) {
        out.deadline = p;
        break;
      }
  out.time_to_train = best_time_to_train(out.job, out.result, o, data_dir);
  return out;
}

const std::vector<std::string>& plan_setting_names() {
  static const std::vector<std::string> names = {"dp",       "tp",       "pp",        "vpp", "cp",        "ep", "etp",
                                                 "micro_batch", "schedule", "sharding", "recompute", "sp", "tp_overlap"};
  return names;
}

Json plan_json(const PlanOpts& o, const PlanOutcome& p) {
  const PlanResult& res = p.result;
  Json rows = Json::array();
  for (const Row& r : res.evaluated.rows) rows.push_back(row_json(r, o.price));
  Json pruned = res.enumeration.pruned;
  for (const auto& [k, n] : res.evaluated.skipped) pruned[k] = n;
  return {{"schema", "parasim.plan/1"},
          {"job", {{"model", o.model}, {"gpu", o.gpu}, {"gpus", o.gpus}, {"seq", o.seq}, {"global_batch", o.global_batch},
                   {"tokens", o.tokens > 0 ? Json(o.tokens) : Json(nullptr)}, {"headroom", o.headroom}, {"base", p.job.base_file}}},
          {"objective", objective_name(parse_objective(o.objective, "--objective"))}, {"candidates", res.enumeration.candidates},
          {"pruned", pruned}, {"skipped_examples", res.evaluated.skipped_examples}, {"evaluated", res.evaluated.evaluated}, {"search", o.search},
          {"bound_skipped", res.evaluated.bound_skipped}, {"interrupted", p.interrupted}, {"rows", rows},
          {"time_to_train", p.time_to_train}, {"curve", p.curve}, {"deadline", p.deadline}};
}

}  // namespace parasim
