// `parasim import megatron|deepspeed|torchtitan|llm-foundry|hf-config`: a framework's own config
// read into a scenario that names the framework's stack (tools/import/). Options that could not be
// mapped are listed by name on stderr; the result must load before it is written.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tools/commands.h"
#include "tools/import/framework_config.h"
#include "tools/import/framework_file.h"

namespace parasim {

namespace {

struct FrameworkOpts {
  ImportOptions opt;
  std::vector<std::string> inputs;
  std::string out;
  std::int64_t seq_len = 0;
  bool force = false;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Checks that the result loads, prints what was not mapped, writes it (or prints it).
int emit(const ImportResult& r, const FrameworkOpts& f, const Context& ctx, bool is_model) {
  Json out = r.scenario;
  if (f.seq_len > 0 && !is_model) out["training"]["seq_len"] = f.seq_len;
  const std::string where = f.out.empty() ? "the imported scenario" : f.out;
  if (is_model) parse_model(JsonObject(out, where, ""));
  else parse_scenario(out, where, ctx.data_dir);
  for (const auto& n : r.notes) std::cerr << "note: " << n << "\n";
  for (const auto& u : r.unmapped) std::cerr << "not mapped: " << u << "\n";
  if (f.out.empty()) {
    std::cout << out.dump(1) << "\n";
    return 0;
  }
  if (std::filesystem::exists(f.out) && !f.force) throw ConfigError(f.out + ": exists; refusing to overwrite it (use --force)");
  std::ofstream o(f.out);
  if (!o) throw ConfigError(f.out + ": cannot write");
  o << out.dump(1) << "\n";
  std::cerr << "wrote " << f.out << " (" << r.unmapped.size() << " options not mapped)\n";
  return 0;
}

void common(CLI::App* sub, FrameworkOpts& f, bool scenario) {
  sub->add_option("-o,--output", f.out, "file to write (default: print); refused if it exists, unless --force");
  sub->add_flag("--force", f.force, "overwrite the output file");
  if (!scenario) return;
  sub->add_option("--gpu", f.opt.gpu, "GPU profile (parasim list gpus)")->required();
  sub->add_option("--nodes", f.opt.nodes, "nodes (default: the config's, else 1)");
  sub->add_option("--gpus-per-node", f.opt.gpus_per_node, "GPUs per node (default 8)");
  sub->add_option("--model", f.opt.model, "zoo model or model JSON (default: the config's model)");
  sub->add_option("--stack", f.opt.stack, "stack to name instead of the framework's default (parasim list stacks)");
  sub->add_option("--name", f.opt.name, "scenario name");
  sub->add_option("--seq-len", f.seq_len, "sequence length, where the config has none");
}

}  // namespace

void add_framework_import_commands(CLI::App& app, Context& ctx) {
  CLI::App* imp = app.get_subcommand("import");
  auto f = std::make_shared<FrameworkOpts>();
  CLI::App* mg = imp->add_subcommand("megatron", "read a Megatron-LM / NeMo command line (an argument file, or the arguments after --)");
  mg->add_option("args", f->inputs, "argument file, or -- followed by the arguments")->required();
  common(mg, *f, true);
  mg->callback([f, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const bool file = f->inputs.size() == 1 && !f->inputs[0].starts_with("--");
      f->opt.data_dir = ctx.data_dir;
      // After "--", the arguments as given: CLI11 splits a bracketed value ("--moe-layer-freq [0,1]").
      const auto dashes = std::find(ctx.args.begin(), ctx.args.end(), "--");
      const std::vector<std::string> given = file || dashes == ctx.args.end() ? f->inputs : std::vector<std::string>(dashes + 1, ctx.args.end());
      return emit(import_megatron(file ? split_args(read_text(f->inputs[0])) : given, f->opt), *f, ctx, false);
    });
  });
  const auto one_file = [&](const char* name, const char* what, bool scenario,
                            std::function<ImportResult(const std::string&, const FrameworkOpts&)> read) {
    CLI::App* sub = imp->add_subcommand(name, what);
    sub->add_option("config", f->inputs, "the framework's config file")->required()->expected(1);
    common(sub, *f, scenario);
    sub->callback([f, read, scenario, &ctx]() {
      ctx.exit_code = run_guarded([&]() { return emit(read(f->inputs[0], *f), *f, ctx, !scenario); });
    });
  };
  const auto framework = [](const char* name) {
    return [name](const std::string& p, const FrameworkOpts& o) { return import_framework(name, p, read_text(p), o.opt); };
  };
  one_file("deepspeed", "read a DeepSpeed config (ds_config.json); the model from --model", true, framework("deepspeed"));
  one_file("torchtitan", "read a torchtitan job file (TOML)", true, framework("torchtitan"));
  one_file("llm-foundry", "read an llm-foundry training YAML", true, framework("llm-foundry"));
  one_file("hf-config", "read a Hugging Face config.json into a parasim model (parasim.model/1)", false,
           [](const std::string& p, const FrameworkOpts&) { return import_hf_config(read_json_file(p), p); });
}

}  // namespace parasim
