// Strict, typed decoding of JSON objects. Each field is declared once where it is read; the
// declaration is the schema. Unknown keys, wrong types and out-of-range values are ConfigErrors
// that name the file, the JSON pointer, what was expected, and the closest valid key.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/errors.h"

namespace parasim {

using Json = nlohmann::json;

// Reads a JSON file once ("-": standard input, so pipes, FIFOs and <(...) work); a missing file, a
// syntax error, a key given twice in one object or a number beyond double range is a ConfigError
// naming the file (and the JSON pointer where there is one).
Json read_json_file(const std::string& path);
// The same checks on text already read; `file` names it in messages. Text cut short is reported as
// "JSON ends early at byte N (cut_hint)" when a hint is given.
Json parse_json_text(const std::string& text, const std::string& file, const std::string& cut_hint = "");
// A whole file read once ("-": standard input). ConfigError when it cannot be opened or read.
std::string read_text_file(const std::string& path);
// How messages name an input path ("-" is "<stdin>").
std::string input_name(const std::string& path);

// Stems of the *.json files in a directory, sorted (zoo models, profiles).
std::vector<std::string> json_stems(const std::string& dir);

// The pointer with array indices replaced by "*" (/cluster/inter_node/links/3/a -> .../links/*/a).
std::string generic_pointer(const std::string& pointer);

// Escapes a key for use in a JSON pointer (RFC 6901).
std::string pointer_child(const std::string& pointer, const std::string& key);

[[noreturn]] void throw_config(const std::string& file, const std::string& pointer, const std::string& msg);

class JsonObject {
 public:
  // Throws unless j is an object. `declared`, when given, lists the generic JSON pointers the format
  // declares (sim/scenario/scenario_keys.h): a getter asking for an undeclared key is a parser bug
  // (std::logic_error), and unknown keys are matched against the declared ones. Child objects
  // inherit it.
  JsonObject(const Json& j, std::string file, std::string pointer, const std::vector<std::string>* declared = nullptr);

  bool has(const std::string& key) const;
  // The raw value; marks the key as known. Throws when required and absent.
  const Json& raw(const std::string& key) const;
  const Json* raw_opt(const std::string& key) const;

  std::string str(const std::string& key) const;
  std::string str(const std::string& key, const std::string& def) const;
  std::string choice(const std::string& key, const std::vector<std::string>& allowed) const;
  std::string choice(const std::string& key, const std::vector<std::string>& allowed, const std::string& def) const;
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max) const;
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max, std::int64_t def) const;
  double number(const std::string& key, double min, double max) const;
  double number(const std::string& key, double min, double max, double def) const;
  bool boolean(const std::string& key) const;
  bool boolean(const std::string& key, bool def) const;
  JsonObject object(const std::string& key) const;
  std::optional<JsonObject> object_opt(const std::string& key) const;  // absent or null -> nullopt
  std::vector<std::int64_t> int_list(const std::string& key, std::int64_t min, std::int64_t max) const;
  // An array of distinct strings, each one of `allowed`.
  std::vector<std::string> choice_list(const std::string& key, const std::vector<std::string>& allowed) const;

  // Throws on the first key that no getter asked for.
  void finish(const std::vector<std::string>& also_allowed = {}) const;
  // With declared keys: throws on the first key here that the format does not declare, with the
  // closest declared one ("did you mean"), before any getter reports a missing key.
  void reject_undeclared() const;
  const std::vector<std::string>* declared() const { return declared_; }

  std::string path(const std::string& key) const { return pointer_child(pointer_, key); }
  const std::string& pointer() const { return pointer_; }
  const std::string& file() const { return file_; }
  [[noreturn]] void fail(const std::string& key, const std::string& msg) const;

 private:
  const Json& j_;
  std::string file_;
  std::string pointer_;
  mutable std::set<std::string> seen_;
  const std::vector<std::string>* declared_ = nullptr;
  std::vector<std::string> declared_here() const;  // the declared keys directly under this object
};

}  // namespace parasim
