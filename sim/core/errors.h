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
// A model definition that is malformed or inconsistent.
class ModelError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

}  // namespace parasim
