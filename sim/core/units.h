// Strong units inside the engine; plain units (seconds, GB/s) only at the edges.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "sim/core/errors.h"

namespace parasim {

// Simulated time in integer picoseconds: exact, deterministic, ~106 days of range.
using Time = std::int64_t;
// Sizes in bytes.
using Bytes = std::int64_t;

inline constexpr Time kPicosPerSecond = 1'000'000'000'000;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;  // bandwidths are GB/s = 1e9 bytes/s, per direction

// The longest simulated time: 2^62 ps (~53 days), so that a step of such ops cannot overflow.
inline constexpr Time kMaxTime = Time{1} << 62;

// A non-negative double below 2^63 rounded half away from zero, as std::llround does, without the
// library call (a lowering converts every op's duration): subtracting the truncated part is exact.
inline Time round_half_up(double x) {
  auto t = static_cast<Time>(x);
  if (x - static_cast<double>(t) >= 0.5) ++t;
  return t;
}

// The range errors of seconds_to_time and to_bytes, out of line: their string building kept the two
// from being inlined into the lowering, which converts every op's duration and memory.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_time_range(double s) {
  throw RangeError("one operation would take " + std::to_string(s) + " s of simulated time, past the simulator's " +
                   std::to_string(static_cast<double>(kMaxTime) / static_cast<double>(kPicosPerSecond)) +
                   " s range (is the sequence, batch or model that large?)");
}
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_bytes_range(double b) {
  throw RangeError("a memory size of " + std::to_string(b) + " bytes is past the simulator's range (is the model or batch that large?)");
}

inline Time seconds_to_time(double s) {
  if (!(s >= 0.0)) return 0;
  const double ps = s * static_cast<double>(kPicosPerSecond);
  if (!(ps < static_cast<double>(kMaxTime))) throw_time_range(s);
  return round_half_up(ps);
}
// A byte count from a double, refusing what int64 cannot hold (8 EiB: a model or batch that large
// is an input beyond the simulator's range, not a cast with undefined behaviour).
inline Bytes to_bytes(double b) {
  if (!(std::abs(b) < 9.2e18)) throw_bytes_range(b);
  return static_cast<Bytes>(b);
}
inline double time_to_seconds(Time t) { return static_cast<double>(t) / static_cast<double>(kPicosPerSecond); }
inline double bytes_to_gib(double b) { return b / kGiB; }

}  // namespace parasim
