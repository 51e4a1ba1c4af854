// Range checks for command-line options with readable messages ("expected a number > 0, got nan"),
// in place of CLI11's numeric ranges, whose messages print the double range in 309 digits. A
// failed check is a usage error: exit code 2 (tools/parasim.cpp).
#pragma once
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace parasim {

// A finite number > 0.
CLI::Validator positive_number();
// A finite number >= 0.
CLI::Validator non_negative_number();
// An integer in [lo, hi].
CLI::Validator integer_in(std::int64_t lo, std::int64_t hi);

// The same rule for a number already read (an option shared with the Python module, a value in a
// document): `v` when finite and > min (`strict`) or >= min, else a ConfigError naming `what`.
double checked_number(const std::string& what, double v, double min, bool strict);

}  // namespace parasim
