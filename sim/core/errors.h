// Typed errors. Library code throws; only tools/ catches, prints and exits non-zero.
#pragma once
#include <stdexcept>
#include <string>

namespace parasim {

// `s` safe to print on a terminal: control characters (C0 but newline and tab, DEL, C1, a NUL
// from a JSON "\u0000") and the Unicode bidirectional overrides are written as \u00XX / \u202E,
// so a user string can neither cut a message nor drive the terminal.
std::string printable(const std::string& s);

// Bad user input: scenario, measured-run or any JSON the user hands us. Exit code 2. The message
// is made printable(): it echoes user strings.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& msg) : std::runtime_error(printable(msg)) {}
};
// A calibration profile that is malformed or lacks what a prediction needs.
class ProfileError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};
// A scenario whose simulated quantities leave the simulator's range (a single op or the step past
// kMaxTime of simulated time). simulate() rethrows it as a ConfigError naming the scenario file.
class RangeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A forced NCCL algorithm/protocol (network.algorithm, network.protocol, collective --algorithm)
// that cannot run one of the job's collectives. simulate() rethrows it naming the scenario file
// and the JSON pointer of the forcing key.
class ForcedAlgorithmError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};
// A model definition that is malformed or inconsistent.
class ModelError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

}  // namespace parasim
