#include "sim/host_launch.h"

#include <algorithm>
#include <stdexcept>

namespace parasim {

void add_host_issue(Program& p, const HostLaunch& h) {
  if (h.launches.size() != p.labels.size() || h.sync_before.size() != p.labels.size())
    throw std::logic_error("host launch counts not one per label");
  const size_t nr = p.ranks.size();
  std::vector<OpId> gate(nr, -1), prev(nr, -1);
  std::vector<Time> lag(nr, 0);
  p.host.assign(p.ops.size(), HostIssue{});
  for (size_t i = 0; i < p.ops.size(); ++i) {
    Op& op = p.ops[i];
    const auto r = static_cast<size_t>(op.rank);
    const auto label = static_cast<size_t>(op.label);
    if (h.sync_before[label] && prev[r] >= 0) {
      gate[r] = prev[r];
      lag[r] = 0;
    }
    const std::int64_t n = h.launches[label];
    HostIssue& hi = p.host[i];
    hi.gate = gate[r];
    hi.first = lag[r] + (n > 0 ? h.per_launch : 0);
    lag[r] += n * h.per_launch;
    hi.last = lag[r];
    const OpId g = gate[r];
    if (g >= 0 && p.ops[static_cast<size_t>(g)].stream != op.stream && std::find(op.deps.begin(), op.deps.end(), g) == op.deps.end())
      op.deps.push_back(g);
    prev[r] = static_cast<OpId>(i);
  }
}

}  // namespace parasim

namespace parasim {

std::int64_t block_launches(const Block& b, const std::vector<LayerModule>& graphed) {
  std::int64_t n = 0;
  bool graph_open = false;  // the previous kernel was graphed: this one is in the same replay
  for (const Kernel& k : b.kernels) {
    if (std::find(graphed.begin(), graphed.end(), k.module) != graphed.end()) {
      if (!graph_open) ++n;
      graph_open = true;
      continue;
    }
    graph_open = false;
    n += k.kind == KernelKind::Gemm && k.module == LayerModule::Experts ? k.batch : 1;
  }
  return n;
}

namespace {

// The blocks an op of each lowered label runs (emitter.cpp's labels).
std::int64_t label_launches(const std::string& label, const LayerGraph& g, const std::vector<LayerModule>& graphed) {
  auto n = [&](const Block& b) { return block_launches(b, graphed); };
  if (label == "embedding") return n(g.embed_fwd);
  if (label == "embedding bwd") return n(g.embed_bwd);
  if (label == "attention fwd" || label == "mtp attention fwd") return n(g.attn_fwd);
  if (label == "attention bwd" || label == "mtp attention bwd") return n(g.attn_bwd);
  if (label == "mlp fwd" || label == "mtp mlp fwd") return n(g.mlp_fwd);
  if (label == "mlp bwd" || label == "mtp mlp bwd") return n(g.mlp_bwd);
  if (label == "head fwd" || label == "mtp head fwd") return n(g.head_fwd);
  if (label == "head bwd" || label == "mtp head bwd") return n(g.head_bwd);
  if (label == "mtp fwd") return n(g.mtp_fwd);
  if (label == "mtp bwd") return n(g.mtp_bwd);
  if (label == "recompute fwd") return n(g.attn_fwd) + n(g.mlp_fwd);
  return 1;
}

}  // namespace

std::vector<double> host_issue_s(const Program& p, const HostLaunch& h) {
  std::vector<double> s(p.ranks.size(), 0.0);
  for (const Op& op : p.ops)
    s[static_cast<size_t>(op.rank)] += static_cast<double>(h.launches[static_cast<size_t>(op.label)] * h.per_launch);
  for (double& x : s) x /= static_cast<double>(kPicosPerSecond);
  return s;
}

std::vector<LayerModule> graphed_modules(const std::vector<std::string>& scopes) {
  std::vector<LayerModule> m;
  for (const std::string& s : scopes) {
    if (s == "attn")
      m.insert(m.end(), {LayerModule::QkvProj, LayerModule::MlaProj, LayerModule::MlaUpProj, LayerModule::QkNorm, LayerModule::Rope,
                         LayerModule::MlaQkConcat, LayerModule::CoreAttn, LayerModule::FusedAttn, LayerModule::AttnOut});
    if (s == "moe_router") m.push_back(LayerModule::Router);
  }
  return m;
}

HostLaunch host_launch_model(const Program& p, const ModelGraph& g, Time per_launch, const std::vector<LayerModule>& graphed) {
  HostLaunch h;
  h.per_launch = per_launch;
  h.launches.assign(p.labels.size(), 0);
  h.sync_before.assign(p.labels.size(), 0);
  for (size_t l = 0; l < p.labels.size(); ++l) {
    for (const LayerGraph& k : g.kinds) h.launches[l] = std::max(h.launches[l], label_launches(p.labels[l], k, graphed));
    h.sync_before[l] = p.labels[l] == "ep all-to-all fwd";
  }
  return h;
}

}  // namespace parasim
