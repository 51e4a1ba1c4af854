// Turns one action (forward / backward of a model chunk for one microbatch on one rank) into ops:
// per layer the attention and MLP blocks, their tensor-parallel communication on the compute
// stream (critical path), context-parallel K/V exchange, recompute, and activation alloc/free.
// Shared by every schedule so that a new one only decides the order of actions.
#pragma once
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <string>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/memory/memory_model.h"
#include "sim/parallel/placement.h"
#include "sim/parallel/op_labels.h"
#include "sim/parallel/schedule.h"

namespace parasim {

// Seconds of each block for one microbatch on one rank, from the cost model.
struct BlockTimes {
  double attn_f = 0, mlp_f = 0, attn_b = 0, mlp_b = 0;  // backward = input + weight gradients
  double attn_w = 0, mlp_w = 0;                         // weight-gradient part of the backward
  double embed_f = 0, embed_b = 0, head_f = 0, head_b = 0, head_w = 0;
  double metrics = 0;  // last stage, after each microbatch's backward: the training metrics
  double mtp_f = 0, mtp_b = 0, mtp_f_flops = 0;  // one multi-token-prediction module's own kernels
  // Selective recompute: the recomputed modules' forward kernels, replayed before the layer's
  // backward (the attention core by default), and their FLOPs in the model convention (a causal
  // fused kernel's full score matrix) and executed.
  double attn_recompute_selective = 0, selective_recompute_flops = 0, selective_recompute_hw = 0;
  double op_sac_recompute = 0, op_sac_flops = 0, op_sac_hw = 0;  // per layer, replayed under torchtitan's op-level SAC
  double attn_f_flops = 0, mlp_f_flops = 0, head_f_flops = 0;  // model FLOPs, forward (MFU's convention)
  // Executed FLOPs, forward (HFU): causal or windowed attention computes part of the score matrix
  // that the model-FLOPs convention counts in full.
  double attn_f_hw = 0, mlp_f_hw = 0, head_f_hw = 0, mtp_f_hw = 0;
  double tp_comm_f = 0, tp_comm_b = 0;  // per block, on the critical path (0 when overlapped)
  bool mlp_tp_comm = true;              // false: an MoE block on sequence-parallel tokens (etp = 1) has none
  bool attn_tp_comm = true;             // false: a hybrid model's MLP layer has no attention block
  bool mamba = false;                   // the attention blocks hold a Mamba-2 mixer (a hybrid model's Mamba layer)
  double ep_comm_f = 0, ep_comm_b = 0;  // per MoE layer: the dispatch and combine all-to-alls, on the critical path
  // Collectives overlapped in closed form (HiddenComm), their whole time: per block, under its GEMMs
  // (tp_comm_overlap); per MoE layer, the paired passes' all-to-alls (ep_comm_overlap).
  double tp_comm_hidden_f = 0, tp_comm_hidden_b = 0;
  double ep_comm_hidden_f = 0, ep_comm_hidden_b = 0;
  // What runs overlapped under each block's op (Op::hidden), forward or backward.
  HiddenComm attn_hidden(bool backward) const;
  HiddenComm mlp_hidden(bool backward) const;
  double cp_comm_f = 0, cp_comm_b = 0;  // per layer, overlapped with attention
  // cp_impl "allgather", per layer on the critical path: the K/V all-gather before attention (and
  // before its replay under full recompute) and the K/V-gradient reduce-scatter after its backward.
  double cp_gather_f = 0, cp_scatter_b = 0;

