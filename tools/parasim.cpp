// The parasim command line. The only place that catches errors, prints them and picks exit codes:
// 0 success, 1 a check failed, 2 bad input (scenario, profile, model, measured run, command line,
// an output that cannot be written), 3 an internal error. docs/errors.md lists the messages.
#include <malloc.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tools/commands.h"
#include "tools/data_dir.h"
#include "tools/mpi.h"
#include "tools/output_file.h"

int main(int argc, char** argv) {
  using namespace parasim;
  CLI::App app{"parasim: discrete-event performance simulator for distributed LLM training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("parasim ") + PARASIM_VERSION);
  // A sweep or plan lowers and frees one program (up to tens of MB) per evaluation; by default glibc
  // hands such blocks back to the kernel and the next evaluation faults every page in again (perf on
  // a GPT-3 plan: 7 % of cycles in the page-fault path). Keep them in the heap for reuse.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  const MpiSession mpi(&argc, &argv);
  Context ctx;
  ctx.distribution = mpi.distribution();
  ctx.args.assign(argv + 1, argv + argc);
  // Found once, after parsing and before any command runs: --data-dir, else $PARASIM_DATA_DIR, else
  // ../share/parasim beside the executable (docs/install.md).
  DataDirCandidates where;
  if (const char* d = std::getenv("PARASIM_DATA_DIR")) where.env = d;
  where.binary_dir = executable_dir();
  app.add_option_function<std::string>("--data-dir", [&where](const std::string& d) { where.flag = d; },
                                       "where models/ and calibrate/profiles/ live (default: $PARASIM_DATA_DIR, else "
                                       "../share/parasim beside the executable)");
  app.parse_complete_callback([&]() {
    ctx.exit_code = run_guarded([&]() {
      ctx.data_dir = resolve_data_dir(where);
      return 0;
    });
    if (ctx.exit_code != 0) throw CLI::RuntimeError(ctx.exit_code);
  });

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
  add_docs_command(app, ctx);

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
