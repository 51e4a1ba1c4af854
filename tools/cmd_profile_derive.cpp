// parasim profile derive BASE -o NEW.json --set KEY=VALUE... --source TEXT [--power-limit-w W]:
// a profile for a part variant (calibrate/profile/derive.h), validated before it is written.
#include <charconv>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "calibrate/profile/derive.h"
#include "calibrate/profile/profile.h"
#include "sim/core/errors.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"
#include "tools/output_file.h"

namespace parasim {

namespace {

struct DeriveArgs {
  std::string base, output, name, description, device_name, source, how = "datasheet";
  std::vector<std::string> sets;
  double power_limit_w = 0;
  bool force = false;
};

// KEY=VALUE, the value a plain decimal number (no hexadecimal, no surrounding spaces).
std::pair<std::string, double> parse_set(const std::string& s) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw ConfigError(fmt::format("profile derive: --set {}: expected KEY=VALUE, e.g. memory.hbm_gbps=2400", s));
  const char* first = s.data() + eq + 1;
  const char* last = s.data() + s.size();
  double v = 0;
  const auto [end, ec] = std::from_chars(first, last, v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range)
    throw ConfigError(fmt::format("profile derive: --set {}: the value is out of a double's range", s));
  if (ec != std::errc() || end != last)
    throw ConfigError(fmt::format("profile derive: --set {}: the value is not a decimal number (digits, a point, an exponent; no sign "
                                  "'+', no spaces, no hexadecimal)", s));
  return {s.substr(0, eq), v};
}

// Flags that only mean something beside others, and keys given twice, are refused rather than
// silently ignored or overridden.
void check_args(const DeriveArgs& a, bool name_given, bool how_given, const std::vector<std::pair<std::string, double>>& sets) {
  if (name_given && a.name.empty()) throw ConfigError("profile derive: --name is empty; give the new profile's name, or leave --name out");
  if (sets.empty() && (how_given || !a.source.empty()))
    throw ConfigError("profile derive: --how and --source describe the figures --set gives; no --set was given");
  std::set<std::string> seen;
  for (const auto& [key, value] : sets) {
    std::string figure = profile_key_pointer(key);  // a figure and its value are one setting
    if (figure.ends_with("/value")) figure.resize(figure.size() - 6);
    if (!seen.insert(figure).second)
      throw ConfigError(fmt::format("profile derive: --set {} is given twice; give each figure once", key));
  }
}

int run_derive(const DeriveArgs& a, bool name_given, bool how_given, const Context& ctx) {
  const std::filesystem::path out(a.output);
  std::vector<std::pair<std::string, double>> sets;
  for (const auto& s : a.sets) sets.push_back(parse_set(s));
  check_args(a, name_given, how_given, sets);
  check_writable(a.output, a.force, "profile derive -o");
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
  d.sets = sets;
  const Json doc = derive_profile(read_json_file(base_path), base.name, d);
  parse_profile(doc, fmt::format("the profile derived for {} (not written)", a.output));  // it must load as any profile does
  write_output_file(a.output, doc.dump(1) + "\n", a.force, "profile derive -o");
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
  cmd->callback([a, cmd, &ctx]() {
    ctx.exit_code = run_guarded([&]() { return run_derive(*a, cmd->count("--name") > 0, cmd->count("--how") > 0, ctx); });
  });
}

}  // namespace parasim
