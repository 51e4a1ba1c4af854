// Subcommands of the parasim CLI, one file each. Each registers itself on the app and sets
// Context::exit_code; errors are caught in run_guarded().
#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "sim/simulation.h"

namespace parasim {

struct Context {
  std::string data_dir;
  int exit_code = 0;
  Registries registries;
};

// Runs fn; ConfigError (bad input) -> message on stderr, exit code 2; other errors -> code 3.
int run_guarded(const std::function<int()>& fn);

void add_run_command(CLI::App& app, Context& ctx);
void add_list_command(CLI::App& app, Context& ctx);
void add_profile_command(CLI::App& app, Context& ctx);
void add_check_commands(CLI::App& app, Context& ctx);
void add_network_commands(CLI::App& app, Context& ctx);
void add_import_command(CLI::App& app, Context& ctx);
void add_docs_command(CLI::App& app, Context& ctx);

}  // namespace parasim
