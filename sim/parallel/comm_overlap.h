#pragma once
// Communication overlapped with the GEMMs of the block that needs it (Transformer Engine's
// userbuffers for tensor parallelism; the MoE all-to-all beside its layer): the extra time the
// block takes over its kernels alone, and the figures that price it.

#include "calibrate/profile/profile.h"

namespace parasim {

// A collective of `comm` seconds runs beside GEMMs of `gemm` seconds that lose `slowdown` of
// their speed meanwhile; `exposed_share` of the collective finds no GEMM to hide under. The block
// takes max(gemm * (1 + slowdown) + exposed_share * comm, comm) in all; returned: that less gemm.
double overlap_extra(double gemm, double comm, double slowdown, double exposed_share = 0);

// A collective of `comm` seconds beside `compute` seconds of kernels that run `slowdown` slower
// only while it runs (its kernels hold SMs and HBM for as long as it moves data: the MoE
// all-to-all of another microbatch): the block takes compute + comm * slowdown / (1 + slowdown)
// while the collective ends first, else the collective's time; returned: that less compute.
// Never more than the collective it hides.
double overlap_extra_while_running(double compute, double comm, double slowdown);

// How Transformer Engine's userbuffers overlap prices a TP block on this GPU: the profile's
// compute.tp_overlap (its GEMMs slowed by the SMs the communication kernels hold,
// comm_sms / (sms - comm_sms), and the exposed shares), or, where a profile has none, the NCCL
// overlap slowdown with every byte hidden.
struct TpOverlapPricing {
  double gemm_slowdown = 0;
  double exposed_fwd = 0;
  double exposed_bwd = 0;
};
TpOverlapPricing tp_overlap_pricing(const Profile& p);

}  // namespace parasim
