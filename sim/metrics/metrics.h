// Timeline -> Result: step time, throughput, MFU/HFU, bubble fraction measured from compute-stream
// idle time, per-rank peak memory with its breakdown, where the time went.
#pragma once
#include <array>
#include <map>
#include <string>
#include <vector>

#include "sim/core/program.h"
#include "sim/core/timeline.h"

namespace parasim {

// Result::breakdown's line for the compute stream's wait on the host thread that issues the kernels
// (with the host launch model): taken out of the phases whose ops waited.
inline constexpr const char* kHostWaitKey = "host_wait_s";

struct RankResult {
  std::int32_t rank = 0;   // first real rank this simulated rank stands for
  std::int64_t count = 1;  // real ranks it stands for
  std::int32_t stage = 0;
  std::string role;
  double peak_mem_gib = 0;
  double peak_time_s = 0;
  std::array<double, kMemCats> mem_breakdown_gib{};
  // What nvidia-smi shows at the end of a step: PyTorch's caching allocator returns no memory to
  // the driver and serves a request only from a cached block at least as large, so each kind of
  // tensor keeps the segments of its own high-water mark (activations of a layer's size, gathered
  // parameter units, the optimizer step's partition-sized flat buffers rarely fit each other's
  // blocks): the sum over memory categories of each one's most at any moment. The peak above is
  // what is allocated at once (torch.cuda.max_memory_allocated plus the runtime's reserve), and what
  // decides out of memory (on a failed cudaMalloc the allocator frees its cache and retries).
  double reserved_gib = 0;
  double compute_s = 0;       // compute stream busy (includes TP comm on the critical path)
  double comm_exposed_s = 0;  // own communication while the compute stream is idle
  double idle_s = 0;
  double bubble_fraction = 0;
  // compute-stream time per phase, comm-stream time for comm phases, with the collectives overlapped
  // in closed form (HiddenComm) in theirs
  std::array<double, kPhases> phase_s{};
};

// Communication that the compute stream waited for, per parallel dimension, seconds (mean over
// GPUs): comm ops of that kind outside every compute interval of their rank, plus the kind's ops
// that run on the compute stream itself (TP without overlap).
struct ExposedComm {
  double tp = 0, dp = 0, pp = 0, ep = 0, cp = 0;
  double total() const { return tp + dp + pp + ep + cp; }
};

struct MetricsInput {
  std::string scenario;
  double tokens_per_step = 0;
  std::int64_t gpus = 1;
  double peak_flops = 0;     // per GPU, FLOP/s
  double capacity_bytes = 0; // per GPU
};

struct Result {
  std::string scenario;
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;
  // MFU: the model's FLOPs in the field's convention (Megatron-LM's formula, Narayanan et al.
  // SC'21: attention over the full score matrix, no recompute). HFU: the FLOPs the kernels execute
  // (causal attention half the score matrix, recompute included): bounded by the hardware.
  // hfu_reported: "hardware FLOPs" as Megatron-LM and its successors report them, the model-FLOPs
  // convention plus recompute (what published hardware TFLOP/s are compared with).
  double mfu = 0;
  double hfu = 0;
  double hfu_reported = 0;
  double bubble_fraction = 0;
  double window_s = 0;  // the pipeline window: first to last forward/backward/recompute op (bubbles are fractions of it)
  double peak_mem_gib = 0;
  double reserved_gib = 0;  // the most over ranks of RankResult::reserved_gib
  double capacity_gib = 0;
  bool fits_in_memory = true;
  std::vector<RankResult> ranks;
  std::map<std::string, double> breakdown;  // seconds, mean over ranks
  ExposedComm exposed;
  std::vector<std::string> warnings;
  std::int64_t ops = 0;
  std::int64_t events = 0;
};

Result compute_metrics(const MetricsInput& in, const Program& p, const Timeline& t);

// Measure of the union of half-open intervals, clipped to [lo, hi).
double union_length(std::vector<std::pair<Time, Time>> iv, Time lo, Time hi);

}  // namespace parasim
