#include "sim/parallel/comm_overlap.h"

#include <algorithm>

namespace parasim {

double overlap_extra(double gemm, double comm, double slowdown, double exposed_share) {
  return std::max(gemm * slowdown + exposed_share * comm, comm - gemm);
}

double overlap_extra_while_running(double compute, double comm, double slowdown) {
  // While the collective runs the kernels do comm / (1 + slowdown) of their work.
  if (comm <= compute * (1 + slowdown)) return comm * slowdown / (1 + slowdown);
  return comm - compute;
}

TpOverlapPricing tp_overlap_pricing(const Profile& p) {
  if (!p.has_tp_overlap) return {p.overlap_compute_slowdown.value, 0, 0};
  const double held = p.tp_overlap.comm_sms.value;
  const double left = static_cast<double>(p.device.sms) - held;  // > 0: the loader caps comm_sms
  return {held / left, p.tp_overlap.exposed_fwd.value, p.tp_overlap.exposed_bwd.value};
}

}  // namespace parasim
