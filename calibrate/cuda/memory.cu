// Device memory bandwidth (copy and an elementwise triad), host<->device over PCIe (pinned), and the
// gap between back-to-back kernels.
#include "calibrate/cuda/benchmarks.h"

namespace parasim::calib {

namespace {
__global__ void triad(float* a, const float* b, const float* c, float s, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    a[i] = b[i] + s * c[i];
}
}  // namespace

std::vector<BandwidthResult> bench_memory(double bytes, const Method& method) {
  std::vector<BandwidthResult> out;
  const auto n = static_cast<std::int64_t>(bytes / 4);
  const size_t sz = static_cast<size_t>(n) * 4;
  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreate(&st));
  float *a, *b, *c, *host;
  CUDA_CHECK(cudaMalloc(&a, sz));
  CUDA_CHECK(cudaMalloc(&b, sz));
  CUDA_CHECK(cudaMalloc(&c, sz));
  CUDA_CHECK(cudaMallocHost(&host, sz));
  CUDA_CHECK(cudaMemsetAsync(b, 0, sz, st));
  CUDA_CHECK(cudaMemsetAsync(c, 0, sz, st));
  int dev = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  // A copy reads and writes every byte; the triad reads two arrays and writes one.
  out.push_back({"d2d_copy", 2.0 * static_cast<double>(sz),
                 time_on_stream(st, method, [&](int) { CUDA_CHECK(cudaMemcpyAsync(a, b, sz, cudaMemcpyDeviceToDevice, st)); })});
  out.push_back({"elementwise_triad", 3.0 * static_cast<double>(sz), time_on_stream(st, method, [&](int) {
                   triad<<<sms * 8, 256, 0, st>>>(a, b, c, 2.0f, n);
                   CUDA_CHECK(cudaGetLastError());
                 })});
  out.push_back({"h2d", static_cast<double>(sz),
                 time_on_stream(st, method, [&](int) { CUDA_CHECK(cudaMemcpyAsync(a, host, sz, cudaMemcpyHostToDevice, st)); })});
  out.push_back({"d2h", static_cast<double>(sz),
                 time_on_stream(st, method, [&](int) { CUDA_CHECK(cudaMemcpyAsync(host, a, sz, cudaMemcpyDeviceToHost, st)); })});
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
  CUDA_CHECK(cudaFreeHost(host));
  CUDA_CHECK(cudaStreamDestroy(st));
  return out;
}

Stats bench_kernel_gap(const Method& method, int kernels) {
  constexpr std::int64_t n = 4096;
  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreate(&st));
  float *a, *b, *c;
  CUDA_CHECK(cudaMalloc(&a, n * 4));
  CUDA_CHECK(cudaMalloc(&b, n * 4));
  CUDA_CHECK(cudaMalloc(&c, n * 4));
  CUDA_CHECK(cudaMemsetAsync(b, 0, n * 4, st));
  CUDA_CHECK(cudaMemsetAsync(c, 0, n * 4, st));
  Stats s = time_on_stream(st, method, [&](int) {
    for (int k = 0; k < kernels; ++k) triad<<<16, 256, 0, st>>>(a, b, c, 2.0f, n);
    CUDA_CHECK(cudaGetLastError());
  });
  for (double* x : {&s.p10, &s.p50, &s.p90, &s.mean}) *x /= kernels;
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
  CUDA_CHECK(cudaStreamDestroy(st));
  return s;
}

}  // namespace parasim::calib
