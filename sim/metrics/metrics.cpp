#include "sim/metrics/metrics.h"

#include <algorithm>
#include <array>

namespace parasim {

namespace {

using Intervals = std::vector<std::pair<Time, Time>>;

// Sorts (a stream's intervals come in program order, which is start order: then a no-op) and merges
// overlapping intervals in place, dropping empty ones.
void merge(Intervals& iv) {
  if (!std::is_sorted(iv.begin(), iv.end())) std::sort(iv.begin(), iv.end());
  size_t n = 0;
  for (const auto& x : iv) {
    if (x.second <= x.first) continue;
    if (n > 0 && x.first <= iv[n - 1].second) iv[n - 1].second = std::max(iv[n - 1].second, x.second);
    else iv[n++] = x;
  }
  iv.resize(n);
}

// The first interval of b from j on that ends after s; b merged, so its ends rise. A galloping
// search: one step where a's intervals fall between neighbours of b, O(log gap) across the long
// runs of compute intervals between two of a rank's sparse communication intervals.
size_t first_ending_after(const Intervals& b, size_t j, Time s) {
  if (j >= b.size() || b[j].second > s) return j;
  size_t at = j, step = 1;  // b[at] ends at or before s
  while (at + step < b.size() && b[at + step].second <= s) {
    at += step;
    step *= 2;
  }
  const auto first = b.begin() + static_cast<std::ptrdiff_t>(at + 1);
  const auto last = b.begin() + static_cast<std::ptrdiff_t>(std::min(at + step, b.size()));
  return static_cast<size_t>(std::upper_bound(first, last, s, [](Time v, const std::pair<Time, Time>& x) { return v < x.second; }) - b.begin());
}

// Length of (a \ b) within [lo, hi); both merged.
double minus_length(const Intervals& a, const Intervals& b, Time lo, Time hi) {
  double total = 0;
  size_t j = 0;
  for (const auto& x : a) {
    Time s = std::max(x.first, lo), e = std::min(x.second, hi);
    if (e <= s) continue;
    Time covered = 0;
    j = first_ending_after(b, j, s);
    for (size_t k = j; k < b.size() && b[k].first < e; ++k)
      covered += std::min(e, b[k].second) - std::max(s, b[k].first);
    total += static_cast<double>(e - s - covered);
  }
  return total;
}

bool pipeline_work(Phase ph) {
  return ph == Phase::Forward || ph == Phase::Backward || ph == Phase::WeightGrad || ph == Phase::Recompute;
}

enum Kind { kTp, kDp, kPp, kEp, kCp, kKinds };

int kind_of(Phase ph) {
  switch (ph) {
    case Phase::TpComm: return kTp;
    case Phase::DpComm: case Phase::FsdpGather: return kDp;
    case Phase::PpComm: return kPp;
    case Phase::EpComm: return kEp;
    case Phase::CpComm: return kCp;
    default: return -1;
  }
}

// Measure of a merged set of intervals within [lo, hi).
double merged_length(const Intervals& iv, Time lo, Time hi) {
  double total = 0;
  for (const auto& x : iv) {
    const Time s = std::max(x.first, lo), e = std::min(x.second, hi);
    if (e > s) total += static_cast<double>(e - s);
  }
  return total;
}

// A set of intervals built op by op: while they come in start order (one stream's ops do: a stream
// runs its ops in program order) each is joined to the last when they touch, so the set is already
// merged; one out of order leaves the rest to merge() (the union, and so the merged set, is the same).
struct IntervalSet {
  Intervals iv;
  bool ordered = true;
  void add(std::pair<Time, Time> x) {
    if (x.second <= x.first) return;
    if (ordered && !iv.empty()) {
      auto& last = iv.back();
      if (x.first < last.first) ordered = false;
      else if (x.first <= last.second) {
        last.second = std::max(last.second, x.second);
        return;
      }
    }
    iv.push_back(x);
  }
  void finish() {
    if (!ordered) merge(iv);
  }
};

// One rank's intervals, each set merged once the ops have been read.
struct RankIntervals {
  IntervalSet compute;       // compute stream
  IntervalSet comm;          // communication streams (not the copy stream)
  IntervalSet own_comm;      // the collective stream
  IntervalSet compute_work;  // compute stream, communication phases left out
  std::array<IntervalSet, kKinds> comm_kind;  // communication streams, by kind
  std::array<double, kKinds> on_compute{};  // seconds of each kind's communication run on the compute stream
  void add(Stream stream, Phase phase, std::pair<Time, Time> iv) {
    const int k = kind_of(phase);
    if (stream == Stream::Compute) {
      compute.add(iv);
      if (k < 0) compute_work.add(iv);
      else on_compute[static_cast<size_t>(k)] += time_to_seconds(iv.second - iv.first);
    } else if (stream != Stream::Copy) {
      comm.add(iv);
      if (stream == Stream::Comm) own_comm.add(iv);
      if (k >= 0) comm_kind[static_cast<size_t>(k)].add(iv);
    }
  }
  // The compute stream waiting on the host (Timeline::host_wait_before/within): busy, for no kind of
  // communication, so the communication beside it is not what the stream waits on.
  void add_host_wait(std::pair<Time, Time> iv) {
    if (iv.second <= iv.first) return;
    compute.add(iv);
    compute_work.add(iv);
  }
  void merge_all() {
    for (IntervalSet* s : {&compute, &comm, &own_comm, &compute_work}) s->finish();
    for (IntervalSet& s : comm_kind) s.finish();
  }
};

// Each kind's communication outside every compute interval, |comm \ compute| in whole picoseconds,
// plus what ran on the compute stream; mean over GPUs.
ExposedComm exposed_of(const Program& p, const std::vector<RankIntervals>& ranks, Time makespan) {
  std::array<double, kKinds> sum{};
  double gpus = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const double w = static_cast<double>(p.ranks[r].count);
    gpus += w;
    for (size_t k = 0; k < kKinds; ++k) {
      const Intervals& c = ranks[r].comm_kind[k].iv;
      const double outside = c.empty() ? 0.0 : minus_length(c, ranks[r].compute_work.iv, 0, makespan);
      sum[k] += w * (time_to_seconds(static_cast<Time>(outside)) + ranks[r].on_compute[k]);
    }
  }
  if (gpus <= 0) return {};
  return {sum[kTp] / gpus, sum[kDp] / gpus, sum[kPp] / gpus, sum[kEp] / gpus, sum[kCp] / gpus};
}

// The step's FLOPs, summed op by op in program order (floating-point sums in one order).
struct Flops {
  double model = 0, hw = 0, reported = 0;
  void add(Phase ph, double model_flops, double hw_flops) {
    if (ph != Phase::Recompute) model += model_flops;  // a replay's FLOPs are not the model's (MFU)
    reported += model_flops;
    hw += hw_flops;
  }
};

// The pipeline window: from the first to the last pipeline work on any compute stream.
struct Window {
  Time lo, hi;
  void add(std::pair<Time, Time> iv) {
    lo = std::min(lo, iv.first);
    hi = std::max(hi, iv.second);
  }
};

// A fused op's segments, each as the op it stands for: its FLOPs (a segment without any adds
// nothing to the sums), phase, communication on the compute stream or compute work, and window.
// The compute stream's busy set takes the op whole: its segments follow one another without a gap.
// Communication overlapped in closed form under an op (HiddenComm) counts in its phase, as the
// collectives on the other streams do.
void add_hidden(std::array<Time, kPhases>& phase, const HiddenComm& h) {
  phase[static_cast<size_t>(Phase::TpComm)] += h.tp;
  phase[static_cast<size_t>(Phase::EpComm)] += h.ep;
}

void add_fused(const Program& p, const Op& op, Time start, const Time* seg_ends, double count, Flops& flops,
               std::array<Time, kPhases>& phase, RankIntervals& iv, Window& window) {
  const Time end = each_segment(p, op, start, seg_ends, [&](const Segment& s, Time from, Time to) {
    if (s.model_flops != 0 || s.hw_flops != 0) flops.add(s.phase, s.model_flops * count, s.hw_flops * count);
    phase[static_cast<size_t>(s.phase)] += to - from;
    add_hidden(phase, s.hidden);
    if (const int k = kind_of(s.phase); k >= 0) iv.on_compute[static_cast<size_t>(k)] += time_to_seconds(to - from);
    else iv.compute_work.add({from, to});
    if (pipeline_work(s.phase)) window.add({from, to});
  });
  iv.compute.add({start, end});
}
}  // namespace

