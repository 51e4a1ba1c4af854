// cuBLASLt GEMM timing with the heuristic's first algorithm, rotating operand sets larger than L2.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "calibrate/cuda/benchmarks.h"

namespace parasim::calib {

namespace {

// Operand element i of the set with this seed: uniform in [-1, 1) from a SplitMix64 hash, so
// the host can recompute any row or column. Random operands, not constants: a GEMM on constant
// data toggles fewer bits, draws less power and holds higher clocks than one on training data
// (an 8192^3 bf16 product on an H200 ran at 894 TFLOP/s on zeros, 788 on random data).
__host__ __device__ inline float operand_value(std::int64_t i, std::uint64_t seed) {
  std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <class T>
__global__ void fill(T* p, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = static_cast<T>(operand_value(i, seed));
}

struct Types {
  cudaDataType_t ab, cd;
  cublasComputeType_t compute;
  size_t ab_size, cd_size;
};

Types types_for(const std::string& dtype) {
  if (dtype == "bf16") return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2};
  if (dtype == "fp16") return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2};
  if (dtype == "tf32") return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
  if (dtype == "fp8") return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2};
  throw HarnessError("unknown GEMM dtype " + dtype);
}

void fill_random(void* p, std::int64_t n, cudaDataType_t t, std::uint64_t seed) {
  const int blocks = 1024, threads = 256;
  switch (t) {
    case CUDA_R_16BF: fill<<<blocks, threads>>>(static_cast<__nv_bfloat16*>(p), n, seed); break;
    case CUDA_R_16F: fill<<<blocks, threads>>>(static_cast<__half*>(p), n, seed); break;
    case CUDA_R_32F: fill<<<blocks, threads>>>(static_cast<float*>(p), n, seed); break;
    case CUDA_R_8F_E4M3: fill<<<blocks, threads>>>(static_cast<__nv_fp8_e4m3*>(p), n, seed); break;
    default: throw HarnessError("fill: unsupported type");
  }
  CUDA_CHECK(cudaGetLastError());
}

// The operand value as stored in type t (what the GEMM multiplies), on the host.
float stored_value(std::int64_t i, std::uint64_t seed, cudaDataType_t t) {
  const float v = operand_value(i, seed);
  switch (t) {
    case CUDA_R_16BF: return __bfloat162float(__float2bfloat16(v));
    case CUDA_R_16F: return __half2float(__float2half(v));
    case CUDA_R_8F_E4M3: return static_cast<float>(__nv_fp8_e4m3(v));
    default: return v;  // fp32 storage; TF32 rounding inside the product is within the tolerance
  }
}

constexpr std::uint64_t kSeedA = 0x1234, kSeedB = 0xABCD;

float to_float(const void* p, cudaDataType_t t) {
  switch (t) {
    case CUDA_R_16BF: return __bfloat162float(*static_cast<const __nv_bfloat16*>(p));
    case CUDA_R_16F: return __half2float(*static_cast<const __half*>(p));
    case CUDA_R_32F: return *static_cast<const float*>(p);
    default: return NAN;
  }
}

}  // namespace

