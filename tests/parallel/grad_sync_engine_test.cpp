// The gradient-sync engines' registry: every data-parallel configuration a scenario can state runs
// a registered engine, and the registry describes each engine once.
#include <gtest/gtest.h>

#include <set>

#include "../test_util.h"
#include "sim/core/errors.h"
#include "sim/parallel/grad_sync_engine.h"

namespace parasim {
namespace {

GradSyncRegistry engines() {
  GradSyncRegistry r("gradient-sync engine");
  register_grad_sync_engines(r);
  return r;
}

TEST(GradSyncEngines, EachNamedOnceWithADescriptionAndReference) {
  std::set<std::string> seen;
  const GradSyncRegistry r = engines();
  for (const auto& e : r.entries()) {
    EXPECT_TRUE(seen.insert(e.name).second) << e.name;
    EXPECT_FALSE(e.description.empty()) << e.name;
    EXPECT_FALSE(e.reference.empty()) << e.name;
    EXPECT_NE(e.factory, nullptr) << e.name;
  }
}

TEST(GradSyncEngines, EveryValidDataParallelConfigurationRunsARegisteredEngine) {
  const std::vector<std::string> impls = zero_impls().names();  // every ZeRO implementation a scenario can name
  const GradSyncRegistry r = engines();
  std::set<std::string> used;
  int valid = 0;
  for (int zero = 0; zero <= 3; ++zero)
    for (const std::string& impl : impls)
      for (const char* fsdp : {"", "full", "hybrid", "grad_op"})
        for (const int version : {1, 2}) {
          Json j = test::base_scenario();
          j["parallel"]["zero_stage"] = zero;
          j["parallel"]["zero_impl"] = impl;
          if (!std::string(fsdp).empty()) j["parallel"]["fsdp"] = {{"sharding", fsdp}, {"version", version}};
          if (std::string(fsdp) == "hybrid") j["parallel"]["fsdp"]["shard_group"] = 4;
          std::string name;
          try {
            name = grad_sync_engine_name(test::scenario_from(j));
          } catch (const ConfigError&) {
            continue;  // a combination the parser refuses
          }
          ++valid;
          EXPECT_NE(r.find(name), nullptr) << name;
          used.insert(name);
        }
  EXPECT_GT(valid, 0);
  // Every registered engine is some configuration's.
  EXPECT_EQ(used.size(), r.entries().size());
}

}  // namespace
}  // namespace parasim
