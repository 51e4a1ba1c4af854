// parasim sweep: the cartesian product of scenario keys, ranked (sim/planning/sweep.h).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "sim/planning/sweep.h"
#include "sim/scenario/measured.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"
#include "tools/output_file.h"
#include "tools/planning_io.h"

namespace parasim {

namespace {

std::string skipped_line(const std::string& reason, std::int64_t n, const Evaluated& ev) {
  return fmt::format("  skipped {:>6}: {}\n", n, skipped_text(reason, n, ev));
}

// Every combination was refused: the sweep has nothing to rank (exit 2, no output file).
std::string no_combination_message(const std::string& file, const Evaluated& ev) {
  std::string msg = file + ": none of the " + std::to_string(ev.total) + " combinations of --vary can be simulated:\n";
  for (const auto& [reason, n] : ev.skipped) msg += skipped_line(reason, n, ev);
  if (!msg.empty() && msg.back() == '\n') msg.pop_back();
  return msg;
}

}  // namespace

void add_sweep_command(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string file, csv, objective = "throughput";
    std::vector<std::string> vary;
    bool json = false;
    int jobs = 1;
    std::size_t top = 20;
    double price = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("sweep", "simulate every combination of scenario keys and rank them");
  cmd->footer(sweep_keys_help());
  cmd->add_option("scenario", o->file, "scenario JSON file")->required();
  cmd->add_option("--vary", o->vary, "KEY=V1,V2,... (repeatable; the cartesian product of all; a value may be a JSON list or object, [a,b])")->required();
  cmd->add_option("--objective", o->objective, "throughput | cost | time (ranking)");
  cmd->add_option("--csv", o->csv, "also write every row to this CSV file");
  cmd->add_flag("--json", o->json, "print the parasim.sweep/1 document on stdout instead of the table");
  cmd->add_option("--jobs,-j", o->jobs, "threads (0 = one per core); the output is the same for any count")->check(integer_in(0, 1024));
  cmd->add_option("--top", o->top, "rows in the terminal table (0 = all)");
  cmd->add_option("--price-per-gpu-hour", o->price, "price of one GPU-hour: adds the cost per million tokens")->check(non_negative_number());
  cmd->callback([o, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      if (!o->csv.empty()) check_writable(o->csv, true, "--csv");  // before the sweep runs, not after
      const Objective objective = parse_objective(o->objective, "--objective");
      SweepSpec spec;
      spec.file = o->file;
      spec.base = read_json_file(o->file);
      // A measured run sweeps its scenario (as `parasim run` and `plan --base` read one).
      if (is_measured_document(spec.base) && spec.base.contains("scenario")) spec.base = Json(spec.base["scenario"]);
      spec.axes = parse_vary_axes(o->vary);
      const InterruptGuard guard;
      EvalOptions opt;
      opt.jobs = thread_count(o->jobs);
      opt.stop = guard.stop();
      opt.distribution = ctx.distribution;
      if (ctx.prints()) opt.progress = terminal_progress("sweep");
      const auto start = std::chrono::steady_clock::now();
      const Evaluated ev = run_sweep(spec, ctx.data_dir, ctx.registries, objective, opt);
      if (!ctx.prints()) return 0;  // part 0 of an mpirun prints for all
      report_rate("sweep", ev.evaluated, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), opt.jobs,
                  ctx.distribution ? ctx.distribution->parts : 1);
      if (ev.rows.empty() && !ev.interrupted && ev.total > 0) throw ConfigError(no_combination_message(o->file, ev));
      if (!o->csv.empty()) write_output_file(o->csv, rows_csv(ev.rows, spec.setting_names(), o->price), true, "--csv");
      if (o->json) {
        std::cout << sweep_json(spec, ev, objective, o->price).dump(2) << "\n";
      } else {
        std::cout << fmt::format("sweep of {}: {} combinations, {} evaluated, {} simulated ({} out of memory), ranked by {}{}\n",
                                 o->file, ev.total, ev.evaluated, ev.rows.size(),
                                 std::count_if(ev.rows.begin(), ev.rows.end(), [](const Row& r) { return r.status == "oom"; }),
                                 objective_name(objective), spec.derive_dp() ? "; dp derived from the GPU count" : "");
        for (const auto& [reason, n] : ev.skipped) std::cout << skipped_line(reason, n, ev);
        std::cout << "\n" << rows_table(ev.rows, spec.setting_names(), o->top);
      }
      if (ev.interrupted) {
        std::cerr << fmt::format("interrupted: {} of {} combinations evaluated; the output holds those\n", ev.evaluated, ev.total);
        return 130;
      }
      return 0;
    });
  });
}

}  // namespace parasim
