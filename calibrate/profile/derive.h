// A profile for a part variant made from a base profile (parasim profile derive): the figures the
// variant's datasheet gives are set, with that source; every other figure and table is carried over
// and marked assumed, its source saying which profile it came from and how that one obtained it.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "sim/config/json_reader.h"

namespace parasim {

struct ProfileDerivation {
  std::string name;         // the new profile's name
  std::string description;  // what the part is
  std::string source;       // where the set figures come from (required with sets)
  std::string how = "datasheet";
  std::string device_name;  // the variant's device name (empty: the base's)
  // JSON pointer (/memory/hbm_gbps) or dotted path (memory.hbm_gbps) -> new value. A pointer to a
  // figure ({value, how, source}) sets its value; a pointer to a plain number sets the number.
  std::vector<std::pair<std::string, double>> sets;
  double power_limit_w = 0;  // the variant's board power limit, recorded (0: not given)
};

// The derived profile document; throws ConfigError naming the key for a path the base does not
// have or a figure that is not a number. The caller validates it with parse_profile.
Json derive_profile(const Json& base, const std::string& base_name, const ProfileDerivation& d);

// "memory.hbm_gbps" -> "/memory/hbm_gbps"; a path starting with '/' is returned as is.
std::string profile_key_pointer(const std::string& key);

}  // namespace parasim
