// Runs many independent evaluations on N threads. Each evaluation builds its own Scenario and
// Simulation (values with no shared state; the registries are read only), and its outcome lands
// in the slot of its index, so the result does not depend on the thread count.
#pragma once
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
  std::string skipped;
};

struct EvalOptions {
  int jobs = 1;
  // Set (e.g. by a SIGINT handler) to stop: no new evaluation starts; those running finish.
  const std::atomic<bool>* stop = nullptr;
  // Called after each evaluation with (done, total), from the worker threads under a lock.
  std::function<void(std::size_t, std::size_t)> progress;
};

struct Evaluated {
  std::vector<Row> rows;                        // in index order
  std::map<std::string, std::int64_t> skipped;  // reason -> count
  std::size_t total = 0, evaluated = 0;
  bool interrupted = false;
};

// eval(i) for i in [0, n).
Evaluated evaluate_all(std::size_t n, const std::function<Outcome(std::size_t)>& eval, const EvalOptions& opt);

// A ConfigError's message reduced to the kind of the rule it broke: the file prefix dropped and
// every number replaced by N, so "dp*tp*pp*cp = 1*3*1*1 = 3 but the cluster has 1*8 = 8 GPUs"
// and its siblings count as one reason.
std::string error_kind(const std::string& message, const std::string& file);

}  // namespace parasim