double union_length(Intervals iv, Time lo, Time hi) {
  merge(iv);
  return merged_length(iv, lo, hi);
}

namespace {

// What the ops of a step add up to, per simulated rank: their intervals by stream, time by phase and
// host waits, with the FLOPs and the pipeline window over all of them.
struct OpSums {
  std::vector<RankIntervals> ivs;
  std::vector<std::array<Time, kPhases>> phase;
  std::vector<Time> host_wait;
  Flops flops;
  Window window;
};

// Each op, and each segment of a fused op as the op it stands for, in program order (the FLOPs'
// sums in one order).
OpSums sum_ops(const Program& p, const Timeline& t) {
  const size_t nr = p.ranks.size();
  OpSums o{std::vector<RankIntervals>(nr), std::vector<std::array<Time, kPhases>>(nr), std::vector<Time>(nr, 0), Flops{}, Window{t.makespan, 0}};
  for (auto& a : o.phase) a.fill(0);
  std::vector<double> count(nr);  // real GPUs per simulated rank
  for (size_t r = 0; r < nr; ++r) count[r] = static_cast<double>(p.ranks[r].count);
  const Time* starts = t.start.data();
  const Time* ends = t.end.data();
  const Time* seg_ends = t.seg_end.data();
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    const auto r = static_cast<size_t>(op.rank);
    if (op.seg_count > 0) {
      add_fused(p, op, starts[i], seg_ends, count[r], o.flops, o.phase[r], o.ivs[r], o.window);
      seg_ends += op.seg_count;
      continue;
    }
    // A compute-stream op's wait on the host: before its start, and after its work within its span.
    const HostWait hw = host_wait_of(t, op, i);
    const std::pair<Time, Time> iv{starts[i], ends[i] - hw.within};
    o.flops.add(op.phase, op.model_flops * count[r], op.hw_flops * count[r]);
    o.phase[r][static_cast<size_t>(op.phase)] += iv.second - iv.first;
    add_hidden(o.phase[r], op.hidden);
    o.host_wait[r] += hw.before + hw.within;
    o.ivs[r].add(op.stream, op.phase, iv);
    o.ivs[r].add_host_wait({starts[i] - hw.before, starts[i]});
    o.ivs[r].add_host_wait({iv.second, ends[i]});
    if (op.stream == Stream::Compute && pipeline_work(op.phase)) o.window.add({starts[i] - hw.before, ends[i]});
  }
  for (RankIntervals& r : o.ivs) r.merge_all();
  return o;
}

