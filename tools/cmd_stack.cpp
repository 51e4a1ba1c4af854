// `parasim stack show NAME`, `parasim stack compare SCENARIO`, `parasim stack doc`: the framework
// stacks (stacks/*.json, sim/scenario/stack.h).
#include <iostream>

#include <fmt/format.h>

#include "sim/scenario/measured.h"
#include "tools/commands.h"
#include "tools/progress.h"

namespace parasim {

namespace {

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void show(const Stack& st) {
  fmt::print("{}: {}\n  framework {}, release {}\n  source: {}\n  file: {}\n\n", st.name, st.description, st.framework, st.release,
             st.source, st.file);
  for (const auto& f : stack_fields()) {
    bool any = false;
    for (const auto& s : st.settings) {
      if (s.field != f.field) continue;
      const std::string when = s.when.describe();
      fmt::print("  {:<34} {}{}\n      {}\n", s.field, value_text(s.value), when.empty() ? "" : "   (only " + when + ")", s.source);
      any = true;
    }
    if (!any) fmt::print("  {:<34} (parasim's default)\n", f.field);
  }
}

// `stack show --json`: parasim.stack/1 (docs/outputs.md); fields the stack leaves to parasim's
// defaults are listed under "defaults".
Json stack_json(const Stack& st) {
  Json settings = Json::array(), defaults = Json::array();
  for (const auto& f : stack_fields()) {
    bool any = false;
    for (const auto& s : st.settings) {
      if (s.field != f.field) continue;
      const std::string when = s.when.describe();
      settings.push_back({{"field", s.field}, {"value", s.value}, {"when", when.empty() ? Json(nullptr) : Json(when)}, {"source", s.source}});
      any = true;
    }
    if (!any) defaults.push_back(f.field);
  }
  return {{"schema", "parasim.stack/1"}, {"name", st.name}, {"description", st.description}, {"framework", st.framework},
          {"release", st.release}, {"source", st.source}, {"file", st.file}, {"settings", settings}, {"defaults", defaults}};
}

// Markdown for docs/stacks.md: one section per stack, one row per value with its source.
void doc(const std::string& data_dir) {
  fmt::print("| stack | framework | release | what it is |\n|---|---|---|---|\n");
  std::vector<Stack> stacks;
  for (const auto& n : stack_names(data_dir)) stacks.push_back(load_stack(data_dir, n, "stack doc"));
  for (const auto& st : stacks) fmt::print("| `{}` | {} | {} | {} |\n", st.name, st.framework, st.release, st.description);
  for (const auto& st : stacks) {
    fmt::print("\n### `{}`\n\n{} Source: {}.\n\n| field | value | only | source |\n|---|---|---|---|\n", st.name, st.description, st.source);
    for (const auto& s : st.settings)
      fmt::print("| `{}` | `{}` | {} | {} |\n", s.field, value_text(s.value), s.when.describe(), s.source);
  }
}

struct CompareRow {
  std::string stack;
  double step_s = 0;
  std::string error;
};

// The scenario under each stack (its own fields still override), against no stack at all.
std::vector<CompareRow> compare(const std::string& file, const Context& ctx) {
  Json j = read_json_file(file);
  if (is_measured_document(j) && j.contains("scenario")) j = j["scenario"];
  if (!j.is_object()) throw ConfigError(file + ": expected a scenario object");
  std::vector<CompareRow> rows;
  std::vector<std::string> names = stack_names(ctx.data_dir);
  names.insert(names.begin(), "");
  const ProgressFn progress = terminal_progress("stack compare");
  for (const auto& name : names) {
    Json v = j;
    if (name.empty()) v.erase("stack");
    else v["stack"] = name;
    CompareRow row{name.empty() ? "(none: parasim's defaults)" : name, 0, ""};
    try {
      row.step_s = simulate(parse_scenario(v, file, ctx.data_dir), ctx.registries).result.step_time_s;
    } catch (const ConfigError& e) {
      row.error = e.what();
    }
    rows.push_back(row);
    if (progress) progress(rows.size(), names.size());
  }
  if (!rows.front().error.empty()) throw ConfigError(rows.front().error);
  return rows;
}

}  // namespace

void add_stack_command(CLI::App& app, Context& ctx) {
  CLI::App* stack = app.add_subcommand("stack", "framework stacks: what each framework release runs (stacks/*.json)");
  stack->require_subcommand(1);
  auto name = std::make_shared<std::string>();
  CLI::App* sh = stack->add_subcommand("show", "print a stack's values, each with its condition and source");
  auto show_json = std::make_shared<bool>(false);
  sh->add_option("name", *name, "stack name (parasim list stacks)")->required();
  sh->add_flag("--json", *show_json, "print the stack (parasim.stack/1) as JSON on stdout");
  sh->callback([name, show_json, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const Stack st = load_stack(ctx.data_dir, *name, "stack show");
      if (*show_json) std::cout << stack_json(st).dump(2) << "\n";
      else show(st);
      return 0;
    });
  });
  CLI::App* dc = stack->add_subcommand("doc", "print every stack and its sourced values as Markdown (docs/stacks.md)");
  dc->callback([&ctx]() { ctx.exit_code = run_guarded([&]() { return doc(ctx.data_dir), 0; }); });
  auto file = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmp = stack->add_subcommand("compare", "simulate a scenario under every stack and print each one's step time against "
                                                   "parasim's defaults (the scenario's own fields still override the stack)");
  cmp->add_option("scenario", *file, "scenario or measured-run JSON")->required();
  cmp->add_flag("--json", *json, "print JSON");
  cmp->callback([file, json, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const auto rows = compare(*file, ctx);
      const double base = rows.front().step_s;
      Json out = Json::array();
      if (!*json) fmt::print("{:<28} {:>12} {:>9}\n", "stack", "step time", "vs none");
      for (const auto& r : rows) {
        if (*json) {
          out.push_back(r.error.empty() ? Json{{"stack", r.stack}, {"step_time_s", r.step_s}, {"vs_none", r.step_s / base - 1}}
                                        : Json{{"stack", r.stack}, {"error", r.error}});
        } else if (r.error.empty()) {
          fmt::print("{:<28} {:>10.4f} s {:>+8.1f}%\n", r.stack, r.step_s, 100 * (r.step_s / base - 1));
        } else {
          fmt::print("{:<28} does not apply: {}\n", r.stack, r.error);
        }
      }
      if (*json) std::cout << out.dump(2) << "\n";
      return 0;
    });
  });
}

}  // namespace parasim
