#include "sim/host_launch.h"

#include "sim/cost/kernels.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace parasim {

void add_host_issue(Program& p, const HostLaunch& h) {
  if (h.counts.size() != p.labels.size() || h.sync_before.size() != p.labels.size() || (!h.inner.empty() && h.inner.size() != p.labels.size()))
    throw std::logic_error("host launch counts not one per label");
  const size_t nr = p.ranks.size();
  std::vector<OpId> gate(nr, -1), prev(nr, -1);
  std::vector<char> at_release(nr, 0);  // the gate is an op with a sync inside it: count from there
  std::vector<Time> lag(nr, 0);
  p.host.assign(p.ops.size(), HostIssue{});
  for (size_t i = 0; i < p.ops.size(); ++i) {
    Op& op = p.ops[i];
    const auto r = static_cast<size_t>(op.rank);
    if (h.syncs_before(op) && prev[r] >= 0) {
      gate[r] = prev[r];
      at_release[r] = 0;
      lag[r] = 0;
    }
    HostIssue& hi = p.host[i];
    hi.gate = gate[r];
    hi.at_release = at_release[r] != 0;
    hi.first = lag[r] + h.first_of(h.count(op));
    const OpId g = gate[r];
    if (g >= 0 && p.ops[static_cast<size_t>(g)].stream != op.stream && std::find(op.deps.begin(), op.deps.end(), g) == op.deps.end())
      op.deps.push_back(g);
    if (const InnerSync in = h.inner_sync(op); in.share >= 0 && op.collective < 0) {
      // The host waits inside the op: the ops after it count from that release (the engine's).
      hi.sync_at = static_cast<Time>(std::llround(in.share * static_cast<double>(op.duration)));
      hi.pre = lag[r] + h.time_of(in.pre);
      hi.first_after = h.first_of(in.next);
      hi.after = h.issue_time(op) - h.time_of(in.pre);
      hi.last = hi.pre + hi.after;
      gate[r] = static_cast<OpId>(i);
      at_release[r] = 1;
      lag[r] = hi.after;
    } else {
      lag[r] += h.issue_time(op);
      hi.last = lag[r];
    }
    prev[r] = static_cast<OpId>(i);
  }
}

}  // namespace parasim

