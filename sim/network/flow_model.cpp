#include "sim/network/flow_model.h"

#include <algorithm>
#include <limits>

namespace parasim {

std::vector<double> maxmin_rates(const std::vector<const std::vector<std::int32_t>*>& paths, const std::vector<double>& capacity) {
  const size_t nf = paths.size();
  std::vector<double> rate(nf, 0.0);
  // The links in use, in order of first use (a link's position breaks ties between equal shares),
  // with their capacity left, their unfrozen flows and those flows (in flow order).
  std::vector<std::int32_t> slot(capacity.size(), -1);
  std::vector<std::int32_t> used, count;
  for (size_t f = 0; f < nf; ++f)
    for (auto l : *paths[f]) {
      auto& s = slot[static_cast<size_t>(l)];
      if (s < 0) {
        s = static_cast<std::int32_t>(used.size());
        used.push_back(l);
        count.push_back(0);
      }
      ++count[static_cast<size_t>(s)];
    }
  const size_t nu = used.size();
  std::vector<double> cap(nu);
  for (size_t s = 0; s < nu; ++s) cap[s] = capacity[static_cast<size_t>(used[s])];
  std::vector<std::int32_t> begin(nu + 1, 0);
  for (size_t s = 0; s < nu; ++s) begin[s + 1] = begin[s] + count[s];
  std::vector<std::int32_t> on(static_cast<size_t>(begin[nu]));
  {
    std::vector<std::int32_t> fill(begin.begin(), begin.end() - 1);
    for (size_t f = 0; f < nf; ++f)
      for (auto l : *paths[f]) on[static_cast<size_t>(fill[static_cast<size_t>(slot[static_cast<size_t>(l)])]++)] = static_cast<std::int32_t>(f);
  }
  std::vector<char> frozen(nf, 0);
  size_t left = nf;
  for (size_t f = 0; f < nf; ++f)
    if (paths[f]->empty()) {  // a local flow is not limited by any link
      rate[f] = std::numeric_limits<double>::infinity();
      frozen[f] = 1;
      --left;
    }
  // The bottleneck is the link offering the smallest fair share to its unfrozen flows, the first in
  // use among equals: a heap keyed by (share, position), entries of changed links left stale.
  struct Entry {
    double share;
    std::int32_t pos;
    std::uint32_t version;
  };
  auto later = [](const Entry& a, const Entry& b) { return a.share != b.share ? a.share > b.share : a.pos > b.pos; };
  std::vector<Entry> heap;
  std::vector<std::uint32_t> version(nu, 0);
  auto share = [&](size_t s) { return std::max(0.0, cap[s]) / count[s]; };
  for (size_t s = 0; s < nu; ++s) heap.push_back({share(s), static_cast<std::int32_t>(s), 0});
  std::make_heap(heap.begin(), heap.end(), later);
  std::vector<std::int32_t> touched;
  std::vector<char> is_touched(nu, 0);
  while (left > 0) {
    while (!heap.empty()) {
      const Entry& top = heap.front();
      const auto s = static_cast<size_t>(top.pos);
      if (top.version == version[s] && count[s] > 0) break;
      std::pop_heap(heap.begin(), heap.end(), later);
      heap.pop_back();
    }
    if (heap.empty() || !(heap.front().share < std::numeric_limits<double>::infinity())) break;
    const double best = heap.front().share;
    const auto bs = static_cast<size_t>(heap.front().pos);
    std::pop_heap(heap.begin(), heap.end(), later);
    heap.pop_back();
    for (std::int32_t k = begin[bs]; k < begin[bs + 1]; ++k) {
      const auto fi = static_cast<size_t>(on[static_cast<size_t>(k)]);
      if (frozen[fi]) continue;
      frozen[fi] = 1;
      --left;
      rate[fi] = best;
      for (auto l : *paths[fi]) {
        const auto s = static_cast<size_t>(slot[static_cast<size_t>(l)]);
        cap[s] -= best;
        --count[s];
        if (!is_touched[s]) {
          is_touched[s] = 1;
          touched.push_back(static_cast<std::int32_t>(s));
        }
      }
    }
    for (auto t : touched) {
      const auto s = static_cast<size_t>(t);
      is_touched[s] = 0;
      ++version[s];
      if (count[s] > 0) {
        heap.push_back({share(s), t, version[s]});
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
    touched.clear();
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
