// Kernel -> seconds, from a calibration profile. Measured GEMM points are interpolated; where the
// profile has none near a shape, the GEMM kernel model prices it (counted as a fallback):
//   time = fixed + max(main loop, operand reads) + output tile writes
// main loop = flops / (peak x main-loop efficiency x wave quantisation of the output tiles),
// output writes = m n batch x element size / epilogue rate (the epilogue does not overlap the
// main loop). The main-loop efficiency is not a free figure: it is solved from the profile's
// best-shape efficiency at the shape it was measured on, so the model reproduces that
// measurement exactly.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "calibrate/profile/profile.h"

namespace parasim {

// Fraction of the SMs' tile slots the output tiles of an m x n x batch GEMM fill in their last
// wave (cuBLAS also picks half-size tiles when they fill the SMs better; the better is taken).
double wave_quantisation(const Profile& p, double m, double n, double batch);

// The GEMM kernel model without measured points, for one dtype.
struct GemmKernelModel {
  double peak_flops = 0;         // FLOP/s
  double main_efficiency = 0;    // main loop, fraction of peak before wave quantisation
  double fixed_s = 0;            // per GEMM: launch, pipeline fill and drain
  double epilogue_bytes_per_s = 0;
  double out_elem_bytes = 2;     // C is written in 16-bit (fp32 for fp32/tf32)
  double in_elem_bytes = 2;      // A and B (1 for fp8)
  // No shape runs faster than the best efficiency measured on this GPU (gemm_max_efficiency, the
  // maximum of a shape sweep): the model is validated on shapes up to 4096 per dimension, and
  // past them it would extrapolate toward the main-loop efficiency, above any measurement.
  double max_efficiency = 1.0;
  // Leading dimensions that are not a multiple of align_elems elements (16 bytes) run the main loop
  // at unaligned_ratio of the aligned speed (compute.gemm_unaligned_ratio).
  double align_elems = 8;
  double unaligned_ratio = 1.0;
  double time_s(const Profile& p, double m, double n, double k, double batch) const;
  // The same with the main loop at `ratio` of the aligned speed, whatever the shape.
  double time_s(const Profile& p, double m, double n, double k, double batch, double ratio) const;
};
// Solves the main-loop efficiency from compute.gemm_max_efficiency.<dtype> and its shape_mnk
// (without a shape the figure is taken as the main-loop efficiency). Throws ProfileError when the
// profile's fixed time and epilogue rate alone exceed the best-shape measurement.
GemmKernelModel gemm_kernel_model(const Profile& p, const std::string& dtype);

// E[max of n independent standard normal draws] (0 for n <= 1), by quadrature of
// x n phi(x) Phi(x)^(n-1); e.g. 1.4236 for 8, 3.2414 for 1000 (Harter 1961's table). About 0.15 ms:
// a job's draw is computed once where its scenario is read (Scenario::slowest_gpu), not per step.
double expected_max_standard_normal(std::int64_t n);
// The job's slowest GPU as a draw of the profile's speed spread: E[max of its GPUs' standard normal
// draws] when the profile states a spread (compute.gpu_speed_spread), else 0.
struct SlowestGpu {
  double draw = 0.0;
};
SlowestGpu slowest_gpu(const Profile& p, std::int64_t gpus);
// Time of the slowest of `gpus` GPUs over the typical one's, for work all of them must finish
// before any goes on (a synchronous step): 1 + compute.gpu_speed_spread x E[max of gpus draws].
double slowest_gpu_pace(const Profile& p, SlowestGpu slowest);
inline double slowest_gpu_pace(const Profile& p, std::int64_t gpus) { return slowest_gpu_pace(p, slowest_gpu(p, gpus)); }

class CostModel {
 public:
  // attention_kernel: kAttentionDefault or a kernel in the profile's compute.attention_kernels.
  // gpus: the job's GPU count; its kernels run at the pace of the slowest of them
  // (slowest_gpu_pace; 1 GPU: the profile's own speed).
  CostModel(const Profile& profile, std::string dtype, const std::string& attention_kernel, SlowestGpu slowest);
  CostModel(const Profile& profile, std::string dtype, const std::string& attention_kernel = kAttentionDefault,
            std::int64_t gpus = 1)
      : CostModel(profile, std::move(dtype), attention_kernel, slowest_gpu(profile, gpus)) {}