  // A layer's forward on the compute stream, the ops forward() emits: both blocks, their
  // critical-path tensor-parallel communication, the expert all-to-all and context parallel's
  // K/V all-gather; full recompute replays it as one op.
  double forward_s() const { return attn_f + mlp_f + tp_blocks() * tp_comm_f + ep_comm_f + cp_gather_f; }
  // The communication backward() puts on the compute stream beside the blocks' attn_b + mlp_b.
  double backward_comm_s() const { return tp_blocks() * tp_comm_b + ep_comm_b + cp_scatter_b; }
  // The blocks with tensor-parallel communication of their own (attention, MLP).
  int tp_blocks() const { return (attn_tp_comm ? 1 : 0) + (mlp_tp_comm ? 1 : 0); }
};
// The block times of one kind of layer (g: one of in.layers.kinds).
BlockTimes block_times(const LoweringInput& in, const LayerGraph& g);

// Real-rank groups of each parallel dimension under the scenario's rank order (default tp, cp,
// dp, pp, innermost first), as CollectiveSpecs for the network model: a dimension's stride is the
// product of the sizes inside it, and how its groups span nodes is read off the placement of every
// group (placement.h).
struct Layout {
  std::int64_t tp = 1, cp = 1, dp = 1, pp = 1, gpus_per_node = 8;
  std::int64_t s_tp = 1, s_cp = 1, s_dp = 1, s_pp = 1;  // strides
  std::int64_t world() const { return tp * cp * dp * pp; }
  CollectiveSpec group(CollOp op, std::int64_t stride, std::int64_t size, double bytes) const;
  // A group over several dimensions at once, (stride, size) each.
  CollectiveSpec group(CollOp op, const std::vector<std::pair<std::int64_t, std::int64_t>>& dims, double bytes) const;
  CollectiveSpec tp_group(CollOp op, double bytes) const { return group(op, s_tp, tp, bytes); }
  CollectiveSpec cp_group(CollOp op, double bytes) const { return group(op, s_cp, cp, bytes); }
  CollectiveSpec dp_group(CollOp op, double bytes) const { return group(op, s_dp, dp, bytes); }
  // Mixture of experts (default rank order): an expert-parallel group is ep ranks etp apart within
  // a stage's tp*cp*dp ranks; the expert-data-parallel group is the rest, ep*etp apart.
  std::int64_t ep = 1, etp = 1;
  CollectiveSpec ep_group(CollOp op, double bytes) const { return group(op, etp, ep, bytes); }
  CollectiveSpec edp_group(CollOp op, double bytes) const { return group(op, ep * etp, tp * cp * dp / (ep * etp), bytes); }
  // Megatron reduces gradients over the data- and context-parallel ranks together.
  CollectiveSpec dpcp_group(CollOp op, double bytes) const;
  // The innermost nd ranks of the dp x cp group (an HSDP shard group) and the replicas across them.
  CollectiveSpec dpcp_inner(CollOp op, std::int64_t nd, double bytes) const { return group(op, dpcp_stride(), nd, bytes); }
  CollectiveSpec dpcp_outer(CollOp op, std::int64_t nd, double bytes) const {
    return group(op, dpcp_stride() * nd, dp * cp / nd, bytes);
  }
  std::int64_t dpcp_stride() const { return cp > 1 ? std::min(s_cp, s_dp) : s_dp; }
  // The send from pipeline stage `from` to stage `to` (every replica's at once).
  CollectiveSpec pp_p2p(double bytes, std::int64_t from, std::int64_t to) const;
  // One hop of a ring over a dimension's group (context parallel's K/V exchange): crosses the
  // NICs when any member's hop does.
  CollectiveSpec ring_hop(std::int64_t stride, std::int64_t size, double bytes) const;

 private:
  CollectiveSpec spec(CollOp op, std::int64_t ranks, const GroupPlacement& pl, double bytes) const;
  const GroupPlacement& placed(const std::vector<std::pair<std::int64_t, std::int64_t>>& dims) const;
  mutable std::map<std::vector<std::pair<std::int64_t, std::int64_t>>, GroupPlacement> placed_;  // by dims
};
Layout make_layout(const Scenario& s);

// An op's display label. Only a string literal converts to it, so its address is fixed for the
// program's life and is alone a safe key for the emitter's label table (no content compared per op).
// A RoleLabel (op_labels.h) also gives the op its role.
class Label {
 public:
  template <std::size_t N>
  Label(const char (&literal)[N]) : s_(literal) {}  // NOLINT(google-explicit-constructor): literals convert
  constexpr Label(const RoleLabel& l) : s_(l.text), role_(l.role) {}  // NOLINT(google-explicit-constructor)
  const char* c_str() const { return s_; }
  OpRole role() const { return role_; }

 private:
  const char* s_;
  OpRole role_ = OpRole::None;
};

class Emitter {
 public:
  Emitter(const LoweringInput& in, Program& prog);

  struct Range {
    OpId first = -1;
    OpId last = -1;
  };
  // Called after each layer's forward (kind F) or backward/weight-gradient op (kinds B, W) with
  // the op and the layer's index within the chunk; lets the schedule hang communication on it.
  using LayerHook = std::function<void(Action::Kind kind, std::int64_t layer, OpId op)>;
  // Called before each layer's ops with the layer index; returns extra deps for the layer's first op.
  using PreHook = std::function<std::vector<OpId>(Action::Kind kind, std::int64_t layer)>;

