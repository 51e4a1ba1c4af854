// parasim plan: every valid layout of a job, pruned by the framework rules and the memory model,
// simulated and ranked (sim/planning/layouts.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "sim/planning/layouts.h"
#include "tools/commands.h"
#include "tools/planning_io.h"
#include "tools/time_to_train.h"

namespace parasim {

namespace {

struct PlanOpts {
  std::string model, gpu, range, csv, base, objective = "throughput";
  std::int64_t gpus = 0, seq = 0, global_batch = 0, top = 5;
  double tokens = 0, price = 0, deadline_days = 0, headroom = 0.1;
  bool json = false, cross_node_tp = false, dry_run = false;
  int jobs = 1;
  std::int64_t max_mb = 8, max_vpp = 8;
};

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

// The curve point of one GPU count: its best fitting layout.
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

void print_plan(const PlanJob& job, const PlanResult& res, const PlanOpts& o) {
  const Enumeration& en = res.enumeration;
  std::cout << fmt::format("plan: {} on {} x {} (cluster from {}), seq {}, global batch {}\n", job.model, job.gpus, job.gpu,
                           job.base_file, job.seq, job.global_batch);
  std::cout << fmt::format("  {} candidate layouts; {} removed by the rules below; {} simulated\n", en.candidates,
                           en.candidates - static_cast<std::int64_t>(en.layouts.size()), res.evaluated.evaluated);
  for (const auto& [rule, n] : en.pruned) std::cout << fmt::format("    {:>10}  {}\n", n, rule);
  for (const auto& [reason, n] : res.evaluated.skipped) std::cout << fmt::format("    {:>10}  {}\n", n, reason);
  const auto fit = std::count_if(res.evaluated.rows.begin(), res.evaluated.rows.end(), [](const Row& r) { return r.status == "ok"; });
  std::cout << fmt::format("  {} fit with {:.0f} % headroom; best {} by {}:\n\n", fit, 100 * job.headroom, o.top, o.objective);
  const std::vector<std::string> names = {"dp", "tp", "pp", "vpp", "cp", "ep", "micro_batch", "schedule", "sharding", "recompute", "sp", "tp_overlap"};
  std::cout << rows_table(res.evaluated.rows, names, static_cast<std::size_t>(o.top));
}

int run_plan_command(const PlanOpts& o, Context& ctx) {
  const Objective objective = parse_objective(o.objective, "--objective");
  if (o.deadline_days > 0 && o.tokens <= 0) throw ConfigError("--deadline-days needs --tokens");
  if (o.headroom < 0 || o.headroom >= 1) throw ConfigError("--headroom: expected a fraction in [0, 1)");
  PlanJob job;
  job.model = o.model, job.gpu = o.gpu, job.seq = o.seq, job.global_batch = o.global_batch, job.tokens = o.tokens;
  job.headroom = o.headroom, job.allow_cross_node_tp = o.cross_node_tp, job.max_micro_batch = o.max_mb, job.max_vpp = o.max_vpp;
  if (!o.base.empty()) {
    const Json j = read_json_file(o.base);
    if (!j.is_object() || !j.contains("cluster")) throw ConfigError(o.base + ": expected a scenario with a cluster block");
    job.base = {{"schema", "parasim.scenario/1"}, {"cluster", j.at("cluster")}, {"training", j.value("training", Json::object())}};
    if (j.contains("network")) job.base["network"] = j.at("network");
    job.base["cluster"]["gpu"] = o.gpu;
    job.base_file = o.base;
  } else {
    choose_base(job, ctx.data_dir + "/scenarios");
  }
  if (o.dry_run) {
    job.gpus = o.gpus;
    const Enumeration en = enumerate_layouts(job, plan_base_scenario(job, ctx.data_dir));
    if (!ctx.prints()) return 0;
    std::cout << fmt::format("plan: {} on {} x {} (cluster from {}): {} candidate layouts, {} to simulate\n", job.model, job.gpus,
                             job.gpu, job.base_file, en.candidates, en.layouts.size());
    for (const auto& [rule, n] : en.pruned) std::cout << fmt::format("    {:>10}  {}\n", n, rule);
    return 0;
  }
  const InterruptGuard guard;
  EvalOptions opt;
  opt.jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  opt.stop = guard.stop();
  opt.distribution = ctx.distribution;
  // --gpus first (its layouts are the table), then the rest of the range.
  std::vector<std::int64_t> counts = {o.gpus};
  for (std::int64_t g : gpu_counts(o))
    if (g != o.gpus) counts.push_back(g);
  Json curve = Json::array();
  std::optional<PlanResult> main_result;
  bool interrupted = false;
  for (std::int64_t g : counts) {
    job.gpus = g;
    if (ctx.prints()) opt.progress = terminal_progress(fmt::format("plan {} GPUs", g));
    const auto start = std::chrono::steady_clock::now();
    PlanResult res = run_plan(job, ctx.data_dir, ctx.registries, objective, opt);
    if (ctx.prints())
      report_rate(fmt::format("plan {} GPUs: {} candidates, {} after the rules and the memory bound", g, res.enumeration.candidates,
                            res.enumeration.layouts.size()),
                res.evaluated.evaluated, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), opt.jobs,
                ctx.distribution ? ctx.distribution->parts : 1);
    interrupted = interrupted || res.evaluated.interrupted;
    if (ctx.prints()) curve.push_back(curve_point(job, res, o, ctx.data_dir));
    if (g == o.gpus) main_result = std::move(res);
    if (interrupted) break;
  }
  if (!ctx.prints()) return 0;  // part 0 of an mpirun prints for all
  job.gpus = o.gpus;
  std::sort(curve.begin(), curve.end(), [](const Json& a, const Json& b) { return a["gpus"] < b["gpus"]; });
  Json deadline = nullptr;
  if (o.deadline_days > 0)
    for (const Json& p : curve)
      if (p["days"].is_number() && p["days"].get<double>() <= o.deadline_days) {
        deadline = p;
        break;
      }
  const PlanResult& res = *main_result;
  const Json ttt = best_time_to_train(job, res, o, ctx.data_dir);
  const std::vector<std::string> names = {"dp", "tp", "pp", "vpp", "cp", "ep", "etp", "micro_batch", "schedule", "sharding", "recompute", "sp", "tp_overlap"};
  if (!o.csv.empty()) write_file_whole(o.csv, rows_csv(res.evaluated.rows, names, o.price));
  if (o.json) {
    Json rows = Json::array();
    for (const Row& r : res.evaluated.rows) rows.push_back(row_json(r, o.price));
    Json pruned = res.enumeration.pruned;
    for (const auto& [k, n] : res.evaluated.skipped) pruned[k] = n;
    Json out = {{"schema", "parasim.plan/1"},
                {"job", {{"model", o.model}, {"gpu", o.gpu}, {"gpus", o.gpus}, {"seq", o.seq}, {"global_batch", o.global_batch},
                         {"tokens", o.tokens > 0 ? Json(o.tokens) : Json(nullptr)}, {"headroom", o.headroom}, {"base", job.base_file}}},
                {"objective", objective_name(objective)}, {"candidates", res.enumeration.candidates}, {"pruned", pruned},
                {"evaluated", res.evaluated.evaluated}, {"interrupted", interrupted}, {"rows", rows},
                {"time_to_train", ttt}, {"curve", curve}, {"deadline", deadline}};
    std::cout << out.dump(2) << "\n";
  } else {
    print_plan(job, res, o);
    if (!ttt.is_null())
      std::cout << fmt::format("\n  the best layout trains {:.4g} tokens in {:.2f} days ({:.4g} GPU-hours, goodput {:.1f} %); days "
                               "p10..p90 {:.2f}..{:.2f}\n",
                               o.tokens, ttt["days"].get<double>(), ttt["gpu_hours"].get<double>(), 100 * ttt["goodput"].get<double>(),
                               ttt["band"]["p10_days"].get<double>(), ttt["band"]["p90_days"].get<double>());
    if (curve.size() > 1 || o.tokens > 0) {
      std::cout << fmt::format("\n  {:>6} {:>10} {:>12} {:>10} {:>8} {:>14} {:>14}\n", "gpus", "step_s", "tokens/s", "days", "goodput",
                               "GPU-hours", "cost");
      for (const Json& p : curve) {
        auto num = [&](const char* k, const char* f) { return p[k].is_number() ? fmt::format(fmt::runtime(f), p[k].get<double>()) : std::string("-"); };
        std::cout << fmt::format("  {:>6} {:>10} {:>12} {:>10} {:>8} {:>14} {:>14}\n", p["gpus"].get<std::int64_t>(),
                                 num("step_s", "{:.4g}"), num("tokens_per_s", "{:.4g}"), num("days", "{:.2f}"),
                                 p["goodput"].is_number() ? fmt::format("{:.1f} %", 100 * p["goodput"].get<double>()) : "-",
                                 num("gpu_hours", "{:.4g}"), num("cost", "{:.4g}"));
      }
    }
    if (o.deadline_days > 0)
      std::cout << (deadline.is_null() ? fmt::format("\n  no GPU count planned meets {} days\n", o.deadline_days)
                                       : fmt::format("\n  smallest GPU count meeting {} days: {} ({:.2f} days)\n", o.deadline_days,
                                                     deadline["gpus"].get<std::int64_t>(), deadline["days"].get<double>()));
  }
  if (interrupted) {
    std::cerr << "interrupted: the output holds the layouts evaluated so far\n";
    return 130;
  }
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<PlanOpts>();
  CLI::App* cmd = app.add_subcommand("plan", "enumerate every valid layout of a training job, prune, simulate and rank them");
  cmd->add_option("--model", o->model, "zoo model name (models/)")->required();
  cmd->add_option("--gpu", o->gpu, "GPU profile name (calibrate/profiles/)")->required();
  cmd->add_option("--gpus", o->gpus, "GPU count")->required();
  cmd->add_option("--gpus-range", o->range, "A..B: also plan A, 2A, 4A, ... B GPUs and print the time/cost curve");
  cmd->add_option("--seq", o->seq, "sequence length")->required();
  cmd->add_option("--global-batch", o->global_batch, "sequences per step")->required();
  cmd->add_option("--tokens", o->tokens, "tokens to train on (time to train, the curve's days)");
  cmd->add_option("--price-per-gpu-hour", o->price, "price of one GPU-hour");
  cmd->add_option("--deadline-days", o->deadline_days, "the smallest GPU count (of --gpus or the range) that trains --tokens in time");
  cmd->add_option("--headroom", o->headroom, "fraction of GPU memory to leave free (default 0.1)");
  cmd->add_option("--top", o->top, "layouts to print (default 5)");
  cmd->add_option("--objective", o->objective, "throughput | cost | time");
  cmd->add_option("--base", o->base, "scenario whose cluster and training blocks the layouts start from (default: the first in "
                                     "scenarios/ on this GPU)");
  cmd->add_flag("--allow-cross-node-tp", o->cross_node_tp, "let tensor parallelism span nodes");
  cmd->add_option("--max-micro-batch", o->max_mb, "micro-batch sizes tried: powers of two up to this (default 8)");
  cmd->add_option("--max-vpp", o->max_vpp, "model chunks per stage tried: 1 to this (default 8)");
  cmd->add_option("--csv", o->csv, "also write every simulated layout to this CSV file");
  cmd->add_flag("--json", o->json, "print the parasim.plan/1 document on stdout");
  cmd->add_flag("--dry-run", o->dry_run, "enumerate and prune only: print what each rule removed and how many layouts would be simulated");
  cmd->add_option("--jobs,-j", o->jobs, "threads (0 = one per core); the output is the same for any count");
  cmd->callback([o, &ctx]() { ctx.exit_code = run_guarded([&]() { return run_plan_command(*o, ctx); }); });
}

}  // namespace parasim