namespace parasim {

HostCosts host_costs(const TrainingSpec& t) {
  const Time call = seconds_to_time(t.host_launch_us * 1e-6);
  const bool framework = t.launch_impl != LaunchImpl::Eager;
  const bool own_loop = framework && t.host_loop_launch_us > 0, own_op = framework && t.host_op_us > 0;
  return {call, own_loop ? seconds_to_time(t.host_loop_launch_us * 1e-6) : call, own_op ? seconds_to_time(t.host_op_us * 1e-6) : call};
}

HostReplay host_replay(const Scenario& s) {
  if (s.parallel.recompute != Recompute::Selective) return {};
  return {s.parallel.recompute_modules, s.parallel.recompute_fused_attention};
}

namespace {
bool is_graphed(const Kernel& k, const std::vector<LayerModule>& graphed) {
  return std::find(graphed.begin(), graphed.end(), k.module) != graphed.end();
}
// What the host launches for kernel k: `graph_open` says the previous kernel was graphed (this one,
// graphed, is in the same replay) and is updated.
LaunchCount kernel_launches(const Kernel& k, const std::vector<LayerModule>& graphed, bool& graph_open) {
  if (is_graphed(k, graphed)) {
    const bool opens = !graph_open;
    graph_open = true;
    return opens ? LaunchCount{1, 1} : LaunchCount{};
  }
  graph_open = false;
  const std::int64_t launches = std::max<std::int64_t>(1, k.launches);
  return k.python_ops ? LaunchCount{0, launches, launches} : LaunchCount{1, launches, 0};
}
// Whether the host waits for the GPU inside the block (a kernel with Kernel::host_sync, not graphed).
bool has_sync(const Block& b, const std::vector<LayerModule>& graphed) {
  return std::any_of(b.kernels.begin(), b.kernels.end(), [&](const Kernel& k) { return k.host_sync && !is_graphed(k, graphed); });
}
}  // namespace

LaunchCount block_launches(const Block& b, const std::vector<LayerModule>& graphed) {
  LaunchCount n;
  bool graph_open = false;
  for (const Kernel& k : b.kernels) n += kernel_launches(k, graphed, graph_open);
  return n;
}

InnerSync block_sync(const Block& b, const std::vector<LayerModule>& graphed, const CostModel& cost) {
  InnerSync sync;
  if (!has_sync(b, graphed)) return sync;
  const CostModel::Uncounted priced_before(cost);  // the lowering priced these kernels already
  LaunchCount n;
  double total = 0, before = -1;
  bool graph_open = false;
  for (const Kernel& k : b.kernels) {
    const bool at = k.host_sync && !is_graphed(k, graphed);
    if (at) {
      sync.pre = n;
      before = total;
    }
    const LaunchCount c = kernel_launches(k, graphed, graph_open);
    if (at) sync.next = c;
    n += c;
    total += kernel_seconds(cost, k);
  }
  if (before >= 0) sync.share = total > 0 ? before / total : 0;
  return sync;
}

namespace {

// Whether a selective recompute replays an MoE layer's dispatcher with expert parallelism (the "moe"
// module): its all-to-alls run again, and so does the dispatcher's wait for the token counts.
bool replays_dispatch(const HostReplay& replay, const LayerGraph& k) {
  return replay.modules.has(RecomputeModule::Moe) && k.shape.ep > 1 &&
         std::any_of(k.mlp_fwd.kernels.begin(), k.mlp_fwd.kernels.end(), [](const Kernel& x) { return x.module == LayerModule::TokenDispatch; });
}

// The kernels an op of each role runs, in issue order (the emitter's op_labels.h): one of the
// layer's blocks, or one built for it (a full recompute's attention then MLP; a selective one's
// replayed kernels). None (get() null): an op of no listed role, one call of one launch. Its
// launches and the sync inside it are both read from this one sequence.
class RoleBlock {
 public:
  RoleBlock(OpRole role, const LayerGraph& g, const HostReplay& replay) : ref_(pick(role, g)) {
    if (role == OpRole::RecomputeFwd) {
      owned_ = g.attn_fwd;
      owned_.kernels.insert(owned_.kernels.end(), g.mlp_fwd.kernels.begin(), g.mlp_fwd.kernels.end());
      ref_ = &owned_;
    } else if (role == OpRole::RecomputeSelective) {
      owned_ = replayed_kernels(g, replay.modules, replay.fused_attention);
      ref_ = &owned_;
    }
  }
  RoleBlock(const RoleBlock&) = delete;
  RoleBlock& operator=(const RoleBlock&) = delete;
  const Block* get() const { return ref_; }

