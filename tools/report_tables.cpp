#include "tools/report_tables.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

namespace parasim {

namespace {

std::string secs(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}
std::string pct(double part, double whole) { return whole > 0 ? fmt::format("{:.1f} %", 100 * part / whole) : "-"; }
std::string opt_num(const Json& j, const char* key, const char* fmtstr) {
  const auto v = row_number(j, key);
  return v ? fmt::format(fmt::runtime(fmtstr), *v) : "-";
}
// Counts and money: whole numbers below ten million, then "12.3 million" / "1.23 billion".
std::string opt_big(const Json& j, const char* key) {
  const auto v = row_number(j, key);
  if (!v) return "-";
  if (std::abs(*v) >= 1e9) return fmt::format("{:.3g} billion", *v / 1e9);
  if (std::abs(*v) >= 1e7) return fmt::format("{:.3g} million", *v / 1e6);
  return fmt::format("{:.0f}", *v);
}

std::vector<ReportSection> step_sections(const StepView& v) {
  std::vector<ReportSection> out;
  Table summary{"", {"figure", "value"}, {}, {}};
  summary.align_numbers = false;
  for (const auto& [k, val] : v.summary) summary.rows.push_back({k, val});
  out.push_back({"summary", "Prediction", {summary}, ""});
  Table ranks{"time on each simulated rank's compute stream", {"rank", "compute busy", "of it TP comm", "exposed comm", "bubble / idle"}, {}, {}};
  for (const RankView& r : v.ranks)
    ranks.rows.push_back({r.title, fmt::format("{} ({})", secs(r.compute_s), pct(r.compute_s, v.step_s)), secs(r.tp_comm_s),
                          fmt::format("{} ({})", secs(r.exposed_s), pct(r.exposed_s, v.step_s)),
                          fmt::format("{} ({})", secs(r.bubble_s), pct(r.bubble_s, v.step_s))});
  ranks.notes = {"Exposed comm: the compute stream idle while the rank's own data-parallel, sharding, context-parallel or pipeline "
                 "transfers run; bubble: idle with nothing of its own running. TP communication on the critical path runs on the "
                 "compute stream (Megatron's tensor parallel without overlap) and counts as busy.",
                 v.aggregation_note};
  out.push_back({"gantt", "The step, per pipeline stage and stream", {ranks}, "gantt"});
  Table mem{"at each rank's peak (GiB)", {"rank", "peak", "at", "weights", "grads", "optimizer", "activations", "other"}, {}, {}};
  for (const MemoryView& m : v.memory) {
    const auto& b = m.at_peak_gib;
    const double other = b[static_cast<size_t>(MemCat::GatheredParams)] + b[static_cast<size_t>(MemCat::CommBuffers)] +
                         b[static_cast<size_t>(MemCat::Workspace)];
    mem.rows.push_back({m.title, fmt::format("{:.2f}", m.peak_gib), secs(m.peak_s), fmt::format("{:.2f}", b[0]), fmt::format("{:.2f}", b[1]),
                        fmt::format("{:.2f}", b[2]), fmt::format("{:.2f}", b[3]), fmt::format("{:.2f}", other)});
  }
  mem.notes = {fmt::format("capacity {:.2f} GiB per GPU; other = gathered parameters + communication buffers + workspace. "
                           "The {} rank(s) with the highest peaks are shown.",
                           v.capacity_gib, v.memory.size())};
  out.push_back({"memory", "Memory per GPU over the step", {mem}, "memory"});
  Table time{"mean per GPU", {"where", "seconds", "share of the step"}, {}, {}};
  for (const auto& [k, s] : v.where_time_goes) time.rows.push_back({k, secs(s), pct(s, v.step_s)});
  time.notes = {"Compute phases are compute-stream time, communication phases their own stream's time (hidden or not); "
                "comm_exposed and idle are the compute stream's idle time with and without own communication running."};
  out.push_back({"time", "Where the time goes", {time}, "time"});
  return out;
}

ReportSection ttt_section(const Json& t) {
  const Json& band = t.contains("band") ? t["band"] : Json::object();
  const Json& ck = t.contains("checkpoint") ? t["checkpoint"] : Json::object();
  const Json& f = t.contains("failures") ? t["failures"] : Json::object();
  Table tt{"", {"figure", "value", "p10 .. p90 (parasim's model error)"}, {}, {}, false};
  tt.rows.push_back({"tokens / steps", fmt::format("{} / {}", opt_num(t, "tokens", "{:.4g}"), opt_big(t, "steps")), ""});
  tt.rows.push_back({"step time", opt_num(t, "step_s", "{:.4g} s"), ""});
  tt.rows.push_back({"wall clock", opt_num(t, "days", "{:.1f} days"),
                     fmt::format("{} .. {}", opt_num(band, "p10_days", "{:.1f}"), opt_num(band, "p90_days", "{:.1f} days"))});
  tt.rows.push_back({"ideal (no failures, no checkpoints)", opt_num(t, "ideal_days", "{:.1f} days"), ""});
  tt.rows.push_back({"GPU-hours", opt_big(t, "gpu_hours"),
                     fmt::format("{} .. {}", opt_big(band, "p10_gpu_hours"), opt_big(band, "p90_gpu_hours"))});
  tt.rows.push_back({"cost", row_number(t, "cost") ? fmt::format("{} at {} per GPU-hour", opt_big(t, "cost"), opt_num(t, "price_per_gpu_hour", "{:g}"))
                                                   : "- (no --price-per-gpu-hour)",
                     row_number(band, "p10_cost") ? fmt::format("{} .. {}", opt_big(band, "p10_cost"), opt_big(band, "p90_cost")) : ""});
  tt.rows.push_back({"goodput", opt_num(t, "goodput", "{:.3f}"), ""});
  tt.rows.push_back({"unexpected interruptions", fmt::format("{} (one per {} h at {} per GPU-hour)", opt_num(f, "expected_interruptions", "{:.0f}"),
                                                             opt_num(f, "mtbf_h", "{:.3g}"), opt_num(f, "per_gpu_per_hour", "{:.4g}")), ""});
  tt.rows.push_back({"planned interruptions", opt_num(f, "planned_interruptions", "{:.0f}"), ""});
  tt.rows.push_back({"restart, lost work per interruption", fmt::format("{} / {}", opt_num(f, "restart_s", "{:.0f} s"), opt_num(f, "lost_work_s", "{:.0f} s")), ""});
  tt.rows.push_back({"checkpoint", fmt::format("{} TB, {}: training pauses {}, the write to storage takes {}",
                                               row_number(ck, "bytes") ? fmt::format("{:.3g}", *row_number(ck, "bytes") / 1e12) : "-",
                                               ck.value("mode", "?"), opt_num(ck, "write_s", "{:.3g} s"), opt_num(ck, "drain_s", "{:.3g} s")),
                     ""});
  tt.rows.push_back({"checkpoint interval (optimum)", fmt::format("{} ({})", opt_num(ck, "interval_s", "{:.0f} s"), opt_num(ck, "optimal_interval_s", "{:.0f} s")), ""});
  Table src{"sources", {"figure and source"}, {}, {}};
  if (t.contains("sources") && t["sources"].is_array())
    for (const Json& s : t["sources"])
      if (s.is_string()) src.rows.push_back({s.get<std::string>()});
  return {"ttt", "Time to train, with goodput", {tt, src}, ""};
}

std::vector<ReportSection> table_sections(const Json& doc) {
  std::vector<ReportSection> out;
  const Json& rows = doc["rows"];
  Table t{"", {"#", "settings", "status", "GPUs", "step", "tokens/s", "MFU", "bubble", "peak GiB", "headroom", "Pareto", "why"}, {}, {}};
  constexpr size_t kMaxRows = 50;
  for (size_t i = 0; i < rows.size() && i < kMaxRows; ++i) {
    const Json& r = rows[i];
    t.rows.push_back({opt_num(r, "rank", "{:.0f}"), row_settings(r), r.value("status", "") + (r.value("reason", "").empty() ? "" : ": " + r.value("reason", "")),
                      opt_num(r, "gpus", "{:.0f}"), opt_num(r, "step_s", "{:.4g} s"), opt_num(r, "tokens_per_s", "{:.0f}"),
                      opt_num(r, "mfu", "{:.3f}"), opt_num(r, "bubble", "{:.3f}"), opt_num(r, "peak_mem_gib", "{:.1f}"),
                      opt_num(r, "headroom", "{:.2f}"), r.value("pareto", false) ? "yes" : "", r.value("why", "")});
  }
  if (rows.size() > kMaxRows) t.notes.push_back(fmt::format("the first {} of {} rows", kMaxRows, rows.size()));
  for (const char* k : {"skipped", "pruned"})
    if (doc.contains(k) && doc[k].is_object())
      for (const auto& [reason, n] : doc[k].items()) t.notes.push_back(fmt::format("{} by {}: {}", k, reason, n.dump()));
  std::set<double> counts;
  for (const Json& r : rows)
    if (r.contains("gpus") && r["gpus"].is_number()) counts.insert(r["gpus"].get<double>());
  out.push_back({"layouts", counts.size() == 1 ? "Layouts: throughput against peak memory per GPU" : "Layouts: throughput against GPUs", {t},
                 "throughput"});
  if (doc.contains("curve") && !doc["curve"].empty()) {
    Table c{"", {"GPUs", "step", "days", "GPU-hours", "cost"}, {}, {}};
    for (const Json& p : doc["curve"])
      c.rows.push_back({opt_num(p, "gpus", "{:.0f}"), opt_num(p, "step_s", "{:.4g} s"), opt_num(p, "days", "{:.1f}"),
                        opt_big(p, "gpu_hours"), opt_big(p, "cost")});
    out.push_back({"curve", "Time and cost against GPUs", {c}, "curve"});
  }
  return out;
}

}  // namespace

std::vector<ReportSection> report_sections(const ReportDoc& doc) {
  std::vector<ReportSection> out;
  if (doc.step) out = step_sections(*doc.step);
  if (doc.time_to_train && doc.time_to_train->is_object()) out.push_back(ttt_section(*doc.time_to_train));
  if (doc.table)
    for (ReportSection& s : table_sections(*doc.table)) out.push_back(std::move(s));
  return out;
}

}  // namespace parasim
