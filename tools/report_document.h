// What `parasim report` draws, from an input already read as JSON: a scenario (simulated), a
// `run --json` Result (re-simulated from its resolved scenario), a measured run (its scenario), a
// sweep or a plan document (its table). The command and the Python module's parasim.report share it.
#pragma once
#include <string>

#include "sim/simulation.h"
#include "tools/report_view.h"
#include "tools/time_to_train.h"

namespace parasim {

enum class ReportFormat { Html, Markdown };

// `name` names the input in messages and notes (its path, or "<dict>"). Throws ConfigError naming
// `name` and the JSON pointer for a document of another kind or one the report cannot read.
ReportDoc report_document(const Json& input, const std::string& name, const std::string& data_dir, const Registries& reg,
                          const TimeToTrainOptions& ttt);

// The format a report file's name asks for: .html / .htm or .md; a ConfigError naming `option` otherwise.
ReportFormat report_format_of(const std::string& path, const std::string& option);
// A format by name: "html" (or "htm") or "md"; a ConfigError naming `option` otherwise.
ReportFormat report_format_named(const std::string& name, const std::string& option);

// The self-contained page (inline SVG and CSS) or the Markdown file.
std::string render_report(const ReportDoc& doc, ReportFormat format);

}  // namespace parasim
