// Folding a step with many microbatches onto its periodic steady state.
//
// Every microbatch of a step does the same work, so once the pipeline has filled the schedule
// repeats: each further group of microbatches adds the same time to the step, the same busy time
// to every stream and, where a schedule holds every microbatch's activations (GPipe), the same
// memory. The step is then an affine function of the microbatch count m (the eventual periodicity
// of max-plus linear systems: Baccelli, Cohen, Olsder and Quadrat, "Synchronization and
// Linearity", Wiley 1992, section 3.7). A long step is simulated at m = a, 2a and 3a; where every
// extensive figure of the three runs lies on one line, the figures at m are read off that line.
// Memory and time no longer grow with m: 65,536 microbatches cost what 3a do.
#pragma once
#include <array>
#include <cstdint>
#include <optional>

#include "sim/metrics/metrics.h"
#include "sim/scenario/scenario.h"

namespace parasim {

struct Fold {
  std::int64_t microbatches = 0;          // per pipeline, of the step predicted
  std::array<std::int64_t, 3> simulated{};  // the microbatch counts simulated (a, 2a, 3a); zeros when not folded
  bool folded() const { return simulated[0] > 0; }
};

// The first a to try: a whole number of the schedule's groups (the interleaved schedule advances
// pp microbatches at a time) and past the pipeline's fill (4 pp microbatches).
std::int64_t fold_unit(std::int64_t pp, bool interleaved);
std::int64_t fold_unit(const Scenario& sc);

// The scenario with m microbatches per pipeline (global_batch = m x micro_batch x dp).
Scenario with_microbatches(const Scenario& sc, std::int64_t m);

// The result at m microbatches from results at a, 2a and 3a, or nothing where some extensive
// figure is off the line through the three by more than 1e-9 of its size (not yet periodic).
// tokens_per_step: of the step at m.
std::optional<Result> extrapolate_steady_state(const std::array<Result, 3>& at, std::int64_t a, std::int64_t m,
                                               double tokens_per_step);

}  // namespace parasim
