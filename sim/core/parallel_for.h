#pragma once
// A work loop over indices on a few threads, for independent simulations (a sweep's or plan's
// layouts, an interval's samples): results land in slots the caller indexes by k, so the output is
// the same for any thread count.
#include <atomic>
#include <cstddef>
#include <functional>

namespace parasim {

// fn(k) for k in [0, n) on `jobs` threads (jobs <= 1: this thread), k handed out in order; no new k
// starts once `stop` is set or fn has thrown, and the exception of the lowest k that threw is
// rethrown when every thread has finished.
void parallel_for(std::size_t n, int jobs, const std::atomic<bool>* stop, const std::function<void(std::size_t)>& fn);

// `requested` threads, or one per core when it is 0 or less.
int thread_count(int requested);

}  // namespace parasim
