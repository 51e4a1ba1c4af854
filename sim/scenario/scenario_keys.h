// The declaration of every key a scenario (parasim.scenario/1) may hold: its JSON pointer, type,
// default, meaning and the framework option it corresponds to. The parser (scenario.cpp, and
// models/model.cpp for an inline model) may read only keys declared here, and suggests the closest
// declared key for an unknown one; docs/scenario-reference.md and the descriptions in
// schemas/scenario.schema.json are generated from this table (`parasim docs`).
#pragma once
#include <string>
#include <vector>

namespace parasim {

struct ScenarioKey {
  const char* pointer;      // "/parallel/tp"; "*" stands for an array index
  const char* type;         // "integer >= 1", "\"ring\" | \"allgather\"", "object", ...; "choice": a registry's names (named_choices)
  const char* default_value;  // "" when required; text such as "1", "tp", "the profile's reference node"
  const char* description;
  const char* framework;    // the option it corresponds to in Megatron-LM, torchtitan, DeepSpeed, PyTorch; "" if none
};

const std::vector<ScenarioKey>& scenario_keys();

// The declared pointers (generic), in table order: what JsonObject checks reads against.
const std::vector<std::string>& declared_scenario_pointers();

}  // namespace parasim
