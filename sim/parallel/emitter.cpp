#include "sim/parallel/emitter.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "sim/cost/kernels.h"
#include "sim/parallel/comm_overlap.h"
#include "sim/parallel/moe_dispatch.h"

namespace parasim {

namespace {

bool is_wgrad(const Kernel& k) { return k.grad == GemmGrad::Weight; }

// Sum of kernel times; `w` receives the weight-gradient part, `gemm` the GEMM part.
double block_s(const CostModel& c, const Block& b, double* w = nullptr, double* gemm = nullptr) {
  double total = 0;
  for (const auto& k : b.kernels) {
    const double s = kernel_seconds(c, k);
    total += s;
    if (w && is_wgrad(k)) *w += s;
    if (gemm && k.kind == KernelKind::Gemm) *gemm += s;
  }
  return total;
}

// The share of a rank's layer passes whose expert-parallel all-to-alls Megatron-Core's combined
// 1F1B hides (parallel.ep_comm_overlap): it overlaps one microbatch's forward with another's
// backward, so the warm-up forwards run alone, and as many backwards at the end. Warm-up passes on
// the first pipeline stage, which runs the most: (pp - 1) x 2 + (vpp - 1) x pp, plus the one extra
// forward the overlap schedules (megatron/core/pipeline_parallel/schedules.py,
// num_warmup_microbatches; with pp = 1, combined_1f1b_schedule_for_no_pipelining's first forward).
// One microbatch has nothing to pair with.
double ep_overlap_paired_share(const Scenario& s) {
  const std::int64_t pp = s.parallel.pp, vpp = s.parallel.vpp;
  const double passes = static_cast<double>(s.step_microbatches() * vpp);
  const double warmup = static_cast<double>((pp - 1) * 2 + (vpp - 1) * pp + 1);
  return std::clamp((passes - warmup) / passes, 0.0, 1.0);
}

}  // namespace

const GroupPlacement& Layout::placed(const std::vector<std::pair<std::int64_t, std::int64_t>>& dims) const {
  auto it = placed_.find(dims);
  if (it == placed_.end()) it = placed_.emplace(dims, place_groups(world(), gpus_per_node, dims)).first;
  return it->second;
}

// A group of `ranks` whose kind is placed as `pl`: within one node, every GPU of the node in some
// group of this kind; across nodes, its ranks spread over the most nodes any such group spans, and
// the node-spanning groups that meet on one node share its NICs.
CollectiveSpec Layout::spec(CollOp op, std::int64_t ranks, const GroupPlacement& pl, double bytes) const {
  CollectiveSpec c;
  c.op = op;
  c.ranks = ranks;
  c.bytes = bytes;
  c.ranks_per_node = std::max<std::int64_t>(1, (ranks + pl.max_nodes - 1) / pl.max_nodes);
  c.groups_per_node = pl.max_nodes > 1 ? std::max<std::int64_t>(1, pl.crossing_per_node)
                                       : std::max<std::int64_t>(1, gpus_per_node / c.ranks_per_node);
  return c;
}

CollectiveSpec Layout::group(CollOp op, std::int64_t stride, std::int64_t size, double bytes) const {
  return group(op, {{stride, size}}, bytes);
}

CollectiveSpec Layout::group(CollOp op, const std::vector<std::pair<std::int64_t, std::int64_t>>& dims, double bytes) const {
  std::int64_t ranks = 1;
  for (const auto& d : dims) ranks *= d.second;
  return spec(op, ranks, placed(dims), bytes);
}

CollectiveSpec Layout::dpcp_group(CollOp op, double bytes) const {
  // Adjacent in the order (cp just inside dp, Megatron's default): one strided group. Otherwise
  // the group runs over both dimensions.
  if (cp == 1 || s_dp == s_cp * cp) return group(op, dpcp_stride(), dp * cp, bytes);
  return group(op, {{s_cp, cp}, {s_dp, dp}}, bytes);
}

CollectiveSpec Layout::pp_p2p(double bytes, std::int64_t from, std::int64_t to) const {
  CollectiveSpec c = spec(CollOp::SendRecv, 2, place_pairs(world(), gpus_per_node, s_pp, pp, from, to), bytes);
  if (c.ranks_per_node == 2) c.groups_per_node = 1;  // within a node: NVLink, nothing shared
  return c;
}

CollectiveSpec Layout::ring_hop(std::int64_t stride, std::int64_t size, double bytes) const {
  const GroupPlacement& pl = placed({{stride, size}});
  // A ring over k nodes leaves each node once per group: every group that spans nodes sends one
  // hop through the NICs of each node it touches.
  GroupPlacement hop{pl.max_nodes > 1 ? 2 : 1, pl.crossing_per_node};
  CollectiveSpec c = spec(CollOp::SendRecv, 2, hop, bytes);
  if (c.ranks_per_node == 2) c.groups_per_node = 1;
  return c;
}

Layout make_layout(const Scenario& s) {
  Layout l;
  l.tp = s.parallel.tp;
  l.cp = s.parallel.cp;
  l.dp = s.parallel.dp;
  l.pp = s.parallel.pp;
  l.gpus_per_node = s.cluster.gpus_per_node;
  l.ep = s.parallel.ep;
  l.etp = s.model.moe ? s.parallel.expert_tp() : 1;
  std::int64_t stride = 1;
  for (ParallelDim d : s.parallel.order) {
    const bool tp = d == ParallelDim::Tp, cp = d == ParallelDim::Cp, dp = d == ParallelDim::Dp;
    (tp ? l.s_tp : cp ? l.s_cp : dp ? l.s_dp : l.s_pp) = stride;
    stride *= tp ? l.tp : cp ? l.cp : dp ? l.dp : l.pp;
  }
  return l;
}

namespace {

// Megatron-Core's selective recompute replays the forward kernels of each recomputed module
// (ParallelSpec::recompute_modules) before its backward, a fused attention kernel where the stack
// does (recompute_fused_attention); an MoE block's replay includes its dispatch and combine
// all-to-alls (added with them, add_ep_comm_times).
void add_selective_recompute_times(BlockTimes& t, const CostModel& c, const ParallelSpec& par, const LayerGraph& g) {
  for (const Kernel& k : replayed_kernels(g, par.recompute_modules, par.recompute_fused_attention).kernels) {
    t.attn_recompute_selective += kernel_seconds(c, k);
    t.selective_recompute_flops += k.model_flops;
    t.selective_recompute_hw += k.flops;
  }
}

// torchtitan's op-level SAC replays every elementwise op and the even-numbered matmuls of the
// layer in call order: wk (its share of the fused QKV GEMM), wo, and w3 (half of the fused
// gate/up GEMM) with SwiGLU, or w2 (the down projection) without. The fused attention is saved.
void add_op_sac_times(BlockTimes& t, const CostModel& c, const ModelSpec& m, const LayerGraph& g) {
  const double h = static_cast<double>(m.hidden), kv = static_cast<double>(m.kv_dim());
  const bool glu = m.activation == Activation::SwiGlu;
  for (const Block* b : {&g.attn_fwd, &g.mlp_fwd})
    for (const auto& k : b->kernels) {
      double share = 0;
      const LayerModule mod = k.module;
      if (k.kind == KernelKind::Memory) share = 1;
      else if (mod == LayerModule::QkvProj) share = kv / (h + 2 * kv);
      else if (mod == LayerModule::AttnOut) share = 1;
      else if (mod == LayerModule::Mlp && k.ffn == FfnStep::Up && glu) share = 0.5;
      else if (mod == LayerModule::Mlp && k.ffn == FfnStep::Down && !glu) share = 1;
      else if (mod == LayerModule::CoreAttn) share = 1;  // unfused: batched, not saved
      t.op_sac_recompute += share * kernel_seconds(c, k);
      t.op_sac_flops += share * k.model_flops;
      t.op_sac_hw += share * k.flops;
    }
}

// The blocks' GEMM seconds (tp_comm_overlap hides the TP collectives under them).
struct BlockGemmSeconds {
  double attn_f = 0, mlp_f = 0, attn_b = 0, mlp_b = 0;
};

// Megatron: one all-reduce per block forward and one backward; with sequence parallel an
// all-gather before and a reduce-scatter after the block, the same volume.
void add_tp_comm_times(BlockTimes& t, const LoweringInput& in, const Layout& l, const LayerGraph& g, const BlockGemmSeconds& gs) {
  if (in.scenario.parallel.sequence_parallel) {
    t.tp_comm_f = in.network.time_s(l.tp_group(CollOp::AllGather, g.tp_message_bytes)) +
                  in.network.time_s(l.tp_group(CollOp::ReduceScatter, g.tp_message_bytes));
  } else {
    t.tp_comm_f = in.network.time_s(l.tp_group(CollOp::AllReduce, g.tp_message_bytes));
  }
  t.tp_comm_b = t.tp_comm_f;
  t.mlp_tp_comm = g.mlp_tp_comm;
  t.attn_tp_comm = g.attn_tp_comm;
  if (!in.scenario.parallel.tp_comm_overlap) return;
  // Each block's collectives run in chunks under its GEMMs (sim/parallel/comm_overlap.h); the
  // exposed share and the GEMMs' slowdown are folded into the block's time.
  const TpOverlapPricing o = tp_overlap_pricing(in.cost.profile());
  const double sd = o.gemm_slowdown;
  if (t.attn_tp_comm) {
    t.attn_f += overlap_extra(gs.attn_f, t.tp_comm_f, sd, o.exposed_fwd);
    t.attn_b += overlap_extra(gs.attn_b, t.tp_comm_b, sd, o.exposed_bwd);
  }
  if (t.mlp_tp_comm) {
    t.mlp_f += overlap_extra(gs.mlp_f, t.tp_comm_f, sd, o.exposed_fwd);
    t.mlp_b += overlap_extra(gs.mlp_b, t.tp_comm_b, sd, o.exposed_bwd);
  }
  t.tp_comm_hidden_f = t.tp_comm_f;  // on the communication kernels' SMs, beside the GEMMs (HiddenComm)
  t.tp_comm_hidden_b = t.tp_comm_b;
  t.tp_comm_f = t.tp_comm_b = 0;
}

// One all-to-all of the token dispatcher. Megatron-Core's alltoall dispatcher sends a copy per
// routed expert over NCCL; DeepEP's and HybridEP's kernels a copy per destination rank and node,
// with their own per-rank loads (sim/parallel/moe_dispatch.h).
double ep_all_to_all_s(const LoweringInput& in, const Layout& l, const LayerGraph& g) {
  CollectiveSpec a2a_spec = l.ep_group(CollOp::AllToAll, g.ep_message_bytes);
  const MoeDispatcher disp = in.scenario.parallel.moe_dispatcher;
  if (disp != MoeDispatcher::AllToAll) {
    const MoeSpec& moe = *in.scenario.model.moe;
    // ep_message_bytes carries the busiest rank's copies; the shape counts each routed token once.
    const double load = g.shape.moe_busiest;
    const DispatchShape shape{g.ep_message_bytes / (static_cast<double>(moe.top_k) * load), moe.experts, moe.top_k, a2a_spec.ranks,
                              a2a_spec.ranks_per_node, load};
    const DispatchTraffic traffic = dispatch_traffic(disp, shape);
    a2a_spec.loads = traffic.loads();
    const DispatchRates rates = dispatch_rates(in.cost.profile(), in.scenario.cluster.intra_kind, disp, traffic.nodes, traffic.ranks_per_node);
    a2a_spec.loads->nic_efficiency = rates.nic;
    a2a_spec.loads->nvlink_efficiency = rates.nvlink;
  }
  return in.network.time_s(a2a_spec);
}

// The token dispatcher: one all-to-all sends the routed tokens to their experts' ranks, one brings
// the outputs back; backward runs both for the gradients. Each blocks the layer unless
// ep_comm_overlap hides it.
void add_ep_comm_times(BlockTimes& t, const LoweringInput& in, const Layout& l, const LayerGraph& g) {
  const double a2a = ep_all_to_all_s(in, l, g);
  const ParallelSpec& par = in.scenario.parallel;
  t.ep_comm_f = 2 * a2a;
  t.ep_comm_b = 2 * a2a;
  if (par.recompute == Recompute::Selective && par.recompute_modules.has(RecomputeModule::Moe)) t.attn_recompute_selective += t.ep_comm_f;
  if (!par.ep_comm_overlap) return;
  // Hidden under the layer's compute of the microbatch it is paired with (the same pass's layer
  // stands in for it), which runs slower while the all-to-alls run; what does not fit stays
  // exposed (overlap_extra_while_running). The passes with no partner (ep_overlap_paired_share)
  // keep their all-to-alls exposed: every layer carries that share of them.
  // The paired passes' all-to-alls run on their own stream (BlockTimes::ep_comm_hidden_*, counted in
  // the breakdown as collectives on the other streams are); what they cost the compute stream, the
  // slowdown and any wait for those longer than the compute, is in the MLP block's time.
  const double sd = in.cost.profile().overlap_compute_slowdown.value, paired = ep_overlap_paired_share(in.scenario);
  t.mlp_f += paired * overlap_extra_while_running(t.attn_f + t.mlp_f, t.ep_comm_f, sd);
  t.mlp_b += paired * overlap_extra_while_running(t.attn_b + t.mlp_b, t.ep_comm_b, sd);
  t.ep_comm_hidden_f = paired * t.ep_comm_f;
  t.ep_comm_hidden_b = paired * t.ep_comm_b;
  t.ep_comm_f *= 1 - paired;
  t.ep_comm_b *= 1 - paired;
}

void add_cp_comm_times(BlockTimes& t, const LoweringInput& in, const Layout& l, const LayerGraph& g) {
  if (in.scenario.parallel.cp_allgather()) {
    // All-gather context parallelism: every rank's K and V gathered (cp x the local blocks), and
    // their gradients reduce-scattered back to the ranks that own them.
    const double all = static_cast<double>(l.cp) * g.cp_kv_bytes;
    t.cp_gather_f = in.network.time_s(l.cp_group(CollOp::AllGather, all));
    t.cp_scatter_b = in.network.time_s(l.cp_group(CollOp::ReduceScatter, all));
  } else if (l.cp > 1) {
    // Ring attention: cp-1 K/V block exchanges in forward; K/V and their gradients in backward.
    // Each step waits for its slowest hop: a ring that spans nodes has hops through the NICs.
    const double step = in.network.time_s(l.ring_hop(l.s_cp, l.cp, g.cp_kv_bytes));
    t.cp_comm_f = static_cast<double>(l.cp - 1) * step;
    t.cp_comm_b = 2 * t.cp_comm_f;
  }
}

}  // namespace

HiddenComm BlockTimes::attn_hidden(bool backward) const {
  return {attn_tp_comm ? seconds_to_time(backward ? tp_comm_hidden_b : tp_comm_hidden_f) : 0, 0};
}
HiddenComm BlockTimes::mlp_hidden(bool backward) const {
  return {mlp_tp_comm ? seconds_to_time(backward ? tp_comm_hidden_b : tp_comm_hidden_f) : 0,
          seconds_to_time(backward ? ep_comm_hidden_b : ep_comm_hidden_f)};
}

BlockTimes block_times(const LoweringInput& in, const LayerGraph& g) {
  const auto& c = in.cost;
  BlockTimes t;
  BlockGemmSeconds gs;
  t.attn_f = block_s(c, g.attn_fwd, nullptr, &gs.attn_f);
  t.mlp_f = block_s(c, g.mlp_fwd, nullptr, &gs.mlp_f);
  t.attn_b = block_s(c, g.attn_bwd, &t.attn_w, &gs.attn_b);
  t.mamba = std::any_of(g.attn_fwd.kernels.begin(), g.attn_fwd.kernels.end(), [](const Kernel& x) { return x.module == LayerModule::MambaMixer; });
  t.mlp_b = block_s(c, g.mlp_bwd, &t.mlp_w, &gs.mlp_b);
  t.embed_f = block_s(c, g.embed_fwd);
  t.mtp_f = block_s(c, g.mtp_fwd);
  t.mtp_b = block_s(c, g.mtp_bwd);
  t.mtp_f_flops = g.mtp_fwd.model_flops();
  t.embed_b = block_s(c, g.embed_bwd);
  t.head_f = block_s(c, g.head_fwd);
  t.head_b = block_s(c, g.head_bwd, &t.head_w);
  t.metrics = block_s(c, g.metrics);
  const Recompute rc = in.scenario.parallel.recompute;
  if (rc == Recompute::Selective) add_selective_recompute_times(t, c, in.scenario.parallel, g);
  if (rc == Recompute::SelectiveOp) add_op_sac_times(t, c, in.scenario.model, g);
  t.attn_f_flops = g.attn_fwd.model_flops();
  t.mlp_f_flops = g.mlp_fwd.model_flops();
  t.head_f_flops = g.head_fwd.model_flops();
  t.attn_f_hw = g.attn_fwd.flops();
  t.mlp_f_hw = g.mlp_fwd.flops();
  t.head_f_hw = g.head_fwd.flops();
  t.mtp_f_hw = g.mtp_fwd.flops();
  const Layout l = make_layout(in.scenario);
  if (l.tp > 1) add_tp_comm_times(t, in, l, g, gs);
  if (g.ep_message_bytes > 0) add_ep_comm_times(t, in, l, g);
  add_cp_comm_times(t, in, l, g);
  return t;
}

Emitter::Emitter(const LoweringInput& in, Program& prog)
    : in_(in),
      p_(prog),
      layout_(make_layout(in.scenario)),
      full_recompute_(in.scenario.parallel.recompute == Recompute::Full),
      op_sac_(in.scenario.parallel.recompute == Recompute::SelectiveOp),
      recompute_layers_(in.scenario.parallel.recompute_num_layers),
      offload_layers_(in.scenario.parallel.activation_offload_layers),
      offload_window_(offload_layers_ > 0 ? in.scenario.model.layers / offload_layers_ : 1),
      host_bps_(in.scenario.profile.pcie_gbps.value * 1e9) {
  const std::vector<LayerKind> kinds = in.scenario.model.kinds();
  for (size_t k = 0; k < in.layers.kinds.size(); ++k) {
    const ModelSpec m = in.scenario.model.of_kind(kinds[k]);
    times_.push_back(block_times(in, in.layers.kinds[k]));
    acts_.push_back(activation_bytes(m, in.graph.shape, in.scenario.parallel.recompute, in.scenario.parallel.recompute_modules));
    acts_kept_.push_back(activation_bytes(m, in.graph.shape, Recompute::None));
  }
  if (times_.size() > 1) {
    const ParallelSpec& par = in.scenario.parallel;
    for (std::int64_t vs = 0; vs < par.pp * par.vpp; ++vs) chunk_first_.push_back(in.scenario.first_layer_in_chunk(vs % par.pp, vs / par.pp));
  }
}

void Emitter::tag_kind(size_t from, std::int32_t k) {
  if (times_.size() <= 1) return;
  for (size_t i = from; i < p_.ops.size(); ++i) p_.ops[i].layer_kind = static_cast<std::int8_t>(k);
}

std::int32_t Emitter::kind_at(std::int32_t stage, std::int32_t chunk, std::int64_t l) const {
  if (times_.size() == 1) return 0;
  const std::int64_t vs = chunk * in_.scenario.parallel.pp + stage;
  return in_.layers.kind_of[static_cast<size_t>(chunk_first_[static_cast<size_t>(vs)] + l)];
}

Emitter::ChunkFloor Emitter::chunk_floor(std::int32_t stage, std::int32_t chunk, std::int64_t layers) const {
  double f = 0, b = 0;
  for (std::int64_t l = 0; l < layers; ++l) {
    const BlockTimes& t = times_[static_cast<size_t>(kind_at(stage, chunk, l))];
    const double fwd = t.forward_s();
    f += fwd;
    b += (recomputed(l) ? fwd : 0.0) + t.attn_b + t.mlp_b + t.backward_comm_s();
  }
  // The embedding on the first virtual stage, the output layer on the last.
  const ParallelSpec& par = in_.scenario.parallel;
  if (stage == 0 && chunk == 0) {
    f += ends().embed_f;
    b += ends().embed_b;
  }
  if (stage == par.pp - 1 && chunk == par.vpp - 1) {
    f += ends().head_f;
    b += ends().head_b;
  }
  // Half a picosecond per op for rounding, at most: per layer six forward ops, and a replay, six
  // backward and a weight-gradient op (split); two and three for the embedding and output layer.
  const auto ps = [](double seconds, double ops) { return std::max(0.0, seconds * static_cast<double>(kPicosPerSecond) - 0.5 * ops); };
  const auto n = static_cast<double>(layers);
  return {ps(f, 6 * n + 2), ps(b, 8 * n + 3)};
}

namespace {

using LabelSlots = std::vector<std::pair<const char*, std::int32_t>>;

// The slot of `key` in the label table: its own, or the empty one where it would go.
size_t label_slot(const LabelSlots& slots, const char* key) {
  const size_t mask = slots.size() - 1;
  size_t i = (reinterpret_cast<std::uintptr_t>(key) >> 3) * 0x9E3779B97F4A7C15ULL >> 32 & mask;
  while (slots[i].first && slots[i].first != key) i = (i + 1) & mask;
  return i;
}

// A label not yet in the table: added to the program and to the table (grown to stay at most half
// full). Apart from label_id so that its hit path stays small enough to inline.
[[gnu::noinline]] std::int32_t new_label(LabelSlots& slots, size_t& used, Program& p, Label label) {
  const char* key = label.c_str();
  if (2 * (used + 1) > slots.size()) {
    LabelSlots old = std::move(slots);
    slots.assign(2 * old.size(), {nullptr, 0});
    for (const auto& e : old)
      if (e.first) slots[label_slot(slots, e.first)] = e;
  }
  ++used;
  const size_t i = label_slot(slots, key);
  slots[i] = {key, p.label(key, label.role())};
  return slots[i].second;
}

}  // namespace

std::int32_t Emitter::label_id(Label label) {
  const auto& slot = label_slots_[label_slot(label_slots_, label.c_str())];
  return slot.first ? slot.second : new_label(label_slots_, labels_used_, p_, label);
}

namespace {

// An op appended to the program, taking `deps` whole (left empty): Emitter::op's body, inlined into
// the blocks' ops of forward(), backward() and weight_grad() (most of a lowering's ops), which so
// skip a call and two moves of their dependencies.
[[gnu::always_inline]] inline Op& append_op(Program& p, std::int32_t rank, Stream s, Phase ph, std::int32_t label, double seconds,
                                            Deps& deps, std::int32_t mb, std::int32_t chunk) {
  Op& o = p.ops.emplace_back();
  o.rank = rank;
  o.stream = s;
  o.phase = ph;
  o.label = label;
  o.duration = seconds_to_time(seconds);
  o.deps = std::move(deps);
  o.microbatch = mb;
  o.chunk = chunk;
  return o;
}

}  // namespace

OpId Emitter::op(std::int32_t rank, Stream s, Phase ph, Label label, double seconds, Deps deps,
                 std::int32_t mb, std::int32_t chunk) {
  append_op(p_, rank, s, ph, label_id(label), seconds, deps, mb, chunk);
  return static_cast<OpId>(p_.ops.size() - 1);
}

Emitter::PricedComm Emitter::price(const CollectiveSpec& spec) const {
  const std::int64_t rpn = std::max<std::int64_t>(1, std::min(spec.ranks_per_node, spec.ranks));
  return {in_.network.time_s(spec), spec.ranks > rpn};
}

OpId Emitter::comm_op(std::int32_t rank, Stream s, Phase ph, Label label, const CollectiveSpec& spec,
                      Deps deps, std::int32_t mb, std::int32_t chunk) {
  return comm_op(rank, s, ph, label, price(spec), std::move(deps), mb, chunk);
}

OpId Emitter::comm_op(std::int32_t rank, Stream s, Phase ph, Label label, const PricedComm& priced, Deps deps,
                      std::int32_t mb, std::int32_t chunk) {
  const OpId id = op(rank, s, ph, label, priced.seconds, std::move(deps), mb, chunk);
  if (priced.shared_link) p_.ops[static_cast<size_t>(id)].shared_link = 0;
  return id;
}

bool Emitter::LayerOps::fusible() const {
  if (n < 2) return false;
  for (int i = 0; i < n; ++i)
    if ((i > 0 && (*this)[i].start.bytes != 0) || (i + 1 < n && (*this)[i].end.bytes != 0)) return false;
  return true;
}

const Emitter::Template* Emitter::make_template(size_t key, const LayerOps& ops) {
  if (templates_.size() <= key) templates_.resize(key + 1);
  Template& tpl = templates_[key];
  tpl.made = true;
  if (!ops.fusible()) return nullptr;
  tpl.first = static_cast<std::int32_t>(p_.segments.size());
  tpl.count = ops.n;
  tpl.label = label_id(ops[0].label);
  tpl.phase = ops[0].phase;
  tpl.at_start = ops[0].start;
  tpl.at_end = ops[ops.n - 1].end;
  for (int i = 0; i < ops.n; ++i) {
    const SegOp& s = ops[i];
    p_.segments.push_back({seconds_to_time(s.seconds), s.flops, s.hw, label_id(s.label), s.phase, s.hidden});
    const Time d = p_.segments.back().duration;
    tpl.duration = d < kMaxTime - tpl.duration ? tpl.duration + d : kMaxTime;  // past the range: the engine refuses it
  }
  return &tpl;
}

OpId Emitter::fused_op(std::int32_t rank, std::int32_t mb, std::int32_t chunk, const Template& tpl, Deps& deps) {
  const auto id = static_cast<OpId>(p_.ops.size());
  Op& o = append_op(p_, rank, Stream::Compute, tpl.phase, tpl.label, 0.0, deps, mb, chunk);
  o.duration = tpl.duration;
  o.seg_first = tpl.first;
  o.seg_count = static_cast<std::uint8_t>(tpl.count);
  o.at_start = tpl.at_start;
  o.at_end = tpl.at_end;
  ++p_.fused_ops;
  p_.fused_segments += tpl.count;
  return id;
}

template <class Sink>
void Emitter::layer_forward(const BlockTimes& t, Bytes stored, Sink& ops) const {
  const MemDelta none{MemCat::Activations, 0}, end{};
  ops.add({Phase::Forward, t.mamba ? op_label::kMambaFwd : op_label::kAttnFwd, t.attn_f, t.attn_f_flops, t.attn_f_hw, {MemCat::Activations, stored}, end,
           t.attn_hidden(false)});
  if (t.tp_comm_f > 0 && t.attn_tp_comm) ops.add({Phase::TpComm, op_label::kTpCommFwd, t.tp_comm_f, 0, 0, none, end});
  ops.between();
  ops.add({Phase::Forward, op_label::kMlpFwd, t.mlp_f, t.mlp_f_flops, t.mlp_f_hw, none, end, t.mlp_hidden(false)});
  if (t.ep_comm_f > 0) ops.add({Phase::EpComm, op_label::kEpAllToAllFwd, t.ep_comm_f, 0, 0, none, end});
  if (t.tp_comm_f > 0 && t.mlp_tp_comm) ops.add({Phase::TpComm, op_label::kTpCommFwd, t.tp_comm_f, 0, 0, none, end});
}

template <class Sink>
void Emitter::layer_backward(const BlockTimes& t, std::int64_t l, std::int32_t k, bool split, Sink& ops) const {
  const MemDelta none{};
  const double w_attn = split ? t.attn_w : 0, w_mlp = split ? t.mlp_w : 0;
  const Bytes extra_working = to_bytes(this->extra_working(l, k));
  if (recomputed(l)) {
    // A replay's FLOPs count for HFU and reported hardware FLOPs, not for MFU (metrics.cpp).
    ops.add({Phase::Recompute, op_label::kRecomputeFwd, t.forward_s(), t.attn_f_flops + t.mlp_f_flops, t.attn_f_hw + t.mlp_f_hw,
             {MemCat::Activations, extra_working}, none});
  } else if (op_sac_) {
    ops.add({Phase::Recompute, "recompute (op SAC)", t.op_sac_recompute, t.op_sac_flops, t.op_sac_hw, {MemCat::Activations, extra_working}, none});
  } else if (t.attn_recompute_selective > 0 && in_.scenario.parallel.recompute == Recompute::Selective) {
    ops.add({Phase::Recompute, op_label::kRecomputeSelective, t.attn_recompute_selective, t.selective_recompute_flops, t.selective_recompute_hw,
             none, none});
  }
  if (t.tp_comm_b > 0 && t.mlp_tp_comm) ops.add({Phase::TpComm, op_label::kTpCommBwd, t.tp_comm_b, 0, 0, none, none});
  if (t.ep_comm_b > 0) ops.add({Phase::EpComm, "ep all-to-all bwd", t.ep_comm_b, 0, 0, none, none});
  const double mlp_share = 2 * (t.mlp_b - w_mlp) / std::max(t.mlp_b, 1e-30);
  ops.add({Phase::Backward, op_label::kMlpBwd, t.mlp_b - w_mlp, t.mlp_f_flops * mlp_share, t.mlp_f_hw * mlp_share, none, none,
           t.mlp_hidden(true)});
  ops.between();
  if (t.tp_comm_b > 0 && t.attn_tp_comm) ops.add({Phase::TpComm, op_label::kTpCommBwd, t.tp_comm_b, 0, 0, none, none});
  const double attn_share = 2 * (t.attn_b - w_attn) / std::max(t.attn_b, 1e-30);
  const MemDelta free_act{MemCat::Activations, -(to_bytes(stored(l, k)) + extra_working)};
  ops.add({Phase::Backward, t.mamba ? op_label::kMambaBwd : op_label::kAttnBwd, t.attn_b - w_attn, t.attn_f_flops * attn_share, t.attn_f_hw * attn_share, none,
           split ? MemDelta{MemCat::Activations, -extra_working} : free_act, t.attn_hidden(true)});
}

template <class Build, class Between>
void Emitter::emit_layer(std::int32_t rank, std::int32_t mb, std::int32_t chunk, size_t key, Deps& deps, Range& r, Build&& build,
                         Between&& between) {
  const Template* tpl = key < templates_.size() && templates_[key].made ? &templates_[key] : nullptr;
  const auto emit = [&](const SegOp& s) {
    const auto id = static_cast<OpId>(p_.ops.size());
    Op& o = append_op(p_, rank, Stream::Compute, s.phase, label_id(s.label), s.seconds, deps, mb, chunk);
    o.model_flops = s.flops;
    o.hw_flops = s.hw;
    o.hidden = s.hidden;
    o.at_start = s.start;
    o.at_end = s.end;
    if (r.first < 0) r.first = id;
    r.last = id;
  };
  if (key != kNoTemplate && (!tpl || tpl->count > 0)) {
    if (!tpl) {  // the first layer of its key: its ops collected, fused where they can be
      LayerOps ops;
      build(ops);
      tpl = make_template(key, ops);
      if (!tpl) {
        for (int i = 0; i < ops.n; ++i) emit(ops[i]);  // no `between`: a key is only given where it does nothing
        return;
      }
    }
    const OpId id = fused_op(rank, mb, chunk, *tpl, deps);
    if (r.first < 0) r.first = id;
    r.last = id;
    return;
  }
  struct Sink {
    const decltype(emit)& add;
    Between& between;
  } sink{emit, between};
  build(sink);
}

Emitter::Range Emitter::forward(std::int32_t rank, std::int32_t mb, std::int32_t chunk, std::int64_t layers, bool first,
                                bool last, Deps deps, const PreHook& pre, const LayerHook& post) {
  Range r;
  auto add = [&](Phase ph, Label label, double s, double flops, Bytes alloc, MemCat cat, double hw = -1) {
    const auto id = static_cast<OpId>(p_.ops.size());
    Op& o = append_op(p_, rank, Stream::Compute, ph, label_id(label), s, deps, mb, chunk);
    o.model_flops = flops;
    o.hw_flops = hw < 0 ? flops : hw;
    o.at_start = {cat, alloc};
    if (r.first < 0) r.first = id;
    r.last = id;
    return id;
  };
  if (first) add(Phase::Forward, op_label::kEmbeddingFwd, ends().embed_f, 0, to_bytes(ends_act().embed), MemCat::Activations);
  std::vector<OpId> offloads;  // D2H copies of the offloaded layers' saved activations, by layer
  for (std::int64_t l = 0; l < layers; ++l) {
    const std::int32_t k = kind(rank, chunk, l);
    const BlockTimes& t = times_[static_cast<size_t>(k)];
    if (pre) {
      auto extra = pre(Action::F, l);
      deps.append(extra.data(), extra.data() + extra.size());
    }
    const size_t layer_ops = p_.ops.size();
    OpId cp_op = -1;
    if (t.cp_comm_f > 0) cp_op = op(rank, Stream::Comm, Phase::CpComm, op_label::kCpKvRingFwd, t.cp_comm_f, r.last >= 0 ? Deps{r.last} : deps, mb, chunk);
    if (t.cp_gather_f > 0) add(Phase::CpComm, op_label::kCpKvAllGather, t.cp_gather_f, 0, 0, MemCat::Activations);
    // The ring's K/V exchange runs beside attention and the MLP waits for it: a dependency inside
    // the layer, so the layer's ops stay apart.
    emit_layer(rank, mb, chunk, cp_op < 0 ? template_key(k, Action::F, l, false) : kNoTemplate, deps, r,
               [&](auto& out) { layer_forward(t, to_bytes(stored(l, k)), out); },
               [&] {
                 if (cp_op >= 0) deps.push_back(cp_op);
               });
    tag_kind(layer_ops, k);
    if (post) post(Action::F, l, r.last);
    if (l < offload_layers_)
      offloads.push_back(op(rank, Stream::Copy, Phase::Offload, "activation offload D2H", stored(l, k) / host_bps_, {r.last}, mb, chunk));
    // Transformer Engine's window: at the end of this layer the compute stream waits for the copy
    // of offloaded layer g and frees its activations.
    if (const std::int64_t g = offload_window_closed_by(l); g >= 0) {
      const OpId w = op(rank, Stream::Compute, Phase::Offload, "wait activation offload", 0, {r.last, offloads[static_cast<size_t>(g)]}, mb, chunk);
      p_.ops[static_cast<size_t>(w)].at_end = {MemCat::Activations, -to_bytes(stored(g, kind(rank, chunk, g)))};
      r.last = w;
    }
  }
  if (last && in_.scenario.training.mtp_layers > 0)
    mtp_forward([&](Phase ph, Label label, double sec, double flops, double hw, MemDelta start, MemDelta, HiddenComm hidden) {
      const OpId id = add(ph, label, sec, flops, start.bytes, MemCat::Activations, hw);
      p_.ops[static_cast<size_t>(id)].hidden = hidden;
      return id;
    });
  if (last)
    add(Phase::Forward, op_label::kHeadFwd, ends().head_f, ends().head_f_flops, to_bytes(ends_act().head), MemCat::Activations, ends().head_f_hw);
  return r;
}

size_t Emitter::template_key(std::int32_t k, Action::Kind kind, std::int64_t l, bool split) const {
  if (!in_.fuse) return kNoTemplate;
  return static_cast<size_t>(k) * 8 + (kind == Action::F ? 0 : 1) + (recomputed(l) ? 2 : 0) + (split ? 4 : 0);
}

void Emitter::mtp_forward(const AddOp& add_op) const {
  const auto k = static_cast<size_t>(in_.layers.kind_of.back());
  const BlockTimes& t = times_[k];
  const double stored = (full_recompute_ ? acts_kept_[k] : acts_[k]).layer_stored;
  const MemDelta none{};
  const auto add = [&](Phase ph, Label label, double s, double flops, double hw, MemDelta start, MemDelta end, HiddenComm h = {}) {
    return add_op(ph, label, s, flops, hw, start, end, h);
  };
  for (std::int64_t i = 0; i < in_.scenario.training.mtp_layers; ++i) {
    add(Phase::Forward, op_label::kMtpFwd, ends().mtp_f, ends().mtp_f_flops, ends().mtp_f_hw, {MemCat::Activations, to_bytes(in_.graph.mtp_stored_bytes)}, none);
    add(Phase::Forward, op_label::kMtpAttnFwd, t.attn_f, t.attn_f_flops, t.attn_f_hw, {MemCat::Activations, to_bytes(stored)}, none,
        t.attn_hidden(false));
    if (t.tp_comm_f > 0 && t.attn_tp_comm) add(Phase::TpComm, op_label::kTpCommFwd, t.tp_comm_f, 0, 0, none, none);
    add(Phase::Forward, op_label::kMtpMlpFwd, t.mlp_f, t.mlp_f_flops, t.mlp_f_hw, none, none,
        t.mlp_hidden(false));
    if (t.ep_comm_f > 0) add(Phase::EpComm, op_label::kEpAllToAllFwd, t.ep_comm_f, 0, 0, none, none);
    if (t.tp_comm_f > 0 && t.mlp_tp_comm) add(Phase::TpComm, op_label::kTpCommFwd, t.tp_comm_f, 0, 0, none, none);
    add(Phase::Forward, op_label::kMtpHeadFwd, ends().head_f, ends().head_f_flops, ends().head_f_hw, {MemCat::Activations, to_bytes(ends_act().head)}, none);
  }
}

void Emitter::mtp_backward(const AddOp& add_op) const {
  const auto k = static_cast<size_t>(in_.layers.kind_of.back());
  const BlockTimes& t = times_[k];
  const double stored = (full_recompute_ ? acts_kept_[k] : acts_[k]).layer_stored;
  const MemDelta none{};
  const auto add = [&](Phase ph, Label label, double s, double flops, double hw, MemDelta start, MemDelta end, HiddenComm h = {}) {
    return add_op(ph, label, s, flops, hw, start, end, h);
  };
  for (std::int64_t i = 0; i < in_.scenario.training.mtp_layers; ++i) {
    const ActivationBytes& a = ends_act();
    add(Phase::Backward, op_label::kMtpHeadBwd, ends().head_b, 2 * ends().head_f_flops, 2 * ends().head_f_hw, {MemCat::Activations, to_bytes(a.head_working)},
        {MemCat::Activations, -to_bytes(a.head_working + a.head)});
    if (t.attn_recompute_selective > 0 && in_.scenario.parallel.recompute == Recompute::Selective)
      add(Phase::Recompute, op_label::kRecomputeSelective, t.attn_recompute_selective, t.selective_recompute_flops, t.selective_recompute_hw, none,
          none);
    if (t.tp_comm_b > 0 && t.mlp_tp_comm) add(Phase::TpComm, op_label::kTpCommBwd, t.tp_comm_b, 0, 0, none, none);
    if (t.ep_comm_b > 0) add(Phase::EpComm, "ep all-to-all bwd", t.ep_comm_b, 0, 0, none, none);
    add(Phase::Backward, op_label::kMtpMlpBwd, t.mlp_b, 2 * t.mlp_f_flops, 2 * t.mlp_f_hw, none, none,
        t.mlp_hidden(true));
    if (t.tp_comm_b > 0 && t.attn_tp_comm) add(Phase::TpComm, op_label::kTpCommBwd, t.tp_comm_b, 0, 0, none, none);
    add(Phase::Backward, op_label::kMtpAttnBwd, t.attn_b, 2 * t.attn_f_flops, 2 * t.attn_f_hw, none, {MemCat::Activations, -to_bytes(stored)},
        t.attn_hidden(true));
    add(Phase::Backward, op_label::kMtpBwd, ends().mtp_b, 2 * ends().mtp_f_flops, 2 * ends().mtp_f_hw, none,
        {MemCat::Activations, -to_bytes(in_.graph.mtp_stored_bytes)});
  }
}

Emitter::Range Emitter::backward(std::int32_t rank, std::int32_t mb, std::int32_t chunk, std::int64_t layers, bool first,
                                 bool last, bool split, Deps deps, const PreHook& pre, const LayerHook& post) {
  Range r;
  auto add = [&](Phase ph, Label label, double s, double flops, double hw, MemDelta start, MemDelta end) {
    const auto id = static_cast<OpId>(p_.ops.size());
    Op& o = append_op(p_, rank, Stream::Compute, ph, label_id(label), s, deps, mb, chunk);
    o.model_flops = flops;
    o.hw_flops = hw;
    o.at_start = start;
    o.at_end = end;
    if (r.first < 0) r.first = id;
    r.last = id;
    return id;
  };
  const MemDelta none{};
  const BlockTimes& e = ends();
  const double w_head = split ? e.head_w : 0;
  if (last)
    add(Phase::Backward, op_label::kHeadBwd, e.head_b - w_head, 2 * e.head_f_flops * (e.head_b - w_head) / std::max(e.head_b, 1e-30),
        2 * e.head_f_hw * (e.head_b - w_head) / std::max(e.head_b, 1e-30),
        MemDelta{MemCat::Activations, to_bytes(ends_act().head_working)},
        MemDelta{MemCat::Activations,
                 -to_bytes(ends_act().head_working + (split ? 0.0 : ends_act().head_freed_by_backward()))});
  if (last && in_.scenario.training.mtp_layers > 0)
    mtp_backward([&](Phase ph, Label label, double sec, double flops, double hw, MemDelta start, MemDelta end, HiddenComm hidden) {
      const OpId id = add(ph, label, sec, flops, hw, start, end);
      p_.ops[static_cast<size_t>(id)].hidden = hidden;
      return id;
    });
  std::vector<OpId> reloads(static_cast<size_t>(std::max<std::int64_t>(offload_layers_, 0)), -1);
  for (std::int64_t l = layers - 1; l >= 0; --l) {
    const std::int32_t k = kind(rank, chunk, l);
    const BlockTimes& t = times_[static_cast<size_t>(k)];
    if (pre) {
      auto extra = pre(Action::B, l);
      deps.append(extra.data(), extra.data() + extra.size());
    }
    // Activation offloading: reaching the end of offloaded layer g's window starts its reload; the
    // layer's backward waits for it.
    if (const std::int64_t g = offload_window_closed_by(l); g >= 0) {
      const OpId h = op(rank, Stream::Copy, Phase::Offload, "activation reload H2D", stored(g, kind(rank, chunk, g)) / host_bps_,
                        r.last >= 0 ? Deps{r.last} : deps, mb, chunk);
      p_.ops[static_cast<size_t>(h)].at_start = {MemCat::Activations, to_bytes(stored(g, kind(rank, chunk, g)))};
      reloads[static_cast<size_t>(g)] = h;
    }
    if (l < offload_layers_) deps.push_back(reloads[static_cast<size_t>(l)]);
    // The ring's K/V-gradient exchange starts after the MLP's backward and attention's backward
    // waits for it: the layer's ops stay apart.
    OpId cp_op = -1;
    const size_t layer_ops = p_.ops.size();
    emit_layer(rank, mb, chunk, t.cp_comm_b > 0 ? kNoTemplate : template_key(k, Action::B, l, split), deps, r,
               [&](auto& out) { layer_backward(t, l, k, split, out); }, [&] {
      if (t.cp_comm_b > 0) cp_op = op(rank, Stream::Comm, Phase::CpComm, op_label::kCpKvRingBwd, t.cp_comm_b, {r.last}, mb, chunk);
    });
    const OpId id = r.last;
    if (cp_op >= 0) p_.ops[static_cast<size_t>(id)].deps.push_back(cp_op);
    if (t.cp_scatter_b > 0) add(Phase::CpComm, op_label::kCpDkvReduceScatter, t.cp_scatter_b, 0, 0, none, none);
    tag_kind(layer_ops, k);
    if (post) post(Action::B, l, id);
  }
  if (first) add(Phase::Backward, op_label::kEmbeddingBwd, e.embed_b, 0, 0, none, MemDelta{MemCat::Activations, -to_bytes(ends_act().embed)});
  // The training loop's metrics on this microbatch's logits, after its whole backward (training
  // metrics need pp = 1: TrainingSpec::train_metrics), which frees the logits they kept.
  if (last && e.metrics > 0)
    add(Phase::Other, op_label::kTrainMetrics, e.metrics, 0, 0, MemDelta{MemCat::Activations, to_bytes(ends_act().metrics_working)},
        MemDelta{MemCat::Activations, -to_bytes(ends_act().metrics_working + ends_act().metrics_kept)});
  return r;
}

Emitter::Range Emitter::weight_grad(std::int32_t rank, std::int32_t mb, std::int32_t chunk, std::int64_t layers, bool last,
                                    Deps deps, const LayerHook& post) {
  Range r;
  auto add = [&](Label label, double s, double flops, double hw, MemDelta end) {
    const auto id = static_cast<OpId>(p_.ops.size());
    Op& o = append_op(p_, rank, Stream::Compute, Phase::WeightGrad, label_id(label), s, deps, mb, chunk);
    o.model_flops = flops;
    o.hw_flops = hw;
    o.at_end = end;
    if (r.first < 0) r.first = id;
    r.last = id;
    return id;
  };
  if (last)
    add("head wgrad", ends().head_w, 2 * ends().head_f_flops * ends().head_w / std::max(ends().head_b, 1e-30),
        2 * ends().head_f_hw * ends().head_w / std::max(ends().head_b, 1e-30),
        {MemCat::Activations, -to_bytes(ends_act().head_freed_by_backward())});
  for (std::int64_t l = layers - 1; l >= 0; --l) {
    const std::int32_t k = kind(rank, chunk, l);
    const BlockTimes& t = times_[static_cast<size_t>(k)];
    const double aw = 2 * t.attn_w / std::max(t.attn_b, 1e-30), mw = 2 * t.mlp_w / std::max(t.mlp_b, 1e-30);
    const double fl = t.attn_f_flops * aw + t.mlp_f_flops * mw, hw = t.attn_f_hw * aw + t.mlp_f_hw * mw;
    const OpId id = add("layer wgrad", t.attn_w + t.mlp_w, fl, hw, {MemCat::Activations, -to_bytes(stored(l, k))});
    tag_kind(static_cast<size_t>(id), k);
    if (post) post(Action::W, l, id);
  }
  return r;
}

}  // namespace parasim
