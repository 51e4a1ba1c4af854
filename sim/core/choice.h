// Choices by name parsed once into enums: a registry whose entries carry an enum value (Choice<E>),
// the name of a value, the parser's reading of a key, and a registry described for `parasim list`,
// the JSON Schema's enums and the reference (NamedChoice). The scenario's registries are in
// sim/scenario/choices.h, the model's in models/model.h.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/config/json_reader.h"
#include "sim/core/registry.h"

namespace parasim {

// The entry of a registry whose factory holds the value `v`, and its name (what --dump-resolved and
// the results print).
template <class F, class E>
const typename Registry<F>::Entry& entry_of(const Registry<F>& r, E v) {
  for (const auto& e : r.entries())
    if (e.factory.value == v) return e;
  throw std::logic_error("a " + r.kind() + " value without a name in its registry");
}
template <class F, class E>
const std::string& name_of(const Registry<F>& r, E v) {
  return entry_of(r, v).name;
}

// A choice's entry: its enum value, and the ZeRO stages it applies to (a bit per stage; all by default).
template <class E>
struct Choice {
  E value;
  std::uint8_t stages = 0xF;
};
template <class E>
using ChoiceRegistry = Registry<Choice<E>>;

// The registry entry `key` of `o` names (the default's when absent); an unknown name is a
// ConfigError listing the registry's names and the closest one.
template <class F, class E>
typename Registry<F>::Entry parse_choice(const JsonObject& o, const std::string& key, const Registry<F>& r, E def) {
  return *r.find(o.choice(key, r.names(), name_of(r, def)));
}

template <class E>
E parse_enum(const JsonObject& o, const std::string& key, const ChoiceRegistry<E>& r, E def) {
  return parse_choice(o, key, r, def).factory.value;
}

// The registry values an array key of `o` names, in its order (each once); an unknown name is a
// ConfigError naming the element's JSON pointer.
template <class E>
std::vector<E> parse_enum_list(const JsonObject& o, const std::string& key, const ChoiceRegistry<E>& r) {
  std::vector<E> out;
  for (const std::string& n : o.choice_list(key, r.names())) out.push_back(r.find(n)->factory.value);
  return out;
}

// One kind of name a scenario key takes, as `parasim list`, the docs and the schema show it.
struct NamedChoice {
  std::string list;     // `parasim list <list>`
  std::string pointer;  // the scenario key (generic JSON pointer)
  struct Name {
    std::string name, description, reference;
  };
  std::vector<Name> names;
  bool many = false;  // the key takes an array of the names (each at most once), not one name
  std::vector<std::string> name_list() const;
};
template <class F>
NamedChoice describe(const Registry<F>& r, std::string list, std::string pointer) {
  NamedChoice c{std::move(list), std::move(pointer), {}};
  for (const auto& e : r.entries()) c.names.push_back({e.name, e.description, e.reference});
  return c;
}
template <class F>
NamedChoice describe_many(const Registry<F>& r, std::string list, std::string pointer) {
  NamedChoice c = describe(r, std::move(list), std::move(pointer));
  c.many = true;
  return c;
}
}  // namespace parasim
