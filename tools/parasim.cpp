// The parasim command line. The only place that catches errors, prints them and picks exit codes:
// 0 success, 1 a check failed, 2 bad input (scenario, profile, model, measured run, command line,
// an output that cannot be written), 3 an internal error. docs/errors.md lists the messages.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tools/commands.h"
#include "tools/mpi.h"
#include "tools/output_file.h"

#ifndef PARASIM_DEFAULT_DATA_DIR
#define PARASIM_DEFAULT_DATA_DIR "."
#endif

int main(int argc, char** argv) {
  using namespace parasim;
  CLI::App app{"parasim: discrete-event performance simulator for distributed LLM training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("parasim ") + PARASIM_VERSION);
  const MpiSession mpi(&argc, &argv);
  Context ctx;
  ctx.distribution = mpi.distribution();
  if (const char* d = std::getenv("PARASIM_DATA_DIR")) ctx.data_dir = d;
  else ctx.data_dir = PARASIM_DEFAULT_DATA_DIR;
  app.add_option("--data-dir", ctx.data_dir, "where models/ and calibrate/profiles/ live (default: the source tree)");

  add_run_command(app, ctx);
  add_list_command(app, ctx);
  add_profile_command(app, ctx);
  add_check_commands(app, ctx);
  add_network_commands(app, ctx);
  add_import_command(app, ctx);
  add_framework_import_commands(app, ctx);
  add_stack_command(app, ctx);
  add_report_command(app, ctx);
  add_sweep_command(app, ctx);
  add_plan_command(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are successes; every usage error is bad input (CLI11's own codes
    // 104-109 are not ours).
    return app.exit(e) == 0 ? 0 : 2;
  }
  // Output to stdout that failed (a full disk, /dev/full) must not exit 0.
  const int flushed = run_guarded([] {
    flush_stdout();
    return 0;
  });
  return ctx.exit_code != 0 ? ctx.exit_code : flushed;
}
