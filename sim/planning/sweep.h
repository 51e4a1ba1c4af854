// `parasim sweep`: the cartesian product of scenario keys, each combination applied to the
// scenario's JSON and loaded through the strict loader, so a combination the loader rejects is
// skipped and counted by the kind of its error, and the rest are simulated and ranked.
#pragma once
#include <string>
#include <vector>

#include "sim/planning/evaluate.h"

namespace parasim {

// A key a sweep can vary: its short name, its JSON pointer in a scenario, what it sets.
struct SweepKey {
  const char* name;
  const char* pointer;
  const char* help;
};
// The short names (also the --help text and the "did you mean" of an unknown key).
const std::vector<SweepKey>& sweep_keys();
std::string sweep_keys_help();

struct VaryAxis {
  std::string name;     // short name, or the pointer when given as one
  std::string pointer;  // JSON pointer into the scenario
  std::vector<Json> values;
};
// "tp=1,2,4" or "/parallel/tp=1,2,4". A value is read as JSON when it parses as a number, true,
// false or null (null removes the key: the loader's default), else as a string.
VaryAxis parse_vary(const std::string& arg);
// The axes of one sweep, parsed; a ConfigError when two name the same setting or one lies inside
// the other (/parallel and /parallel/tp): the later would overwrite the earlier's values, and the
// rows would be labelled with settings that were never simulated.
std::vector<VaryAxis> parse_vary_axes(const std::vector<std::string>& args);

struct SweepSpec {
  std::string file;  // the scenario file (names errors)
  Json base;         // its JSON
  std::vector<VaryAxis> axes;
  // Derive parallel.dp from the GPU count when an axis changes tp, pp, cp, nodes or
  // gpus_per_node but none sets dp.
  bool derive_dp() const;
  std::size_t combinations() const;
  // Combination i (row-major over the axes, the last one fastest): its settings and scenario JSON.
  Json settings(std::size_t i) const;
  Json scenario(std::size_t i) const;
  std::vector<std::string> setting_names() const;
};

// Loads combination i and simulates it; a ConfigError (at load or from the simulation) is a skip.
Outcome evaluate_combination(const SweepSpec& spec, std::size_t i, const std::string& data_dir, const Registries& reg);

// Runs, ranks and returns the sweep. `jobs`/`stop`/`progress` as in evaluate_all.
Evaluated run_sweep(const SweepSpec& spec, const std::string& data_dir, const Registries& reg, Objective objective,
                    const EvalOptions& opt);

// The parasim.sweep/1 document.
Json sweep_json(const SweepSpec& spec, const Evaluated& ev, Objective objective, double price_per_gpu_hour);

}  // namespace parasim