  Range forward(std::int32_t rank, std::int32_t mb, std::int32_t chunk, std::int64_t layers, bool first, bool last,
                Deps deps, const PreHook& pre = {}, const LayerHook& post = {});
  // split: B computes input gradients only; weight_grad() emits the W part.
  Range backward(std::int32_t rank, std::int32_t mb, std::int32_t chunk, std::int64_t layers, bool first, bool last,
                 bool split, Deps deps, const PreHook& pre = {}, const LayerHook& post = {});
  Range weight_grad(std::int32_t rank, std::int32_t mb, std::int32_t chunk, std::int64_t layers, bool last,
                    Deps deps, const LayerHook& post = {});

  OpId op(std::int32_t rank, Stream s, Phase ph, Label label, double seconds, Deps deps,
          std::int32_t mb = -1, std::int32_t chunk = -1);

  // An op whose transfer crosses nodes shares the rank's NICs with other such ops (processor
  // sharing in the engine): DP gradient sync and PP activations then slow each other down.
  OpId comm_op(std::int32_t rank, Stream s, Phase ph, Label label, const CollectiveSpec& spec,
               Deps deps, std::int32_t mb = -1, std::int32_t chunk = -1);
  // A transfer's time from the network model and whether it crosses nodes (then it shares the
  // rank's NICs), for a transfer that repeats: priced once, emitted many times (a stage's
  // pipeline sends, one per microbatch and chunk).
  struct PricedComm {
    double seconds = 0;
    bool shared_link = false;
  };
  PricedComm price(const CollectiveSpec& spec) const;
  OpId comm_op(std::int32_t rank, Stream s, Phase ph, Label label, const PricedComm& priced, Deps deps,
               std::int32_t mb = -1, std::int32_t chunk = -1);

  // Compute-stream picoseconds that one microbatch's forward and backward of a stage's chunk emit
  // at least, less half a picosecond per op for rounding: each layer's attention and MLP blocks,
  // the communication they put on the compute stream (BlockTimes::forward_s, backward_comm_s),
  // the full recompute replays (in the backward), and the embedding and output layer on the first
  // and last virtual stages (the ops forward(), backward() and weight_grad() emit for every
  // microbatch); the schedule's and the gradient sync's ops are left out. A planner's bound
  // without lowering (step_floor_s).
  struct ChunkFloor {
    double fwd_ps = 0, bwd_ps = 0;
    double total() const { return fwd_ps + bwd_ps; }
  };
  ChunkFloor chunk_floor(std::int32_t stage, std::int32_t chunk, std::int64_t layers) const;

  // One layer's ops on the compute stream, in order: its blocks and the communication they put
  // there (layer_forward, layer_backward, which hand each to a sink's add(), and call its
  // between() where context parallel's ring exchange comes in: an op on another stream, or a
  // dependency), each with its memory change. Emitted as ops as they come, or, with
  // LoweringInput::fuse, collected (LayerOps) into one fused op where memory changes only at its ends.
  struct SegOp {
    Phase phase = Phase::Other;
    Label label = "";
    double seconds = 0, flops = 0, hw = 0;
    MemDelta start, end;
    HiddenComm hidden{};  // collectives overlapped under it
  };
  // A layer's ops collected (the first layer of a fused op's key): up to eight.
  struct LayerOps {
    std::array<SegOp, 8> ops;
    int n = 0;
    void between() {}
    void add(const SegOp& o) { ops.at(static_cast<size_t>(n++)) = o; }
    const SegOp& operator[](int i) const { return ops[static_cast<size_t>(i)]; }
    bool fusible() const;
  };

  // Whether layer l of a chunk replays its forward in backward (full recompute).
  bool recomputes(std::int64_t l) const { return recomputed(l); }
  const Layout& layout() const { return layout_; }

