#include "tools/progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

namespace parasim {

std::string progress_text(const std::string& what, std::size_t done, std::size_t total, double elapsed_s) {
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  const std::size_t left = total > done ? total - done : 0;
  const std::string eta = rate > 0 ? fmt::format("{:.0f} s", static_cast<double>(left) / rate) : std::string("?");
  return fmt::format("{} {}/{}  {:.1f}/s  ETA {}", what, done, total, rate, eta);
}

ProgressFn terminal_progress(const std::string& what) {
  if (!isatty(STDERR_FILENO)) return {};
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last = std::make_shared<Clock::time_point>(start);
  auto width = std::make_shared<std::size_t>(0);  // of the line drawn last, to erase it
  return [start, last, width, what](std::size_t done, std::size_t total) {
    const auto now = Clock::now();
    if (done < total && now - *last < std::chrono::milliseconds(200)) return;
    *last = now;
    if (done >= total) {
      std::fprintf(stderr, "\r%*s\r", static_cast<int>(*width), "");
    } else {
      const std::string line = progress_text(what, done, total, std::chrono::duration<double>(now - start).count());
      std::fprintf(stderr, "\r%-*s", static_cast<int>(*width), line.c_str());
      *width = std::max(*width, line.size());
    }
    std::fflush(stderr);
  };
}

}  // namespace parasim
