// Registries by name that describe themselves: {name, description, reference, factory}.
#pragma once
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "sim/core/errors.h"

namespace parasim {

std::string closest_name(const std::string& wanted, const std::vector<std::string>& names);
// "a, b, c" (sep ", ") or "a | b | c".
std::string join_names(const std::vector<std::string>& names, const std::string& sep);

template <class Factory>
class Registry {
 public:
  struct Entry {
    std::string name;
    std::string description;
    std::string reference;
    Factory factory;
  };

  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  Registry(std::string kind, std::initializer_list<Entry> entries) : kind_(std::move(kind)), entries_(entries) {}

  void add(Entry e) { entries_.push_back(std::move(e)); }

  const Entry* find(const std::string& name) const {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }

  // Throws ConfigError naming the valid choices and the closest one.
  const Entry& get(const std::string& name, const std::string& where) const {
    if (const Entry* e = find(name)) return *e;
    std::string msg = where + ": unknown " + kind_ + " \"" + name + "\"";
    const std::string close = closest_name(name, names());
    if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
    msg += " Valid: ";
    for (size_t i = 0; i < entries_.size(); ++i) msg += (i ? ", " : "") + entries_[i].name;
    throw ConfigError(msg);
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e.name);
    return out;
  }
  const std::vector<Entry>& entries() const { return entries_; }
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::vector<Entry> entries_;
};

}  // namespace parasim
