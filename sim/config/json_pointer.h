// A dotted key ("training.host_launch_us", "memory.hbm_gbps") as the JSON pointer it names
// ("/training/host_launch_us"); a key that already is a pointer (or is empty) is returned as it is.
// The one conversion for stack fields, profile keys and sweep names.
#pragma once
#include <string>

namespace parasim {

inline std::string dotted_pointer(const std::string& key) {
  if (key.empty() || key[0] == '/') return key;
  std::string ptr = "/";
  for (char c : key) ptr += c == '.' ? '/' : c;
  return ptr;
}

}  // namespace parasim
