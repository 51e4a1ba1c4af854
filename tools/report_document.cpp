#include "tools/report_document.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "sim/scenario/measured.h"
#include "tools/html_report.h"
#include "tools/md_report.h"
#include "tools/report.h"

namespace parasim {

namespace {

std::string schema_of(const Json& j) {
  if (!j.is_object()) return "";
  const auto it = j.find("schema");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// A step: simulate the scenario, and time to train from the options or the Result's own.
ReportDoc step_doc(const Scenario& sc, const std::string& data_dir, const Registries& reg, const TimeToTrainOptions& ttt) {
  ReportDoc doc;
  SimulationOutput out = simulate(sc, reg);
  // The report draws every op of the whole step and each rank's memory curve, which a summary
  // does not hold (a folded step, fused layers, no memory curve): the step simulated whole for
  // them, if its timeline fits the cap.
  if (out.fold.folded()) check_timeline_size(out, kDefaultTimelineMaxMib, sc.file.c_str(), "");
  out = simulate(sc, reg, nullptr, Detail::Timeline);
  doc.title = "parasim report: " + sc.name;
  doc.step = step_view(sc, out);
  if (ttt.requested()) doc.time_to_train = ttt_json(ttt.evaluate(sc, out.result.step_time_s, data_dir));
  return doc;
}

ReportDoc table_doc(const Json& j, const std::string& name, const std::string& schema) {
  check_table(j, name);
  ReportDoc doc;
  doc.title = schema == "parasim.sweep/1" ? "parasim sweep: " + j.value("scenario", name) : "parasim plan";
  doc.notes.push_back(fmt::format("from {} ({}), {} rows", name, schema, j["rows"].size()));
  if (const auto t = j.find("time_to_train"); t != j.end() && t->is_object()) doc.time_to_train = *t;
  doc.table = j;
  return doc;
}

ReportDoc result_doc(const Json& j, const std::string& name, const std::string& data_dir, const Registries& reg,
                     const TimeToTrainOptions& ttt) {
  const auto rs = j.find("resolved_scenario");
  if (rs == j.end())
    throw_config(name, "/resolved_scenario", "a Result with the scenario it predicted; write it again with `parasim run --json`");
  const Scenario sc = parse_scenario(*rs, name + " (resolved_scenario)", data_dir);
  ReportDoc doc = step_doc(sc, data_dir, reg, ttt);
  const double was = j.value("step_time_s", 0.0), now = doc.step->step_s;
  doc.notes.push_back(fmt::format("re-simulated from the scenario in the Result {}: step {:.6g} s (the Result says {:.6g} s{})", name, now,
                                  was, std::abs(now - was) > 1e-9 * std::max(now, was) ? "; parasim or its data changed since" : ""));
  if (!doc.time_to_train)
    if (const auto t = j.find("time_to_train"); t != j.end() && t->is_object()) doc.time_to_train = *t;
  return doc;
}

ReportDoc document_of(const Json& j, const std::string& name, const std::string& data_dir, const Registries& reg,
                      const TimeToTrainOptions& ttt) {
  const std::string schema = schema_of(j);
  // parasim's own outputs are read as written; one edited by hand (a field of the wrong type or
  // missing) is bad input, not an internal error.
  try {
    if (schema == "parasim.sweep/1" || schema == "parasim.plan/1") return table_doc(j, name, schema);
    if (schema == "parasim.result/1") return result_doc(j, name, data_dir, reg, ttt);
  } catch (const Json::exception& e) {
    throw ConfigError(name + ": not a " + schema + " document as parasim writes it: " + e.what());
  }
  if (is_measured_document(j)) {
    ReportDoc doc = step_doc(parse_measured(j, name, data_dir).scenario, data_dir, reg, ttt);
    doc.notes.push_back("the scenario of the measured run " + name);
    return doc;
  }
  if (schema == "parasim.scenario/1") {
    ReportDoc doc = step_doc(parse_scenario(j, name, data_dir), data_dir, reg, ttt);
    doc.notes.push_back("simulated from " + name);
    return doc;
  }
  throw_config(name, "/schema",
               "one of parasim.scenario/1, parasim.result/1 (parasim run --json), parasim.measured/1, parasim.sweep/1, parasim.plan/1");
}

}  // namespace

ReportDoc report_document(const Json& j, const std::string& name, const std::string& data_dir, const Registries& reg,
                          const TimeToTrainOptions& ttt) {
  ReportDoc doc = document_of(j, name, data_dir, reg, ttt);
  doc.source = name;
  return doc;
}

ReportFormat report_format_of(const std::string& path, const std::string& option) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".html" || ext == ".htm") return ReportFormat::Html;
  if (ext == ".md") return ReportFormat::Markdown;
  throw ConfigError(fmt::format("{} {}: the report's file name must end in .html, .htm or .md", option, path));
}

ReportFormat report_format_named(const std::string& name, const std::string& option) {
  if (name == "html" || name == "htm") return ReportFormat::Html;
  if (name == "md") return ReportFormat::Markdown;
  throw ConfigError(fmt::format("{} \"{}\": expected \"html\" or \"md\"", option, name));
}

std::string render_report(const ReportDoc& doc, ReportFormat format) {
  try {
    return format == ReportFormat::Markdown ? markdown_report(doc) : html_report(doc);
  } catch (const Json::exception& e) {  // a field check_table does not cover, edited by hand
    throw ConfigError(doc.source + ": a field is not as parasim writes it: " + e.what());
  }
}

}  // namespace parasim
