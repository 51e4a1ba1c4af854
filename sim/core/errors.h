// Typed errors. Library code throws; only tools/ catches, prints and exits non-zero.
#pragma once
#include <stdexcept>
#include <string>

namespace parasim {

// Bad user input: scenario, measured-run or any JSON the user hands us. Exit code 2.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
// A model definition that is malformed or inconsistent.
class ModelError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

}  // namespace parasim
