// Subcommands of the parasim CLI, one file each. Each registers itself on the app and sets
// Context::exit_code; errors are caught in run_guarded().
#pragma once
#include <vector>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "sim/planning/evaluate.h"
#include "sim/simulation.h"

namespace parasim {

struct Context {
  std::string data_dir;
  int exit_code = 0;
  Registries registries;
  // Set under mpirun (tools/mpi.h): sweeps and plans share their layouts; only part 0 prints.
  const Distribution* distribution = nullptr;
  bool prints() const { return !distribution || distribution->root(); }
  // The command line as given (argv after the program name): what follows "--" reaches a command
  // verbatim, where CLI11 would split a bracketed value ("[0,1,1]") at its commas.
  std::vector<std::string> args;
};

// Runs fn; ConfigError (bad input) -> message on stderr, exit code 2; other errors -> code 3.
int run_guarded(const std::function<int()>& fn);

void add_run_command(CLI::App& app, Context& ctx);
void add_list_command(CLI::App& app, Context& ctx);
void add_profile_command(CLI::App& app, Context& ctx);
void add_profile_derive_command(CLI::App* profile, Context& ctx);  // cmd_profile_derive.cpp, under `profile`
void add_check_commands(CLI::App& app, Context& ctx);
void add_network_commands(CLI::App& app, Context& ctx);
void add_import_command(CLI::App& app, Context& ctx);
void add_report_command(CLI::App& app, Context& ctx);
void add_sweep_command(CLI::App& app, Context& ctx);
void add_plan_command(CLI::App& app, Context& ctx);
void add_stack_command(CLI::App& app, Context& ctx);
// Adds the framework-config readers to `import` (after add_import_command).
void add_framework_import_commands(CLI::App& app, Context& ctx);
void add_docs_command(CLI::App& app, Context& ctx);

}  // namespace parasim
