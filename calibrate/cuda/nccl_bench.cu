// NCCL collectives across the first `ranks` GPUs of this process (ncclCommInitAll): time per
// operation is the slowest rank's, from CUDA events on each rank's stream.
#include <algorithm>

#include "calibrate/cuda/benchmarks.h"

namespace parasim::calib {

namespace {
__global__ void fill_f(float* p, std::int64_t n, float v) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}
}  // namespace

void fill_floats(float* p, std::int64_t n, float v, cudaStream_t stream) {
  fill_f<<<1024, 256, 0, stream>>>(p, n, v);
  CUDA_CHECK(cudaGetLastError());
}

void enqueue_collective(const std::string& op, int rank, int ranks, int peer, float* send, float* recv, size_t count,
                        ncclComm_t comm, cudaStream_t stream) {
  const size_t per = count / static_cast<size_t>(ranks);
  if (op == "all_reduce") NCCL_CHECK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
  else if (op == "all_gather") NCCL_CHECK(ncclAllGather(send, recv, per, ncclFloat, comm, stream));
  else if (op == "reduce_scatter") NCCL_CHECK(ncclReduceScatter(send, recv, per, ncclFloat, ncclSum, comm, stream));
  else if (op == "broadcast") NCCL_CHECK(ncclBroadcast(send, recv, count, ncclFloat, 0, comm, stream));
  else if (op == "all_to_all") {
    NCCL_CHECK(ncclGroupStart());
    for (int q = 0; q < ranks; ++q) {
      NCCL_CHECK(ncclSend(send + static_cast<size_t>(q) * per, per, ncclFloat, q, comm, stream));
      NCCL_CHECK(ncclRecv(recv + static_cast<size_t>(q) * per, per, ncclFloat, q, comm, stream));
    }
    NCCL_CHECK(ncclGroupEnd());
  } else if (op == "send_recv") {
    NCCL_CHECK(ncclGroupStart());
    if (rank == 0) NCCL_CHECK(ncclSend(send, count, ncclFloat, peer, comm, stream));
    if (rank == peer) NCCL_CHECK(ncclRecv(recv, count, ncclFloat, 0, comm, stream));
    NCCL_CHECK(ncclGroupEnd());
  } else {
    throw HarnessError("unknown collective " + op);
  }
}

std::vector<CollectiveResult> bench_nccl(int ranks, const std::vector<std::string>& ops, const std::vector<double>& sizes,
                                         const Method& method) {
  int visible = 0;
  CUDA_CHECK(cudaGetDeviceCount(&visible));
  if (ranks > visible) throw HarnessError("NCCL benchmark wants " + std::to_string(ranks) + " GPUs, " + std::to_string(visible) + " visible");
  std::vector<int> devs(static_cast<size_t>(ranks));
  for (int i = 0; i < ranks; ++i) devs[static_cast<size_t>(i)] = i;
  std::vector<ncclComm_t> comms(static_cast<size_t>(ranks));
  NCCL_CHECK(ncclCommInitAll(comms.data(), ranks, devs.data()));
  const double max_bytes = *std::max_element(sizes.begin(), sizes.end());
  std::vector<float*> send(static_cast<size_t>(ranks)), recv(static_cast<size_t>(ranks));
  std::vector<cudaStream_t> st(static_cast<size_t>(ranks));
  std::vector<cudaEvent_t> e0(static_cast<size_t>(ranks)), e1(static_cast<size_t>(ranks));
  const auto max_elems = static_cast<std::int64_t>(max_bytes / 4);
  for (int r = 0; r < ranks; ++r) {
    CUDA_CHECK(cudaSetDevice(r));
    CUDA_CHECK(cudaStreamCreate(&st[static_cast<size_t>(r)]));
    CUDA_CHECK(cudaMalloc(&send[static_cast<size_t>(r)], static_cast<size_t>(max_elems) * 4));
    CUDA_CHECK(cudaMalloc(&recv[static_cast<size_t>(r)], static_cast<size_t>(max_elems) * 4));
    CUDA_CHECK(cudaEventCreate(&e0[static_cast<size_t>(r)]));
    CUDA_CHECK(cudaEventCreate(&e1[static_cast<size_t>(r)]));
    fill_f<<<1024, 256, 0, st[static_cast<size_t>(r)]>>>(send[static_cast<size_t>(r)], max_elems, 1.0f);
    CUDA_CHECK(cudaGetLastError());
  }
  std::vector<CollectiveResult> out;
  for (const auto& op : ops)
    for (double bytes : sizes) {
      // bytes = AR buffer, AG output, RS input, A2A per-rank total, broadcast/send message.
      const auto count = static_cast<size_t>(bytes / 4);
      const size_t per = count / static_cast<size_t>(ranks);
      if (per == 0 && (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all")) continue;
      auto launch = [&]() {
        NCCL_CHECK(ncclGroupStart());
        for (int r = 0; r < ranks; ++r) {
          const auto i = static_cast<size_t>(r);
          enqueue_collective(op, r, ranks, 1, send[i], recv[i], count, comms[i], st[i]);
        }
        NCCL_CHECK(ncclGroupEnd());
      };
      for (int w = 0; w < method.warmup; ++w) launch();
      for (int r = 0; r < ranks; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaStreamSynchronize(st[static_cast<size_t>(r)]));
      }
      std::vector<double> times;
      double total = 0;
      while ((static_cast<int>(times.size()) < method.min_iters || total < method.min_seconds) && static_cast<int>(times.size()) < method.max_iters) {
        for (int r = 0; r < ranks; ++r) {
          CUDA_CHECK(cudaSetDevice(r));
          CUDA_CHECK(cudaEventRecord(e0[static_cast<size_t>(r)], st[static_cast<size_t>(r)]));
        }
        launch();
        double slowest = 0;
        for (int r = 0; r < ranks; ++r) {
          CUDA_CHECK(cudaSetDevice(r));
          CUDA_CHECK(cudaEventRecord(e1[static_cast<size_t>(r)], st[static_cast<size_t>(r)]));
        }
        for (int r = 0; r < ranks; ++r) {
          CUDA_CHECK(cudaSetDevice(r));
          CUDA_CHECK(cudaEventSynchronize(e1[static_cast<size_t>(r)]));
          float ms = 0;
          CUDA_CHECK(cudaEventElapsedTime(&ms, e0[static_cast<size_t>(r)], e1[static_cast<size_t>(r)]));
          slowest = std::max(slowest, ms * 1e-3);
        }
        times.push_back(slowest);
        total += slowest;
      }
      CollectiveResult res{op, ranks, bytes, stats_of(times), true};
      if (op == "all_reduce") {  // every element of the sum of ones is `ranks`
        float v = 0;
        CUDA_CHECK(cudaSetDevice(0));
        CUDA_CHECK(cudaMemcpy(&v, recv[0], 4, cudaMemcpyDeviceToHost));
        res.correct = v == static_cast<float>(ranks);
      }
      out.push_back(res);
    }
  for (int r = 0; r < ranks; ++r) {
    const auto i = static_cast<size_t>(r);
    CUDA_CHECK(cudaSetDevice(r));
    CUDA_CHECK(cudaFree(send[i]));
    CUDA_CHECK(cudaFree(recv[i]));
    CUDA_CHECK(cudaStreamDestroy(st[i]));
    CUDA_CHECK(cudaEventDestroy(e0[i]));
    CUDA_CHECK(cudaEventDestroy(e1[i]));
    NCCL_CHECK(ncclCommDestroy(comms[i]));
  }
  return out;
}

}  // namespace parasim::calib
