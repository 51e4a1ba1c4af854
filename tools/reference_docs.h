// Reference documents generated from the scenario key table (sim/scenario/scenario_keys.h):
// docs/scenario-reference.md and the descriptions in schemas/scenario.schema.json. `parasim docs`
// prints them; tests/CMakeLists.txt fails when the committed copies are stale.
#pragma once
#include <string>

#include "sim/config/json_reader.h"

namespace parasim {

// The Markdown reference: one table per top-level object, every key with type, default, meaning
// and framework option.
std::string scenario_reference_markdown();

// `schema` with each declared key's "description" set from the table. ConfigError when a declared
// key has no place in the schema or the schema has a property the table does not declare.
Json scenario_schema_with_descriptions(Json schema);

}  // namespace parasim
