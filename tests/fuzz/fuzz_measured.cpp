// libFuzzer: any bytes as a measured run (parasim.measured/1). Refusal (ConfigError) is the only
// way out.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/scenario/measured.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    // A scenario named by path resolves beside this made-up file: inside the source tree.
    (void)parasim::parse_measured(parasim::parse_json_text(text, "fuzz.json"), PARASIM_DATA_DIR "/scenarios/measured/fuzz.json",
                                  PARASIM_DATA_DIR);
  } catch (const parasim::ConfigError&) {
  }
  return 0;
}
