#include "tools/cli_checks.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "sim/core/errors.h"

namespace parasim {

namespace {
// The whole string as a finite double, or nothing.
bool finite_number(const std::string& s, double& v) {
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  return ec == std::errc() && ptr == end && std::isfinite(v);
}
}  // namespace

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        double v = 0;
        return finite_number(s, v) && v > 0 ? "" : "expected a finite number > 0, got \"" + s + "\"";
      },
      "NUMBER > 0");
}

CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        double v = 0;
        return finite_number(s, v) && v >= 0 ? "" : "expected a finite number >= 0, got \"" + s + "\"";
      },
      "NUMBER >= 0");
}

double checked_number(const std::string& what, double v, double min, bool strict) {
  if (!std::isfinite(v) || v < min || (strict && v == min))
    throw ConfigError(fmt::format("{}: expected a finite number {} {}, got {}", what, strict ? ">" : ">=", min, v));
  return v;
}

CLI::Validator integer_in(std::int64_t lo, std::int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        std::int64_t v = 0;
        const char* end = s.data() + s.size();
        const auto [ptr, ec] = std::from_chars(s.data(), end, v);
        return ec == std::errc() && ptr == end && v >= lo && v <= hi ? "" : fmt::format("expected an integer in [{}, {}], got \"{}\"", lo, hi, s);
      },
      fmt::format("INT in [{}, {}]", lo, hi));
}

}  // namespace parasim
