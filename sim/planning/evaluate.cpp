#include "sim/planning/evaluate.h"

#include <cctype>
#include <mutex>
#include <thread>

namespace parasim {

Evaluated evaluate_all(std::size_t n, const std::function<Outcome(std::size_t)>& eval, const EvalOptions& opt) {
  std::vector<std::optional<Outcome>> slots(n);
  std::atomic<std::size_t> next{0};
  std::size_t done = 0;
  std::mutex mu;
  std::exception_ptr failure;
  auto worker = [&]() {
    for (;;) {
      if (opt.stop && opt.stop->load()) return;
      const std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        Outcome o = eval(i);
        std::lock_guard<std::mutex> lock(mu);
        slots[i] = std::move(o);
        ++done;
        if (opt.progress) opt.progress(done, n);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
        next.store(n);
        return;
      }
    }
  };
  const int jobs = std::max(1, opt.jobs);
  if (jobs == 1) {
    worker();
  } else {
    std::vector<std::thread> threads;
    for (int k = 0; k < jobs; ++k) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
  }
  if (failure) std::rethrow_exception(failure);
  Evaluated ev;
  ev.total = n;
  for (auto& s : slots) {
    if (!s) continue;
    ++ev.evaluated;
    if (s->row) ev.rows.push_back(std::move(*s->row));
    else ++ev.skipped[s->skipped];
  }
  ev.interrupted = ev.evaluated < n;
  return ev;
}

std::string error_kind(const std::string& message, const std::string& file) {
  std::string m = message;
  if (!file.empty() && m.rfind(file + ": ", 0) == 0) m = m.substr(file.size() + 2);
  std::string out;
  for (size_t i = 0; i < m.size();) {
    const bool after_word = i > 0 && (std::isalnum(static_cast<unsigned char>(m[i - 1])) || m[i - 1] == '_');
    size_t end = i;
    while (end < m.size() && (std::isdigit(static_cast<unsigned char>(m[end])) || m[end] == '.')) ++end;
    const bool word_follows = end < m.size() && std::isalpha(static_cast<unsigned char>(m[end]));  // "80g"
    if (std::isdigit(static_cast<unsigned char>(m[i])) && !after_word && !word_follows) {
      i = end;
      out += 'N';
    } else if (std::isdigit(static_cast<unsigned char>(m[i]))) {
      while (i < m.size() && std::isalnum(static_cast<unsigned char>(m[i]))) out += m[i++];
    } else {
      out += m[i++];
    }
  }
  return out;
}

}  // namespace parasim
