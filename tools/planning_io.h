// What `parasim sweep` and `parasim plan` share on the command line: a progress line on stderr
// (tools/progress.h), Ctrl-C stopping after the evaluations in flight, and output files
// written whole or not at all.
#pragma once
#include <atomic>
#include <string>

#include "sim/planning/evaluate.h"
#include "tools/progress.h"

namespace parasim {

// While alive, SIGINT sets stop() instead of killing the process (a second Ctrl-C kills).
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  const std::atomic<bool>* stop() const;
};

// "simulated N layouts in X s (R per second on J threads)" on stderr: timings stay off stdout,
// which is the same on every run.
void report_rate(const std::string& what, std::size_t evaluated, double seconds, int jobs, int processes = 1);

// One kind of skipped case (Evaluated::skipped): its first case with its settings and numbers, and
// how many more broke the same rule.
std::string skipped_text(const std::string& reason, std::int64_t n, const Evaluated& ev);

}  // namespace parasim