// One simulated rank's figures: memory at its peak, compute, exposed communication, idle time and
// its pipeline bubble inside the window.
RankResult rank_result(const Program& p, const Timeline& t, const OpSums& o, size_t r, double step_s) {
  RankResult rr;
  const Time step = t.makespan;
  const SimRank& sr = p.ranks[r];
  rr.rank = sr.real_rank;
  rr.count = sr.count;
  rr.stage = sr.stage;
  rr.role = sr.role;
  const RankMemory& rm = t.memory[r];
  rr.peak_mem_gib = bytes_to_gib(static_cast<double>(rm.peak));
  rr.peak_time_s = time_to_seconds(rm.peak_time);
  for (int c = 0; c < kMemCats; ++c) rr.mem_breakdown_gib[static_cast<size_t>(c)] = bytes_to_gib(static_cast<double>(rm.at_peak[static_cast<size_t>(c)]));
  Bytes reserved = 0;
  for (Bytes b : rm.high_water) reserved += b;
  rr.reserved_gib = bytes_to_gib(static_cast<double>(reserved));
  const Intervals& cm = o.ivs[r].compute.iv;
  const Intervals& co = o.ivs[r].comm.iv;
  const Intervals& own = o.ivs[r].own_comm.iv;
  rr.compute_s = time_to_seconds(static_cast<Time>(merged_length(cm, 0, step)));
  rr.comm_exposed_s = time_to_seconds(static_cast<Time>(minus_length(co, cm, 0, step)));
  rr.idle_s = std::max(0.0, step_s - rr.compute_s - rr.comm_exposed_s);
  const Time win_lo = o.window.lo, win_hi = o.window.hi;
  if (win_hi > win_lo) {
    // Pipeline bubble: compute-stream idle time inside the pipeline window that is not spent
    // waiting for this rank's own (data-parallel / sharding / context-parallel) communication.
    const double busy = merged_length(cm, win_lo, win_hi);
    const double own_wait = minus_length(own, cm, win_lo, win_hi);
    const double len = static_cast<double>(win_hi - win_lo);
    rr.bubble_fraction = std::max(0.0, (len - busy - own_wait) / len);
  }
  for (int ph = 0; ph < kPhases; ++ph) rr.phase_s[static_cast<size_t>(ph)] = time_to_seconds(o.phase[r][static_cast<size_t>(ph)]);
  return rr;
}

}  // namespace

