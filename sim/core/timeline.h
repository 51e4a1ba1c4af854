// What the engine produces: when each op ran, and each rank's memory over the step.
#pragma once
#include <array>
#include <vector>

#include "sim/core/program.h"

namespace parasim {

struct MemSample {
  Time t;
  Bytes total;
};

struct RankMemory {
  Bytes peak = 0;
  Time peak_time = 0;
  std::array<Bytes, kMemCats> at_peak{};  // breakdown at the moment of the peak
  std::array<Bytes, kMemCats> high_water{};  // per category, the most it held at any moment
  std::vector<MemSample> curve;           // one sample per change
};

struct Timeline {
  std::vector<Time> start;    // per op: when it began executing (after any rendezvous)
  std::vector<Time> end;      // per op
  // The end of each fused op's segments, the fused ops' in program order (a segment starts where
  // the one before it ends, the first at its op's start); -1 for the segments of a fused op that
  // ran unslowed, each ending its duration after its start (each_segment()).
  std::vector<Time> seg_end;
  // With the host launch model (Program::host), per op: how long its stream sat ready for it while
  // the host had not yet issued its first kernel (before its start), and how long its span outlasts
  // its own time because the host issued its last kernel late (within it). Empty without it.
  std::vector<Time> host_wait_before, host_wait_within;
  std::vector<RankMemory> memory;  // per simulated rank
  Time makespan = 0;
  std::int64_t events = 0;
};

// Op i's waits on the host (Timeline::host_wait_before, host_wait_within) where they leave the GPU
// idle: a compute-stream op's; none for an op on another stream or without the host launch model.
struct HostWait {
  Time before = 0, within = 0;
};
inline HostWait host_wait_of(const Timeline& t, const Op& op, std::size_t i) {
  if (t.host_wait_before.empty() || op.stream != Stream::Compute) return {};
  return {t.host_wait_before[i], t.host_wait_within[i]};
}

// Calls f(segment, start, end) on each segment of fused op `op`, which started at `start`, in
// order; `ends`: its entries in Timeline::seg_end. Returns where its last segment ended.
template <class F>
Time each_segment(const Program& p, const Op& op, Time start, const Time* ends, F&& f) {
  for (const Segment* s = p.segments.data() + op.seg_first; s != p.segments.data() + op.seg_first + op.seg_count; ++s) {
    const Time end = *ends >= 0 ? *ends : start + s->duration;
    ++ends;
    f(*s, start, end);
    start = end;
  }
  return start;
}

}  // namespace parasim
