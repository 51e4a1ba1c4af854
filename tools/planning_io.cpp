#include "tools/planning_io.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>

namespace parasim {

namespace {
// A signal handler can reach only static storage: the one flag of the process's Ctrl-C.
std::atomic<bool> g_interrupted{false};
using Handler = void (*)(int);
Handler g_previous = SIG_DFL;
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

std::function<void(std::size_t, std::size_t)> terminal_progress(const std::string& what) {
  if (!isatty(STDERR_FILENO)) return {};
  const auto start = std::chrono::steady_clock::now();
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(start);
  return [start, last, what](std::size_t done, std::size_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - *last < std::chrono::milliseconds(200)) return;
    *last = now;
    const double s = std::chrono::duration<double>(now - start).count();
    const double rate = s > 0 ? static_cast<double>(done) / s : 0.0;
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
    std::fprintf(stderr, "\r%s %zu/%zu  %.1f/s  ETA %.0f s   %s", what.c_str(), done, total, rate, eta, done == total ? "\n" : "");
    std::fflush(stderr);
  };
}

void report_rate(const std::string& what, std::size_t evaluated, double seconds, int jobs, int processes) {
  std::fprintf(stderr, "%s: %zu evaluated in %.2f s (%.1f per second on %d thread%s%s)\n", what.c_str(), evaluated, seconds,
               seconds > 0 ? static_cast<double>(evaluated) / seconds : 0.0, jobs, jobs == 1 ? "" : "s",
               processes > 1 ? fmt::format(" in each of {} processes", processes).c_str() : "");
}

void write_file_whole(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw ConfigError(path + ": cannot write");
    f << text;
    if (!f.flush()) throw ConfigError(path + ": write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw ConfigError(path + ": cannot write (" + ec.message() + ")");
  }
}

}  // namespace parasim
