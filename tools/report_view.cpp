#include "tools/report_view.h"

#include "tools/report.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace parasim {

const char* span_kind_name(int kind) {
  if (kind == kSpanBubble) return "bubble (idle)";
  if (kind == kSpanExposed) return "exposed comm";
  return phase_name(static_cast<Phase>(kind));
}

namespace {

using Intervals = std::vector<std::pair<double, double>>;

Intervals merged(Intervals iv) {
  std::sort(iv.begin(), iv.end());
  Intervals out;
  for (const auto& x : iv) {
    if (x.second <= x.first) continue;
    if (!out.empty() && x.first <= out.back().second) out.back().second = std::max(out.back().second, x.second);
    else out.push_back(x);
  }
  return out;
}

// The compute stream's idle gaps in [0, step), split into exposed communication (own comm or
// pipeline transfers running) and bubbles (nothing of its own running).
std::vector<Span> idle_spans(const Intervals& busy, const Intervals& comm, double step) {
  std::vector<Span> out;
  double t = 0;
  auto gap = [&](double a, double b) {
    double at = a;
    for (const auto& c : comm) {
      if (c.second <= at || c.first >= b) continue;
      if (c.first > at) out.push_back({at, c.first, kSpanBubble});
      out.push_back({std::max(at, c.first), std::min(b, c.second), kSpanExposed});
      at = std::min(b, c.second);
    }
    if (at < b) out.push_back({at, b, kSpanBubble});
  };
  for (const auto& b : busy) {
    if (b.first > t) gap(t, b.first);
    t = std::max(t, b.second);
  }
  if (t < step) gap(t, step);
  return out;
}

// Per column, the kinds that held at least an eighth of its time, each as a band of the lane's
// height in quarters by its share: (kind, quarters) from the top.
using Column = std::vector<std::pair<int, int>>;
Column column_bands(const std::array<double, kSpanKinds>& share) {
  double total = 0;
  for (double x : share) total += x;
  Column c;
  if (total <= 0) return c;
  std::vector<std::pair<double, int>> order;
  for (int k = 0; k < kSpanKinds; ++k)
    if (share[static_cast<size_t>(k)] >= total / 8) order.emplace_back(share[static_cast<size_t>(k)], k);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  double kept = 0;
  for (const auto& o : order) kept += o.first;
  int left = 4;
  for (size_t i = 0; i < order.size() && left > 0; ++i) {
    const int q = i + 1 == order.size() ? left : std::clamp(static_cast<int>(std::lround(4 * order[i].first / kept)), 1, left);
    c.emplace_back(order[i].second, q);
    left -= q;
  }
  return c;
}

// Adjacent spans of one kind less than `q` apart become one; if more than `cap` remain, the lane
// is drawn as `bins` columns, each split in height between the kinds that filled it.
std::vector<Span> aggregate(std::vector<Span> s, double q, size_t cap, int bins, double step) {
  std::sort(s.begin(), s.end(), [](const Span& a, const Span& b) { return a.t0 < b.t0; });
  std::vector<Span> out;
  for (const Span& x : s) {
    if (!out.empty() && out.back().kind == x.kind && x.t0 - out.back().t1 <= q) out.back().t1 = std::max(out.back().t1, x.t1);
    else out.push_back(x);
  }
  if (out.size() <= cap || step <= 0) return out;
  std::vector<std::array<double, kSpanKinds>> share(static_cast<size_t>(bins));
  for (auto& a : share) a.fill(0);
  const double w = step / bins;
  for (const Span& x : out)
    for (int b = std::max(0, static_cast<int>(x.t0 / w)); b < bins && b * w < x.t1; ++b)
      share[static_cast<size_t>(b)][static_cast<size_t>(x.kind)] += std::min(x.t1, (b + 1) * w) - std::max(x.t0, b * w);
  std::vector<Span> binned;
  Column last;
  size_t first_of_last = 0;
  for (int b = 0; b < bins; ++b) {
    const Column c = column_bands(share[static_cast<size_t>(b)]);
    if (!c.empty() && c == last && binned.size() > first_of_last && binned.back().t1 >= b * w - 1e-15 * step) {
      for (size_t i = first_of_last; i < binned.size(); ++i) binned[i].t1 = (b + 1) * w;  // widen the previous column's bands
      continue;
    }
    first_of_last = binned.size();
    int at = 0;
    for (const auto& [kind, quarters] : c) {
      binned.push_back({b * w, (b + 1) * w, kind, at / 4.0, (at + quarters) / 4.0});
      at += quarters;
    }
    last = c;
  }
  return binned;
}

std::vector<std::pair<double, double>> memory_curve(const RankMemory& m, double q) {
  // Per drawn column keep the first, the lowest and the highest sample: the shape stays, the peak stays.
  std::vector<std::pair<double, double>> out;
  long col = -1;
  double lo = 0, hi = 0, t_lo = 0, t_hi = 0;
  auto flush = [&]() {
    if (col < 0) return;
    if (t_lo <= t_hi) out.insert(out.end(), {{t_lo, lo}, {t_hi, hi}});
    else out.insert(out.end(), {{t_hi, hi}, {t_lo, lo}});
  };
  for (const MemSample& s : m.curve) {
    const double t = time_to_seconds(s.t), g = bytes_to_gib(static_cast<double>(s.total));
    const long c = q > 0 ? static_cast<long>(t / q) : 0;
    if (c != col) {
      flush();
      col = c;
      lo = hi = g;
      t_lo = t_hi = t;
    }
    if (g < lo) lo = g, t_lo = t;
    if (g > hi) hi = g, t_hi = t;
  }
  flush();
  return out;
}

std::vector<std::pair<std::string, std::string>> summary_rows(const Scenario& sc, const Result& r) {
  const auto& p = sc.parallel;
  return {{"model", fmt::format("{} ({:.2f}B parameters)", sc.model.name, count_params(sc.model).total() / 1e9)},
          {"cluster", fmt::format("{} x {} GPUs ({})", sc.cluster.nodes, sc.cluster.gpus_per_node, sc.profile.device.name)},
          {"layout", fmt::format("dp {} tp {} pp {} vpp {} cp {} ep {}, schedule {}{}", p.dp, p.tp, p.pp, p.vpp, p.cp, p.ep, name_of(p.schedule),
                                 p.zero_stage ? fmt::format(", ZeRO-{}", p.zero_stage) : "")},
          {"batch", fmt::format("global {} x seq {}, micro batch {}, {} microbatches, {}, recompute {}", sc.training.global_batch,
                                sc.training.seq_len, sc.training.micro_batch, sc.microbatches(), name_of(sc.training.dtype), name_of(p.recompute))},
          {"step time", fmt::format("{:.4g} s", r.step_time_s)},
          {"tokens/s", fmt::format("{} ({} per GPU)", rate_text(r.tokens_per_s), rate_text(r.tokens_per_s / static_cast<double>(sc.cluster.gpus())))},
          {"MFU", fmt::format("{:.1f} % (HFU {:.1f} %), {:.1f} TFLOP/s per GPU", 100 * r.mfu, 100 * r.hfu, r.tflops_per_gpu)},
          {"bubble", fmt::format("{:.1f} %", 100 * r.bubble_fraction)},
          {"peak memory", fmt::format("{:.2f} of {:.2f} GiB per GPU{}", r.peak_mem_gib, r.capacity_gib,
                                      r.fits_in_memory ? "" : " - OUT OF MEMORY")}};
}

RankView rank_view(const Program& p, const Timeline& t, size_t r, double step, const ViewLimits& lim) {
  const SimRank& sr = p.ranks[r];
  RankView v;
  v.title = fmt::format("rank {} x{} ({})", sr.real_rank, sr.count, sr.role);
  std::array<std::vector<Span>, kStreams> raw;
  Intervals busy, comm;
  std::array<std::int64_t, kStreams> ops{};
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (static_cast<size_t>(op.rank) != r) continue;
    const double a = time_to_seconds(t.start[i]), b = time_to_seconds(t.end[i]);
    const auto s = static_cast<size_t>(op.stream);
    ++ops[s];
    if (b <= a) continue;
    raw[s].push_back({a, b, static_cast<int>(op.phase)});
    if (op.stream == Stream::Compute) {
      busy.emplace_back(a, b);
      if (op.phase == Phase::TpComm) v.tp_comm_s += b - a;
    } else if (op.stream != Stream::Copy) {
      comm.emplace_back(a, b);
    }
  }
  busy = merged(std::move(busy));
  const std::vector<Span> idle = idle_spans(busy, merged(std::move(comm)), step);
  for (const auto& b : busy) v.compute_s += b.second - b.first;
  for (const Span& s : idle) (s.kind == kSpanExposed ? v.exposed_s : v.bubble_s) += s.t1 - s.t0;
  raw[0].insert(raw[0].end(), idle.begin(), idle.end());
  const double q = step / lim.columns;
  for (int s = 0; s < kStreams; ++s) {
    if (ops[static_cast<size_t>(s)] == 0) continue;
    Lane lane{stream_name(static_cast<Stream>(s)), {}, ops[static_cast<size_t>(s)], 0};
    for (const Span& x : raw[static_cast<size_t>(s)])
      if (x.kind < kPhases) lane.busy_s += x.t1 - x.t0;
    lane.spans = aggregate(std::move(raw[static_cast<size_t>(s)]), q, static_cast<size_t>(lim.columns), lim.columns, step);
    v.lanes.push_back(std::move(lane));
  }
  return v;
}