Result compute_metrics(const MetricsInput& in, const Program& p, const Timeline& t) {
  Result res;
  res.scenario = in.scenario;
  res.ops = p.op_count();
  res.events = t.events;
  const Time step = t.makespan;
  res.step_time_s = time_to_seconds(step);
  const OpSums o = sum_ops(p, t);
  double gpus_total = 0, bubble_sum = 0;
  std::array<double, kPhases> phase_mean{};
  double exposed_mean = 0, idle_mean = 0, host_wait_mean = 0;
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    RankResult rr = rank_result(p, t, o, r, res.step_time_s);
    const double w = static_cast<double>(p.ranks[r].count);
    gpus_total += w;
    bubble_sum += w * rr.bubble_fraction;
    exposed_mean += w * rr.comm_exposed_s;
    host_wait_mean += w * time_to_seconds(o.host_wait[r]);
    idle_mean += w * rr.idle_s;
    for (int ph = 0; ph < kPhases; ++ph) phase_mean[static_cast<size_t>(ph)] += w * rr.phase_s[static_cast<size_t>(ph)];
    res.peak_mem_gib = std::max(res.peak_mem_gib, rr.peak_mem_gib);
    res.reserved_gib = std::max(res.reserved_gib, rr.reserved_gib);
    res.ranks.push_back(std::move(rr));
  }
  if (gpus_total > 0) {
    res.bubble_fraction = bubble_sum / gpus_total;
    for (int ph = 0; ph < kPhases; ++ph)
      res.breakdown[std::string(phase_name(static_cast<Phase>(ph))) + "_s"] = phase_mean[static_cast<size_t>(ph)] / gpus_total;
    res.breakdown["comm_exposed_s"] = exposed_mean / gpus_total;
    res.breakdown["idle_s"] = idle_mean / gpus_total;
    if (!t.host_wait_before.empty()) res.breakdown[kHostWaitKey] = host_wait_mean / gpus_total;
  }
  if (o.window.hi > o.window.lo) res.window_s = time_to_seconds(o.window.hi - o.window.lo);
  res.exposed = exposed_of(p, o.ivs, step);
  res.tokens_per_s = step > 0 ? in.tokens_per_step / res.step_time_s : 0;
  const double denom = res.step_time_s * static_cast<double>(in.gpus);
  res.tflops_per_gpu = denom > 0 ? o.flops.model / denom / 1e12 : 0;
  res.mfu = denom > 0 ? o.flops.model / denom / in.peak_flops : 0;
  res.hfu = denom > 0 ? o.flops.hw / denom / in.peak_flops : 0;
  res.hfu_reported = denom > 0 ? o.flops.reported / denom / in.peak_flops : 0;
  res.capacity_gib = bytes_to_gib(in.capacity_bytes);
  res.fits_in_memory = res.peak_mem_gib <= res.capacity_gib;
  return res;
}

}  // namespace parasim
