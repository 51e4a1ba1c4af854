#include "calibrate/profile/derive.h"

#include <cmath>
#include <cstdint>
#include <set>

#include <fmt/format.h>

#include "sim/config/json_pointer.h"
#include "sim/core/errors.h"

namespace parasim {

namespace {

// Every object with both "how" and "source" is a figure or a measured table; the device block's
// "how" says who made the profile (measured, imported, datasheet) and is kept.
void mark_carried(Json& node, const std::string& base_name, const std::string& pointer) {
  if (node.is_object()) {
    if (pointer != "/device" && node.contains("how") && node.contains("source") && node["how"].is_string() &&
        node["source"].is_string()) {
      const std::string how = node["how"].get<std::string>();
      node["source"] = fmt::format("carried over from {} ({}): {}", base_name, how, node["source"].get<std::string>());
      node["how"] = "assumed";
    }
    for (auto& [key, child] : node.items()) mark_carried(child, base_name, pointer + "/" + key);
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) mark_carried(node[i], base_name, pointer + "/" + std::to_string(i));
  }
}

void set_value(Json& doc, const std::string& key, double value, const ProfileDerivation& d) {
  const std::string ptr = profile_key_pointer(key);
  Json::json_pointer jp;
  try {
    jp = Json::json_pointer(ptr);
  } catch (const std::exception&) {
    throw ConfigError(fmt::format("profile derive: --set {}: expected a JSON pointer like /memory/hbm_gbps or a dotted path "
                                  "like memory.hbm_gbps", key));
  }
  if (!doc.contains(jp))
    throw ConfigError(fmt::format("profile derive: --set {}: the base profile has no {} (see `parasim profile show` and the "
                                  "profile's JSON for the names)", key, ptr));
  // A figure's own "value" sets the figure (its source and range go with the old value).
  const auto is_figure = [](const Json& j) { return j.is_object() && j.contains("value") && j["value"].is_number(); };
  if (!jp.empty() && jp.back() == "value" && is_figure(doc[jp.parent_pointer()])) jp = jp.parent_pointer();
  Json& target = doc[jp];
  // A measured point's coordinates (which nodes, ranks, bytes or GEMM shape it was measured at)
  // say which measurement it is: changing one would relabel that measurement.
  static const std::set<std::string> coordinates = {"nodes", "ranks", "bytes", "m", "n", "k", "shape_mnk", "ranks_per_node"};
  for (Json::json_pointer p = jp; !p.empty(); p = p.parent_pointer())
    if (coordinates.count(p.back()))
      throw ConfigError(fmt::format("profile derive: --set {}: {} is a coordinate of a measured point (which {} it was measured at); "
                                    "set what was measured there instead", key, ptr, p.back()));
  if (is_figure(target)) {
    target["value"] = value;
    target["how"] = d.how;
    target["source"] = d.source;
    target.erase("range");  // the base part's range does not describe the variant
    target.erase("range_source");
  } else if (target.is_number_integer()) {
    constexpr double kExactWhole = 9007199254740992.0;  // 2^53: past it a double no longer holds every whole number
    if (value != std::floor(value))
      throw ConfigError(fmt::format("profile derive: --set {}: {} is a count; expected a whole number", key, ptr));
    if (std::fabs(value) > kExactWhole)
      throw ConfigError(fmt::format("profile derive: --set {}: {} is a count; {} is too large (at most 2^53)", key, ptr, value));
    target = static_cast<std::int64_t>(value);  // a count of bytes stays an integer
  } else if (target.is_number()) {
    target = value;
  } else {
    throw ConfigError(fmt::format("profile derive: --set {}: {} is not a number or a figure with a value", key, ptr));
  }
}

}  // namespace

std::string profile_key_pointer(const std::string& key) { return dotted_pointer(key); }

Json derive_profile(const Json& base, const std::string& base_name, const ProfileDerivation& d) {
  if (d.name.empty()) throw ConfigError("profile derive: the new profile needs a name (--name)");
  if (!d.sets.empty() && d.source.empty())
    throw ConfigError("profile derive: --set needs --source naming where the new figures come from (a datasheet, a paper)");
  Json doc = base;
  mark_carried(doc, base_name, "");
  for (const auto& [key, value] : d.sets) set_value(doc, key, value, d);
  std::string set_list;
  for (const auto& [key, value] : d.sets) set_list += fmt::format("{}{} = {:g}", set_list.empty() ? "" : ", ", key, value);
  doc["name"] = d.name;
  std::string desc = d.description.empty() ? d.name : d.description;
  desc += fmt::format(". Derived from profile {} by `parasim profile derive`", base_name);
  if (!set_list.empty()) desc += fmt::format(": {} set from {}", set_list, d.source);
  if (d.power_limit_w > 0)
    desc += fmt::format("; the part runs at a {:g} W power limit, which no figure carried over was measured at", d.power_limit_w);
  desc += "; every other figure is the base part's, marked assumed";
  doc["description"] = desc;
  if (!d.device_name.empty() && doc.contains("device") && doc["device"].is_object()) doc["device"]["name"] = d.device_name;
  if (doc.contains("device") && doc["device"].is_object() && doc["device"].contains("source") && !set_list.empty())
    doc["device"]["source"] = fmt::format("{} ({}); the rest carried over from {}", d.source, set_list, base_name);
  return doc;
}

}  // namespace parasim
