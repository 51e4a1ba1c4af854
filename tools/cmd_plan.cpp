// parasim plan: every valid layout of a job, pruned by the framework rules and the memory model,
// simulated and ranked (sim/planning/layouts.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "tools/cli_checks.h"
#include "tools/commands.h"
#include "tools/plan_document.h"
#include "tools/output_file.h"
#include "tools/planning_io.h"

namespace parasim {

namespace {

void print_plan(const PlanJob& job, const PlanResult& res, const PlanOpts& o) {
  const Enumeration& en = res.enumeration;
  std::cout << fmt::format("plan: {} on {} x {} (cluster from {}), seq {}, global batch {}\n", job.model, job.gpus, job.gpu,
                           job.base_file, job.seq, job.global_batch);
  std::cout << fmt::format("  {} candidate layouts; {} removed by the rules below; {} simulated\n", en.candidates,
                           en.candidates - static_cast<std::int64_t>(en.layouts.size()),
                           res.evaluated.evaluated - res.evaluated.bound_skipped);
  for (const auto& [rule, n] : en.pruned) std::cout << fmt::format("    {:>10}  {}\n", n, rule);
  for (const auto& [reason, n] : res.evaluated.skipped) std::cout << fmt::format("    {:>10}  {}\n", n, skipped_text(reason, n, res.evaluated));
  if (job.search_top > 0)
    std::cout << fmt::format("    {:>10}  not simulated (--search bound): their step's lower bound is above the {} best steps found; "
                             "the counts and the Pareto column below cover the simulated layouts\n",
                             res.evaluated.bound_skipped, job.search_top);
  const auto fit = std::count_if(res.evaluated.rows.begin(), res.evaluated.rows.end(), [](const Row& r) { return r.status == "ok"; });
  if (en.layouts.empty() && en.memory_pruned_sample.empty()) {
    std::cout << fmt::format("  no layout of {} on {} GPUs is left to simulate: the rules above removed all {} candidates\n", job.model,
                             job.gpus, en.candidates);
    return;
  }
  if (fit == 0) {
    std::cout << fmt::format("  no layout of {} fits in memory with {:.0f} % headroom on {} GPUs (every micro batch, recompute and "
                             "sharding above was tried): plan on more GPUs; --csv or --json lists each simulated layout and its status\n",
                             job.model, 100 * job.headroom, job.gpus);
    return;
  }
  std::cout << fmt::format("  {} fit with {:.0f} % headroom; best {} by {}:\n\n", fit, 100 * job.headroom, o.top, o.objective);
  const std::vector<std::string> names = {"dp", "tp", "pp", "vpp", "cp", "ep", "micro_batch", "schedule", "sharding", "recompute", "sp", "tp_overlap"};
  std::cout << rows_table(res.evaluated.rows, names, static_cast<std::size_t>(o.top));
}

void print_plan_text(const PlanOutcome& p, const PlanOpts& o) {
  print_plan(p.job, p.result, o);
  const Json& ttt = p.time_to_train;
  if (!ttt.is_null())
    std::cout << fmt::format("\n  the best layout trains {:.4g} tokens in {:.2f} days ({:.4g} GPU-hours, goodput {:.1f} %); days "
                             "p10..p90 {:.2f}..{:.2f}\n",
                             o.tokens, ttt["days"].get<double>(), ttt["gpu_hours"].get<double>(), 100 * ttt["goodput"].get<double>(),
                             ttt["band"]["p10_days"].get<double>(), ttt["band"]["p90_days"].get<double>());
  if (p.curve.size() > 1 || o.tokens > 0) {
    std::cout << fmt::format("\n  {:>6} {:>10} {:>12} {:>10} {:>8} {:>14} {:>14}\n", "gpus", "step_s", "tokens/s", "days", "goodput",
                             "GPU-hours", "cost");
    for (const Json& c : p.curve) {
      auto num = [&](const char* k, const char* f) { return c[k].is_number() ? fmt::format(fmt::runtime(f), c[k].get<double>()) : std::string("-"); };
      std::cout << fmt::format("  {:>6} {:>10} {:>12} {:>10} {:>8} {:>14} {:>14}\n", c["gpus"].get<std::int64_t>(),
                               num("step_s", "{:.4g}"), num("tokens_per_s", "{:.4g}"), num("days", "{:.2f}"),
                               c["goodput"].is_number() ? fmt::format("{:.1f} %", 100 * c["goodput"].get<double>()) : "-",
                               num("gpu_hours", "{:.4g}"), num("cost", "{:.4g}"));
    }
  }
  if (o.deadline_days > 0)
    std::cout << (p.deadline.is_null() ? fmt::format("\n  no GPU count planned meets {} days\n", o.deadline_days)
                                       : fmt::format("\n  smallest GPU count meeting {} days: {} ({:.2f} days)\n", o.deadline_days,
                                                     p.deadline["gpus"].get<std::int64_t>(), p.deadline["days"].get<double>()));
}

int run_plan_command(const PlanOpts& o, Context& ctx) {
  if (!o.csv.empty()) check_writable(o.csv, true, "--csv");  // before minutes of planning, not after
  if (o.dry_run) {
    const PlanJob job = plan_job_of(o, ctx.data_dir);
    const Enumeration en = enumerate_layouts(job, plan_base_scenario(job, ctx.data_dir));
    if (!ctx.prints()) return 0;
    std::cout << fmt::format("plan: {} on {} x {} (cluster from {}): {} candidate layouts, {} to simulate\n", job.model, job.gpus,
                             job.gpu, job.base_file, en.candidates, en.layouts.size());
    for (const auto& [rule, n] : en.pruned) std::cout << fmt::format("    {:>10}  {}\n", n, rule);
    return 0;
  }
  const InterruptGuard guard;
  EvalOptions opt;
  opt.jobs = thread_count(o.jobs);
  opt.stop = guard.stop();
  opt.distribution = ctx.distribution;
  PlanHooks hooks;
  hooks.root = ctx.prints();
  if (ctx.prints()) {
    hooks.progress = [](std::int64_t g) { return terminal_progress(fmt::format("plan {} GPUs", g)); };
    hooks.planned = [&](std::int64_t g, const PlanResult& res, double seconds) {
      report_rate(fmt::format("plan {} GPUs: {} candidates, {} after the rules and the memory bound", g, res.enumeration.candidates,
                              res.enumeration.layouts.size()),
                  res.evaluated.evaluated, seconds, opt.jobs, ctx.distribution ? ctx.distribution->parts : 1);
    };
  }
  const PlanOutcome p = plan_outcome(o, ctx.data_dir, ctx.registries, opt, hooks);
  if (!ctx.prints()) return 0;  // part 0 of an mpirun prints for all
  if (!o.csv.empty()) write_output_file(o.csv, rows_csv(p.result.evaluated.rows, plan_setting_names(), o.price), true, "--csv");
  if (o.json) std::cout << plan_json(o, p).dump(2) << "\n";
  else print_plan_text(p, o);
  if (p.interrupted) {
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
  // Checked with the other plan options in plan_job_of (shared with the Python module).
  cmd->add_option("--tokens", o->tokens, "tokens to train on (time to train, the curve's days)");
  cmd->add_option("--price-per-gpu-hour", o->price, "price of one GPU-hour");
  cmd->add_option("--deadline-days", o->deadline_days, "the smallest GPU count (of --gpus or the range) that trains --tokens in time");
  cmd->add_option("--headroom", o->headroom, "fraction of GPU memory to leave free (default 0.1)");
  cmd->add_option("--top", o->top, "layouts to print (default 5)");
  cmd->add_option("--objective", o->objective, "throughput | cost | time");
  cmd->add_option("--base", o->base, "scenario whose cluster, training and network blocks and stack the layouts start from (default: "
                                     "the cluster of the first in scenarios/ on this GPU)");
  cmd->add_flag("--allow-cross-node-tp", o->cross_node_tp, "let tensor parallelism span nodes");
  cmd->add_option("--max-micro-batch", o->max_mb, "micro-batch sizes tried: powers of two up to this (default 8)");
  cmd->add_option("--max-vpp", o->max_vpp, "model chunks per stage tried: 1 to this (default 8)");
  cmd->add_option("--search", o->search, "exhaustive (default): simulate every layout left by the rules; bound: only what the --top "
                                         "best need, simulated in the order of each step's lower bound (the same best rows)");
  cmd->add_option("--csv", o->csv, "also write every simulated layout to this CSV file");
  cmd->add_flag("--json", o->json, "print the parasim.plan/1 document on stdout");
  cmd->add_flag("--dry-run", o->dry_run, "enumerate and prune only: print what each rule removed and how many layouts would be simulated");
  cmd->add_option("--jobs,-j", o->jobs, "threads (0 = one per core); the output is the same for any count")->check(integer_in(0, 1024));
  cmd->callback([o, &ctx]() { ctx.exit_code = run_guarded([&]() { return run_plan_command(*o, ctx); }); });
}

}  // namespace parasim
