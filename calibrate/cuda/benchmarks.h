// The harness's benchmarks. Each returns plain results; main() turns them into a profile.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/cuda/timing.h"

namespace parasim::calib {

struct GemmResult {
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype;
  Stats time;
  int algo_id = -1, tile_id = -1;
  bool correct = false;
  bool supported = true;  // false: cuBLASLt has no algorithm for this shape and dtype (not timed)
  // With sustain_s > 0: time per GEMM over the second half of sustain_s seconds of back-to-back
  // GEMMs, once the board has settled at its power limit (mamf-finder.py's MSMF against `time`,
  // the short burst of a benchmark).
  Stats sustained;
};
// C[m,n] = A[m,k] * B[k,n] in PyTorch's linear layout (TN), cuBLASLt heuristic algorithm, on the
// current device.
GemmResult bench_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& dtype, const Method& method,
                      double sustain_s = 0);

struct BandwidthResult {
  std::string what;  // d2d_copy | elementwise_triad | h2d | d2h
  double bytes = 0;
  Stats time;
  double gbps() const { return bytes / time.p50 / 1e9; }
};
std::vector<BandwidthResult> bench_memory(double bytes, const Method& method);
// Time per kernel of `kernels` dependent tiny kernels (a 4,096-element triad each) launched back
// to back on one stream: the launch and tail gap every kernel of a training step pays at least.
Stats bench_kernel_gap(const Method& method, int kernels = 256);

struct AttentionResult {
  std::int64_t batch_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  Stats fwd;
  std::string kernel;  // what was measured
};
// Unfused attention (QK^T, softmax, PV) with cuBLASLt strided-batched GEMMs and a softmax kernel.
AttentionResult bench_attention_unfused(std::int64_t batch_heads, std::int64_t seq, std::int64_t head_dim, const Method& method);
// Unfused attention's QK^T as Megatron runs it: Q and K are views into one fused [seq, heads,
// 3 x head_dim] tensor (row stride heads x 3 x head_dim, per-head batch stride 3 x head_dim), so a
// head_dim off 16 bytes puts every row and batch of both operands off 16 bytes.
Stats bench_attention_scores_fused_qkv(std::int64_t heads, std::int64_t seq, std::int64_t head_dim, const Method& method);

struct CollectiveResult {
  std::string op;
  int ranks = 0;
  double bytes = 0;
  Stats time;
  bool correct = false;
};
// One process, ncclCommInitAll over the first `ranks` visible GPUs.
std::vector<CollectiveResult> bench_nccl(int ranks, const std::vector<std::string>& ops, const std::vector<double>& sizes,
                                         const Method& method);

// Fills n floats with v on a stream (shared by the NCCL benchmarks).
void fill_floats(float* p, std::int64_t n, float v, cudaStream_t stream);

// Enqueues rank `rank`'s part of one collective of `count` floats (AR buffer, AG output, RS input,
// A2A total, broadcast/send message) among `ranks`; send_recv goes from rank 0 to rank `peer`.
// The caller brackets it with ncclGroupStart/End when one thread drives several ranks.
void enqueue_collective(const std::string& op, int rank, int ranks, int peer, float* send, float* recv, size_t count,
                        ncclComm_t comm, cudaStream_t stream);

#ifdef PARASIM_WITH_MPI
// Multi-process, multi-node: one GPU per MPI rank (its node-local rank), ncclCommInitRank with the
// unique id broadcast over MPI_COMM_WORLD; time per operation is the slowest rank's (MPI max).
// Every rank returns the same results; `nodes` receives the number of distinct hosts.
std::vector<CollectiveResult> bench_nccl_mpi(const std::vector<std::string>& ops, const std::vector<double>& sizes,
                                             const Method& method, int* nodes);
#endif

}  // namespace parasim::calib
