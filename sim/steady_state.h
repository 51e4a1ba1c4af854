// Folding a step with many microbatches onto its periodic steady state.
//
// Every microbatch of a step does the same work, so once the pipeline has filled the schedule
// repeats: each further group of microbatches adds the same time to the step, the same busy time
// to every stream and, where a schedule holds every microbatch's activations (GPipe), the same
// memory. The step is then an affine function of the microbatch count m (the eventual periodicity
// of max-plus linear systems: Baccelli, Cohen, Olsder and Quadrat, "Synchronization and
// Linearity", Wiley 1992, section 3.7). A long step is simulated at three equally spaced
// microbatch counts past the pipeline's fill; where every extensive figure of the three runs lies
// on one line, the figures at m are read off that line. Memory and time no longer grow with m:
// 65,536 microbatches cost what the three short steps do.
#pragma once
#include <array>
#include <cstdint>
#include <optional>

#include "sim/metrics/metrics.h"
#include "sim/metrics/time_partition.h"
#include "sim/parallel/schedule.h"
#include "sim/scenario/scenario.h"

namespace parasim {

struct Fold {
  std::int64_t microbatches = 0;            // per pipeline, of the step predicted
  std::array<std::int64_t, 3> simulated{};  // the microbatch counts simulated; zeros when not folded
  bool folded() const { return simulated[0] > 0; }
};

// Three equally spaced microbatch counts past the pipeline's fill: first, first + spacing,
// first + 2 spacing. The spacing is the schedule's group (1, or p for the interleaved schedule).
struct FoldPoints {
  std::int64_t first = 0;
  std::int64_t spacing = 1;
  std::int64_t at(int k) const { return first + k * spacing; }
  std::int64_t simulated() const { return 3 * first + 3 * spacing; }  // microbatches the three cost
  FoldPoints later() const { return {2 * first, spacing}; }           // the next try when not yet periodic
};

// The first points to try: from the schedule's fill (Periodicity in sim/parallel/schedule.h), so the
// three lie where the schedule already repeats. A fill declared too early shows as three points off
// one line, and the next try starts twice as far.
FoldPoints fold_points(const Periodicity& p, std::int64_t pp);
FoldPoints fold_points(const Scenario& sc, const ScheduleRegistry& schedules);

// Sets m microbatches per pipeline (global_batch = m x micro_batch x dp) to lower part of a step,
// keeping the step's own count (Scenario::step_microbatches); with_microbatches: a copy so set.
void set_microbatches(Scenario& s, std::int64_t m);
Scenario with_microbatches(const Scenario& sc, std::int64_t m);

// The result at m microbatches from results at the three points, or nothing where some extensive
// figure is off the line through the three by more than 1e-9 of its size (not yet periodic).
// tokens_per_step: of the step at m.
std::optional<Result> extrapolate_steady_state(const std::array<Result, 3>& at, const FoldPoints& points, std::int64_t m,
                                               double tokens_per_step);

// "Where the time went" at m microbatches from the three points' partitions (each line is seconds
// per GPU, extensive like the step), or nothing where a line is off the line through the three.
std::optional<TimePartition> extrapolate_partition(const std::array<TimePartition, 3>& at, const FoldPoints& points, std::int64_t m);

}  // namespace parasim
