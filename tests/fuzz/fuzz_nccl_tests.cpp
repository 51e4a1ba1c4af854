// libFuzzer: any bytes as an nccl-tests log (text or -J JSON), checked against the H100 profile
// and merged into it; the merged profile must load. Refusal (ConfigError) is the only way out.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "calibrate/import/nccl_tests.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const parasim::Json base = parasim::read_json_file(PARASIM_DATA_DIR "/calibrate/profiles/h100-sxm5-80g.json");
  static const parasim::Profile profile = parasim::parse_profile(base, "h100.json");
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const parasim::NcclTestsLog log = parasim::parse_nccl_tests_any(text, "fuzz.log");
    parasim::check_nccl_tests_log(log, profile);
    for (const auto& r : log.rows)
      if (!(std::isfinite(r.bytes) && r.bytes > 0 && std::isfinite(r.time_s) && r.time_s > 0)) std::abort();
    parasim::Json prof = base;
    parasim::merge_nccl_tests(prof, log);
    try {
      (void)parasim::parse_profile(prof, "merged.json");
    } catch (const parasim::ConfigError&) {
      std::abort();  // what the importer accepted must give a profile that loads
    }
  } catch (const parasim::ConfigError&) {
  }
  return 0;
}
