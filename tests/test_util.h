// Helpers shared by the test suites. Data is located through CMake-configured directories.
#pragma once
#include <string>

#include "sim/simulation.h"

namespace parasim::test {

inline std::string data_dir() { return PARASIM_DATA_DIR; }
inline std::string test_data(const std::string& rel) { return std::string(PARASIM_TEST_DATA_DIR) + "/" + rel; }

// A scenario from a JSON literal, as if read from "test.json".
inline Scenario scenario_from(const Json& j) { return parse_scenario(j, "test.json", data_dir()); }

// A small valid scenario to modify in tests.
inline Json base_scenario() {
  return Json::parse(R"({
    "schema": "parasim.scenario/1", "name": "t", "model": "llama2-7b",
    "cluster": {"gpu": "h100-sxm5-80g", "nodes": 1, "gpus_per_node": 8},
    "training": {"global_batch": 64, "micro_batch": 1, "seq_len": 4096},
    "parallel": {"dp": 8, "tp": 1, "pp": 1, "schedule": "ddp"}
  })");
}

// A network where every transfer is free: for closed-form tests.
class FreeNetwork final : public NetworkModel {
 public:
  std::string name() const override { return "free"; }
  double time_s(const CollectiveSpec&) const override { return 0.0; }
};

// Runs lowering + engine + metrics with a chosen network model.
inline SimulationOutput simulate_with(const Scenario& sc, const NetworkModel& net) {
  static const Registries reg;
  SimulationOutput out;
  const LayerGraph graph = build_layer_graph(sc.model, layer_shape(sc));
  const CostModel cost(sc.profile, sc.training.dtype);
  const LoweringInput in{sc, graph, cost, net};
  out.program = lower(reg.schedules, in);
  out.timeline = run_program(out.program, EngineOptions{});
  MetricsInput mi;
  mi.scenario = sc.name;
  mi.tokens_per_step = static_cast<double>(sc.training.global_batch * sc.training.seq_len);
  mi.gpus = sc.cluster.gpus();
  mi.peak_flops = cost.peak_flops();
  mi.capacity_bytes = sc.profile.device.memory_bytes;
  out.result = compute_metrics(mi, out.program, out.timeline);
  return out;
}

}  // namespace parasim::test
