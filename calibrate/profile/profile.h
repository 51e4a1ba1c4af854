// Calibration profile: every figure a prediction depends on, each with how it was obtained and
// its source. Loaded strictly; the cost model reads nothing else.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/json_reader.h"
#include "sim/core/choice.h"
#include "sim/core/registry.h"
#include "sim/scenario/choices.h"

namespace parasim {

// The fused-attention kernel the profile's attention_fwd/bwd_efficiency describe (FlashAttention-2
// class: the kernel PyTorch SDPA, flash-attn 2.x and most frameworks run).
inline constexpr const char* kAttentionDefault = "flash";
// Kernels a scenario may name (training.attention_kernel); a profile prices the default and those
// listed in its compute.attention_kernels, keyed by these names.
enum class AttentionKernel : std::uint8_t { Flash, Flash3, Cudnn, Triton };
const ChoiceRegistry<AttentionKernel>& attention_kernel_kinds();
std::string name_of(AttentionKernel v);
// The head dimension a profile's fused-attention efficiencies are stated at (Profile::AttentionKernel).
inline constexpr double kAttentionHeadDim = 128;
// GEMM dtypes of the Transformer Engine low-precision recipes: FP8 (per-tensor scaled), MXFP8 and
// NVFP4 (Blackwell's block-scaled FP8 and FP4 MMA). Their runs keep attention, the output layer and
// everything outside the linear layers in 16-bit.
inline bool is_low_precision(const std::string& dtype) { return dtype == "fp8" || dtype == "mxfp8" || dtype == "nvfp4"; }
// The GEMM dtypes a profile may give peaks, efficiencies and measured points for.
inline const std::vector<std::string> kGemmDtypes = {"bf16", "fp16", "fp8", "mxfp8", "nvfp4", "tf32", "fp32"};
// Bytes per GEMM operand element in HBM: FP8 1; NVFP4 half a byte plus one E4M3 scale per
// 16 elements (Transformer Engine's NVFP4BlockScaling); else the dtype's width.
inline double gemm_operand_bytes(const std::string& dtype) {
  if (dtype == "nvfp4") return 0.5 + 1.0 / 16;
  if (dtype == "fp8" || dtype == "mxfp8") return 1.0;
  return dtype == "fp32" || dtype == "tf32" ? 4.0 : 2.0;
}

struct Figure {
  double value = 0;
  std::string how;     // measured | imported | datasheet | published | fitted | assumed
  std::string source;  // where the number comes from
  // Optional spread (p10..p90 of measurements, or the range published sources span), used to
  // put an interval on predictions. low == high == value when unknown.
  double low = 0, high = 0;
  std::string range_source;
  bool has_range() const { return high > low; }
};

struct GemmPoint {
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype;
  double time_s = 0;
  std::string source;
};

// Valid ranges of a measured collective point (the profile loader and the importers agree on them).
inline constexpr double kMaxPointBytes = 1e15;
inline constexpr double kMinPointTimeS = 1e-12, kMaxPointTimeS = 1e6;

struct CollectivePoint {
  std::string op;  // all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | send_recv
  std::int64_t ranks = 0;
  std::int64_t nodes = 1;
  double bytes = 0;
  double time_s = 0;
  std::string algo;
  std::string source;
};

// NCCL's algorithm/protocol cost model (its tuner): per algorithm and protocol a base latency,
// a per-step latency over NVLink and over the network, and the fraction of the bus bandwidth the
// protocol reaches. Optional explicit rules force a choice by op, node count and message size.
enum class NcclAlgo { Ring, Tree, Nvls, Hierarchical, Direct, P2p };
enum class NcclProto { LL, LL128, Simple };
// The algorithms and protocols by name, the one list of them: the profile's tuning rules, the
// scenario's network.algorithm / network.protocol (those a run may force, as NCCL_ALGO and
// NCCL_PROTO do), `parasim network collective` and the tuner's candidates read these.
struct NcclAlgoDef {
  NcclAlgo value;
  bool forcible = true;  // a scenario may force it (direct and p2p are NCCL's send/receive paths)
};
struct NcclProtoDef {
  NcclProto value;
};
const Registry<NcclAlgoDef>& nccl_algorithms();  // built once, read only
const Registry<NcclProtoDef>& nccl_protocols();
const char* nccl_algo_name(NcclAlgo a);
const char* nccl_proto_name(NcclProto p);
// A run's NCCL_ALGO / NCCL_PROTO: nothing forced ("auto": NCCL's tuner chooses) or one algorithm
// and/or protocol, parsed once from the names above (nccl_override).
struct TunerOverride {
  std::optional<NcclAlgo> algorithm;
  std::optional<NcclProto> protocol;
};
// "auto" or a forcible algorithm's name, and "auto" or a protocol's name; ConfigError naming the
// valid ones (and the closest) otherwise. `where` prefixes the message.
TunerOverride nccl_override(const std::string& algorithm, const std::string& protocol, const std::string& where);
std::string override_name(const std::optional<NcclAlgo>& a);   // "auto" or the name
std::string override_name(const std::optional<NcclProto>& p);

struct NcclProtoCost {
  double base_us = 0, nvlink_step_us = 0, net_step_us = 0, bw_fraction = 1;
};

struct NcclRule {
  std::string op;  // collective name or "any"
  std::int64_t min_nodes = 1, max_nodes = 1LL << 40;
  double min_bytes = 0, max_bytes = 1e300;
  NcclAlgo algo = NcclAlgo::Ring;
  NcclProto proto = NcclProto::Simple;
};

struct NcclTuning {
  bool present = false;  // false: ring/Simple only, latencies from intra/inter_alpha_us
  std::string how, source;
  std::map<NcclAlgo, std::map<NcclProto, NcclProtoCost>> cost;  // ring and tree
  // Per protocol: the NVLink step latency of a communicator that spans more than one node, over the
  // single-node one (NCCL's tuning model multiplies LL's by 1.8). Optional: 1 for every protocol.
  std::map<NcclProto, double> multinode_nvlink_step_factor = {{NcclProto::LL, 1.0}, {NcclProto::LL128, 1.0}, {NcclProto::Simple, 1.0}};
  Figure nvls_algbw_gbps;  // NVLink SHARP all-reduce algorithm bandwidth (0: no NVLS)
  Figure nvls_min_ranks;
  std::vector<NcclRule> rules;
};

struct DeviceInfo {
  std::string name;
  std::int64_t sms = 0;
  double memory_bytes = 0;
  std::string how;  // how the profile as a whole was made: measured | imported | datasheet
  std::string date;
  std::string driver, cuda, nccl, cublas;
  std::string source;
};

struct Profile {
  std::string name;
  std::string file;
  DeviceInfo device;
  std::map<std::string, Figure> peak_tflops;  // dtype -> dense peak
  std::map<std::string, Figure> gemm_max_efficiency;  // dtype -> best-shape achievable fraction of peak
  // dtype -> the m, n, k that best-shape efficiency was measured at (its shape_mnk); the GEMM
  // kernel model solves its main-loop efficiency there (sim/cost/cost_model.h).
  std::map<std::string, std::array<std::int64_t, 3>> gemm_best_shape;
  Figure gemm_fixed_us;       // per GEMM kernel: launch, pipeline fill and drain
  Figure gemm_epilogue_gbps;  // rate of the output-tile writes that do not overlap the main loop
  Figure gemm_tile_m, gemm_tile_n;  // output tile of the large-GEMM kernels, for wave quantisation
  // Main-loop speed of a GEMM whose leading dimensions (k or n of C[m,n] = A[m,k] B[k,n], row
  // major) are not 16-byte multiples, relative to an aligned one: such operands cannot use the
  // 16-byte vector loads of the fast kernels, and cuBLAS falls back to narrower-load kernels.
  Figure gemm_unaligned_ratio;
  // The same for unfused attention's batched GEMMs (QK^T, PV and their gradients) over heads whose
  // width is not a 16-byte multiple: Q, K, V and the context are then views into the fused QKV and
  // context tensors whose rows and per-head batch strides are all off 16 bytes. Optional: absent
  // (has_attention_gemm_unaligned_ratio false), such GEMMs run at gemm_unaligned_ratio, which this
  // figure then shows (its value and provenance, with a note, no range of its own).
  Figure attention_gemm_unaligned_ratio;
  bool has_attention_gemm_unaligned_ratio = false;
  // A fused attention kernel. Its efficiency figures are the long-sequence asymptote (non-causal,
  // fraction of peak); shorter sequences run slower because each query block (forward) or key
  // block (backward) carries a fixed cost - loading Q or K/V, the softmax rescale and writing the
  // output tile - that a fixed number of key (query) positions would cost. With that equivalent
  // length a (seq_overhead, tokens), non-causal attention over keys of length s runs at
  // efficiency x s / (s + a); causal attention at efficiency x s / (s + c) (causal_overhead: the
  // fixed cost is spread over half as many tiles, the diagonal tiles are computed whole and
  // masked). The efficiencies are at head dimension kAttentionHeadDim (128); a smaller head dim d
  // does less matrix work per score element for the same softmax work, so its efficiency scales
  // by d / (d + h) over 128 / (128 + h), h the softmax cost in head-dim units (head_dim_overhead).
  // Larger head dims are priced at 128's: kernels switch to smaller tiles there (FlashAttention-2
  // runs slower at 256, FlashAttention-3 faster). CostModel::attention_s applies them.
  struct AttentionKernel {
    Figure fwd_efficiency, bwd_efficiency;
    Figure fwd_seq_overhead, bwd_seq_overhead;            // a, tokens
    Figure fwd_causal_overhead, bwd_causal_overhead;      // c, tokens
    Figure fwd_head_dim_overhead, bwd_head_dim_overhead;  // h, head-dim units
    // The head widths the kernel is built for, ascending (optional): a head dim between two runs
    // the next one up, doing that width's work (FlashAttention-2's HEADDIM_SWITCH: 32, 64, ...,
    // 256); empty, or a head dim above the last, runs at its own width.
    std::vector<std::int64_t> head_dims;
    std::string head_dims_source;
    // The width a head of head_dim runs at.
    double padded_head_dim(double head_dim) const;
  };
  // Each AttentionKernel figure: its JSON name (the default kernel's carry an "attention_" prefix),
  // the member, and the bounds the loader accepts.
  struct AttentionFigure {
    const char* name;
    Figure AttentionKernel::*member;
    double min, max;
  };
  static constexpr std::array<AttentionFigure, 8> kAttentionFigures = {{
      {"fwd_efficiency", &AttentionKernel::fwd_efficiency, 0.01, 1.0},
      {"bwd_efficiency", &AttentionKernel::bwd_efficiency, 0.01, 1.0},
      {"fwd_seq_overhead", &AttentionKernel::fwd_seq_overhead, 0, 1e6},
      {"bwd_seq_overhead", &AttentionKernel::bwd_seq_overhead, 0, 1e6},
      {"fwd_causal_overhead", &AttentionKernel::fwd_causal_overhead, 0, 1e6},
      {"bwd_causal_overhead", &AttentionKernel::bwd_causal_overhead, 0, 1e6},
      {"fwd_head_dim_overhead", &AttentionKernel::fwd_head_dim_overhead, 0, 1e4},
      {"bwd_head_dim_overhead", &AttentionKernel::bwd_head_dim_overhead, 0, 1e4},
  }};
  // The default kernel (compute.attention_fwd_efficiency, ..._seq_overhead, ..._causal_overhead).
  AttentionKernel attention;
  // False when the profile lists none of its figures: no fused attention kernel runs on the GPU
  // (FlashAttention needs Ampere or later; V100 runs attention unfused).
  bool has_fused_attention = true;
  // Other fused-attention implementations (compute.attention_kernels, e.g. "triton": FlashAttention
  // in Triton), each with its own figures; `attention` is kAttentionDefault.
  std::map<std::string, AttentionKernel> attention_kernels;
  Figure hbm_gbps, hbm_efficiency;
  // Achieved bandwidth of each kind of memory-bound kernel over the streaming rate hbm_efficiency
  // stands for (copies, adds): norms (forward and backward passes), activations (GELU, SwiGLU),
  // column reductions (bias gradients), dtype casts (memory.kernel_class_ratio.<kind>). Optional:
  // 1 when a profile omits them (every kind at the streaming rate).
  struct KernelClassRatio {
    Figure norm, activation, reduction, cast;
  };
  KernelClassRatio kernel_class_ratio;
  // Each of them: its JSON name under memory.kernel_class_ratio, and the member.
  struct KernelClassFigure {
    const char* name;
    Figure KernelClassRatio::*member;
  };
  static constexpr std::array<KernelClassFigure, 4> kKernelClassFigures = {{{"norm", &KernelClassRatio::norm},
                                                                             {"activation", &KernelClassRatio::activation},
                                                                             {"reduction", &KernelClassRatio::reduction},
                                                                             {"cast", &KernelClassRatio::cast}}};
  Figure kernel_overhead_us;     // per-kernel launch and tail
  Figure runtime_reserved_gib;   // CUDA context, allocator and library workspaces
  Figure nvlink_gbps;            // per direction, per GPU (datasheet); scenario may override
  Figure intra_bus_efficiency;   // achievable ring bus bandwidth / link bandwidth
  Figure intra_alpha_us;         // per ring step latency, NVLink
  Figure inter_bus_efficiency;   // achievable bus bandwidth / NIC line rate
  Figure inter_alpha_us;         // per step latency across nodes
  Figure pcie_gbps;              // host <-> device, per direction
  // Host side, for CPU offload (optional): the node's DRAM bandwidth and the fraction of it a
  // CPU optimizer step reaches. has_host is false when the profile lists neither.
  bool has_host = false;
  Figure host_memory_gbps, host_optimizer_efficiency;
  Figure node_nics;              // reference node (DGX/HGX): NICs per node
  Figure node_nic_gbps;          // reference node: GB/s per NIC per direction
  Figure overlap_compute_slowdown;
  // Transformer Engine's userbuffers overlap of the tensor-parallel all-gather / reduce-scatter
  // with the GEMMs (Megatron --tp-comm-overlap). Optional: without it the TP GEMMs pay
  // overlap_compute_slowdown and hide all of their communication.
  struct TpOverlap {
    Figure comm_sms;      // SMs its communication kernels hold while a GEMM runs beside them
    Figure exposed_fwd;   // share of a block's forward TP communication left on the critical path
    Figure exposed_bwd;   // the same in backward
  };
  bool has_tp_overlap = false;
  TpOverlap tp_overlap;
  // Sustained over burst tensor-core throughput: a training step holds the board at its power
  // limit, so the SM clock settles below the boost clock the GEMM and attention benchmarks ran at
  // (MSMF / MAMF of mamf-finder.py). Scales every compute-bound kernel (GEMMs, fused attention);
  // memory-bound kernels keep their HBM rate. Optional: 1 (no derating) when a profile omits it.
  Figure sustained_clock_ratio;
  // Spread of speed between GPUs of this model in one cluster: the relative standard deviation of
  // one GPU's time for the same work (power management and manufacturing variability). A
  // synchronous step waits for its slowest GPU, so a job of N GPUs runs its kernels at the
  // expected slowest of N draws (slowest_gpu_pace). Optional: 0 (every GPU alike) when omitted.
  Figure gpu_speed_spread;
  std::vector<GemmPoint> gemm_points;
  std::vector<CollectivePoint> collective_points;
  // The rates an MoE dispatcher's own kernels (DeepEP, HybridEP) reach, as fractions of a line rate,
  // from their published benchmarks: each table holds points by a count, each point a figure.
  //  - moe_dispatch_rdma.<dispatcher>, by the expert-parallel group's node count: the tokens that
  //    cross nodes, of the GPU's NIC line rate. The benchmarks count a token's copy to its own node
  //    as network traffic too, so a point is the published rate times (nodes - 1) / nodes.
  //  - moe_dispatch_nvlink.<dispatcher>, by the group's ranks inside one NVLink domain: the tokens
  //    sent to the other GPUs of the domain, of nvlink_gbps. The benchmarks count the copies a rank
  //    receives, its own tokens included, so a point is the published rate times (ranks - 1) / ranks.
  // Optional: a dispatcher without points moves its tokens at NCCL's rate (inter_bus_efficiency,
  // intra_bus_efficiency).
  struct DispatchPoint {
    std::int64_t at = 2;  // nodes (rdma) or ranks (nvlink)
    Figure efficiency;
  };
  using DispatchTable = std::map<MoeDispatcher, std::vector<DispatchPoint>>;
  DispatchTable moe_dispatch_rdma, moe_dispatch_nvlink;
  // The efficiency at `at`: linear in log2(at) between the points, the nearest point's beyond them;
  // 0 when the table has no points for the dispatcher.
  static double dispatch_efficiency(const DispatchTable& t, MoeDispatcher d, std::int64_t at);
  // The indices of the one or two points that efficiency reads at `at` (equal when it reads one);
  // `pts` not empty. `run --interval` samples those, the run notes say how they were obtained.
  static std::pair<size_t, size_t> dispatch_bracket(const std::vector<DispatchPoint>& pts, std::int64_t at);
  double moe_dispatch_rdma_efficiency(MoeDispatcher d, std::int64_t nodes) const { return dispatch_efficiency(moe_dispatch_rdma, d, nodes); }
  double moe_dispatch_nvlink_efficiency(MoeDispatcher d, std::int64_t ranks) const {
    return dispatch_efficiency(moe_dispatch_nvlink, d, ranks);
  }
  // A point's name in `profile show`, `profile diff` and `run --interval`: moe_dispatch_rdma.hybridep.2_nodes,
  // moe_dispatch_nvlink.hybridep.8_ranks.
  static std::string dispatch_rdma_figure_name(MoeDispatcher d, std::int64_t nodes);
  static std::string dispatch_nvlink_figure_name(MoeDispatcher d, std::int64_t ranks);
  NcclTuning nccl;
  // Multipliers on the priced time of each class of work. Not a profile figure (never read from
  // JSON): 1 in every prediction; `parasim validate` sets one at a time to measure how much of a
  // run's step each class carries (sim/uncertainty.h time_shares).
  struct TimeScale {
    double gemm = 1.0;       // GEMMs (the unfused attention's batched GEMMs included)
    double attention = 1.0;  // fused attention kernels
    double memory = 1.0;     // memory-bound kernels (elementwise, norms, optimizer, copies)
    double network = 1.0;    // collectives and point-to-point transfers
    // Each class: its name in reports and JSON, and its member.
    struct Class {
      const char* name;
      double TimeScale::*member;
    };
    static constexpr std::array<Class, 4> kClasses = {{
        {"gemm", &TimeScale::gemm},
        {"attention", &TimeScale::attention},
        {"memory", &TimeScale::memory},
        {"network", &TimeScale::network},
    }};
  } time_scale;

  double peak_flops(const std::string& dtype) const;  // FLOP/s; throws ProfileError if absent
  double gemm_efficiency(const std::string& dtype) const;  // throws ProfileError if absent
  // (forward, backward) efficiency of a fused attention kernel; throws ProfileError if absent.
  std::pair<const Figure*, const Figure*> attention_efficiency(const std::string& kernel) const;
  std::pair<Figure*, Figure*> attention_efficiency(const std::string& kernel);
  // Every figure of a fused attention kernel; throws ProfileError if absent.
  const AttentionKernel& attention_kernel(const std::string& kernel) const;
};

Profile parse_profile(const Json& j, const std::string& file);
// The JSON file behind a profile name (calibrate/profiles/<name>.json under data_dir) or a path
// (returned as given); an unknown name is a ConfigError listing the profiles, or naming the
// directory that does not exist. `where` names the option or JSON pointer in messages.
std::string profile_path(const std::string& data_dir, const std::string& name_or_path, const std::string& where);
// Resolves a profile name (calibrate/profiles/<name>.json) or a path.
Profile load_profile(const std::string& data_dir, const std::string& name_or_path, const std::string& where);
std::vector<std::string> profile_names(const std::string& data_dir);

}  // namespace parasim
