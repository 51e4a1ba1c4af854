// Reference documents generated from the scenario key table (sim/scenario/scenario_keys.h):
// docs/scenario-reference.md and the descriptions in schemas/scenario.schema.json. `parasim docs`
// prints them; tests/CMakeLists.txt fails when the committed copies are stale.
#pragma once
#include <string>

#include "sim/config/json_reader.h"
#include "sim/scenario/choices.h"

namespace parasim {

// The Markdown reference: one table per top-level object, every key with type, default, meaning
// and framework option; a key of type "choice" lists its registry's names (`choices`).
std::string scenario_reference_markdown(const std::vector<NamedChoice>& choices);

// `schema` with each declared key's "description" set from the table, and each "choice" key's
// "enum" from its registry. ConfigError when a declared key has no place in the schema or the
// schema has a property the table does not declare.
Json scenario_schema_with_descriptions(Json schema, const std::vector<NamedChoice>& choices);

}  // namespace parasim
