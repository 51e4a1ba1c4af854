// `parasim docs`: prints the generated reference documents (tools/scripts/generate-docs.sh writes
// them into docs/ and schemas/; a test fails when the committed copies are stale).
#include <iostream>

#include "tools/commands.h"
#include "tools/reference_docs.h"

namespace parasim {

void add_docs_command(CLI::App& app, Context& ctx) {
  CLI::App* docs = app.add_subcommand("docs", "print a generated reference document");
  docs->require_subcommand(1);
  docs->add_subcommand("scenario-reference", "docs/scenario-reference.md: every scenario key, from the parser's key table")
      ->callback([&ctx]() {
        ctx.exit_code = run_guarded([&]() {
          std::cout << scenario_reference_markdown(named_choices(ctx.registries));
          return 0;
        });
      });
  docs->add_subcommand("scenario-schema", "schemas/scenario.schema.json with every key's description from the parser's key table")
      ->callback([&ctx]() {
        ctx.exit_code = run_guarded([&]() {
          std::cout << scenario_schema_with_descriptions(read_json_file(ctx.data_dir + "/schemas/scenario.schema.json"), named_choices(ctx.registries)).dump(2) << "\n";
          return 0;
        });
      });
}

}  // namespace parasim