// The simulated ranks to draw: all of them up to the limit, else evenly spread ones (first and last kept).
std::vector<size_t> ranks_to_draw(size_t n, size_t max) {
  std::vector<size_t> out;
  if (n <= max) {
    for (size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (size_t k = 0; k < max; ++k) out.push_back(k * (n - 1) / (max - 1));
  return out;
}

}  // namespace

StepView step_view(const Scenario& sc, const SimulationOutput& out, const ViewLimits& lim) {
  const Program& p = out.program;
  const Timeline& t = out.timeline;
  const Result& r = out.result;
  StepView v;
  v.scenario = sc.name;
  v.summary = summary_rows(sc, r);
  v.step_s = r.step_time_s;
  v.ops = static_cast<std::int64_t>(p.ops.size());
  v.ranks_total = static_cast<std::int64_t>(p.ranks.size());
  v.capacity_gib = r.capacity_gib;
  const std::vector<size_t> drawn = ranks_to_draw(p.ranks.size(), static_cast<size_t>(lim.max_ranks));
  for (size_t i : drawn) {
    v.ranks.push_back(rank_view(p, t, i, v.step_s, lim));
    for (const Lane& l : v.ranks.back().lanes) v.spans += static_cast<std::int64_t>(l.spans.size());
  }
  // Memory: the ranks with the highest peaks first.
  std::vector<size_t> by_peak(p.ranks.size());
  for (size_t i = 0; i < by_peak.size(); ++i) by_peak[i] = i;
  std::stable_sort(by_peak.begin(), by_peak.end(), [&](size_t a, size_t b) { return t.memory[a].peak > t.memory[b].peak; });
  by_peak.resize(std::min(by_peak.size(), static_cast<size_t>(lim.max_memory_curves)));
  for (size_t i : by_peak) {
    const RankResult& rr = r.ranks[i];
    MemoryView m{fmt::format("rank {} x{} ({})", rr.rank, rr.count, rr.role), memory_curve(t.memory[i], v.step_s / lim.columns),
                 rr.peak_mem_gib, rr.peak_time_s, rr.mem_breakdown_gib};
    v.memory.push_back(std::move(m));
  }
  for (const auto& [k, s] : r.breakdown)
    if (s > 0) v.where_time_goes.emplace_back(k.substr(0, k.size() - 2), s);  // drop "_s"
  std::stable_sort(v.where_time_goes.begin(), v.where_time_goes.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  v.aggregation_note = fmt::format(
      "{} ops on {} simulated ranks drawn as {} rectangles: ops of one kind on one stream less than one pixel ({}) apart are "
      "merged, and a lane with more than {} rectangles is drawn as {} columns, each split in height between the kinds that held "
      "at least an eighth of its time, in quarters by their shares{}.",
      v.ops, v.ranks_total, v.spans, fmt::format("{:.3g} ms", 1e3 * v.step_s / lim.columns), lim.columns, lim.columns,
      drawn.size() < p.ranks.size() ? fmt::format("; {} of the {} simulated ranks are shown, evenly spread", drawn.size(), p.ranks.size())
                                    : "");
  return v;
}

}  // namespace parasim

namespace parasim {

std::optional<double> row_number(const Json& row, const char* key) {
  const auto it = row.find(key);
  if (it == row.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string row_settings(const Json& row) {
  std::string s;
  const auto it = row.find("settings");
  if (it == row.end() || !it->is_object()) return s;
  for (const auto& [k, v] : it->items()) s += (s.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return s;
}

void check_table(const Json& doc, const std::string& file) {
  const auto rows = doc.find("rows");
  if (rows == doc.end() || !rows->is_array()) throw_config(file, "/rows", "expected an array of rows");
  static const char* numbers[] = {"rank", "gpus", "step_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu", "bubble",
                                  "peak_mem_gib", "capacity_gib", "headroom", "recompute_s"};
  for (size_t i = 0; i < rows->size(); ++i) {
    const Json& r = (*rows)[i];
    const std::string at = fmt::format("/rows/{}", i);
    if (!r.is_object()) throw_config(file, at, "expected an object");
    for (const char* k : numbers)
      if (r.contains(k) && !r[k].is_number() && !r[k].is_null()) throw_config(file, at + "/" + k, "expected a number or null");
    for (const char* k : {"status", "reason", "why"})
      if (r.contains(k) && !r[k].is_string()) throw_config(file, at + "/" + k, "expected a string");
    if (r.contains("pareto") && !r["pareto"].is_boolean()) throw_config(file, at + "/pareto", "expected true or false");
    if (r.contains("settings") && !r["settings"].is_object()) throw_config(file, at + "/settings", "expected an object");
  }
  if (const auto c = doc.find("curve"); c != doc.end()) {
    if (!c->is_array()) throw_config(file, "/curve", "expected an array");
    for (size_t i = 0; i < c->size(); ++i) {
      const Json& p = (*c)[i];
      if (!p.is_object()) throw_config(file, fmt::format("/curve/{}", i), "expected an object");
      for (const char* k : {"gpus", "step_s", "days", "gpu_hours", "cost"})
        if (p.contains(k) && !p[k].is_number() && !p[k].is_null())
          throw_config(file, fmt::format("/curve/{}/{}", i, k), "expected a number or null");
    }
  }
}

}  // namespace parasim
