// The scenario key table (sim/scenario/scenario_keys.cpp) is what the parser reads: its defaults
// are the ones the parser applies, unknown keys are matched against it, and a read of a key it
// does not declare is a parser bug.
#include <gtest/gtest.h>

#include <set>

#include "../test_util.h"
#include "sim/scenario/scenario_keys.h"

namespace parasim {
namespace {

// Only the required keys: everything else takes its default.
Json minimal_scenario() {
  return Json::parse(R"({
    "schema": "parasim.scenario/1", "name": "t", "model": "llama2-7b",
    "cluster": {"gpu": "h100-sxm5-80g", "nodes": 1, "gpus_per_node": 1},
    "training": {"global_batch": 8, "seq_len": 4096},
    "parallel": {}
  })");
}

TEST(ScenarioKeys, PointersAreUnique) {
  std::set<std::string> seen;
  for (const auto& k : scenario_keys()) EXPECT_TRUE(seen.insert(k.pointer).second) << k.pointer;
}

TEST(ScenarioKeys, StatedDefaultsAreTheParsersDefaults) {
  // Every default the table states as a JSON value is what --dump-resolved shows for a scenario
  // that leaves the key out (zoo model keys show the zoo model's values, so they are skipped).
  const Json resolved = test::scenario_from(minimal_scenario()).resolved();
  int compared = 0;
  for (const auto& k : scenario_keys()) {
    const std::string ptr = k.pointer;
    if (ptr.starts_with("/model") || ptr.find('*') != std::string::npos || !*k.default_value) continue;
    const Json stated = Json::parse(k.default_value, nullptr, false);
    if (stated.is_discarded() || !resolved.contains(Json::json_pointer(ptr))) continue;
    EXPECT_EQ(resolved.at(Json::json_pointer(ptr)), stated) << ptr;
    ++compared;
  }
  EXPECT_GE(compared, 30);  // most optional keys have a literal default (37 today)
}

TEST(ScenarioKeys, MisspelledTopLevelKeyIsNamedBeforeTheMissingOne) {
  Json j = minimal_scenario();
  j["trainig"] = j["training"];
  j.erase("training");
  EXPECT_EQ(test::scenario_error(j), "test.json: /trainig: unknown key; did you mean \"training\"?");
}

TEST(ScenarioKeys, NestedUnknownKeySuggestsADeclaredKeyNotYetRead) {
  Json j = minimal_scenario();
  j["parallel"]["fsdp"] = {{"sharding", "full"}, {"prefech", 2}};
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/fsdp/prefech: unknown key; did you mean \"prefetch\"?");
}

TEST(ScenarioKeys, TensorParallelBeyondTheKeyValueHeadsIsRefused) {
  // Llama 3 8B has 8 key-value heads; Megatron-Core splits them over tp ranks.
  Json j = minimal_scenario();
  j["model"] = "llama3-8b";
  j["cluster"]["nodes"] = 2;
  j["cluster"]["gpus_per_node"] = 8;
  j["parallel"]["tp"] = 16;
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/tp: tp (16) exceeds the model's kv_heads (8): Megatron-Core needs the "
                                     "key-value heads (num_query_groups) divisible by tp");
  j["parallel"]["tp"] = 8;
  j["parallel"]["dp"] = 2;
  EXPECT_EQ(test::scenario_error(j), "(no error)");
}

}  // namespace
}  // namespace parasim
