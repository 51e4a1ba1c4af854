// parasim profile derive BASE -o NEW.json --set KEY=VALUE... --source TEXT [--power-limit-w W]:
// a profile for a part variant (calibrate/profile/derive.h), validated before it is written.
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "calibrate/profile/derive.h"
#include "calibrate/profile/profile.h"
#include "sim/core/errors.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"

namespace parasim {

namespace {

struct DeriveArgs {
  std::string base, output, name, description, device_name, source, how = "datasheet";
  std::vector<std::string> sets;
  double power_limit_w = 0;
  bool force = false;
};

std::pair<std::string, double> parse_set(const std::string& s) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw ConfigError(fmt::format("profile derive: --set {}: expected KEY=VALUE, e.g. memory.hbm_gbps=2400", s));
  try {
    std::size_t used = 0;
    const double v = std::stod(s.substr(eq + 1), &used);
    if (used != s.size() - eq - 1) throw std::invalid_argument("trailing");
    return {s.substr(0, eq), v};
  } catch (const std::exception&) {
    throw ConfigError(fmt::format("profile derive: --set {}: the value is not a number", s));
  }
}

int run_derive(const DeriveArgs& a, const Context& ctx) {
  const std::filesystem::path out(a.output);
  if (std::filesystem::exists(out) && !a.force)
    throw ConfigError(fmt::format("profile derive: {} exists; pass --force to replace it", a.output));
  const Profile base = load_profile(ctx.data_dir, a.base, "profile derive");  // validates the base, resolves its file
  const bool is_path = a.base.find('/') != std::string::npos || a.base.ends_with(".json");
  const std::string base_path = is_path ? a.base : ctx.data_dir + "/calibrate/profiles/" + a.base + ".json";
  ProfileDerivation d;
  d.name = a.name.empty() ? out.stem().string() : a.name;
  d.description = a.description;
  d.device_name = a.device_name;
  d.source = a.source;
  d.how = a.how;
  d.power_limit_w = a.power_limit_w;
  for (const auto& s : a.sets) d.sets.push_back(parse_set(s));
  const Json doc = derive_profile(read_json_file(base_path), base.name, d);
  parse_profile(doc, a.output);  // the result must load as any profile does
  const std::filesystem::path tmp = out.string() + ".tmp";
  {
    std::ofstream f(tmp);
    f << doc.dump(1) << "\n";
    if (!f) throw ConfigError(fmt::format("profile derive: cannot write {}", tmp.string()));
  }
  std::filesystem::rename(tmp, out);
  fmt::print("wrote {} ({} set, every other figure of {} carried over as assumed)\n", a.output, d.sets.size(), base.name);
  return 0;
}

}  // namespace

void add_profile_derive_command(CLI::App* prof, Context& ctx) {
  auto a = std::make_shared<DeriveArgs>();
  CLI::App* cmd = prof->add_subcommand("derive", "make a profile for a part variant from a base profile: the figures given are set, "
                                                 "every other one carried over and marked assumed");
  cmd->add_option("base", a->base, "base profile name or path")->required();
  cmd->add_option("-o,--output", a->output, "the new profile's file")->required();
  cmd->add_option("--name", a->name, "the new profile's name (default: the output file's stem)");
  cmd->add_option("--description", a->description, "what the part is");
  cmd->add_option("--device-name", a->device_name, "the variant's device name, as nvidia-smi prints it");
  cmd->add_option("--set", a->sets, "KEY=VALUE: a figure (JSON pointer /memory/hbm_gbps or dotted memory.hbm_gbps) or a number "
                                    "such as device.memory_bytes");
  cmd->add_option("--source", a->source, "where the set figures come from (required with --set)");
  cmd->add_option("--how", a->how, "how the set figures were obtained")->check(CLI::IsMember({"datasheet", "published", "measured"}));
  cmd->add_option("--power-limit-w", a->power_limit_w, "the variant's board power limit in W, recorded in the description")
      ->check(positive_number());
  cmd->add_flag("--force", a->force, "replace an existing output file");
  cmd->callback([a, &ctx]() { ctx.exit_code = run_guarded([&]() { return run_derive(*a, ctx); }); });
}

}  // namespace parasim