  // `measured` (optional) tells whether measured points priced the shape (else the kernel model).
  // In a training step: the benchmarked (burst) time over the profile's sustained_clock_ratio.
  double gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1, bool* measured = nullptr) const;
  // As a GEMM benchmark times it (short bursts at the boost clock): the measured points or the GEMM
  // kernel model, before the sustained-clock derating. What GEMM tables are compared with.
  double benchmark_gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1, bool* measured = nullptr) const;
  // A GEMM that an FP8 recipe keeps in 16-bit (Transformer Engine and torchao float8 convert the
  // transformer layers' linear layers, not the output layer): priced as bf16 when this model's
  // dtype is fp8, else exactly as gemm_s.
  double gemm16_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1, bool* measured = nullptr) const;
  // An MoE layer's expert GEMMs (`batch` local experts, one grouped GEMM or one GEMM per expert):
  // as gemm_s, but their output tiles are written to HBM at no more than the streaming rate
  // (memory.hbm_gbps x memory.hbm_efficiency). The epilogue rate compute.gemm_epilogue_gbps is fitted
  // to single GEMMs whose outputs (at most 4096 x 4096, 32 MB) stay in L2; the weight gradient of the
  // local experts writes their whole weights (E/ep x h x f per GEMM: 13 MB to 1.9 GB in the shapes
  // measured below, mostly beyond a 50 MB L2). Measured on an H200 (calibrate/measurements/
  // h200-sxm-141g-moe-2026-12-04, run 3): at 64 tokens per expert those weight gradients write at
  // 2.4-3.8 TB/s beyond their main loop (1.7-2.4 TB/s with 4 experts), not the 8.4 TB/s epilogue rate.
  double expert_gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1, bool* measured = nullptr,
                       bool sixteen_bit = false) const;
  // A batched GEMM of unfused attention over heads head_dim wide (QK^T, PV, their gradients): as
  // gemm_s while head_dim is a 16-byte multiple; otherwise every operand holding the head dimension
  // is off 16 bytes, and the GEMM kernel model prices the main loop at
  // compute.attention_gemm_unaligned_ratio of the aligned speed (measured points, taken on aligned
  // operands, do not apply).
  double attention_gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, std::int64_t head_dim,
                          bool* measured = nullptr) const;
  // A fused attention kernel over `flops` of causal attention (the executed half of the score
  // matrix) for sequences of seq_len tokens, split over cp context-parallel ranks, with heads of
  // head_dim; see Profile::AttentionKernel for how both set the kernel's efficiency.
  double attention_s(double flops, bool backward, double seq_len, std::int64_t cp = 1, double head_dim = kAttentionHeadDim) const;
  // A memory-bound kernel moving `bytes` through HBM at the streaming rate times class_ratio (the
  // profile's memory.kernel_class_ratio for the kernel's kind; 1 for streaming passes), plus the
  // profile's per-kernel overhead once for each of the `launches` real kernels it stands for
  // (Kernel::launches: an FP8 quantization's amax, scale and cast kernels, each expert's own).
  double memory_s(double bytes, double class_ratio = 1.0, std::int64_t launches = 1) const;
  // A kernel doing `flops` of small matmuls in 16-bit while moving `bytes` through HBM (the Mamba-2
  // SSD chunked scan): the later of its FLOPs at the best GEMM efficiency the profile states for
  // 16-bit (compute.gemm_max_efficiency, at the sustained clock) and its bytes at the streaming
  // rate, plus one kernel overhead (roofline: the Triton kernels overlap their loads and matmuls).
  double scan_s(double flops, double bytes) const;
  // Elementwise update over `bytes` of optimizer state traffic.
  double optimizer_s(double bytes) const { return memory_s(bytes); }

  double peak_flops() const { return peak_; }
  // Multiplier on every kernel's time from the job's slowest GPU (slowest_gpu_pace).
  double pace() const { return pace_; }
  // GEMM shapes priced so far (gemm16_s's included) and how many of them fell back to the kernel model.
  std::int64_t fallbacks() const { return fallbacks_ + (sixteen_bit_ ? sixteen_bit_->fallbacks() : 0); }
  std::int64_t lookups() const { return lookups_ + (sixteen_bit_ ? sixteen_bit_->lookups() : 0); }
  const Profile& profile() const { return p_; }
  // While one lives, pricing is not counted by lookups() and fallbacks(): a second pricing of
  // kernels a lowering has priced and counted already (the host model's share of an op before a
  // sync inside it, sim/host_launch.h block_sync).
  class Uncounted {
   public:
    explicit Uncounted(const CostModel& c)
        : c_(c), lookups_(c.lookups_), fallbacks_(c.fallbacks_), inner_(c.sixteen_bit_ ? std::make_unique<Uncounted>(*c.sixteen_bit_) : nullptr) {}
    ~Uncounted() {
      c_.lookups_ = lookups_;
      c_.fallbacks_ = fallbacks_;
    }
    Uncounted(const Uncounted&) = delete;
    Uncounted& operator=(const Uncounted&) = delete;

   private:
    const CostModel& c_;
    std::int64_t lookups_, fallbacks_;
    std::unique_ptr<Uncounted> inner_;
  };

 private:
  // A benchmarked GEMM time as a training step runs it: at the sustained clock and the job's pace.
  double gemm_in_step_s(double benchmark_s) const;
  // benchmark_gemm_s with `model` pricing the shapes no measured point covers.
  double benchmark_gemm_s(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, bool* measured,
                          const GemmKernelModel& model) const;
  const Profile& p_;
  std::string dtype_;
  double peak_;
  double attention_peak_;
  double pace_;
  const Profile::AttentionKernel* attention_ = nullptr;
  GemmKernelModel gemm_;
  GemmKernelModel expert_gemm_;  // gemm_ with the output written at no more than the HBM streaming rate
  std::unique_ptr<CostModel> sixteen_bit_;  // the bf16 model beside an fp8 one (gemm16_s)
  mutable std::int64_t fallbacks_ = 0;
  mutable std::int64_t lookups_ = 0;
};

}  // namespace parasim
