// Measurement method shared by all benchmarks (as nccl-tests and the CUTLASS profiler do):
// warm-up, then timed iterations with CUDA events until both a minimum count and a minimum
// duration are reached; percentiles of the per-iteration times.
#pragma once
#include <algorithm>
#include <functional>
#include <vector>

#include "calibrate/cuda/check.h"

namespace parasim::calib {

struct Method {
  int warmup = 5;
  int min_iters = 20;
  double min_seconds = 0.05;
  int max_iters = 2000;
};

struct Stats {
  double p10 = 0, p50 = 0, p90 = 0, mean = 0;
  int iters = 0;
};

inline Stats stats_of(std::vector<double> t) {
  Stats s;
  std::sort(t.begin(), t.end());
  auto q = [&](double p) { return t[std::min(t.size() - 1, static_cast<size_t>(p * static_cast<double>(t.size() - 1) + 0.5))]; };
  s.p10 = q(0.1);
  s.p50 = q(0.5);
  s.p90 = q(0.9);
  for (double x : t) s.mean += x / static_cast<double>(t.size());
  s.iters = static_cast<int>(t.size());
  return s;
}

// Times `run(i)` (iteration index, for workspace rotation) on `stream`.
inline Stats time_on_stream(cudaStream_t stream, const Method& m, const std::function<void(int)>& run) {
  for (int i = 0; i < m.warmup; ++i) run(i);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  double total = 0;
  for (int i = 0; i < m.max_iters && (static_cast<int>(t.size()) < m.min_iters || total < m.min_seconds); ++i) {
    CUDA_CHECK(cudaEventRecord(a, stream));
    run(i);
    CUDA_CHECK(cudaEventRecord(b, stream));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e-3);
    total += ms * 1e-3;
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  return stats_of(t);
}

}  // namespace parasim::calib
