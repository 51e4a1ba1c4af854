// The registries are the one source of the names a scenario key takes (sim/scenario/choices.h, the
// schedule registry): for each, every registered name passes the parser's name check, is in the
// JSON Schema's enum and in `parasim list`, and a misspelt name is answered with the registered
// one ("did you mean").
#include <gtest/gtest.h>

#include <algorithm>

#include "../test_util.h"
#include "tools/reference_docs.h"

namespace parasim {
namespace {

std::vector<std::string> split_pointer(const std::string& pointer) {  // "/parallel/fsdp" -> parallel, fsdp
  std::vector<std::string> keys;
  for (size_t at = 1, next; at <= pointer.size(); at = next + 1) {
    next = std::min(pointer.find('/', at), pointer.size());
    keys.push_back(pointer.substr(at, next - at));
  }
  return keys;
}

// The schema node of a generic JSON pointer, following $ref and taking the oneOf alternative that
// has the property.
const Json* schema_node(const Json& root, const std::string& pointer) {
  const Json* node = &root;
  auto deref = [&](const Json* n) {
    return n->contains("$ref") ? &root.at(Json::json_pointer((*n)["$ref"].get<std::string>().substr(1))) : n;
  };
  for (const auto& key : split_pointer(pointer)) {
    node = deref(node);
    const Json* next = nullptr;
    if (node->contains("properties") && (*node)["properties"].contains(key)) next = &(*node)["properties"][key];
    if (!next && node->contains("oneOf"))
      for (const Json& alt : (*node)["oneOf"]) {
        const Json* a = deref(&alt);
        if (a->contains("properties") && (*a)["properties"].contains(key)) next = &(*a)["properties"][key];
      }
    if (!next) return nullptr;
    node = next;
  }
  return deref(node);
}

// The parser's answer to `name` at `c`'s key of a small valid scenario, alone in an array where the
// key takes several ("(no error)" when it loads).
std::string parse_with(const NamedChoice& c, const std::string& name) {
  const std::string& pointer = c.pointer;
  Json j = test::base_scenario();
  if (pointer.starts_with("/model/"))  // the zoo model written inline, so its keys can be set
    j["model"] = read_json_file(test::data_dir() + "/models/" + j["model"].get<std::string>() + ".json");
  j[Json::json_pointer(pointer)] = c.many ? Json::array({name}) : Json(name);
  return test::scenario_error(j);
}

TEST(Choices, EveryRegisteredNameIsParsedListedAndInTheSchema) {
  const Registries reg;
  const std::vector<NamedChoice> choices = named_choices(reg);
  const Json schema = read_json_file(test::data_dir() + "/schemas/scenario.schema.json");
  ASSERT_GE(choices.size(), 5u);
  for (const NamedChoice& c : choices) {
    ASSERT_FALSE(c.names.empty()) << c.list;
    // The name check passes (a cross-field check may still refuse it in this small scenario).
    for (const auto& n : c.names)
      EXPECT_EQ(parse_with(c, n.name).find("expected one of"), std::string::npos) << c.pointer << " " << n.name;
    const Json* node = schema_node(schema, c.pointer);
    ASSERT_NE(node, nullptr) << c.pointer;
    EXPECT_EQ((c.many ? (*node)["items"] : *node)["enum"].get<std::vector<std::string>>(), c.name_list()) << c.pointer;
    const auto [code, out] = test::cli_stdout("list " + c.list + " --json");
    ASSERT_EQ(code, 0) << c.list;
    std::vector<std::string> listed;
    const Json list = Json::parse(out);
    for (const Json& item : list["items"]) listed.push_back(item["name"].get<std::string>());
    EXPECT_EQ(listed, c.name_list()) << c.list;
  }
}

TEST(Choices, AMisspeltNameGetsTheRegisteredOne) {
  for (const NamedChoice& c : named_choices(Registries{}))
    for (const auto& n : c.names) {
      const std::string err = parse_with(c, n.name + "x");
      EXPECT_NE(err.find(c.pointer + (c.many ? "/0" : "") + ": expected one of"), std::string::npos) << err;
      EXPECT_NE(err.find("did you mean \"" + n.name + "\"?"), std::string::npos) << err;
      for (const auto& other : c.names) EXPECT_NE(err.find("\"" + other.name + "\""), std::string::npos) << err;
    }
}

}  // namespace
}  // namespace parasim
