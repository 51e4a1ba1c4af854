// Discrete-event execution of a Program. Deterministic: a binary heap keyed by (time, sequence).
#pragma once
#include "sim/core/program.h"
#include "sim/core/timeline.h"

namespace parasim {

struct EngineOptions {
  // Compute ops that start while the same rank's communication streams are busy run this
  // factor slower (SM and memory contention with NCCL kernels). Comes from the profile.
  double overlap_compute_slowdown = 0.0;
};

// Runs the program to completion. Throws std::logic_error on a deadlock (a lowering bug),
// naming the first op that never ran.
Timeline run_program(const Program& program, const EngineOptions& options);

}  // namespace parasim
