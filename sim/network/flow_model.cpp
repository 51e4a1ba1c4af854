#include "sim/network/flow_model.h"

#include <algorithm>
#include <limits>

namespace parasim {

namespace {

using Paths = std::vector<const std::vector<std::int32_t>*>;

// The links the flows use, in order of first use (a link's position breaks ties between equal
// shares), each with its capacity left, its count of unfrozen flows and those flows (in flow order).
struct LinksInUse {
  std::vector<std::int32_t> slot;   // link id -> position in use, -1 when unused
  std::vector<std::int32_t> count;  // unfrozen flows per position
  std::vector<std::int32_t> begin;  // flows of position s: on[begin[s] .. begin[s + 1])
  std::vector<std::int32_t> on;
  std::vector<double> cap;
  size_t size() const { return cap.size(); }
  size_t pos(std::int32_t link) const { return static_cast<size_t>(slot[static_cast<size_t>(link)]); }
  double share(size_t s) const { return std::max(0.0, cap[s]) / count[s]; }
};

LinksInUse links_in_use(const Paths& paths, const std::vector<double>& capacity) {
  LinksInUse u;
  u.slot.assign(capacity.size(), -1);
  std::vector<std::int32_t> used;
  for (const auto* path : paths)
    for (auto l : *path) {
      auto& s = u.slot[static_cast<size_t>(l)];
      if (s < 0) {
        s = static_cast<std::int32_t>(used.size());
        used.push_back(l);
        u.count.push_back(0);
      }
      ++u.count[static_cast<size_t>(s)];
    }
  const size_t nu = used.size();
  u.cap.resize(nu);
  for (size_t s = 0; s < nu; ++s) u.cap[s] = capacity[static_cast<size_t>(used[s])];
  u.begin.assign(nu + 1, 0);
  for (size_t s = 0; s < nu; ++s) u.begin[s + 1] = u.begin[s] + u.count[s];
  u.on.resize(static_cast<size_t>(u.begin[nu]));
  std::vector<std::int32_t> fill(u.begin.begin(), u.begin.end() - 1);
  for (size_t f = 0; f < paths.size(); ++f)
    for (auto l : *paths[f]) u.on[static_cast<size_t>(fill[u.pos(l)]++)] = static_cast<std::int32_t>(f);
  return u;
}

// The bottleneck is the link offering the smallest fair share to its unfrozen flows, the first in
// use among equals: a heap keyed by (share, position), entries of changed links left stale.
class BottleneckHeap {
 public:
  explicit BottleneckHeap(const LinksInUse& u) : version_(u.size(), 0) {
    for (size_t s = 0; s < u.size(); ++s) heap_.push_back({u.share(s), static_cast<std::int32_t>(s), 0});
    std::make_heap(heap_.begin(), heap_.end(), later);
  }
  // The current bottleneck's position and share; false when no link with flows and a finite share is left.
  bool pop(const LinksInUse& u, size_t& pos, double& share) {
    while (!heap_.empty()) {
      const Entry& top = heap_.front();
      const auto s = static_cast<size_t>(top.pos);
      if (top.version == version_[s] && u.count[s] > 0) break;
      drop_top();
    }
    if (heap_.empty() || !(heap_.front().share < std::numeric_limits<double>::infinity())) return false;
    share = heap_.front().share;
    pos = static_cast<size_t>(heap_.front().pos);
    drop_top();
    return true;
  }
  // Link s's share changed: its older entries go stale.
  void update(const LinksInUse& u, size_t s) {
    ++version_[s];
    if (u.count[s] <= 0) return;
    heap_.push_back({u.share(s), static_cast<std::int32_t>(s), version_[s]});
    std::push_heap(heap_.begin(), heap_.end(), later);
  }

 private:
  struct Entry {
    double share;
    std::int32_t pos;
    std::uint32_t version;
  };
  static bool later(const Entry& a, const Entry& b) { return a.share != b.share ? a.share > b.share : a.pos > b.pos; }
  void drop_top() {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    heap_.pop_back();
  }
  std::vector<Entry> heap_;
  std::vector<std::uint32_t> version_;
};

}  // namespace

std::vector<double> maxmin_rates(const Paths& paths, const std::vector<double>& capacity) {
  const size_t nf = paths.size();
  std::vector<double> rate(nf, 0.0);
  LinksInUse u = links_in_use(paths, capacity);
  std::vector<char> frozen(nf, 0);
  size_t left = nf;
  for (size_t f = 0; f < nf; ++f)
    if (paths[f]->empty()) {  // a local flow is not limited by any link
      rate[f] = std::numeric_limits<double>::infinity();
      frozen[f] = 1;
      --left;
    }
  BottleneckHeap heap(u);
  std::vector<std::int32_t> touched;
  std::vector<char> is_touched(u.size(), 0);
  size_t bs = 0;
  double best = 0;
  // Progressive filling: the bottleneck's unfrozen flows freeze at its share, which their other
  // links then give up.
  while (left > 0 && heap.pop(u, bs, best)) {
    for (std::int32_t k = u.begin[bs]; k < u.begin[bs + 1]; ++k) {
      const auto fi = static_cast<size_t>(u.on[static_cast<size_t>(k)]);
      if (frozen[fi]) continue;
      frozen[fi] = 1;
      --left;
      rate[fi] = best;
      for (auto l : *paths[fi]) {
        const size_t s = u.pos(l);
        u.cap[s] -= best;
        --u.count[s];
        if (!is_touched[s]) {
          is_touched[s] = 1;
          touched.push_back(static_cast<std::int32_t>(s));
        }
      }
    }
    for (auto t : touched) {
      is_touched[static_cast<size_t>(t)] = 0;
      heap.update(u, static_cast<size_t>(t));
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
