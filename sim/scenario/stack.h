// Stacks: what a training framework at a release really runs (its loss and norm kernels, optimizer,
// FSDP flavour, pipeline engine...), as data in stacks/<name>@<version>.json, each value with its
// source. A scenario names one ("stack": "torchtitan@2024-12"); its values fill the scenario's
// absent stack-dependent fields. Precedence: parasim's defaults < the stack < the scenario's own
// fields. docs/stacks.md describes the format.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/json_reader.h"

namespace parasim {

// A stack-dependent scenario field: a choice the framework makes, not the user's plan.
struct StackField {
  const char* field;  // dotted path in the scenario: "training.loss_impl", "parallel.fsdp.version"
  const char* what;   // one line
};
// The one list of them (stack files may set only these; `parasim stack show` and the notes use it).
const std::vector<StackField>& stack_fields();

// When a stack value applies: every condition given must hold for the scenario's layout (fields a
// stack never sets). A value under parallel.fsdp applies only where the scenario uses FSDP.
struct StackCondition {
  std::vector<std::string> gpu;  // prefixes of the GPU profile's name ("h100", "gb200")
  std::vector<std::string> dtype;
  std::optional<bool> pipeline;     // pp > 1
  std::optional<bool> interleaved;  // vpp > 1
  std::optional<bool> fsdp;         // parallel.fsdp given
  std::vector<std::int64_t> zero_stage;
  std::vector<std::string> norm;                // model.norm
  std::vector<std::string> position_embedding;  // model.position_embedding
  bool always() const;
  std::string describe() const;  // "only with FSDP, pp > 1"; "" when always
};

struct StackSetting {
  std::string field;  // one of stack_fields()
  Json value;
  StackCondition when;
  std::string source;  // the framework's file and release that sets it
};

struct Stack {
  std::string name;  // "<framework>@<version>", the file's stem
  std::string framework, release, description, source, file;
  std::vector<StackSetting> settings;
};

// The scenario's layout, which the conditions read (safe reads of the raw JSON: a field of the
// wrong type reads as its default and the scenario parser reports it).
struct StackContext {
  std::string gpu, dtype = "bf16", norm, position_embedding;
  std::int64_t pp = 1, vpp = 1, zero_stage = 0;
  bool fsdp = false;
};
bool holds(const StackCondition& c, const StackContext& x);
// The layout fields of a scenario's JSON; gpu, norm and position_embedding are the caller's (gpu:
// the loaded profile's name, so a profile given by path meets its family's conditions; the model
// may be a zoo name).
StackContext stack_context(const Json& scenario);

// Where a stack-dependent field's value came from.
struct FieldOrigin {
  std::string field;
  std::string from;    // "default" | "stack" | "scenario"
  std::string source;  // the stack's source for the value, or why its value did not apply
};

std::string stacks_dir(const std::string& data_dir);
std::vector<std::string> stack_names(const std::string& data_dir);
// Loads stacks/<name>.json; an unknown name is a ConfigError naming `where`, the valid names and
// the closest one.
Stack load_stack(const std::string& data_dir, const std::string& name, const std::string& where);
Stack parse_stack(const Json& j, const std::string& file);

// Fills the scenario JSON's absent stack-dependent fields from the stack (nullptr: none named) where
// each value's condition holds; returns every stack-dependent field's origin, in stack_fields() order.
std::vector<FieldOrigin> apply_stack(Json& scenario, const Stack* stack, const StackContext& x);

// The value at a dotted field path, or nullptr.
const Json* field_value(const Json& scenario, const std::string& field);

}  // namespace parasim
