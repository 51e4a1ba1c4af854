// parasim report INPUT -o report.html|report.md: one self-contained page (or Markdown file) for a
// scenario, a `run --json` Result, a measured run, a sweep or a plan.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <unistd.h>

#include "sim/scenario/measured.h"
#include "tools/commands.h"
#include "tools/html_report.h"
#include "tools/report.h"
#include "tools/md_report.h"
#include "tools/time_to_train.h"

namespace parasim {

namespace {

// Writes beside the target and renames over it, so a reader never sees a partial file. A minimal
// stand-in until a shared atomic-write helper lands in tools/.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw ConfigError(path + ": cannot write the report");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw ConfigError(fmt::format("{}: cannot write the report ({})", path, ec.message()));
  }
}

std::string schema_of(const Json& j) {
  if (!j.is_object()) return "";
  const auto it = j.find("schema");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// A step: simulate the scenario, and time to train from --tokens or the Result's own.
ReportDoc step_doc(const Scenario& sc, const Context& ctx, const TimeToTrainOptions& ttt) {
  ReportDoc doc;
  SimulationOutput out = simulate(sc, ctx.registries);
  if (out.fold.folded()) {  // the report draws every op of the step
    check_timeline_size(out, kDefaultTimelineMaxMib, sc.file.c_str(), "");
    out = simulate(sc, ctx.registries, nullptr, Detail::Timeline);
  }
  doc.title = "parasim report: " + sc.name;
  doc.step = step_view(sc, out);
  if (ttt.requested()) doc.time_to_train = ttt_json(ttt.evaluate(sc, out.result.step_time_s, ctx.data_dir));
  return doc;
}

ReportDoc load_doc(const std::string& input, const Context& ctx, const TimeToTrainOptions& ttt) {
  const Json j = read_json_file(input);
  const std::string schema = schema_of(j);
  if (schema == "parasim.sweep/1" || schema == "parasim.plan/1") {
    check_table(j, input);
    ReportDoc doc;
    doc.title = schema == "parasim.sweep/1" ? "parasim sweep: " + j.value("scenario", input) : "parasim plan";
    doc.notes.push_back(fmt::format("from {} ({}), {} rows", input, schema, j["rows"].size()));
    if (const auto t = j.find("time_to_train"); t != j.end() && t->is_object()) doc.time_to_train = *t;
    doc.table = j;
    return doc;
  }
  if (schema == "parasim.result/1") {
    const auto rs = j.find("resolved_scenario");
    if (rs == j.end())
      throw_config(input, "/resolved_scenario", "a Result with the scenario it predicted; write it again with `parasim run --json`");
    const Scenario sc = parse_scenario(*rs, input + " (resolved_scenario)", ctx.data_dir);
    ReportDoc doc = step_doc(sc, ctx, ttt);
    const double was = j.value("step_time_s", 0.0), now = doc.step->step_s;
    doc.notes.push_back(fmt::format("re-simulated from the scenario in the Result {}: step {:.6g} s (the Result says {:.6g} s{})", input,
                                    now, was, std::abs(now - was) > 1e-9 * std::max(now, was) ? "; parasim or its data changed since" : ""));
    if (!doc.time_to_train)
      if (const auto t = j.find("time_to_train"); t != j.end() && t->is_object()) doc.time_to_train = *t;
    return doc;
  }
  if (schema == "parasim.measured/1") {
    ReportDoc doc = step_doc(load_measured(input, ctx.data_dir).scenario, ctx, ttt);
    doc.notes.push_back("the scenario of the measured run " + input);
    return doc;
  }
  if (schema == "parasim.scenario/1") {
    ReportDoc doc = step_doc(load_scenario(input, ctx.data_dir), ctx, ttt);
    doc.notes.push_back("simulated from " + input);
    return doc;
  }
  throw_config(input, "/schema",
               "one of parasim.scenario/1, parasim.result/1 (parasim run --json), parasim.measured/1, parasim.sweep/1, parasim.plan/1");
}

}  // namespace

void add_report_command(CLI::App& app, Context& ctx) {
  struct Opts {
    std::string input, output;
    TimeToTrainOptions ttt;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("report", "write one self-contained HTML page (or Markdown) for a scenario, a Result, a sweep or a plan");
  cmd->add_option("input", o->input, "scenario, `parasim run --json` Result, measured run, sweep or plan JSON")->required();
  cmd->add_option("-o,--output", o->output, "report.html (inline SVG and CSS, no network) or report.md (tables)")->required();
  o->ttt.add_to(*cmd);
  cmd->callback([o, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const std::string ext = std::filesystem::path(o->output).extension().string();
      if (ext != ".html" && ext != ".htm" && ext != ".md")
        throw ConfigError(fmt::format("-o {}: the report's file name must end in .html, .htm or .md", o->output));
      const ReportDoc doc = load_doc(o->input, ctx, o->ttt);
      write_atomically(o->output, ext == ".md" ? markdown_report(doc) : html_report(doc));
      std::cerr << "wrote " << o->output << "\n";
      return 0;
    });
  });
}

}  // namespace parasim
