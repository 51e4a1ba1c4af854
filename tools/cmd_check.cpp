#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <limits>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "tools/cli_checks.h"
#include "tools/commands.h"
#include "tools/output_file.h"
#include "tools/validation.h"

namespace parasim {

namespace {
// "FIGURE=VALUE" of --tolerance-for: a figure a measured run can hold, a finite value >= 0.
std::pair<std::string, double> parse_figure_tolerance(const std::string& s) {
  const auto eq = s.find('=');
  if (eq == std::string::npos) throw ConfigError("--tolerance-for: expected FIGURE=VALUE, got \"" + s + "\"");
  const std::string figure = s.substr(0, eq), value = s.substr(eq + 1);
  std::vector<std::string> names(kMeasuredFigureNames.begin(), kMeasuredFigureNames.end());
  if (std::find(names.begin(), names.end(), figure) == names.end()) {
    std::string msg = "--tolerance-for: unknown figure \"" + figure + "\"";
    if (const std::string close = closest_name(figure, names); !close.empty()) msg += "; did you mean \"" + close + "\"?";
    msg += " Figures:";
    for (const auto& n : names) msg += " " + n;
    throw ConfigError(msg);
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || !std::isfinite(v) || v < 0)
    throw ConfigError("--tolerance-for: expected a finite tolerance >= 0 (a fraction: 0.05 is 5 %), got \"" + s + "\"");
  return {figure, v};
}
struct CheckOpts {
  std::vector<std::string> files;
  double tolerance = 0.10;
  std::vector<std::string> per_figure;
  bool json = false;
};

int run_check(const CheckOpts& co, const Context& ctx) {
  Tolerances tol;
  tol.default_tolerance = co.tolerance;
  for (const auto& s : co.per_figure) {
    const auto [figure, value] = parse_figure_tolerance(s);
    tol.per_figure[figure] = value;
  }
  std::vector<RunCheck> checks;
  const ProgressFn progress = terminal_progress("check");
  for (const auto& f : co.files) {
    checks.push_back(check_run(load_measured(f, ctx.data_dir), ctx.registries, tol));
    if (progress) progress(checks.size(), co.files.size());
  }
  if (co.json) std::cout << checks_json(checks).dump(2) << "\n";
  else print_checks(std::cout, checks);
  for (const auto& c : checks)
    if (!c.pass) return 1;
  return 0;
}

void add_check_command(CLI::App& app, Context& ctx) {
  auto co = std::make_shared<CheckOpts>();
  CLI::App* check = app.add_subcommand("check", "compare predictions with measured runs; exit 1 if any is outside tolerance");
  check->add_option("measured", co->files, "measured-run JSON files (parasim.measured/1)")->required();
  check->add_option("--tolerance", co->tolerance, "relative tolerance for every headline figure (default 0.10)")->check(positive_number());
  check->add_option("--tolerance-for", co->per_figure,
                    "per-figure tolerance, e.g. step_time_s=0.05 (repeatable); a component.* figure is judged only when given one");
  check->add_flag("--json", co->json, "machine-readable output");
  check->callback([co, &ctx]() { ctx.exit_code = run_guarded([&]() { return run_check(*co, ctx); }); });
}

struct ValOpts {
  std::string dir = "scenarios/measured";
  bool json = false;
  double max_mape = -1;  // negative: no ratchet (a given limit is checked >= 0)
  double max_memory_mape = -1;
  std::int64_t max_oom_disagreements = -1;
  std::string write_model_error, check_model_error;
  std::string out;
  bool no_attribution = false, force = false;
};

// The ratchets --max-throughput-mape and --max-memory-mape: 1 when one fails.
int check_mape_ratchets(const ValOpts& vo, const ValidationReport& rep) {
  int rc = 0;
  for (const auto& [what, stats, limit] : {std::tuple{"throughput", rep.throughput, vo.max_mape},
                                           std::tuple{"peak-memory", rep.memory, vo.max_memory_mape}})
    if (limit >= 0 && !(stats.n > 0 && stats.mape <= limit)) {
      std::cerr << fmt::format("FAIL: {} MAPE {:.2f}% is above the ratchet {:.2f}%\n", what, 100 * stats.mape, 100 * limit);
      rc = 1;
    }
  return rc;
}

// The ratchet --max-oom-disagreements: 1 when it fails.
int check_oom_ratchet(const ValOpts& vo, const ValidationReport& rep) {
  const std::int64_t wrong = rep.oom_total - rep.oom_agree;
  if (vo.max_oom_disagreements < 0 || wrong <= vo.max_oom_disagreements) return 0;
  std::cerr << fmt::format("FAIL: {} of {} out-of-memory verdicts disagree; the ratchet allows {}\n", wrong, rep.oom_total,
                           vo.max_oom_disagreements);
  return 1;
}

// --check-model-error: the file's all-runs band and each class's band must be the ones these runs give.
int check_model_error_file(const ValOpts& vo, const ModelErrorBands& me) {
  const ModelErrorBands have = read_model_error(vo.check_model_error);
  std::vector<std::tuple<std::string, const ModelErrorBand*, const ModelErrorBand*>> bands{{"all runs", &have.all, &me.all}};
  for (const auto& [cls, band] : me.classes) {
    const auto it = have.classes.find(cls);
    bands.push_back({"class " + cls, it == have.classes.end() ? nullptr : &it->second, &band});
  }
  int rc = 0;
  for (const auto& [what, h, m] : bands)
    if (!h || std::abs(h->p10 - m->p10) > 0.01 || std::abs(h->p90 - m->p90) > 0.01) {
      std::cerr << (h ? fmt::format("FAIL: {} holds the band {:+.3f}..{:+.3f} for {}, these runs give {:+.3f}..{:+.3f}",
                                    vo.check_model_error, h->p10, h->p90, what, m->p10, m->p90)
                      : fmt::format("FAIL: {} holds no band for {}, these runs give {:+.3f}..{:+.3f}", vo.check_model_error, what,
                                    m->p10, m->p90))
                << fmt::format("; regenerate it with `parasim validate {} --write-model-error {} --force`\n", vo.dir,
                               vo.check_model_error);
      rc = 1;
    }
  return rc;
}

int run_validate(const ValOpts& vo, const Context& ctx) {
  // Both output files are opened (and an existing one refused) before the long validation.
  std::optional<OutputFile> report_file, model_error_file;
  if (!vo.out.empty()) report_file.emplace(vo.out, vo.force, "-o");
  if (!vo.write_model_error.empty()) model_error_file.emplace(vo.write_model_error, vo.force, "--write-model-error");
  const ValidationReport rep = validate_dir(vo.dir, ctx.data_dir, ctx.registries, 16, !vo.no_attribution, terminal_progress("validate"));
  if (rep.runs.empty())
    throw ConfigError(fmt::format("{}: no measured run loaded ({} files failed to load{}); nothing to validate", vo.dir,
                                  rep.failures.size(), rep.failures.empty() ? "" : ", the first: " + rep.failures.front().reason));
  std::ostream& os = report_file ? report_file->stream() : std::cout;
  if (vo.json) os << validation_json(rep).dump(2) << "\n";
  else print_validation_markdown(os, rep, "parasim validate " + vo.dir);
  if (report_file) report_file->commit();
  std::cerr << fmt::format("throughput MAPE {:.1f}% over {} runs; memory MAPE {:.1f}% over {} runs; {} load failures\n",
                           100 * rep.throughput.mape, rep.throughput.n, 100 * rep.memory.mape, rep.memory.n, rep.failures.size());
  for (const auto& f : rep.failures)  // the reason names the file already when the loader's message does
    std::cerr << "error: " << (f.reason.starts_with(f.file) ? "" : f.file + ": ") << f.reason << "\n";
  int rc = check_mape_ratchets(vo, rep);
  const ModelErrorBands me = model_error_of(rep);
  if (model_error_file) {
    if (me.all.log_ratios.empty())
      throw ConfigError("--write-model-error " + vo.write_model_error + ": no run in " + vo.dir +
                        " has a throughput figure; refusing to write a model error file without runs");
    model_error_file->stream() << model_error_json(me, "parasim validate " + vo.dir + " --write-model-error " + vo.write_model_error).dump(1)
                               << "\n";
    model_error_file->commit();
  }
  if (!vo.check_model_error.empty()) rc = std::max(rc, check_model_error_file(vo, me));
  rc = std::max(rc, check_oom_ratchet(vo, rep));
  // Files that did not load are bad input: the report above covers only the others.
  return rep.failures.empty() ? rc : 2;
}

void add_validate_command(CLI::App& app, Context& ctx) {
  auto vo = std::make_shared<ValOpts>();
  CLI::App* val = app.add_subcommand("validate", "accuracy report over a directory of measured runs (Markdown, or --json)");
  val->add_option("dir", vo->dir, "directory of measured runs (default scenarios/measured)");
  val->add_flag("--json", vo->json, "machine-readable output");
  val->add_option("--max-throughput-mape", vo->max_mape, "exit 1 when the throughput MAPE exceeds this fraction (a ratchet for CI)")
      ->check(non_negative_number());
  val->add_option("--max-memory-mape", vo->max_memory_mape, "exit 1 when the peak-memory MAPE exceeds this fraction (a ratchet for CI)")
      ->check(non_negative_number());
  val->add_option("--max-oom-disagreements", vo->max_oom_disagreements,
                  "exit 1 when more runs than this get the wrong out-of-memory verdict (a run that ran fit; a ratchet for CI)")
      ->check(integer_in(0, std::numeric_limits<std::int32_t>::max()));
  val->add_option("--write-model-error", vo->write_model_error,
                  "write parasim's error on these runs (the model error band that `run --interval` reads) to this file");
  val->add_option("--check-model-error", vo->check_model_error,
                  "exit 1 when this model error file's band is more than 0.01 (in ln) from the one these runs give");
  val->add_option("-o,--output", vo->out, "write the report to this file instead of stdout (refused if it exists, unless --force)");
  val->add_flag("--force", vo->force, "overwrite existing -o and --write-model-error files");
  val->add_flag("--no-attribution", vo->no_attribution,
                "skip the error attribution (each run's time shares: four more simulations per run)");
  val->callback([vo, &ctx]() { ctx.exit_code = run_guarded([&]() { return run_validate(*vo, ctx); }); });
}
}  // namespace

void add_check_commands(CLI::App& app, Context& ctx) {
  add_check_command(app, ctx);
  add_validate_command(app, ctx);
}

}  // namespace parasim