GemmResult bench_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& dtype, const Method& method,
                      double sustain_s) {
  GemmResult r{m, n, k, dtype};
  const Types ty = types_for(dtype);
  cublasLtHandle_t lt;
  CUBLAS_CHECK(cublasLtCreate(&lt));
  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreate(&st));
  int dev = 0, l2 = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  cublasLtMatmulDesc_t op;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, ty.compute, CUDA_R_32F));
  const cublasOperation_t tA = CUBLAS_OP_T, tB = CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof tA));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof tB));
  // Column-major: A stored k x m (op T -> m x k), B k x n, C m x n.
  cublasLtMatrixLayout_t la, lb, lc;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, ty.ab, static_cast<uint64_t>(k), static_cast<uint64_t>(m), k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, ty.ab, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, ty.cd, static_cast<uint64_t>(m), static_cast<uint64_t>(n), m));
  const size_t ws_bytes = 32u << 20;
  cublasLtMatmulPreference_t pref;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  // Descriptors, stream and handle: released on both ways out.
  auto release = [&] {
    CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(la));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(lb));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(lc));
    CUBLAS_CHECK(cublasLtMatmulDescDestroy(op));
    CUDA_CHECK(cudaStreamDestroy(st));
    CUBLAS_CHECK(cublasLtDestroy(lt));
  };
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  // A shape this cuBLASLt has no kernel for (fp8 wants k and the leading dimensions in multiples
  // of 16) is reported, not fatal: the sweep goes on without it.
  const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found);
  if (hs == CUBLAS_STATUS_NOT_SUPPORTED || (hs == CUBLAS_STATUS_SUCCESS && found == 0)) {
    r.supported = false;
    release();
    return r;
  }
  CUBLAS_CHECK(hs);
  const size_t a_bytes = static_cast<size_t>(m * k) * ty.ab_size, b_bytes = static_cast<size_t>(k * n) * ty.ab_size;
  const size_t c_bytes = static_cast<size_t>(m * n) * ty.cd_size;
  const size_t set = a_bytes + b_bytes + c_bytes;
  // Enough operand sets that consecutive iterations never hit in L2.
  const int sets = static_cast<int>(std::min<size_t>(16, 2 * static_cast<size_t>(l2) / set + 1));
  std::vector<void*> A(sets), B(sets), C(sets);
  for (int s = 0; s < sets; ++s) {
    CUDA_CHECK(cudaMalloc(&A[s], a_bytes));
    CUDA_CHECK(cudaMalloc(&B[s], b_bytes));
    CUDA_CHECK(cudaMalloc(&C[s], c_bytes));
    fill_random(A[s], m * k, ty.ab, kSeedA + static_cast<std::uint64_t>(s));
    fill_random(B[s], k * n, ty.ab, kSeedB + static_cast<std::uint64_t>(s));
  }
  void* ws = nullptr;
  CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
  CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&heur.algo, CUBLASLT_ALGO_CONFIG_ID, &r.algo_id, sizeof r.algo_id, nullptr));
  CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&heur.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &r.tile_id, sizeof r.tile_id, nullptr));
  const float alpha = 1.0f, beta = 0.0f;
  auto run = [&](int i) {
    const int s = i % sets;
    CUBLAS_CHECK(cublasLtMatmul(lt, op, &alpha, A[s], la, B[s], lb, &beta, C[s], lc, C[s], lc, &heur.algo, ws, ws_bytes, st));
  };
  r.time = time_on_stream(st, method, run);
  if (sustain_s > 0) {
    // Batches of about 50 ms of GEMMs, each timed with events, back to back for sustain_s seconds;
    // the batches of the second half give the sustained time per GEMM.
    const int batch = std::max(1, static_cast<int>(0.05 / std::max(r.time.p50, 1e-9)));
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    std::vector<double> late;
    double last = 0;
    int i = 0;
    for (double elapsed = 0; elapsed < sustain_s;) {
      CUDA_CHECK(cudaEventRecord(a, st));
      for (int j = 0; j < batch; ++j) run(i++);
      CUDA_CHECK(cudaEventRecord(b, st));
      CUDA_CHECK(cudaEventSynchronize(b));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
      last = ms * 1e-3 / batch;
      if (elapsed >= 0.5 * sustain_s) late.push_back(last);
      elapsed += ms * 1e-3;
    }
    if (late.empty()) late.push_back(last);  // one batch outlasted the whole window
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    r.sustained = stats_of(late);
  }
  // Correctness: set 0's first and last elements of C against the host's dot products of row i
  // of op(A) (stored column i: elements i*k .. i*k+k-1) and column j of B (j*k .. j*k+k-1), within
  // 1 % of |expected| + the products' root sum of squares (output rounding, accumulation order).
  r.correct = true;
  for (const auto& [i, j] : {std::pair<std::int64_t, std::int64_t>{0, 0}, {m - 1, n - 1}}) {
    double expected = 0, squares = 0;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const double p = static_cast<double>(stored_value(i * k + kk, kSeedA, ty.ab)) * stored_value(j * k + kk, kSeedB, ty.ab);
      expected += p;
      squares += p * p;
    }
    std::vector<unsigned char> host(ty.cd_size);
    const size_t at = static_cast<size_t>(i + j * m) * ty.cd_size;
    CUDA_CHECK(cudaMemcpy(host.data(), static_cast<unsigned char*>(C[0]) + at, ty.cd_size, cudaMemcpyDeviceToHost));
    const double got = to_float(host.data(), ty.cd);
    r.correct = r.correct && std::fabs(got - expected) <= 0.01 * (std::fabs(expected) + std::sqrt(squares));
  }
  CUDA_CHECK(cudaFree(ws));
  for (int s = 0; s < sets; ++s) {
    CUDA_CHECK(cudaFree(A[s]));
    CUDA_CHECK(cudaFree(B[s]));
    CUDA_CHECK(cudaFree(C[s]));
  }
  release();
  return r;
}

}  // namespace parasim::calib
