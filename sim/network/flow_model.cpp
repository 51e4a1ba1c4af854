#include "sim/network/flow_model.h"

#include <algorithm>
#include <limits>

namespace parasim {

std::vector<double> maxmin_rates(const std::vector<const std::vector<std::int32_t>*>& paths, const std::vector<double>& capacity) {
  const size_t nf = paths.size();
  std::vector<double> rate(nf, 0.0);
  std::vector<double> cap(capacity);
  std::vector<std::int32_t> count(capacity.size(), 0);
  std::vector<std::vector<std::int32_t>> on_link(capacity.size());
  std::vector<std::int32_t> used;
  for (size_t f = 0; f < nf; ++f)
    for (auto l : *paths[f]) {
      if (count[static_cast<size_t>(l)]++ == 0) used.push_back(l);
      on_link[static_cast<size_t>(l)].push_back(static_cast<std::int32_t>(f));
    }
  std::vector<char> frozen(nf, 0);
  size_t left = nf;
  for (size_t f = 0; f < nf; ++f)
    if (paths[f]->empty()) {  // a local flow is not limited by any link
      rate[f] = std::numeric_limits<double>::infinity();
      frozen[f] = 1;
      --left;
    }
  while (left > 0) {
    // The bottleneck: the link offering the smallest fair share to its unfrozen flows.
    double best = std::numeric_limits<double>::infinity();
    std::int32_t bl = -1;
    for (auto l : used) {
      const auto i = static_cast<size_t>(l);
      if (count[i] == 0) continue;
      const double share = std::max(0.0, cap[i]) / count[i];
      if (share < best) {
        best = share;
        bl = l;
      }
    }
    if (bl < 0) break;
    for (auto f : on_link[static_cast<size_t>(bl)]) {
      const auto fi = static_cast<size_t>(f);
      if (frozen[fi]) continue;
      frozen[fi] = 1;
      --left;
      rate[fi] = best;
      for (auto l : *paths[fi]) {
        cap[static_cast<size_t>(l)] -= best;
        --count[static_cast<size_t>(l)];
      }
    }
  }
  return rate;
}

FlowRun run_flows(const std::vector<Flow>& flows, const std::vector<double>& link_gbps) {
  FlowRun out;
  const size_t n = flows.size();
  out.finish_s.assign(n, 0.0);
  std::vector<double> cap(link_gbps.size());
  for (size_t i = 0; i < cap.size(); ++i) cap[i] = link_gbps[i] * 1e9;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return flows[a].start_s < flows[b].start_s; });
  std::vector<double> remaining(n);
  for (size_t i = 0; i < n; ++i) remaining[i] = flows[i].bytes;
  std::vector<size_t> active;
  size_t next = 0;
  double t = 0;
  while (next < n || !active.empty()) {
    if (active.empty()) t = std::max(t, flows[order[next]].start_s);
    while (next < n && flows[order[next]].start_s <= t) {
      const size_t f = order[next++];
      if (remaining[f] <= 0) out.finish_s[f] = t;
      else active.push_back(f);
    }
    if (active.empty()) continue;
    std::vector<const std::vector<std::int32_t>*> paths;
    for (auto f : active) paths.push_back(&flows[f].links);
    const std::vector<double> rate = maxmin_rates(paths, cap);
    ++out.recomputations;
    double dt = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < active.size(); ++i) dt = std::min(dt, remaining[active[i]] / rate[i]);
    if (next < n) dt = std::min(dt, flows[order[next]].start_s - t);
    t += dt;
    std::vector<size_t> still;
    for (size_t i = 0; i < active.size(); ++i) {
      const size_t f = active[i];
      remaining[f] -= rate[i] * dt;
      if (remaining[f] <= flows[f].bytes * 1e-12 || !(rate[i] < std::numeric_limits<double>::infinity())) out.finish_s[f] = t;
      else still.push_back(f);
    }
    active.swap(still);
  }
  for (double f : out.finish_s) out.makespan_s = std::max(out.makespan_s, f);
  return out;
}

}  // namespace parasim
