// The lowered form of a training step: per simulated rank, streams of ops with dependencies,
// collectives as rendezvous of their members, memory alloc/free points. Built by sim/parallel,
// executed by the Engine. Plain data; no behaviour beyond construction helpers.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/deps.h"
#include "sim/core/units.h"

namespace parasim {

// CUDA-stream-like FIFO queues per rank. Ops on one stream run in program order. Copy: host-device
// transfers on the DMA (copy) engines, which run beside compute and NCCL (CPU activation
// offloading); metrics count them neither as compute nor as communication. A kernel a
// framework launches on a side stream (FSDP's gradient cast or copy-in) takes the SMs like the
// compute stream's own and is placed on Compute.
enum class Stream : std::uint8_t { Compute = 0, Comm = 1, P2P = 2, Copy = 3 };
inline constexpr int kStreams = 4;
const char* stream_name(Stream s);

// What an op is for: used by metrics (where the time went) and the trace.
enum class Phase : std::uint8_t {
  Forward, Backward, WeightGrad, Recompute, Optimizer,
  DpComm, TpComm, PpComm, CpComm, FsdpGather, EpComm,
  Offload,  // host <-> device copies of activations (CPU activation offloading), on the copy stream
  Other,
};
inline constexpr int kPhases = 13;
const char* phase_name(Phase p);
inline bool phase_is_comm(Phase p) {
  return p == Phase::DpComm || p == Phase::TpComm || p == Phase::PpComm || p == Phase::CpComm || p == Phase::FsdpGather ||
         p == Phase::EpComm;
}

enum class MemCat : std::uint8_t { Weights, Grads, Optimizer, Activations, GatheredParams, CommBuffers, Workspace };
inline constexpr int kMemCats = 7;
const char* memcat_name(MemCat c);

struct MemDelta {
  MemCat cat = MemCat::Workspace;
  Bytes bytes = 0;  // > 0 allocates, < 0 frees, 0 nothing
};

// Communication a lowering overlaps with an op's kernels in closed form rather than as ops of its
// own (tp_comm_overlap's chunked TP collectives, ep_comm_overlap's expert all-to-alls under the
// paired microbatch): their whole time, in its phase, so that the breakdown counts the collectives
// over all streams as it does for ops on the other streams. The op's duration already holds what
// they cost the compute stream (the slowdown, an exposed chunk, a wait for all-to-alls longer than
// the compute), which thus counts both there and here, as a collective on another stream counts in
// its phase and in the compute stream's wait for it.
struct HiddenComm {
  Time tp = 0;  // Phase::TpComm
  Time ep = 0;  // Phase::EpComm
};

struct Op {
  std::int32_t rank = 0;  // index into Program::ranks
  Stream stream = Stream::Compute;
  Phase phase = Phase::Other;
  std::int32_t microbatch = -1;
  std::int32_t chunk = -1;       // model chunk (virtual pipeline stage) or -1
  std::int32_t collective = -1;  // rendezvous index into Program::collectives, or -1
  // Shared link resource of this op's rank (-1 none; 0 the node's NICs). Ops active at once on
  // the same rank's resource share it equally (processor sharing): k of them each progress at
  // 1/k of their standalone speed, so their durations stretch while they overlap.
  std::int8_t shared_link = -1;
  // A fused op (LoweringInput::fuse): seg_count > 0 segments, Program::segments[seg_first ..), run
  // back to back on the compute stream as the ops they stand for would run.
  std::uint8_t seg_count = 0;
  // The kind of layer (ModelGraph::kinds) a layer's op belongs to, in a model with more than one
  // kind; -1 for every other op (what the host launch model reads: sim/host_launch.h).
  std::int8_t layer_kind = -1;
  std::int32_t label = 0;        // index into Program::labels
  std::int32_t seg_first = -1;
  Time duration = 0;
  double model_flops = 0;        // FLOPs in the model-FLOPs convention (MFU; on Recompute ops: the replay's)
  double hw_flops = 0;           // FLOPs actually executed
  HiddenComm hidden;             // collectives overlapped under this op's kernels, priced into no stream
  MemDelta at_start;             // applied when the op starts
  MemDelta at_end;               // applied when the op ends
  Deps deps;                     // ops (any rank) that must end before this one starts
};

// A simulated rank. With symmetry folding one simulated rank stands for `count` real ranks that
// do identical work (e.g. all TP and DP peers of a pipeline stage).
struct SimRank {
  std::int32_t real_rank = 0;
  std::int64_t count = 1;
  std::int32_t stage = 0;
  std::string role;                    // e.g. "stage 0", "GPU 0 (gathers)"
  std::array<Bytes, kMemCats> static_mem{};  // allocated at t = 0 and held all step
};

// The host thread that launches a rank's kernels (sim/host_launch.h): the op's first kernel is
// issued `first` after the end of op `gate` (the rank's last host synchronisation before it; -1:
// the step's start) and its last kernel `last` after it. The op starts no earlier than its first
// kernel's issue and ends no earlier than its last's.
// An op whose host waits for the GPU between its own kernels (a sync inside it: sync_at >= 0)
// reaches that sync `pre` after its base (the gate's end, or release) and is released when its GPU
// work has run `sync_at` into the op; it issues the next kernel `first_after` the release, which the
// rest of the op's GPU work waits for, and its last kernel `after` the release. The ops after it,
// up to the next sync, count from that release (at_release: their gate is that op), not from its end.
struct HostIssue {
  OpId gate = -1;
  Time first = 0;
  Time last = 0;
  Time sync_at = -1;
  Time pre = 0;
  Time first_after = 0;
  Time after = 0;
  bool at_release = false;
};

// What an op is, for code that must find ops of a kind (the host launch model, tests): set by the
// lowering with the op's display label (sim/parallel/op_labels.h), so renaming a label's text
// changes nothing that depends on it. None: only the label says.
enum class OpRole : std::uint8_t {
  None,
  EmbeddingFwd, EmbeddingBwd, AttnFwd, AttnBwd, MlpFwd, MlpBwd, HeadFwd, HeadBwd, RecomputeFwd, RecomputeSelective,
  MtpFwd, MtpBwd, MtpAttnFwd, MtpAttnBwd, MtpMlpFwd, MtpMlpBwd, MtpHeadFwd, MtpHeadBwd,
  TpCommFwd, TpCommBwd, EpAllToAllFwd, TrainMetrics,
  GradAllReduce, GradReduceScatter, GradAccumulate,
  ParamAllGatherFwd, ParamAllGatherBwd, ParamAllGatherOneTensor, ReleaseGatheredParams, FlatGradConcat, GradCastPreDivide,
  AllGatherCopyOut, ReduceScatterCopyIn, AllGatherCopyBackPerRank, ReduceScatterCopyInPerRank, GradReduceScatterOneTensor,
  CpKvAllGather, CpDkvReduceScatter, CpKvRingFwd, CpKvRingBwd, ParamShardH2D, GradShardD2H, OptimizerStepCpu,
  ExpertGradAllReduce, ExpertGradReduceScatter, ExpertParamAllGatherFwd, ExpertParamAllGatherBwd,
};

// One op of a fused op: ops of a layer that only follow one another on the compute stream (its
// blocks and the communication they put there), with nothing else depending on them or they on
// anything, and memory changing only at the first's start and the last's end. The engine times each
// as the op it stands for (its own rounding under the overlap slowdown); the metrics read each with
// its phase and FLOPs. A lowering emits a layer's segments once per kind of layer and refers to
// them from every microbatch's fused op.
struct Segment {
  Time duration = 0;
  double model_flops = 0;
  double hw_flops = 0;
  std::int32_t label = 0;
  Phase phase = Phase::Other;
  HiddenComm hidden;
};

struct Program {
  std::vector<SimRank> ranks;
  std::vector<Op> ops;
  std::vector<std::vector<OpId>> collectives;  // members of each rendezvous
  std::vector<std::string> labels;
  std::vector<OpRole> label_roles;  // one per label
  std::vector<HostIssue> host;  // one per op when the host launch path is modelled, else empty
  std::vector<Segment> segments;  // of the fused ops (Op::seg_first), shared by the fused ops of one kind of layer
  std::int64_t fused_segments = 0;  // the fused ops' segments, counted once per fused op
  std::int64_t fused_ops = 0;

  // The ops the program stands for: a fused op counts its segments.
  std::int64_t op_count() const { return static_cast<std::int64_t>(ops.size()) - fused_ops + fused_segments; }

  OpId add(Op op) {
    ops.push_back(std::move(op));
    return static_cast<OpId>(ops.size() - 1);
  }
  std::int32_t label(const std::string& s, OpRole role = OpRole::None);
  OpRole role(const Op& o) const { return label_roles[static_cast<size_t>(o.label)]; }
};

}  // namespace parasim
