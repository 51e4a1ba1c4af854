// Strong units inside the engine; plain units (seconds, GB/s) only at the edges.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

namespace parasim {

// Simulated time in integer picoseconds: exact, deterministic, ~106 days of range.
using Time = std::int64_t;
// Sizes in bytes.
using Bytes = std::int64_t;

inline constexpr Time kPicosPerSecond = 1'000'000'000'000;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;  // bandwidths are GB/s = 1e9 bytes/s, per direction

inline Time seconds_to_time(double s) {
  if (!(s >= 0.0)) return 0;
  return static_cast<Time>(std::llround(s * static_cast<double>(kPicosPerSecond)));
}
inline double time_to_seconds(Time t) { return static_cast<double>(t) / static_cast<double>(kPicosPerSecond); }
inline double bytes_to_gib(double b) { return b / kGiB; }

}  // namespace parasim
