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
  std::string algorithm(const CollectiveSpec&) const override { return "free"; }
};

// The whole simulation with a chosen network model; with free communication, overlapped
// communication does not slow compute either.
inline SimulationOutput simulate_with(Scenario sc, const NetworkModel& net) {
  static const Registries reg;
  if (net.name() == "free") sc.profile.overlap_compute_slowdown.value = 0;
  return simulate(sc, reg, &net);
}

}  // namespace parasim::test
