// Unfused attention forward: S = Q K^T (strided-batched cuBLASLt), causal softmax (one kernel),
// O = P V. Recorded as "unfused" in the profile: cuDNN's fused SDPA through the backend graph
// API is not measured yet.
#include <cuda_bf16.h>

#include <cmath>

#include "calibrate/cuda/benchmarks.h"

namespace parasim::calib {

namespace {

__global__ void fill_bf16(__nv_bfloat16* p, std::int64_t n, float v) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(v);
}

// One block per (batch-head, row): causal softmax of row r over columns 0..r, in place.
__global__ void causal_softmax(__nv_bfloat16* s, std::int64_t seq, float scale) {
  const std::int64_t row = blockIdx.x % seq;
  __nv_bfloat16* p = s + static_cast<std::int64_t>(blockIdx.x) * seq;
  __shared__ float red[32];
  float mx = -INFINITY;
  for (std::int64_t j = threadIdx.x; j <= row; j += blockDim.x) mx = fmaxf(mx, __bfloat162float(p[j]) * scale);
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mx;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) red[0] = v;
  }
  __syncthreads();
  mx = red[0];
  __syncthreads();
  float sum = 0;
  for (std::int64_t j = threadIdx.x; j <= row; j += blockDim.x) sum += __expf(__bfloat162float(p[j]) * scale - mx);
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0) red[0] = v;
  }
  __syncthreads();
  sum = red[0];
  for (std::int64_t j = threadIdx.x; j < seq; j += blockDim.x)
    p[j] = __float2bfloat16(j <= row ? __expf(__bfloat162float(p[j]) * scale - mx) / sum : 0.0f);
}

struct BatchedGemm {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t la{}, lb{}, lc{};
  cublasLtMatmulHeuristicResult_t heur{};
};

// Column-major batched C[m,n] = op(A) * op(B).
BatchedGemm make_batched(cublasLtHandle_t lt, cublasOperation_t ta, cublasOperation_t tb, std::int64_t m, std::int64_t n, std::int64_t k,
                         std::int64_t batch, std::int64_t lda, std::int64_t ldb, std::int64_t sa, std::int64_t sb, std::int64_t sc, size_t ws) {
  BatchedGemm g;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  const std::int64_t ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
  const std::int64_t br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g.la, CUDA_R_16BF, static_cast<uint64_t>(ar), static_cast<uint64_t>(ac), lda));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g.lb, CUDA_R_16BF, static_cast<uint64_t>(br), static_cast<uint64_t>(bc), ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g.lc, CUDA_R_16BF, static_cast<uint64_t>(m), static_cast<uint64_t>(n), m));
  const int32_t bcount = static_cast<int32_t>(batch);
  for (auto [l, stride] : {std::pair{g.la, sa}, std::pair{g.lb, sb}, std::pair{g.lc, sc}}) {
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bcount, sizeof bcount));
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  cublasLtMatmulPreference_t pref;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  int found = 0;
  CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, g.op, g.la, g.lb, g.lc, g.lc, pref, 1, &g.heur, &found));
  CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  if (!found) throw HarnessError("cuBLASLt found no batched algorithm for attention");
  return g;
}

void destroy(BatchedGemm& g) {
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(g.la));
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(g.lb));
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(g.lc));
  CUBLAS_CHECK(cublasLtMatmulDescDestroy(g.op));
}

}  // namespace

