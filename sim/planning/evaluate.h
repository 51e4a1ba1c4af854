// Runs many independent evaluations on N threads. Each evaluation builds its own Scenario and
// Simulation (values with no shared state; the registries are read only), and its outcome lands
// in the slot of its index, so the result does not depend on the thread count.
#pragma once
#include "sim/core/parallel_for.h"
#include "sim/steady_state.h"
#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/planning/rows.h"

namespace parasim {

// One evaluation: a row, or the reason the combination is invalid (a ConfigError's kind).
struct Outcome {
  std::optional<Row> row;
  std::string skipped;          // the kind of rule it broke (error_kind), which counts alike
  std::string skipped_example;  // the settings and the message itself, with its numbers
};

// Outcomes as JSON, exactly (doubles round-trip): how processes of a distributed sweep exchange them.
Json outcome_json(const Outcome& o);
Outcome outcome_from_json(const Json& j);

// One process's share of evaluations spread over several (`mpirun -np K parasim sweep|plan`,
// tools/mpi.h): which part this process is, and how the outcomes reach part 0.
struct Distribution {
  int part = 0, parts = 1;
  // Called by every part once its share is done: part 0 receives the outcomes of every other part
  // into its slots; the others send theirs.
  std::function<void(std::vector<std::optional<Outcome>>& slots)> gather;
  bool root() const { return part == 0; }
};

// The indices of part `part` of `parts` when n evaluations of the given expected costs are
// balanced: the costliest first, each to the part with the least cost so far (ties: the lower
// part), as in longest-processing-time scheduling (Graham 1969). Ascending. Every part computes the
// same split.
std::vector<std::size_t> balanced_share(const std::vector<double>& costs, int parts, int part);

// The expected cost of simulating one layout, for balancing: the microbatches simulated (the
// three fold points' of a long step, folded: sim/steady_state.h) times the ops each lays down,
// about one per layer plus the pipeline's chunk boundaries.
double expected_cost(std::int64_t microbatches, const FoldPoints& fold, std::int64_t layers, std::int64_t pp, std::int64_t vpp);

struct EvalOptions {
  int jobs = 1;
  // Set (e.g. by a SIGINT handler) to stop: no new evaluation starts; those running finish.
  const std::atomic<bool>* stop = nullptr;
  // Called after each evaluation with (done, total), from the worker threads under a lock.
  std::function<void(std::size_t, std::size_t)> progress;
  // Several processes: this one evaluates its balanced share (by `cost`, the expected cost of
  // evaluation i) and part 0 gathers every outcome; the others' Evaluated is theirs alone.
  const Distribution* distribution = nullptr;
  std::function<double(std::size_t)> cost;
};

struct Evaluated {
  std::vector<Row> rows;                        // in index order
  std::map<std::string, std::int64_t> skipped;  // reason -> count
  std::map<std::string, std::string> skipped_examples;  // reason -> its first case met (the same on any thread count), numbers kept
  std::size_t total = 0, evaluated = 0;   // evaluated: simulated or skipped by the bound
  std::size_t bound_skipped = 0;          // not simulated: their step's lower bound ranks them out (PlanJob::search_top)
  bool interrupted = false;
};

// parallel_for: sim/core/parallel_for.h.

// eval(i) for i in [0, n).
Evaluated evaluate_all(std::size_t n, const std::function<Outcome(std::size_t)>& eval, const EvalOptions& opt);

// A ConfigError's message reduced to the kind of the rule it broke: the file prefix dropped and
// every number replaced by N, so "dp*tp*pp*cp = 1*3*1*1 = 3 but the cluster has 1*8 = 8 GPUs"
// and its siblings count as one reason.
std::string error_kind(const std::string& message, const std::string& file);
// The message without its "file: " prefix.
std::string without_file(const std::string& message, const std::string& file);

}  // namespace parasim
