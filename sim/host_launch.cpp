#include "sim/host_launch.h"

#include <algorithm>
#include <stdexcept>

namespace parasim {

void add_host_issue(Program& p, const HostLaunch& h) {
  if (h.counts.size() != p.labels.size() || h.sync_before.size() != p.labels.size())
    throw std::logic_error("host launch counts not one per label");
  const size_t nr = p.ranks.size();
  std::vector<OpId> gate(nr, -1), prev(nr, -1);
  std::vector<Time> lag(nr, 0);
  p.host.assign(p.ops.size(), HostIssue{});
  for (size_t i = 0; i < p.ops.size(); ++i) {
    Op& op = p.ops[i];
    const auto r = static_cast<size_t>(op.rank);
    if (h.syncs_before(op) && prev[r] >= 0) {
      gate[r] = prev[r];
      lag[r] = 0;
    }
    HostIssue& hi = p.host[i];
    hi.gate = gate[r];
    hi.first = lag[r] + h.first_of(h.count(op));
    lag[r] += h.issue_time(op);
    hi.last = lag[r];
    const OpId g = gate[r];
    if (g >= 0 && p.ops[static_cast<size_t>(g)].stream != op.stream && std::find(op.deps.begin(), op.deps.end(), g) == op.deps.end())
      op.deps.push_back(g);
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

LaunchCount block_launches(const Block& b, const std::vector<LayerModule>& graphed) {
  LaunchCount n;
  bool graph_open = false;  // the previous kernel was graphed: this one is in the same replay
  for (const Kernel& k : b.kernels) {
    if (std::find(graphed.begin(), graphed.end(), k.module) != graphed.end()) {
      if (!graph_open) n += {1, 1};
      graph_open = true;
      continue;
    }
    graph_open = false;
    const std::int64_t launches = std::max<std::int64_t>(1, k.launches);
    n += k.python_ops ? LaunchCount{0, launches, launches} : LaunchCount{1, launches, 0};
  }
  return n;
}

namespace {

// Whether a selective recompute replays an MoE layer's dispatcher with expert parallelism (the "moe"
// module): its all-to-alls run again, and so does the dispatcher's wait for the token counts.
bool replays_dispatch(const HostReplay& replay, const LayerGraph& k) {
  return replay.modules.has(RecomputeModule::Moe) && k.shape.ep > 1 &&
         std::any_of(k.mlp_fwd.kernels.begin(), k.mlp_fwd.kernels.end(), [](const Kernel& x) { return x.module == LayerModule::TokenDispatch; });
}

// The blocks an op of each role runs (the emitter's op_labels.h); an op of no listed role is one
// call of one launch.
LaunchCount role_launches(OpRole role, const LayerGraph& g, const std::vector<LayerModule>& graphed, const HostReplay& replay) {
  auto n = [&](const Block& b) { return block_launches(b, graphed); };
  switch (role) {
    case OpRole::EmbeddingFwd: return n(g.embed_fwd);
    case OpRole::EmbeddingBwd: return n(g.embed_bwd);
    case OpRole::AttnFwd: case OpRole::MtpAttnFwd: return n(g.attn_fwd);
    case OpRole::AttnBwd: case OpRole::MtpAttnBwd: return n(g.attn_bwd);
    case OpRole::MlpFwd: case OpRole::MtpMlpFwd: return n(g.mlp_fwd);
    case OpRole::MlpBwd: case OpRole::MtpMlpBwd: return n(g.mlp_bwd);
    case OpRole::HeadFwd: case OpRole::MtpHeadFwd: return n(g.head_fwd);
    case OpRole::HeadBwd: case OpRole::MtpHeadBwd: return n(g.head_bwd);
    case OpRole::MtpFwd: return n(g.mtp_fwd);
    case OpRole::MtpBwd: return n(g.mtp_bwd);
    case OpRole::RecomputeFwd: {
      LaunchCount both = n(g.attn_fwd);
      return both += n(g.mlp_fwd);
    }
    case OpRole::RecomputeSelective: {
      LaunchCount c = n(replayed_kernels(g, replay.modules, replay.fused_attention));
      if (replays_dispatch(replay, g)) c += {2, 2};  // the replayed dispatch and combine all-to-alls
      return c;
    }
    case OpRole::TrainMetrics: return n(g.metrics);
    default: return {1, 1};
  }
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
                             const HostReplay& replay) {
  HostLaunch h;
  h.per_call = costs.per_call;
  h.per_loop = costs.per_loop;
  h.per_op = costs.per_op;
  h.counts.assign(p.labels.size(), LaunchCount{});
  h.sync_before.assign(p.labels.size(), 0);
  if (g.kinds.size() > 1) {
    h.kinds = g.kinds.size();
    h.kind_counts.assign(p.labels.size() * h.kinds, LaunchCount{});
    h.kind_sync_before.assign(p.labels.size() * h.kinds, 0);
  }
  for (size_t l = 0; l < p.labels.size(); ++l) {
    const OpRole role = p.label_roles[l];
    const bool dispatch = role == OpRole::EpAllToAllFwd && dispatch_sync(g);
    for (size_t k = 0; k < g.kinds.size(); ++k) {
      const LaunchCount n = role_launches(role, g.kinds[k], graphed, replay);
      const bool sync = dispatch || (role == OpRole::MlpFwd && eager_moe_sync(g.kinds[k])) ||
                        (role == OpRole::RecomputeSelective && dispatch_sync(g) && replays_dispatch(replay, g.kinds[k]));
      if (h.time_of(n) > h.time_of(h.counts[l])) h.counts[l] = n;
      h.sync_before[l] = h.sync_before[l] || sync;
      if (h.kinds > 0) {
        h.kind_counts[l * h.kinds + k] = n;
        h.kind_sync_before[l * h.kinds + k] = sync;
      }
    }
  }
  return h;
}

}  // namespace parasim