AttentionResult bench_attention_unfused(std::int64_t bh, std::int64_t seq, std::int64_t d, const Method& method) {
  AttentionResult r{bh, seq, d, true, {}, "unfused: cuBLASLt QK^T + causal softmax + cuBLASLt PV"};
  cublasLtHandle_t lt;
  CUBLAS_CHECK(cublasLtCreate(&lt));
  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreate(&st));
  const std::int64_t qkv = bh * seq * d, sc = bh * seq * seq;
  __nv_bfloat16 *q, *k, *v, *s, *o;
  for (auto [p, n] : {std::pair{&q, qkv}, std::pair{&k, qkv}, std::pair{&v, qkv}, std::pair{&s, sc}, std::pair{&o, qkv}})
    CUDA_CHECK(cudaMalloc(p, static_cast<size_t>(n) * 2));
  fill_bf16<<<1024, 256, 0, st>>>(q, qkv, 0.01f);
  fill_bf16<<<1024, 256, 0, st>>>(k, qkv, 0.01f);
  fill_bf16<<<1024, 256, 0, st>>>(v, qkv, 0.5f);
  CUDA_CHECK(cudaGetLastError());
  const size_t ws_bytes = 32u << 20;
  void* ws;
  CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
  // Column-major views: Q, K, V are d x seq per batch-head (row-major [seq, d]).
  // S (seq x seq) = K^T Q -> scores with keys along rows; P V: O (d x seq) = V P.
  BatchedGemm g1 = make_batched(lt, CUBLAS_OP_T, CUBLAS_OP_N, seq, seq, d, bh, d, d, seq * d, seq * d, seq * seq, ws_bytes);
  BatchedGemm g2 = make_batched(lt, CUBLAS_OP_N, CUBLAS_OP_N, d, seq, seq, bh, d, seq, seq * d, seq * seq, seq * d, ws_bytes);
  const float alpha = 1.0f, beta = 0.0f, scale = 1.0f / std::sqrt(static_cast<float>(d));
  r.fwd = time_on_stream(st, method, [&](int) {
    CUBLAS_CHECK(cublasLtMatmul(lt, g1.op, &alpha, k, g1.la, q, g1.lb, &beta, s, g1.lc, s, g1.lc, &g1.heur.algo, ws, ws_bytes, st));
    causal_softmax<<<static_cast<unsigned>(bh * seq), 256, 0, st>>>(s, seq, scale);
    CUDA_CHECK(cudaGetLastError());
    CUBLAS_CHECK(cublasLtMatmul(lt, g2.op, &alpha, v, g2.la, s, g2.lb, &beta, o, g2.lc, o, g2.lc, &g2.heur.algo, ws, ws_bytes, st));
  });
  destroy(g1);
  destroy(g2);
  for (auto* p : {q, k, v, s, o}) CUDA_CHECK(cudaFree(p));
  CUDA_CHECK(cudaFree(ws));
  CUDA_CHECK(cudaStreamDestroy(st));
  CUBLAS_CHECK(cublasLtDestroy(lt));
  return r;
}

Stats bench_attention_scores_fused_qkv(std::int64_t heads, std::int64_t seq, std::int64_t d, const Method& method) {
  cublasLtHandle_t lt;
  CUBLAS_CHECK(cublasLtCreate(&lt));
  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreate(&st));
  const std::int64_t qkv_n = seq * heads * 3 * d, s_n = heads * seq * seq;
  __nv_bfloat16 *qkv, *s;
  CUDA_CHECK(cudaMalloc(&qkv, static_cast<size_t>(qkv_n) * 2));
  CUDA_CHECK(cudaMalloc(&s, static_cast<size_t>(s_n) * 2));
  fill_bf16<<<1024, 256, 0, st>>>(qkv, qkv_n, 0.01f);
  CUDA_CHECK(cudaGetLastError());
  const size_t ws_bytes = 32u << 20;
  void* ws;
  CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
  // Column-major: per head, Q and K are d x seq with leading dimension heads x 3d; head i starts
  // 3d i elements in; K sits d elements after Q. S (seq x seq) = K^T Q.
  const std::int64_t ld = heads * 3 * d;
  BatchedGemm g = make_batched(lt, CUBLAS_OP_T, CUBLAS_OP_N, seq, seq, d, heads, ld, ld, 3 * d, 3 * d, seq * seq, ws_bytes);
  const float alpha = 1.0f, beta = 0.0f;
  const __nv_bfloat16* q = qkv;
  const __nv_bfloat16* k = qkv + d;
  const Stats t = time_on_stream(st, method, [&](int) {
    CUBLAS_CHECK(cublasLtMatmul(lt, g.op, &alpha, k, g.la, q, g.lb, &beta, s, g.lc, s, g.lc, &g.heur.algo, ws, ws_bytes, st));
  });
  destroy(g);
  CUDA_CHECK(cudaFree(qkv));
  CUDA_CHECK(cudaFree(s));
  CUDA_CHECK(cudaFree(ws));
  CUDA_CHECK(cudaStreamDestroy(st));
  CUBLAS_CHECK(cublasLtDestroy(lt));
  return t;
}

}  // namespace parasim::calib
