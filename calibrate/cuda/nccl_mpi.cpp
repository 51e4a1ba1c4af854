// NCCL collectives across processes and nodes under mpirun: one GPU per rank (its node-local
// rank), the NCCL unique id broadcast from rank 0, ncclCommInitRank. Each rank times its own
// stream with CUDA events; the reported time of an iteration is the slowest rank's (MPI max), as
// nccl-tests does. Built only when CMake finds MPI (PARASIM_WITH_MPI).
#include <algorithm>
#include <set>
#include <unistd.h>

#include "calibrate/cuda/benchmarks.h"

namespace parasim::calib {

std::vector<CollectiveResult> bench_nccl_mpi(const std::vector<std::string>& ops, const std::vector<double>& sizes,
                                             const Method& method, int* nodes) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  if (size < 2) throw HarnessError("--mpi needs at least 2 MPI ranks (launch with mpirun -np N)");
  // Node-local rank picks the GPU; distinct hostnames count the nodes.
  MPI_Comm local;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local));
  int local_rank = 0;
  MPI_CHECK(MPI_Comm_rank(local, &local_rank));
  MPI_CHECK(MPI_Comm_free(&local));
  int visible = 0;
  CUDA_CHECK(cudaGetDeviceCount(&visible));
  if (local_rank >= visible)
    throw HarnessError("MPI rank " + std::to_string(rank) + " is local rank " + std::to_string(local_rank) + " but only " +
                       std::to_string(visible) + " GPU(s) are visible on its node (use as many ranks per node as GPUs)");
  CUDA_CHECK(cudaSetDevice(local_rank));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::vector<char> hosts(static_cast<size_t>(size) * sizeof host);
  MPI_CHECK(MPI_Allgather(host, sizeof host, MPI_CHAR, hosts.data(), sizeof host, MPI_CHAR, MPI_COMM_WORLD));
  std::set<std::string> distinct;
  for (int r = 0; r < size; ++r) distinct.insert(std::string(hosts.data() + static_cast<size_t>(r) * sizeof host));
  *nodes = static_cast<int>(distinct.size());

  // send_recv: rank 0 to the first rank on another node (rank 1 on one node): the network path.
  int peer = 1;
  for (int r = 1; r < size; ++r)
    if (std::string(hosts.data() + static_cast<size_t>(r) * sizeof host) != std::string(hosts.data())) {
      peer = r;
      break;
    }

  ncclUniqueId id;
  if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, size, id, rank));

  const double max_bytes = *std::max_element(sizes.begin(), sizes.end());
  const auto max_elems = static_cast<std::int64_t>(max_bytes / 4);
  float *send = nullptr, *recv = nullptr;
  cudaStream_t st;
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaStreamCreate(&st));
  CUDA_CHECK(cudaMalloc(&send, static_cast<size_t>(max_elems) * 4));
  CUDA_CHECK(cudaMalloc(&recv, static_cast<size_t>(max_elems) * 4));
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  fill_floats(send, max_elems, 1.0f, st);
  CUDA_CHECK(cudaStreamSynchronize(st));

  std::vector<CollectiveResult> out;
  for (const auto& op : ops)
    for (double bytes : sizes) {
      const auto count = static_cast<size_t>(bytes / 4);
      const size_t per = count / static_cast<size_t>(size);
      if (per == 0 && (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all")) continue;
      auto launch = [&]() { enqueue_collective(op, rank, size, peer, send, recv, count, comm, st); };
      for (int w = 0; w < method.warmup; ++w) launch();
      CUDA_CHECK(cudaStreamSynchronize(st));
      MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      std::vector<double> times;
      double total = 0;
      // Every rank runs the same number of iterations: rank 0's decision is broadcast.
      for (int go = 1; go;) {
        CUDA_CHECK(cudaEventRecord(e0, st));
        launch();
        CUDA_CHECK(cudaEventRecord(e1, st));
        CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        double mine = ms * 1e-3, slowest = 0;
        MPI_CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        times.push_back(slowest);
        total += slowest;
        go = (static_cast<int>(times.size()) < method.min_iters || total < method.min_seconds) &&
             static_cast<int>(times.size()) < method.max_iters;
        MPI_CHECK(MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD));
      }
      CollectiveResult res{op, size, bytes, stats_of(times), true};
      if (op == "all_reduce") {  // every element of the sum of ones is `size`, on every rank
        float v = 0;
        CUDA_CHECK(cudaMemcpy(&v, recv, 4, cudaMemcpyDeviceToHost));
        int ok = v == static_cast<float>(size), all_ok = 0;
        MPI_CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
        res.correct = all_ok == 1;
      }
      out.push_back(res);
    }
  CUDA_CHECK(cudaFree(send));
  CUDA_CHECK(cudaFree(recv));
  CUDA_CHECK(cudaStreamDestroy(st));
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  NCCL_CHECK(ncclCommDestroy(comm));
  return out;
}

}  // namespace parasim::calib
