// Sweeps and plans across processes: `mpirun -np K parasim sweep|plan ...` splits the layouts
// over the K processes (balanced by expected cost, sim/planning/evaluate.h) and gathers every
// outcome on the first, which alone prints; the output is byte-identical to a serial run.
// MPI is started only when parasim runs under mpirun (Open MPI's OMPI_COMM_WORLD_SIZE, or a PMIx
// launcher's PMIX_RANK); built without MPI, or started without a launcher, it is one process.
#pragma once
#include <optional>

#include "sim/planning/evaluate.h"

namespace parasim {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  // The distribution of a run over several processes, or null for one.
  const Distribution* distribution() const { return dist_ ? &*dist_ : nullptr; }

 private:
  bool started_ = false;
  std::optional<Distribution> dist_;
};

}  // namespace parasim
