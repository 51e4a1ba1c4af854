// Discrete-event execution of a Program. Deterministic: a binary heap keyed by (time, sequence).
#pragma once
#include "sim/core/program.h"
#include "sim/core/timeline.h"

namespace parasim {

struct EngineOptions {
  // While a rank's collective stream is busy, its compute op progresses at 1 / (1 + this) of its
  // own speed (SM and HBM contention with the NCCL kernel); re-timed whenever a collective starts
  // or ends. Point-to-point transfers do not slow compute. Comes from the profile.
  double overlap_compute_slowdown = 0.0;
  // Record each rank's memory curve (Timeline::memory[r].curve, one sample per change): traces and
  // reports draw it; a summary needs only the peaks.
  bool memory_curve = true;
};

// Runs the program to completion. Throws std::logic_error on a deadlock (a lowering bug),
// naming the first op that never ran.
Timeline run_program(const Program& program, const EngineOptions& options);

}  // namespace parasim
