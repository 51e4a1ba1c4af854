// libFuzzer: any bytes as a scenario file. The loader may refuse them (ConfigError) and nothing
// else: no crash, no other exception, no sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/scenario/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)parasim::parse_scenario(parasim::parse_json_text(text, "fuzz.json"), "fuzz.json", PARASIM_DATA_DIR);
  } catch (const parasim::ConfigError&) {
  }
  return 0;
}
