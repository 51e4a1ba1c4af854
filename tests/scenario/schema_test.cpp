// The scenario JSON Schema (schemas/scenario.schema.json, for editors) names every field the
// example and measured scenarios use: a field added to the parser and used in a scenario without a
// schema entry fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "../test_util.h"
#include "models/recompute.h"

namespace parasim {
namespace {

// The schema node a $ref names (only "#/$defs/<name>" refs occur in the file).
const Json& resolve(const Json& root, const Json& node) {
  if (!node.contains("$ref")) return node;
  const std::string ref = node["$ref"].get<std::string>();
  return root["$defs"][ref.substr(std::string("#/$defs/").size())];
}

// Every key of `value` that a closed object of the schema (additionalProperties false) does not
// name, recursively, as JSON paths.
void unknown_keys(const Json& root, const Json& schema_node, const Json& value, const std::string& path,
                  std::vector<std::string>& out) {
  const Json& node = resolve(root, schema_node);
  if (node.contains("oneOf")) {  // take the object alternative for an object value
    for (const Json& alt : node["oneOf"]) {
      const Json& a = resolve(root, alt);
      if (value.is_object() && a.contains("properties")) unknown_keys(root, a, value, path, out);
    }
    return;
  }
  if (!value.is_object() || !node.contains("properties")) return;
  const bool closed = node.contains("additionalProperties") && node["additionalProperties"] == false;
  for (const auto& [key, v] : value.items()) {
    if (node["properties"].contains(key)) {
      unknown_keys(root, node["properties"][key], v, path + "/" + key, out);
      continue;
    }
    bool patterned = false;
    if (node.contains("patternProperties"))
      for (const auto& [pattern, sub] : node["patternProperties"].items()) patterned |= std::regex_search(key, std::regex(pattern));
    if (closed && !patterned) out.push_back(path + "/" + key);
  }
}

TEST(Schema, EveryExampleAndMeasuredScenarioFieldIsInTheScenarioSchema) {
  const Json schema = read_json_file(test::data_dir() + "/schemas/scenario.schema.json");
  std::vector<std::pair<std::string, Json>> scenarios;
  for (const auto& e : std::filesystem::directory_iterator(test::data_dir() + "/scenarios"))
    if (e.path().extension() == ".json") scenarios.emplace_back(e.path().string(), read_json_file(e.path().string()));
  for (const auto& e : std::filesystem::directory_iterator(test::data_dir() + "/scenarios/measured"))
    if (e.path().extension() == ".json") {
      const Json m = read_json_file(e.path().string());
      if (m.contains("scenario") && m["scenario"].is_object()) scenarios.emplace_back(e.path().string() + " (/scenario)", m["scenario"]);
    }
  ASSERT_GT(scenarios.size(), 200u);
  for (const auto& [file, sc] : scenarios) {
    std::vector<std::string> unknown;
    unknown_keys(schema, schema, sc, "", unknown);
    for (const auto& u : unknown) ADD_FAILURE() << file << ": " << u << " is not in schemas/scenario.schema.json";
  }
  // The checker sees a key the schema lacks.
  Json bad = scenarios.front().second;
  bad["parallel"]["no_such_field"] = 1;
  std::vector<std::string> unknown;
  unknown_keys(schema, schema, bad, "", unknown);
  EXPECT_EQ(unknown, std::vector<std::string>{"/parallel/no_such_field"});
}

// The choices the schema lists for each training and parallel field equal those the parser
// accepts: each listed value parses, and the parser's own list (from its error for a value outside
// it) is the schema's.
TEST(Schema, EnumsListTheChoicesTheParserAccepts) {
  const Json schema = read_json_file(test::data_dir() + "/schemas/scenario.schema.json");
  int checked = 0;
  for (const char* section : {"training", "parallel"}) {
    const Json& props = resolve(schema, schema["properties"][section])["properties"];
    for (const auto& [key, raw] : props.items()) {
      const Json& node = resolve(schema, raw);
      if (!node.contains("enum") || !node["enum"][0].is_string()) continue;
      std::vector<std::string> listed;
      for (const Json& v : node["enum"]) listed.push_back(v.get<std::string>());
      Json j = test::base_scenario();
      j[section][key] = "no-such-choice";
      const std::string err = test::scenario_error(j);
      const std::string head = "expected one of ";
      const auto at = err.find(head), end = err.find(", got \"no-such-choice\"");
      ASSERT_NE(at, std::string::npos) << section << "/" << key << ": " << err;
      ASSERT_NE(end, std::string::npos) << section << "/" << key << ": " << err;
      std::vector<std::string> parsed;
      const std::string list = err.substr(at + head.size(), end - at - head.size());
      const std::regex quoted("\"([^\"]*)\"");
      for (auto it = std::sregex_iterator(list.begin(), list.end(), quoted); it != std::sregex_iterator(); ++it)
        parsed.push_back((*it)[1]);
      std::sort(listed.begin(), listed.end());
      std::sort(parsed.begin(), parsed.end());
      EXPECT_EQ(listed, parsed) << "schemas/scenario.schema.json " << section << "/" << key;
      ++checked;
    }
  }
  EXPECT_GE(checked, 10);
}

// The module names of recompute_modules (an array, which the enum test above does not reach) are
// the parser's, kRecomputeModules in models/recompute.h.
TEST(Schema, RecomputeModulesAreTheParsersNames) {
  const Json schema = read_json_file(test::data_dir() + "/schemas/scenario.schema.json");
  const Json& node = resolve(schema, resolve(schema, schema["properties"]["parallel"])["properties"]["recompute_modules"]);
  std::vector<std::string> listed;
  for (const Json& v : resolve(schema, node["items"])["enum"]) listed.push_back(v.get<std::string>());
  std::vector<std::string> parsed = recompute_module_names();
  std::sort(listed.begin(), listed.end());
  std::sort(parsed.begin(), parsed.end());
  EXPECT_EQ(listed, parsed);
  EXPECT_FALSE(parsed.empty());
}

// The schema's stack names are the stacks/ folder's, the one registry of them.
TEST(Schema, StackEnumIsTheStacksFolder) {
  const Json schema = read_json_file(test::data_dir() + "/schemas/scenario.schema.json");
  std::vector<std::string> listed;
  for (const Json& v : schema["properties"]["stack"]["enum"]) listed.push_back(v.get<std::string>());
  EXPECT_EQ(listed, stack_names(test::data_dir()));
}

}  // namespace
}  // namespace parasim
