#include "tools/planning_io.h"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace parasim {

namespace {
// A signal handler can reach only static storage: the one flag of the process's Ctrl-C.
std::atomic<bool> g_interrupted{false};
using SignalHandler = void (*)(int);
SignalHandler g_previous = SIG_DFL;
extern "C" void on_sigint(int) {
  g_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process
}
}  // namespace

InterruptGuard::InterruptGuard() {
  g_interrupted.store(false);
  g_previous = std::signal(SIGINT, on_sigint);
}
InterruptGuard::~InterruptGuard() { std::signal(SIGINT, g_previous == SIG_ERR ? SIG_DFL : g_previous); }
const std::atomic<bool>* InterruptGuard::stop() const { return &g_interrupted; }

void report_rate(const std::string& what, std::size_t evaluated, double seconds, int jobs, int processes) {
  std::fprintf(stderr, "%s: %zu evaluated in %.2f s (%.1f per second on %d thread%s%s)\n", what.c_str(), evaluated, seconds,
               seconds > 0 ? static_cast<double>(evaluated) / seconds : 0.0, jobs, jobs == 1 ? "" : "s",
               processes > 1 ? fmt::format(" in each of {} processes", processes).c_str() : "");
}

std::string skipped_text(const std::string& reason, std::int64_t n, const Evaluated& ev) {
  const auto it = ev.skipped_examples.find(reason);
  const std::string example = it != ev.skipped_examples.end() && !it->second.empty() ? it->second : reason;
  return n > 1 ? fmt::format("{} (and {} more alike)", example, n - 1) : example;
}

}  // namespace parasim
