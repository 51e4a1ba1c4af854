// libFuzzer: any bytes as a calibration profile. Refusal (ConfigError) is the only way out.
#include <cstddef>
#include <cstdint>
#include <string>

#include "calibrate/profile/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)parasim::parse_profile(parasim::parse_json_text(text, "fuzz.json"), "fuzz.json");
  } catch (const parasim::ConfigError&) {
  }
  return 0;
}