 private:
  static const Block* pick(OpRole role, const LayerGraph& g) {
    switch (role) {
      case OpRole::EmbeddingFwd: return &g.embed_fwd;
      case OpRole::EmbeddingBwd: return &g.embed_bwd;
      case OpRole::AttnFwd: case OpRole::MtpAttnFwd: return &g.attn_fwd;
      case OpRole::AttnBwd: case OpRole::MtpAttnBwd: return &g.attn_bwd;
      case OpRole::MlpFwd: case OpRole::MtpMlpFwd: return &g.mlp_fwd;
      case OpRole::MlpBwd: case OpRole::MtpMlpBwd: return &g.mlp_bwd;
      case OpRole::HeadFwd: case OpRole::MtpHeadFwd: return &g.head_fwd;
      case OpRole::HeadBwd: case OpRole::MtpHeadBwd: return &g.head_bwd;
      case OpRole::MtpFwd: return &g.mtp_fwd;
      case OpRole::MtpBwd: return &g.mtp_bwd;
      case OpRole::TrainMetrics: return &g.metrics;
      default: return nullptr;
    }
  }
  Block owned_;
  const Block* ref_ = nullptr;
};

// What the host launches for an op of the role: its kernels' launches, and a selective replay's
// dispatch and combine all-to-alls again where it replays the dispatcher.
LaunchCount role_launches(OpRole role, const RoleBlock& b, const LayerGraph& g, const std::vector<LayerModule>& graphed,
                          const HostReplay& replay) {
  if (!b.get()) return {1, 1};
  LaunchCount n = block_launches(*b.get(), graphed);
  if (role == OpRole::RecomputeSelective && replays_dispatch(replay, g)) n += {2, 2};
  return n;
}

// Eager PyTorch's MoE layer copies its token counts per expert to the host (counts.tolist(), as
// the grouped GEMM's group sizes; tools/scripts/torch_moe_bench.py MoE.forward) after the router,
// so the host waits for the GPU before issuing the experts: taken as a wait before the MLP block
// of a kind of layer with experts.
bool eager_moe_sync(const LayerGraph& k) {
  return k.shape.eager_launches &&
         std::any_of(k.mlp_fwd.kernels.begin(), k.mlp_fwd.kernels.end(), [](const Kernel& x) { return x.module == LayerModule::TokenDispatch; });
}

// Megatron-Core's all-to-all dispatcher waits for the token counts per expert before its forward
// all-to-all (the splits of a dropless dispatch: cuda_sync_point "before_ep_alltoall"; with
// capacity but no padding, "before_permutation_1", taken here at the same op). Padded to capacity,
// every size is known in advance (token_dispatcher.py drop_and_pad): no sync.
bool dispatch_sync(const ModelGraph& g) {
  return std::none_of(g.kinds.begin(), g.kinds.end(), [](const LayerGraph& k) { return k.shape.moe_padded; });
}

}  // namespace

std::vector<double> host_issue_s(const Program& p, const HostLaunch& h) {
  std::vector<double> s(p.ranks.size(), 0.0);
  for (const Op& op : p.ops) s[static_cast<size_t>(op.rank)] += static_cast<double>(h.issue_time(op));
  for (double& x : s) x /= static_cast<double>(kPicosPerSecond);
  return s;
}

std::vector<LayerModule> graphed_modules(const std::vector<CudaGraphScope>& scopes) {
  std::vector<LayerModule> m;
  for (CudaGraphScope s : scopes) switch (s) {
      case CudaGraphScope::Attn:
        m.insert(m.end(), {LayerModule::QkvProj, LayerModule::MlaProj, LayerModule::MlaUpProj, LayerModule::QkNorm, LayerModule::Rope,
                           LayerModule::MlaQkConcat, LayerModule::CoreAttn, LayerModule::FusedAttn, LayerModule::AttnOut});
        break;
      case CudaGraphScope::MoeRouter: m.push_back(LayerModule::Router); break;
      case CudaGraphScope::MoePreprocess: break;  // no kernel of it priced apart
      case CudaGraphScope::Mamba: m.insert(m.end(), {LayerModule::MambaProj, LayerModule::MambaMixer}); break;
    }
  return m;
}

HostLaunch host_launch_model(const Program& p, const ModelGraph& g, HostCosts costs, const std::vector<LayerModule>& graphed,
                             const HostReplay& replay, const CostModel* cost) {
  HostLaunch h;
  h.per_call = costs.per_call;
  h.per_loop = costs.per_loop;
  h.per_op = costs.per_op;
  h.counts.assign(p.labels.size(), LaunchCount{});
  h.sync_before.assign(p.labels.size(), 0);
  h.inner.assign(p.labels.size(), InnerSync{});
  if (g.kinds.size() > 1) {
    h.kinds = g.kinds.size();
    h.kind_counts.assign(p.labels.size() * h.kinds, LaunchCount{});
    h.kind_sync_before.assign(p.labels.size() * h.kinds, 0);
    h.kind_inner.assign(p.labels.size() * h.kinds, InnerSync{});
  }
  for (size_t l = 0; l < p.labels.size(); ++l) {
    const OpRole role = p.label_roles[l];
    const bool dispatch = role == OpRole::EpAllToAllFwd && dispatch_sync(g);
    for (size_t k = 0; k < g.kinds.size(); ++k) {
      const RoleBlock blocks(role, g.kinds[k], replay);
      const LaunchCount n = role_launches(role, blocks, g.kinds[k], graphed, replay);
      const bool sync = dispatch || (role == OpRole::MlpFwd && eager_moe_sync(g.kinds[k])) ||
                        (role == OpRole::RecomputeSelective && dispatch_sync(g) && replays_dispatch(replay, g.kinds[k]));
      const InnerSync in = cost && blocks.get() ? block_sync(*blocks.get(), graphed, *cost) : InnerSync{};
      if (h.time_of(n) > h.time_of(h.counts[l])) {
        h.counts[l] = n;
        h.inner[l] = in;
      }
      h.sync_before[l] = h.sync_before[l] || sync;
      if (h.kinds > 0) {
        h.kind_counts[l * h.kinds + k] = n;
        h.kind_sync_before[l * h.kinds + k] = sync;
        h.kind_inner[l * h.kinds + k] = in;
      }
    }
  }
  return h;
}

}  // namespace parasim
