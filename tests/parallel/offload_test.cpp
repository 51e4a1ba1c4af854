// CPU activation offloading (parallel.activation_offload_layers, Megatron-Core's
// cpu_offloading_num_layers through Transformer Engine's offload context): memory, time and the
// checks Megatron-Core applies.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.h"
#include "sim/memory/memory_model.h"

namespace parasim {
namespace {

// Llama 3 8B (32 layers) on one 8-GPU H100 node with FSDP, two microbatches per step.
Json offload_scenario(std::int64_t layers_offloaded) {
  Json j = Json::parse(R"({
    "schema": "parasim.scenario/1", "name": "offload", "model": "llama3-8b",
    "cluster": {"gpu": "h100-sxm5-80g", "nodes": 1, "gpus_per_node": 8},
    "training": {"global_batch": 16, "micro_batch": 1, "seq_len": 8192, "dtype": "bf16"},
    "parallel": {"dp": 8, "schedule": "ddp", "fsdp": {"sharding": "full"}}
  })");
  j["parallel"]["activation_offload_layers"] = layers_offloaded;
  return j;
}

double layer_stored_bytes(const Scenario& sc) { return activation_bytes(sc.model, layer_shape(sc), Recompute::None).layer_stored; }

// The offloaded layers' activations leave the GPU: at the end of forward (where the peak sits)
// N fewer layers are resident, so the peak drops by exactly N layers' saved activations.
TEST(Offload, PeakMemoryDropsByTheOffloadedLayersActivations) {
  const Scenario base = test::scenario_from(offload_scenario(0));
  const auto none = simulate(base, Registries{});
  const double a = layer_stored_bytes(base);
  ASSERT_GT(a, 1e8);
  for (const std::int64_t n : {1, 4, 8, 16, 31}) {
    const auto off = simulate(test::scenario_from(offload_scenario(n)), Registries{});
    const double drop = (none.result.peak_mem_gib - off.result.peak_mem_gib) * 1024.0 * 1024 * 1024;
    EXPECT_NEAR(drop, static_cast<double>(n) * a, 1e-6 * a * static_cast<double>(n)) << n;
  }
}

// With the profile's host link the copies hide under the layers' compute (each window of L/N
// layers outlasts one layer's copy); over a link 1000x slower they set the pace: forward waits
// for every D2H and backward for every H2D, one after the other on the copy stream.
TEST(Offload, CopiesHideUnderComputeUnlessTheHostLinkIsSlow) {
  const std::int64_t n = 8;
  const Scenario base = test::scenario_from(offload_scenario(0));
  const double step0 = simulate(base, Registries{}).result.step_time_s;
  Scenario fast = test::scenario_from(offload_scenario(n));
  const auto hidden = simulate(fast, Registries{});
  EXPECT_NEAR(hidden.result.step_time_s, step0, 0.005 * step0);
  EXPECT_GT(hidden.result.breakdown.at("offload_s"), 0.0);
  Scenario slow = fast;
  slow.profile.pcie_gbps.value /= 1000;
  const double copy_s = layer_stored_bytes(slow) / (slow.profile.pcie_gbps.value * 1e9);
  const double microbatches = 2, copies = 2.0 * static_cast<double>(n) * microbatches;  // D2H + H2D each
  const auto paced = simulate(slow, Registries{});
  EXPECT_NEAR(paced.result.breakdown.at("offload_s"), copies * copy_s, 1e-6 * copies * copy_s);
  EXPECT_GT(paced.result.step_time_s, copies * copy_s);
  EXPECT_LT(paced.result.step_time_s, step0 + copies * copy_s);
}

TEST(Offload, MegatronCoresChecksAreEnforced) {
  for (const auto& [name, edit, expected] : std::vector<std::tuple<std::string, std::function<void(Json&)>, std::string>>{
           {"every layer", [](Json& j) { j["parallel"]["activation_offload_layers"] = 32; },
            "test.json: /parallel/activation_offload_layers: CPU offloading can be done for fewer layers than the model's 32, got 32"},
           {"with pipeline parallelism",
            [](Json& j) { j["parallel"] = {{"dp", 4}, {"pp", 2}, {"schedule", "1f1b"}, {"activation_offload_layers", 4}}; },
            "test.json: /parallel/activation_offload_layers: activation offloading runs with pp = 1 only (Megatron-Core has no support "
            "for it with pipeline parallelism)"},
           {"with recompute", [](Json& j) { j["parallel"]["recompute"] = "selective"; },
            "test.json: /parallel/activation_offload_layers: activation offloading does not run with activation recomputation "
            "(recompute is \"selective\")"}}) {
    Json j = offload_scenario(4);
    edit(j);
    try {
      test::scenario_from(j);
      ADD_FAILURE() << name << ": accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), expected) << name;
    }
  }
}

}  // namespace
}  // namespace parasim
