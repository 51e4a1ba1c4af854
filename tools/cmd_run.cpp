#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "tools/cli_checks.h"
#include "tools/commands.h"
#include "tools/import/framework_file.h"
#include "tools/output_file.h"
#include "sim/uncertainty.h"
#include "tools/report.h"
#include "tools/time_to_train.h"
#include "tools/validation.h"

namespace parasim {

int run_guarded(const std::function<int()>& fn) {
  try {
    return fn();
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const Json::type_error& e) {
    // Invalid UTF-8 can only have come in with the input (a command-line value, a file name), and
    // JSON output cannot carry it: an input error, not parasim's.
    if (e.id != 316) {
      std::cerr << "internal error: " << e.what() << "\n";
      return 3;
    }
    std::cerr << "error: an input text (a command-line value or a file name) is not valid UTF-8; JSON output cannot carry it ("
              << e.what() << ")\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 3;
  }
}

// The bound of `run --interval N`: each sample is a whole simulation of the step.
inline constexpr std::int64_t kMaxIntervalSamples = 10000;

namespace {

// The scenario of a framework's config, with what the reader could not map on stderr (as `parasim
// import` prints it); --gpu is required, as there.
Json framework_scenario(const std::string& framework, const std::string& path, const std::string& text, ImportOptions opt,
                        std::int64_t seq_len, const Context& ctx) {
  if (opt.gpu.empty()) throw ConfigError(input_name(path) + ": a " + framework + " config names no GPU: pass --gpu (parasim list gpus)");
  opt.data_dir = ctx.data_dir;
  const ImportResult r = import_framework(framework, path, text, opt);
  Json j = r.scenario;
  if (seq_len > 0) j["training"]["seq_len"] = seq_len;
  for (const auto& n : r.notes) std::cerr << "note: " << n << "\n";
  for (const auto& u : r.unmapped) std::cerr << "not mapped: " << u << "\n";
  return j;
}

}  // namespace

namespace {

// What `parasim run` was asked for.
struct RunOpts {
  std::string file, trace;
  bool json = false, resolved = false, kernels = false, force = false, fail_on_oom = false;
  int dump_rank = -1;
  int interval = 0;
  int jobs = 0;
  double trace_max_mib = kDefaultTimelineMaxMib;
  TimeToTrainOptions ttt;
  std::string from;   // a framework's config: which framework ("" = told from the file)
  ImportOptions imp;  // what the framework config does not say
  std::int64_t seq_len = 0;
};

// The file `run` names, as a scenario: a scenario JSON, a measured run (parasim.measured/1: its
// scenario, the run returned in `measured`) or a framework's config, read as `parasim import` reads
// it. Read once: the file may be a pipe ("-", <(...), a FIFO).
Scenario read_run_input(const RunOpts& o, const Context& ctx, std::optional<MeasuredRun>& measured) {
  const std::string input = input_name(o.file);
  if (std::error_code ec; std::filesystem::is_directory(o.file, ec))
    throw ConfigError(o.file + ": is a directory, expected a scenario JSON file or a framework's config");
  const std::string text = read_text_file(o.file);
  const std::string framework = !o.from.empty() ? o.from : framework_of(o.file, text);
  if (framework.empty() && is_hf_model_config(text))
    throw ConfigError(input + ": a Hugging Face model config, not a training job: `parasim import hf-config " + input +
                      " -o MODEL.json`, then name MODEL.json as a scenario's model (or pass --model to a framework config)");
  const Json root = framework.empty() ? parse_json_text(text, input) : framework_scenario(framework, o.file, text, o.imp, o.seq_len, ctx);
  if (is_measured_document(root)) measured = parse_measured(root, input, ctx.data_dir);
  return measured ? measured->scenario : parse_scenario(root, input, ctx.data_dir);
}

// --interval: the step-time interval from the profile's spread, and with parasim's own error on
// measured runs of the model's class, into the Result's JSON and (text output) `text`.
void add_interval(const RunOpts& o, const Scenario& sc, const Result& result, const Context& ctx, Json& j, std::ostream& text) {
  const Interval iv = predict_interval(sc, ctx.registries, o.interval, 1, o.jobs);
  j["step_time_interval_s"] = {iv.step_time_p10_s, iv.step_time_p90_s};
  j["interval_figures"] = iv.figures;
  const std::optional<ModelErrorBands> error = load_model_error(ctx.data_dir);
  const std::string cls = model_class(sc.model);
  const auto [me, band_name] = error ? error->band_for(cls) : std::pair<const ModelErrorBand*, std::string>{nullptr, ""};
  std::pair<double, double> both{};
  if (me) {
    both = combined_interval(iv.steps, *me);
    j["step_time_interval_with_model_error_s"] = {both.first, both.second};
    j["model_error"] = {{"p10", me->p10}, {"p90", me->p90}, {"runs", me->log_ratios.size()},
                        {"held_out_coverage", me->held_out_coverage}, {"model_class", cls}, {"band", band_name}};
  }
  if (o.json) return;
  text << fmt::format("step time interval (p10..p90, {} samples over {} ranged profile figures): {:.4g} .. {:.4g} s\n", iv.samples,
                      iv.figures.size(), iv.step_time_p10_s, iv.step_time_p90_s);
  // The point prediction uses each figure's value; best-shape figures (MAMF, FlashAttention's
  // best case) sit at the fast end of their published ranges, so it can fall outside.
  const double t = result.step_time_s;
  if (t < iv.step_time_p10_s || t > iv.step_time_p90_s)
    text << fmt::format("  the point prediction ({:.4g} s) lies {} the interval: the profile's values sit at the {} end "
                        "of their published ranges (best-shape figures)\n",
                        t, t < iv.step_time_p10_s ? "below" : "above", t < iv.step_time_p10_s ? "fast" : "slow");
  if (me)
    text << fmt::format("with parasim's own error on {} measured runs{} ({}: their steps took {:.2f}x to {:.2f}x the "
                        "predicted time for 80 % of them; {}): {:.4g} .. {:.4g} s\n",
                        me->log_ratios.size(), band_name == "all" ? "" : " of " + band_name + " models", kModelErrorFile,
                        std::exp(me->p10), std::exp(me->p90),
                        me->sources >= 3 ? fmt::format("that band, judged on each source from the others, held {:.0f} % "
                                                       "of runs", 100 * me->held_out_coverage)
                                         : fmt::format("the runs come from {} sources only, too few to judge the band "
                                                       "out of sample", me->sources),
                        both.first, both.second);
}

Json measured_json(const MeasuredRun& measured, const std::vector<Comparison>& cmps) {
  Json mj = Json::array();
  for (const Comparison& c : cmps)
    mj.push_back({{"figure", c.figure}, {"detail", c.detail}, {"measured", c.measured}, {"predicted", c.predicted}, {"error", c.error}});
  return {{"id", measured.id}, {"source", measured.source_title}, {"figures", mj}};
}

void print_measured(std::ostream& os, const MeasuredRun& measured, const std::vector<Comparison>& cmps) {
  os << fmt::format("\n  measured ({}{}):\n", measured.source_title.empty() ? measured.id : measured.source_title,
                    measured.confidence.empty() ? "" : ", confidence " + measured.confidence);
  os << fmt::format("    {:<28} {:>12} {:>12} {:>9}\n", "figure", "measured", "predicted", "error");
  for (const Comparison& c : cmps) {
    const std::string name = c.figure + (c.detail.empty() ? "" : " (" + c.detail + ")");
    os << fmt::format("    {:<28} {:>12.5g} {:>12.5g} {:>+8.1f}%\n", name, c.measured, c.predicted, 100 * c.error);
  }
}

// How far to trust the point prediction, without --interval: the model's measured error on
// published runs of the scenario's model class.
void print_model_error(std::ostream& os, const Scenario& sc, const Context& ctx) {
  const std::optional<ModelErrorBands> error = load_model_error(ctx.data_dir);
  if (!error) return;
  const auto [band, name] = error->band_for(model_class(sc.model));
  os << fmt::format("\n  parasim's error on {} published runs{}: their steps took {:.2f}x to {:.2f}x the predicted one "
                    "(p10..p90, {}); `--interval N` turns it into a range for this scenario\n",
                    band->log_ratios.size(), name == "all" ? "" : " of " + name + " models", std::exp(band->p10), std::exp(band->p90),
                    kModelErrorFile);
}

// The whole step's trace (--trace or the scenario's outputs.trace) and program dump (--dump-program),
// which draw every op and each rank's memory curve: a summary has none of these (a folded step
// simulated three short steps, the layers' ops are fused, no memory curve), so the whole step is
// simulated for them, if its trace fits the cap. Returns whether the program was dumped (run ends).
bool trace_or_dump(const RunOpts& o, const Scenario& sc, const Context& ctx, std::optional<OutputFile>& trace_file, SimulationOutput& out) {
  if (!trace_file && o.dump_rank < 0) return false;
  if (out.fold.folded()) check_timeline_size(out, o.trace_max_mib, trace_file ? "--trace" : "--dump-program", "--trace-max-mib");
  out = simulate(sc, ctx.registries, nullptr, Detail::Timeline);
  if (trace_file) {
    std::cerr << fmt::format("writing {}: {} ops, about {:.0f} MiB\n", trace_file->path(), out.program.ops.size(),
                             trace_mib(static_cast<double>(out.program.ops.size())));
    write_chrome_trace(trace_file->stream(), sc, out.program, out.timeline);
    trace_file->commit();
  }
  if (o.dump_rank < 0) return false;
  if (static_cast<size_t>(o.dump_rank) >= out.program.ranks.size()) {
    std::vector<std::int32_t> real;
    for (const SimRank& r : out.program.ranks) real.push_back(r.real_rank);
    throw ConfigError(fmt::format("--dump-program: rank {} out of range; the program has {} simulated ranks, 0 to {}, standing for "
                                  "the table's ranks {}", o.dump_rank, out.program.ranks.size(), out.program.ranks.size() - 1,
                                  fmt::join(real, ", ")));
  }
  dump_program(std::cout, out.program, out.timeline, o.dump_rank);
  return true;
}

int run_scenario(const RunOpts& o, const Context& ctx) {
  std::optional<MeasuredRun> measured;
  const Scenario sc = read_run_input(o, ctx, measured);
  if (o.resolved) {
    std::cout << sc.resolved().dump(2) << "\n";
    return 0;
  }
  if (o.dump_rank >= 0) {
    // The op table is all --dump-program prints: the flags that add to the Result would be ignored.
    std::vector<std::string> with;
    for (const auto& [on, name] : std::initializer_list<std::pair<bool, const char*>>{
             {o.json, "--json"}, {o.kernels, "--kernels"}, {o.interval > 0, "--interval"}, {o.ttt.tokens > 0, "--tokens"},
             {o.fail_on_oom, "--fail-on-oom"}})
      if (on) with.push_back(name);
    if (!with.empty())
      throw ConfigError(fmt::format("--dump-program prints a rank's op table and nothing else; {} would be ignored: give them in a "
                                    "run without --dump-program", fmt::join(with, ", ")));
  }
  const std::string trace = !o.trace.empty() ? o.trace : sc.trace_path;
  // Opened before the run, so an existing file is refused before minutes of simulation.
  std::optional<OutputFile> trace_file;
  if (!trace.empty()) trace_file.emplace(trace, o.force, o.trace.empty() ? "outputs.trace" : "--trace");
  SimulationOutput out = simulate(sc, ctx.registries, nullptr, o.json ? Detail::Summary : Detail::Partition);
  if (trace_or_dump(o, sc, ctx, trace_file, out)) return 0;
  Json j = result_json(out.result);
  j["resolved_scenario"] = sc.resolved();  // so that a Result can be simulated again (parasim report)
  const std::optional<TimeToTrain> ttt =
      o.ttt.requested() ? std::optional<TimeToTrain>(o.ttt.evaluate(sc, out.result.step_time_s, ctx.data_dir)) : std::nullopt;
  if (ttt) j["time_to_train"] = ttt_json(*ttt);
  std::stringstream interval_text;  // printed below the summary
  if (o.interval > 0) add_interval(o, sc, out.result, ctx, j, interval_text);
  const ModelGraph layers = build_model_graph(sc.model, layer_shape(sc));
  const CostModel cost(sc.profile, sc.training.gemm_dtype(), sc.training.priced_attention_kernel(), sc.cluster.gpus());
  const std::vector<KernelRow> rows = o.kernels ? kernel_rows(layers, sc.model, cost) : std::vector<KernelRow>{};
  if (o.kernels) j["kernels"] = kernels_json(rows);
  const std::vector<Comparison> cmps = measured ? compare_figures(*measured, out.result, Tolerances{}) : std::vector<Comparison>{};
  if (measured) j["measured"] = measured_json(*measured, cmps);
  if (o.json) {
    std::cout << j.dump(2) << "\n";
    return o.fail_on_oom && !out.result.fits_in_memory ? 1 : 0;
  }
  // Where the time went: folded with the step (sim/steady_state.h), or read off the whole step's
  // timeline where a trace or program dump simulated it whole.
  const TimePartition time = out.partition ? *out.partition : partition_time(out.program, out.timeline, out.result);
  print_summary(std::cout, sc, out.result, time);
  for (std::string line; std::getline(interval_text, line);) std::cout << (line.starts_with("  ") ? "  " : "\n  ") << line << "\n";
  if (o.interval <= 0) print_model_error(std::cout, sc, ctx);
  if (ttt) std::cout << "\n  " << ttt_summary(*ttt);
  if (measured) print_measured(std::cout, *measured, cmps);
  if (o.kernels) {
    std::cout << "\n";
    print_kernels(std::cout, sc, layers.kinds.front(), rows);
  }
  return o.fail_on_oom && !out.result.fits_in_memory ? 1 : 0;
}

}  // namespace

void add_run_command(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<RunOpts>();
  CLI::App* run = app.add_subcommand("run", "simulate one training step of a scenario and print the prediction");
  run->add_option("scenario", o->file,
                  "scenario JSON file, or a measured run (parasim.measured/1): its scenario, with the measured "
                  "figures beside the prediction, or a framework's own config (a Megatron-LM argument file, a DeepSpeed "
                  "JSON, a torchtitan TOML, an llm-foundry YAML; see --from); - reads standard input")
      ->required();
  run->add_option("--from", o->from, "the framework whose config the file is, where the file does not tell: megatron, deepspeed, "
                                     "torchtitan, llm-foundry (as `parasim import`)");
  run->add_option("--gpu", o->imp.gpu, "framework config: the GPU profile (parasim list gpus)");
  run->add_option("--nodes", o->imp.nodes, "framework config: nodes (default: the config's, else 1)");
  run->add_option("--gpus-per-node", o->imp.gpus_per_node, "framework config: GPUs per node (default 8)");
  run->add_option("--model", o->imp.model, "framework config: zoo model or model JSON (default: the config's model)");
  run->add_option("--stack", o->imp.stack, "framework config: stack to name instead of the framework's default");
  run->add_option("--seq-len", o->seq_len, "framework config: sequence length, where the config has none");
  run->add_flag("--json", o->json, "print the Result (parasim.result/1) as JSON on stdout");
  run->add_option("--trace", o->trace, "write a Chrome/Perfetto trace of the step to this file (refused if it exists, unless --force)");
  run->add_flag("--force", o->force, "overwrite an existing trace file");
  run->add_option("--trace-max-mib", o->trace_max_mib,
                  fmt::format("the largest trace (and whole-step program for --dump-program) to build, MiB (default {:g}); a longer step is "
                              "refused before it is simulated",
                              kDefaultTimelineMaxMib))
      ->check(positive_number());
  run->add_flag("--dump-resolved", o->resolved, "print the scenario after defaults and exit");
  run->add_option("--interval", o->interval,
                  fmt::format("also predict a p10..p90 step-time interval from the profile's spread with N samples (1..{})", kMaxIntervalSamples))
      ->check(integer_in(1, kMaxIntervalSamples));
  run->add_option("--jobs,-j", o->jobs, "threads for --interval's samples (0 = one per core); the interval is the same for any count")
      ->check(integer_in(0, 1024));
  run->add_flag("--kernels", o->kernels,
                "also print each kernel of one layer (and of the embedding and output layers) with its shape, time, rate and what priced it");
  run->add_flag("--fail-on-oom", o->fail_on_oom, "exit 1 when a rank runs out of memory (the prediction is still printed)");
  run->add_option("--dump-program", o->dump_rank, "print the lowered ops of this simulated rank (0-based) with their times")
      ->check(integer_in(0, std::numeric_limits<int>::max()));
  o->ttt.add_to(*run);
  run->callback([o, &ctx]() { ctx.exit_code = run_guarded([&]() { return run_scenario(*o, ctx); }); });
}

}  // namespace parasim
