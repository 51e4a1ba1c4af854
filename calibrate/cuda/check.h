// Every CUDA, cuBLASLt and NCCL call is checked here, in one place: on failure the library's
// message with file:line is thrown as HarnessError and main() reports it.
#pragma once
#include <stdexcept>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>
#ifdef PARASIM_WITH_MPI
#include <mpi.h>
#endif

namespace parasim::calib {

struct HarnessError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::string where(const char* file, int line) { return std::string(file) + ":" + std::to_string(line) + ": "; }

inline void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) throw HarnessError(where(file, line) + what + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}
inline void check_cublas(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw HarnessError(where(file, line) + what + ": cuBLAS status " + std::to_string(static_cast<int>(s)) + " (" +
                       cublasLtGetStatusName(s) + ": " + cublasLtGetStatusString(s) + ")");
}
inline void check_nccl(ncclResult_t r, const char* what, const char* file, int line) {
  if (r != ncclSuccess) throw HarnessError(where(file, line) + what + ": " + ncclGetErrorString(r));
}

#ifdef PARASIM_WITH_MPI
inline void check_mpi(int rc, const char* what, const char* file, int line) {
  if (rc != 0) {
    char msg[512];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw HarnessError(where(file, line) + what + ": " + std::string(msg, static_cast<size_t>(len)));
  }
}
#endif

}  // namespace parasim::calib

#define MPI_CHECK(x) ::parasim::calib::check_mpi((x), #x, __FILE__, __LINE__)
#define CUDA_CHECK(x) ::parasim::calib::check_cuda((x), #x, __FILE__, __LINE__)
#define CUBLAS_CHECK(x) ::parasim::calib::check_cublas((x), #x, __FILE__, __LINE__)
#define NCCL_CHECK(x) ::parasim::calib::check_nccl((x), #x, __FILE__, __LINE__)