 private:
  const LoweringInput& in_;
  Program& p_;
  // Program::labels index of each label seen, by the literal's address (see Label): open
  // addressing over a power-of-two table (every op of a lowering looks its label up; a std::
  // unordered_map's node walk was 12 % of an evaluation).
  std::vector<std::pair<const char*, std::int32_t>> label_slots_ = std::vector<std::pair<const char*, std::int32_t>>(64);
  size_t labels_used_ = 0;
  std::int32_t label_id(Label label);
  // Per kind of layer (in.layers.kinds): block times, activations, and the activations the same
  // layer keeps without recompute (partial full recompute).
  std::vector<BlockTimes> times_;
  std::vector<ActivationBytes> acts_, acts_kept_;
  // The embedding's and output layer's, the same in every kind.
  const BlockTimes& ends() const { return times_.front(); }
  const ActivationBytes& ends_act() const { return acts_.front(); }
  // Marks the ops emitted since `from` as ops of a layer of kind k (Op::layer_kind), where the model
  // has more than one kind of layer.
  void tag_kind(size_t from, std::int32_t k);
  // Kind index of layer l of a rank's chunk: the model's layer first_layer_in_chunk + l, from
  // chunk_first_ (per virtual stage chunk * pp + stage; filled only when the layers differ).
  std::int32_t kind(std::int32_t rank, std::int32_t chunk, std::int64_t l) const {
    return kind_at(p_.ranks[static_cast<size_t>(rank)].stage, chunk, l);
  }
  std::int32_t kind_at(std::int32_t stage, std::int32_t chunk, std::int64_t l) const;
  std::vector<std::int64_t> chunk_first_;
  template <class Sink>
  void layer_forward(const BlockTimes& t, Bytes stored, Sink& out) const;
  template <class Sink>
  void layer_backward(const BlockTimes& t, std::int64_t l, std::int32_t k, bool split, Sink& out) const;
  // Fused ops: a layer's ops depend only on its kind, its pass, whether it replays its forward and
  // whether the weight gradients are split off (template_key; kNoTemplate: never fused). The first
  // layer of a key emits its segments once (Program::segments) and every later one refers to them,
  // its ops not built again (tests/core/fused_ops_test.cpp checks every shipped step against its
  // ops built one by one).
  static constexpr size_t kNoTemplate = static_cast<size_t>(-1);
  size_t template_key(std::int32_t k, Action::Kind kind, std::int64_t l, bool split) const;
  struct Template {
    bool made = false;  // count 0 once made: the layer's ops do not fuse (memory changing inside)
    std::int32_t first = 0, count = 0, label = 0;
    Phase phase = Phase::Other;
    Time duration = 0;
    MemDelta at_start, at_end;
  };
  std::vector<Template> templates_;
  const Template* make_template(size_t key, const LayerOps& ops);
  OpId fused_op(std::int32_t rank, std::int32_t mb, std::int32_t chunk, const Template& tpl, Deps& deps);
  // One layer's ops (`build` hands them to a sink): its key's fused op, or emitted one by one.
  template <class Build, class Between>
  void emit_layer(std::int32_t rank, std::int32_t mb, std::int32_t chunk, size_t key, Deps& deps, Range& r, Build&& build,
                  Between&& between);
  // Multi-token prediction on the last virtual stage (TrainingSpec::mtp_layers): each module's
  // input kernels, a transformer layer of the last layer's kind, and its prediction through the
  // output layer; in backward the reverse. `add` emits one compute op (label, seconds, model
  // FLOPs, memory at its start and end).
  // (phase, label, seconds, model FLOPs, executed FLOPs, memory at start, memory at end)
  using AddOp = std::function<OpId(Phase, Label, double, double, double, MemDelta, MemDelta, HiddenComm)>;
  void mtp_forward(const AddOp& add) const;
  void mtp_backward(const AddOp& add) const;
  Layout layout_;
  bool full_recompute_;
  bool op_sac_;  // torchtitan's op-level selective AC: a partial replay in every layer
  std::int64_t recompute_layers_;  // layers per chunk recomputed under full recompute; -1: all
  // CPU activation offloading (ParallelSpec::activation_offload_layers): the first offload_layers_
  // layers' saved activations, each released by the compute stream at the end of layer
  // (g + 1) x offload_window_ - 1 and reloaded from there in backward, at host_bps_.
  std::int64_t offload_layers_;
  std::int64_t offload_window_;
  double host_bps_;
  // The offloaded layer whose window layer l closes (its forward end releases it, its backward
  // start reloads it): g with l = (g + 1) x offload_window_ - 1, or -1.
  std::int64_t offload_window_closed_by(std::int64_t l) const {
    const std::int64_t g = (l + 1) / offload_window_ - 1;
    return offload_layers_ > 0 && (l + 1) % offload_window_ == 0 && g < offload_layers_ ? g : -1;
  }

  // Per layer of a chunk (index l, of kind k): recomputed in backward, activation bytes kept from
  // forward to backward, and the extra working set alive while it is recomputed.
  bool recomputed(std::int64_t l) const { return full_recompute_ && (recompute_layers_ < 0 || l < recompute_layers_); }
  double stored(std::int64_t l, std::int32_t k) const {
    const ActivationBytes& a = acts_[static_cast<size_t>(k)];
    return recomputed(l) ? a.layer_stored : (full_recompute_ ? acts_kept_[static_cast<size_t>(k)].layer_stored : a.layer_stored);
  }
  double extra_working(std::int64_t l, std::int32_t k) const {
    const ActivationBytes& a = acts_[static_cast<size_t>(k)];
    return recomputed(l) || op_sac_ ? a.layer_working - a.layer_stored : 0;
  }
};

}  // namespace parasim
