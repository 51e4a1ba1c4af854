// parasim report INPUT -o report.html|report.md: one self-contained page (or Markdown file) for a
// scenario, a `run --json` Result, a measured run, a sweep or a plan.
#include <iostream>

#include "tools/commands.h"
#include "tools/output_file.h"
#include "tools/report_document.h"

namespace parasim {

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
      const ReportFormat format = report_format_of(o->output, "-o");
      const ReportDoc doc = report_document(read_json_file(o->input), input_name(o->input), ctx.data_dir, ctx.registries, o->ttt);
      write_output_file(o->output, render_report(doc, format), true, "-o");  // replaces a report already there
      std::cerr << "wrote " << o->output << "\n";
      return 0;
    });
  });
}

}  // namespace parasim
