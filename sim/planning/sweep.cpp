#include "sim/planning/sweep.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "sim/config/json_pointer.h"
#include "sim/core/registry.h"
#include "sim/parallel/schedule.h"
#include "sim/scenario/scenario_keys.h"

namespace parasim {

const std::vector<SweepKey>& sweep_keys() {
  static const std::vector<SweepKey> keys = {
      {"tp", "/parallel/tp", "tensor-parallel size"},
      {"pp", "/parallel/pp", "pipeline stages"},
      {"vpp", "/parallel/vpp", "model chunks per stage (interleaved schedule)"},
      {"dp", "/parallel/dp", "data-parallel size (derived from the GPU count when not varied)"},
      {"cp", "/parallel/cp", "context-parallel size"},
      {"cp_impl", "/parallel/cp_impl", "see `parasim list cp-impls`"},
      {"ep", "/parallel/ep", "expert-parallel size"},
      {"etp", "/parallel/etp", "expert tensor-parallel size (1 or tp)"},
      {"schedule", "/parallel/schedule", "see `parasim list schedules`"},
      {"recompute", "/parallel/recompute", "see `parasim list recompute`"},
      {"recompute_modules", "/parallel/recompute_modules", "a list per value: [core_attn],[layernorm,moe_act]"},
      {"zero_stage", "/parallel/zero_stage", "ZeRO stage 0..3"},
      {"fsdp", "/parallel/fsdp/sharding", "FSDP sharding, `parasim list fsdp-shardings` (null: no FSDP)"},
      {"sequence_parallel", "/parallel/sequence_parallel", "true | false"},
      {"tp_comm_overlap", "/parallel/tp_comm_overlap", "true | false"},
      {"ep_comm_overlap", "/parallel/ep_comm_overlap", "true | false"},
      {"bucket_mb", "/parallel/bucket_mb", "DDP gradient bucket size, MB"},
      {"micro_batch", "/training/micro_batch", "sequences per microbatch"},
      {"global_batch", "/training/global_batch", "sequences per step"},
      {"seq_len", "/training/seq_len", "tokens per sequence"},
      {"dtype", "/training/dtype", "see `parasim list dtypes`"},
      {"fp8_recipe", "/training/fp8_recipe", "see `parasim list fp8-recipes`"},
      {"cuda_graph_scope", "/training/cuda_graph_scope", "a list per value: [],[attn,moe_router]"},
      {"nodes", "/cluster/nodes", "nodes in the cluster"},
      {"gpus_per_node", "/cluster/gpus_per_node", "GPUs per node"},
      {"gpu", "/cluster/gpu", "GPU profile name"},
      {"inter_node", "/cluster/inter_node/kind", "fat_tree | rail_optimized"},
      {"nic_gbps", "/cluster/inter_node/nic_gbps", "per NIC per direction, GB/s"},
      {"nics_per_node", "/cluster/inter_node/nics_per_node", "NICs per node"},
      {"oversubscription", "/cluster/inter_node/oversubscription", "fabric oversubscription"},
      {"network", "/network/model", "network model: analytical | flow"},
      {"nccl_algorithm", "/network/algorithm", "see `parasim list nccl-algorithms`"},
  };
  return keys;
}

std::string sweep_keys_help() {
  std::string s = "KEY is a JSON pointer (/parallel/tp) or one of:";
  for (const SweepKey& k : sweep_keys()) s += fmt::format("\n  {:<18} {:<36} {}", k.name, k.pointer, k.help);
  return s;
}

namespace {

// Deeper lists and objects in a --vary value are refused (a scenario field nests a few levels).
constexpr std::size_t kMaxValueDepth = 16;

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// `text` split at its commas outside brackets, braces and double-quoted strings (so a value may be
// a JSON array or object; a quote in the middle of a bare word is a character), each item trimmed;
// throws for an empty item, unbalanced brackets or nesting deeper than kMaxValueDepth.
std::vector<std::string> split_top_level(const std::string& text, const std::string& what) {
  std::vector<std::string> items;
  std::string cur, open;  // open: the brackets not yet closed, innermost last
  bool quoted = false;
  auto flush = [&] {
    if (trimmed(cur).empty()) throw ConfigError(what + ": empty value");
    items.push_back(trimmed(cur));
    cur.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted && c == '\\' && i + 1 < text.size()) {  // an escaped character, kept as written
      cur += c;
      cur += text[++i];
      continue;
    }
    if (quoted) {
      quoted = c != '"';
    } else if (c == '"' && (!open.empty() || trimmed(cur).empty())) {
      quoted = true;
    } else if (c == '[' || c == '{') {
      open += c;
      if (open.size() > kMaxValueDepth) throw ConfigError(what + ": nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
    } else if (c == ']' || c == '}') {
      if (open.empty() || open.back() != (c == ']' ? '[' : '{')) throw ConfigError(what + ": unbalanced '" + std::string(1, c) + "'");
      open.pop_back();
    } else if (c == ',' && open.empty()) {
      flush();
      continue;
    }
    cur += c;
  }
  if (quoted) throw ConfigError(what + ": unclosed '\"'");
  if (!open.empty()) throw ConfigError(what + ": unclosed '" + open.substr(open.size() - 1) + "'");
  flush();
  return items;
}

// One --vary value: true, false, null, a number, a JSON string, array or object, an array of bare
// words ([attn, moe_router]: each item read alike), or else the text as a string.
Json parse_value(const std::string& v, const std::string& what) {
  if (v == "true") return true;
  if (v == "false") return false;
  if (v == "null") return nullptr;
  if (v.front() == '[' || v.front() == '{' || v.front() == '"') {
    Json j = Json::parse(v, nullptr, false);
    if (!j.is_discarded()) return j;
    if (v.front() != '[' || v.back() != ']') throw ConfigError(what + ": " + v + " is not valid JSON");
    Json arr = Json::array();
    if (!trimmed(v.substr(1, v.size() - 2)).empty())
      for (const std::string& item : split_top_level(v.substr(1, v.size() - 2), what)) arr.push_back(parse_value(item, what));
    return arr;
  }
  // A number as JSON spells one (as a scenario file reads it: not 0x10, +5, 5. or .5, which stay strings).
  const Json n = Json::parse(v, nullptr, false);
  if (!n.is_discarded() && n.is_number()) return n;
  return v;
}

void set_pointer(Json& j, const std::string& pointer, const Json& value) {
  const Json::json_pointer p(pointer);
  // A key inside a value that is not an object (a zoo model's name at /model) cannot be set.
  for (Json::json_pointer up = p.parent_pointer(); !up.empty(); up = up.parent_pointer())
    if (j.contains(up) && !j.at(up).is_object())
      throw ConfigError(pointer + ": cannot be set: " + up.to_string() + " is " + j.at(up).dump() +
                        ", not an object (give it inline in the scenario to vary its fields)");
  if (!value.is_null()) {
    j[p] = value;
  } else if (j.contains(p)) {
    const Json::json_pointer parent = p.parent_pointer();
    j.at(parent).erase(p.back());
    // An object emptied by removing its only key (e.g. fsdp) goes too.
    if (j.at(parent).empty() && !parent.empty()) j.at(parent.parent_pointer()).erase(parent.back());
  }
}

std::int64_t int_at(const Json& j, const std::string& pointer, std::int64_t def) {
  const Json::json_pointer p(pointer);
  return j.contains(p) && j.at(p).is_number_integer() ? j.at(p).get<std::int64_t>() : def;
}


// The expected cost of one combination (expected_cost), read from its JSON: every process of a
// distributed sweep estimates every combination before simulating its share, so no scenario is
// parsed for it. An estimate for balancing only: where a key is absent the parser's usual default
// is taken, and a combination the parser will refuse costs nothing (it is skipped at once). The
// zoo's layer counts are read once per model name.
double combination_cost(const Json& j, const std::string& data_dir, const Registries& reg,
                        std::map<std::string, std::int64_t>& zoo_layers) {
  try {
    const std::int64_t pp = int_at(j, "/parallel/pp", 1), vpp = int_at(j, "/parallel/vpp", 1);
    const std::int64_t per_step = int_at(j, "/training/micro_batch", 1) * int_at(j, "/parallel/dp", 1);
    const std::int64_t m = per_step > 0 ? int_at(j, "/training/global_batch", 0) / per_step : 0;
    const auto* def = reg.schedules.find(j.value(Json::json_pointer("/parallel/schedule"), name_of(default_schedule(pp))));
    if (m <= 0 || !def) return 0.0;
    const Json& model = j.at("model");
    std::int64_t layers = 1;
    if (model.is_object()) layers = model.value("layers", std::int64_t{1});
    else if (const auto name = model.get<std::string>(); zoo_layers.count(name)) layers = zoo_layers[name];
    else layers = zoo_layers[name] = load_zoo_model(data_dir, name, "sweep").layers;
    return expected_cost(m, fold_points(def->factory.periodicity, pp), layers, pp, vpp);
  } catch (const std::exception&) {
    return 0.0;
  }
}
}  // namespace

namespace {
// The declared scenario keys a name that is no short name stands for: its last segment
// ("moe_dispatcher", "heads") or its dotted path ("parallel.moe_dispatcher"), or else the keys whose
// last segment begins with it ("seq" -> "/training/seq_len"), as the suggestion of an error ("did you
// mean \"/parallel/moe_dispatcher\"?", or "one of" several); "" when none.
std::string declared_pointers_named(const std::string& name) {
  const std::string dotted = dotted_pointer(name);
  std::vector<std::string> found, prefixed;
  for (const std::string& p : declared_scenario_pointers()) {
    if (p.find('*') != std::string::npos) continue;
    if (p == dotted || (p.size() > name.size() && p.ends_with("/" + name))) found.push_back("\"" + p + "\"");
    else if (name.size() >= 3 && p.find("/" + name) == p.rfind('/')) prefixed.push_back("\"" + p + "\"");
  }
  if (found.empty()) found = prefixed;
  if (found.size() > 1) return "one of " + join_names(found, ", ");
  return found.empty() ? "" : found.front();
}
}  // namespace

VaryAxis parse_vary(const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    throw ConfigError("--vary " + arg + ": expected KEY=V1,V2,... (e.g. tp=1,2,4)");
  VaryAxis a;
  a.name = arg.substr(0, eq);
  if (a.name.front() == '/') {
    a.pointer = a.name;
    bool valid = a.pointer.size() > 1 && !a.pointer.ends_with("/") && a.pointer.find("//") == std::string::npos;
    try {
      (void)Json::json_pointer(a.pointer);
    } catch (const std::exception&) {
      valid = false;
    }
    if (!valid)
      throw ConfigError("--vary " + arg + ": \"" + a.pointer + "\" is not a JSON pointer to a scenario key (/section/key; '~' only as ~0 or ~1)");
  } else {
    std::vector<std::string> names;
    for (const SweepKey& k : sweep_keys()) {
      names.push_back(k.name);
      if (a.name == k.name) a.pointer = k.pointer;
    }
    if (a.pointer.empty()) {
      std::string close = declared_pointers_named(a.name);
      if (close.empty() && !(close = closest_name(a.name, names)).empty()) close = "\"" + close + "\"";
      throw ConfigError("--vary " + arg + ": unknown key \"" + a.name + "\"" + (close.empty() ? "" : "; did you mean " + close + "?") +
                        " (a JSON pointer such as /parallel/tp, or a short name: see parasim sweep --help)");
    }
  }
  const std::string what = "--vary " + arg;
  for (const std::string& v : split_top_level(arg.substr(eq + 1), what)) {
    Json value = parse_value(v, what);
    if (std::find(a.values.begin(), a.values.end(), value) != a.values.end())
      throw ConfigError(what + ": " + v + " is listed twice; each value once (a repeated value only repeats its rows)");
    a.values.push_back(std::move(value));
  }
  return a;
}

std::vector<VaryAxis> parse_vary_axes(const std::vector<std::string>& args) {
  std::vector<VaryAxis> axes;
  for (const std::string& arg : args) {
    VaryAxis a = parse_vary(arg);
    for (const VaryAxis& b : axes) {
      const auto inside = [](const std::string& inner, const std::string& outer) {
        return inner == outer || inner.starts_with(outer + "/");
      };
      if (inside(a.pointer, b.pointer) || inside(b.pointer, a.pointer))
        throw ConfigError("--vary " + arg + ": " + a.name + " (" + a.pointer + ") and the earlier --vary " + b.name + " (" + b.pointer +
                          ") set the same setting; give each setting one --vary");
    }
    axes.push_back(std::move(a));
  }
  return axes;
}

bool SweepSpec::derive_dp() const {
  bool shape = false;
  for (const VaryAxis& a : axes) {
    if (a.pointer == "/parallel/dp") return false;
    shape = shape || a.pointer == "/parallel/tp" || a.pointer == "/parallel/pp" || a.pointer == "/parallel/cp" ||
            a.pointer == "/cluster/nodes" || a.pointer == "/cluster/gpus_per_node";
  }
  return shape;
}

namespace {

// The schedule is derived too when an axis changes pp and none sets the schedule: a schedule that
// does not fit the pp (the registry's `pipeline`: needs pp > 1) gives way to the default for it
// (default_schedule: ddp at pp 1, 1f1b above; interleaved when the scenario has vpp > 1); one that
// fits is kept (gpipe at pp 4, dataparallel at pp 1). An unknown name is left to the loader.
bool derives_schedule(const std::vector<VaryAxis>& axes) {
  bool pp = false;
  for (const VaryAxis& a : axes) {
    if (a.pointer == "/parallel/schedule") return false;
    pp = pp || a.pointer == "/parallel/pp";
  }
  return pp;
}

void derive_schedule(Json& j) {
  const std::int64_t pp = int_at(j, "/parallel/pp", 1), vpp = int_at(j, "/parallel/vpp", 1);
  const Json::json_pointer at("/parallel/schedule");
  const Schedule fallback = default_schedule(pp);
  const std::string given = j.contains(at) && j[at].is_string() ? j[at].get<std::string>() : name_of(fallback);
  const auto* entry = schedule_registry().find(given);
  if (entry && entry->factory.pipeline == (pp > 1)) return;
  if (!entry && j.contains(at)) return;
  j[at] = pp > 1 && vpp > 1 ? name_of(Schedule::Interleaved) : name_of(fallback);
}

}  // namespace

std::size_t SweepSpec::combinations() const {
  std::size_t n = 1;
  for (const VaryAxis& a : axes) n *= a.values.size();
  return n;
}

std::vector<std::string> SweepSpec::setting_names() const {
  std::vector<std::string> names;
  for (const VaryAxis& a : axes) names.push_back(a.name);
  if (derive_dp()) names.push_back("dp");
  if (derives_schedule(axes)) names.push_back("schedule");
  return names;
}

namespace {

// The value of each axis in combination i, the last axis fastest.
std::vector<const Json*> pick(const std::vector<VaryAxis>& axes, std::size_t i) {
  std::vector<const Json*> v(axes.size());
  for (size_t k = axes.size(); k-- > 0;) {
    v[k] = &axes[k].values[i % axes[k].values.size()];
    i /= axes[k].values.size();
  }
  return v;
}

}  // namespace

Json SweepSpec::scenario(std::size_t i) const {
  Json j = base;
  const auto v = pick(axes, i);
  for (size_t k = 0; k < axes.size(); ++k) set_pointer(j, axes[k].pointer, *v[k]);
  if (derive_dp()) {
    const std::int64_t gpus = int_at(j, "/cluster/nodes", 1) * int_at(j, "/cluster/gpus_per_node", 8);
    const std::int64_t shape = int_at(j, "/parallel/tp", 1) * int_at(j, "/parallel/pp", 1) * int_at(j, "/parallel/cp", 1);
    if (shape > 0 && gpus % shape == 0) j["parallel"]["dp"] = gpus / shape;
  }
  if (derives_schedule(axes)) derive_schedule(j);
  return j;
}

Json SweepSpec::settings(std::size_t i) const {
  Json s = Json::object();
  const auto v = pick(axes, i);
  for (size_t k = 0; k < axes.size(); ++k) s[axes[k].name] = *v[k];
  if (derive_dp()) s["dp"] = scenario(i).value(Json::json_pointer("/parallel/dp"), Json(nullptr));
  if (derives_schedule(axes)) s["schedule"] = scenario(i).value(Json::json_pointer("/parallel/schedule"), Json(nullptr));
  return s;
}

Outcome evaluate_combination(const SweepSpec& spec, std::size_t i, const std::string& data_dir, const Registries& reg) {
  Outcome o;
  try {
    const Scenario sc = parse_scenario(spec.scenario(i), spec.file, data_dir);
    o.row = make_row(sc, simulate(sc, reg), i, spec.settings(i));
  } catch (const ConfigError& e) {
    o.skipped = error_kind(e.what(), spec.file);
    o.skipped_example = without_file(e.what(), spec.file);
  } catch (const Json::exception& e) {  // a pointer through a value that is not an object
    o.skipped = std::string("cannot set the key: ") + e.what();
    o.skipped_example = o.skipped;
  }
  if (!o.row) {  // the varied keys' values, in --vary order (not scenario(i): it may be what failed)
    std::string at;
    const auto v = pick(spec.axes, i);
    for (size_t k = 0; k < spec.axes.size(); ++k) at += (k ? ", " : "") + spec.axes[k].name + "=" + v[k]->dump();
    o.skipped_example = at + ": " + o.skipped_example;
  }
  return o;
}

Evaluated run_sweep(const SweepSpec& spec, const std::string& data_dir, const Registries& reg, Objective objective,
                    const EvalOptions& opt) {
  EvalOptions eo = opt;
  std::map<std::string, std::int64_t> zoo_layers;
  if (eo.distribution && !eo.cost)
    eo.cost = [&](std::size_t i) { return combination_cost(spec.scenario(i), data_dir, reg, zoo_layers); };
  Evaluated ev = evaluate_all(
      spec.combinations(), [&](std::size_t i) { return evaluate_combination(spec, i, data_dir, reg); }, eo);
  rank_rows(ev.rows, objective);
  return ev;
}

Json sweep_json(const SweepSpec& spec, const Evaluated& ev, Objective objective, double price) {
  Json vary = Json::array();
  for (const VaryAxis& a : spec.axes) vary.push_back({{"key", a.pointer}, {"name", a.name}, {"values", a.values}});
  Json rows = Json::array();
  for (const Row& r : ev.rows) rows.push_back(row_json(r, price));
  return {{"schema", "parasim.sweep/1"}, {"scenario", spec.file},    {"objective", objective_name(objective)},
          {"vary", vary},                {"dp_derived", spec.derive_dp()}, {"total", ev.total},
          {"evaluated", ev.evaluated},   {"interrupted", ev.interrupted}, {"skipped", ev.skipped},
          {"skipped_examples", ev.skipped_examples}, {"rows", rows}};
}

}  // namespace parasim
