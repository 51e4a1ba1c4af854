#include "sim/core/parallel_for.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace parasim {

void parallel_for(std::size_t n, int jobs, const std::atomic<bool>* stop, const std::function<void(std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::exception_ptr failure;
  std::size_t failed_at = n;
  auto worker = [&]() {
    for (;;) {
      if (stop && stop->load()) return;
      const std::size_t k = next.fetch_add(1);
      if (k >= n) return;
      try {
        fn(k);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (k < failed_at) failure = std::current_exception(), failed_at = k;
        next.store(n);
        return;
      }
    }
  };
  if (jobs <= 1) {
    worker();
  } else {
    std::vector<std::thread> threads;
    for (int t = 0; t < jobs; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
  }
  if (failure) std::rethrow_exception(failure);
}

int thread_count(int requested) { return requested > 0 ? requested : static_cast<int>(std::max(1U, std::thread::hardware_concurrency())); }

}  // namespace parasim
