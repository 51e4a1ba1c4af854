#include "tools/import/framework_config.h"

#include <filesystem>

namespace parasim {

Json scenario_skeleton(const ImportOptions& o, const std::string& default_name, const std::string& default_stack) {
  Json j = {{"schema", "parasim.scenario/1"}, {"name", o.name.empty() ? default_name : o.name},
            {"stack", o.stack.empty() ? default_stack : o.stack}, {"model", Json::object()},
            {"cluster", {{"gpu", o.gpu}, {"nodes", o.nodes > 0 ? o.nodes : 1}, {"gpus_per_node", o.gpus_per_node}}},
            {"training", Json::object()}, {"parallel", Json::object()}};
  apply_model_option(j, o);
  return j;
}

void apply_model_option(Json& scenario, const ImportOptions& o) {
  if (o.model.empty()) return;
  if (o.model.ends_with(".json") || o.model.find('/') != std::string::npos) {
    Json m = read_json_file(o.model);
    for (const char* k : {"schema", "published_params", "published_params_rounding", "source"}) m.erase(k);
    scenario["model"] = m;
  } else {
    scenario["model"] = o.model;
  }
}

void finish_layout(Json& sc, std::int64_t layers_per_virtual_stage, const std::string& data_dir) {
  Json& p = sc["parallel"];
  const std::int64_t gpus = sc["cluster"]["nodes"].get<std::int64_t>() * sc["cluster"]["gpus_per_node"].get<std::int64_t>();
  const std::int64_t tp = p.value("tp", 1), pp = p.value("pp", 1), cp = p.value("cp", 1);
  if (gpus % (tp * pp * cp) != 0)
    throw ConfigError("tp*pp*cp = " + std::to_string(tp * pp * cp) + " does not divide the " + std::to_string(gpus) +
                      " GPUs (--nodes x --gpus-per-node)");
  p["dp"] = gpus / (tp * pp * cp);
  std::int64_t layers = 0;
  if (sc["model"].is_object() && sc["model"].contains("layers")) layers = sc["model"]["layers"].get<std::int64_t>();
  else if (sc["model"].is_string() && !data_dir.empty())  // a zoo model: its layer count from the zoo
    layers = read_json_file(data_dir + "/models/" + sc["model"].get<std::string>() + ".json").value("layers", std::int64_t{0});
  if (layers_per_virtual_stage > 0 && layers > 0) p["vpp"] = layers / (pp * layers_per_virtual_stage);
  if (!p.contains("schedule")) p["schedule"] = name_of(pp > 1 && p.value("vpp", 1) > 1 ? Schedule::Interleaved : default_schedule(pp));
}

std::vector<std::string> split_args(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] != '\n') cur += text[i + 1], in_word = true;
      ++i;
    } else if (c == '#' && !in_word) {
      while (i < text.size() && text[i] != '\n') ++i;  // a comment line of an argument file
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) out.push_back(cur), cur.clear(), in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

}  // namespace parasim
