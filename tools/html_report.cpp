#include "tools/html_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "tools/report_tables.h"

namespace parasim {

namespace {

// Tableau-10 colours by span kind (phases, then bubble and exposed communication).
const char* kind_colour(int kind) {
  static const char* c[kSpanKinds] = {"#4e79a7", "#59a14f", "#8cd17d", "#b6992d", "#9c755f", "#f28e2b", "#e15759",
                                      "#ff9da7", "#d37295", "#fabfd2", "#b07aa1", "#79706e", "#bab0ac", "#e8e8e8", "#d62728"};
  return c[kind];
}
const char* kMemColour[kMemCats] = {"#4e79a7", "#59a14f", "#9c755f", "#f28e2b", "#b07aa1", "#e15759", "#bab0ac"};
const char* kSeries[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f"};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

std::string seconds(double s) {
  if (s == 0) return "0";
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

// A linear or base-2 logarithmic mapping of [lo, hi] onto pixels [p0, p1], with readable ticks.
struct Scale {
  double lo, hi, p0, p1;
  bool log2 = false;
  double operator()(double v) const {
    const double f = log2 ? (std::log2(v) - std::log2(lo)) / (std::log2(hi) - std::log2(lo)) : (v - lo) / (hi - lo);
    return p0 + (hi > lo ? f : 0.5) * (p1 - p0);
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log2) {
      for (double v = std::exp2(std::ceil(std::log2(lo))); v <= hi * (1 + 1e-9); v *= 2) t.push_back(v);
      while (t.size() > 12) {  // every other power
        std::vector<double> h;
        for (size_t i = 0; i < t.size(); i += 2) h.push_back(t[i]);
        t = h;
      }
      return t;
    }
    const double raw = (hi - lo) / 6, mag = std::pow(10, std::floor(std::log10(raw > 0 ? raw : 1)));
    const double step = raw / mag >= 5 ? 10 * mag : raw / mag >= 2 ? 5 * mag : raw / mag >= 1 ? 2 * mag : mag;
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
    return t;
  }
};

std::string tick_label(double v) {
  const double a = std::abs(v);
  if (a >= 1e9) return fmt::format("{:g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

// Axes with grid lines: x along the bottom, y on the left (or the right when `right`).
std::string axes(const Scale& x, const Scale& y, const std::string& xlabel, const std::string& ylabel, bool right = false,
                 const std::string& ycolour = "#333") {
  std::string s;
  if (!right) {
    for (double v : x.ticks())
      s += fmt::format("<line class='grid' x1='{0:.1f}' x2='{0:.1f}' y1='{1:.1f}' y2='{2:.1f}'/><text x='{0:.1f}' y='{3:.1f}' "
                       "text-anchor='middle'>{4}</text>",
                       x(v), y.p1, y.p0, y.p0 + 14, tick_label(v));
    s += fmt::format("<text x='{:.1f}' y='{:.1f}' text-anchor='middle' class='axis'>{}</text>", (x.p0 + x.p1) / 2, y.p0 + 32, esc(xlabel));
    s += fmt::format("<line class='frame' x1='{:.1f}' x2='{:.1f}' y1='{:.1f}' y2='{:.1f}'/>", x.p0, x.p1, y.p0, y.p0);
  }
  const double ax = right ? x.p1 : x.p0;
  for (double v : y.ticks()) {
    if (!right) s += fmt::format("<line class='grid' x1='{0:.1f}' x2='{1:.1f}' y1='{2:.1f}' y2='{2:.1f}'/>", x.p0, x.p1, y(v));
    s += fmt::format("<text x='{:.1f}' y='{:.1f}' text-anchor='{}' fill='{}'>{}</text>", right ? ax + 6 : ax - 6, y(v) + 4,
                     right ? "start" : "end", ycolour, tick_label(v));
  }
  s += fmt::format("<text transform='translate({:.1f},{:.1f}) rotate(-90)' text-anchor='middle' class='axis' fill='{}'>{}</text>",
                   right ? ax + 58 : ax - 52, (y.p0 + y.p1) / 2, ycolour, esc(ylabel));
  return s;
}

std::string svg_open(int w, int h, const std::string& label) {
  return fmt::format("<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {0} {1}' width='{0}' height='{1}' role='img' "
                     "aria-label='{2}'>",
                     w, h, esc(label));
}

std::string legend_item(double x, double y, const char* colour, const std::string& text) {
  return fmt::format("<rect x='{:.1f}' y='{:.1f}' width='12' height='12' fill='{}' stroke='#999' stroke-width='0.5'/>"
                     "<text x='{:.1f}' y='{:.1f}'>{}</text>",
                     x, y - 10, colour, x + 16, y, esc(text));
}

}  // namespace

std::string svg_gantt(const StepView& v) {
  if (v.ranks.empty() || v.step_s <= 0) return "";
  constexpr double left = 250, width = 1000, lane_h = 16, rank_gap = 10, top = 34;
  double h = top;
  for (const RankView& r : v.ranks) h += static_cast<double>(r.lanes.size()) * lane_h + rank_gap;
  const double legend_y = h + 18;
  const int total_h = static_cast<int>(legend_y + 3 * 20);
  std::string s = svg_open(static_cast<int>(left + width + 20), total_h, "Gantt chart of the step");
  const Scale x{0, v.step_s, left, left + width};
  for (double t : x.ticks())
    s += fmt::format("<line class='grid' x1='{0:.1f}' x2='{0:.1f}' y1='{1:.1f}' y2='{2:.1f}'/><text x='{0:.1f}' y='{3:.1f}' "
                     "text-anchor='middle'>{4}</text>",
                     x(t), top - 4, h - rank_gap, top - 8, seconds(t));
  std::array<bool, kSpanKinds> used{};
  double y = top;
  for (const RankView& r : v.ranks) {
    s += fmt::format("<text x='4' y='{:.1f}' class='rank'>{}</text>", y + 10, esc(r.title.size() > 40 ? r.title.substr(0, 39) + "…" : r.title));
    for (const Lane& l : r.lanes) {
      s += fmt::format("<text x='{:.1f}' y='{:.1f}' text-anchor='end' class='small'>{}</text>", left - 4, y + 10, esc(l.stream));
      s += fmt::format("<g><title>{}: {}, {} ops, busy {}</title>", esc(r.title), esc(l.stream), l.ops, seconds(l.busy_s));
      for (const Span& sp : l.spans) {
        used[static_cast<size_t>(sp.kind)] = true;
        s += fmt::format("<rect x='{:.1f}' y='{:.2f}' width='{:.2f}' height='{:.2f}' fill='{}'/>", x(sp.t0), y + sp.y0 * (lane_h - 2),
                         std::max(0.4, x(sp.t1) - x(sp.t0)), (sp.y1 - sp.y0) * (lane_h - 2), kind_colour(sp.kind));
      }
      s += "</g>";
      y += lane_h;
    }
    y += rank_gap;
  }
  double lx = 4, ly = legend_y;
  for (int k = 0; k < kSpanKinds; ++k) {
    if (!used[static_cast<size_t>(k)]) continue;
    if (lx > left + width - 140) lx = 4, ly += 20;
    s += legend_item(lx, ly, kind_colour(k), span_kind_name(k));
    lx += 150;
  }
  return s + "</svg>";
}

std::string svg_memory(const StepView& v) {
  if (v.memory.empty() || v.step_s <= 0) return "";
  double top_gib = v.capacity_gib;
  for (const MemoryView& m : v.memory) top_gib = std::max(top_gib, m.peak_gib);
  const Scale x{0, v.step_s, 70, 1000}, y{0, top_gib * 1.08, 330, 20};
  std::string s = svg_open(1270, 370, "memory per GPU over the step");
  s += axes(x, y, "time in the step (s)", "allocated per GPU (GiB)");
  s += fmt::format("<line x1='{0:.1f}' x2='{1:.1f}' y1='{2:.1f}' y2='{2:.1f}' stroke='#d62728' stroke-dasharray='6 4' stroke-width='1.5'/>"
                   "<text x='{1:.1f}' y='{3:.1f}' text-anchor='end' fill='#d62728'>capacity {4:.1f} GiB</text>",
                   x.p0, x.p1, y(v.capacity_gib), y(v.capacity_gib) - 5, v.capacity_gib);
  for (size_t i = 0; i < v.memory.size(); ++i) {
    const MemoryView& m = v.memory[i];
    std::string pts;
    double last = 0;
    for (const auto& [t, g] : m.curve) {
      if (!pts.empty()) pts += fmt::format(" {:.1f},{:.1f}", x(t), y(last));  // a step curve: hold until the next change
      pts += fmt::format(" {:.1f},{:.1f}", x(t), y(g));
      last = g;
    }
    pts += fmt::format(" {:.1f},{:.1f}", x.p1, y(last));
    const char* c = kSeries[i % 8];
    s += fmt::format("<polyline fill='none' stroke='{}' stroke-width='1.4' points='{}'><title>{}: peak {:.2f} GiB at {}</title></polyline>", c,
                     pts, esc(m.title), m.peak_gib, seconds(m.peak_s));
    s += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='3' fill='{}'/>", x(m.peak_s), y(m.peak_gib), c);
    s += legend_item(1015, 40 + 20 * static_cast<double>(i), c, fmt::format("{} {:.1f} GiB", m.title.substr(0, 28), m.peak_gib));
  }
  return s + "</svg>";
}

std::string svg_memory_breakdown(const StepView& v) {
  if (v.memory.empty()) return "";
  double top_gib = v.capacity_gib;
  for (const MemoryView& m : v.memory) top_gib = std::max(top_gib, m.peak_gib);
  const double row = 24, top = 10;
  const double h = top + row * static_cast<double>(v.memory.size()) + 50;
  std::string s = svg_open(1270, static_cast<int>(h), "memory breakdown at the peak");
  const Scale x{0, top_gib * 1.02, 260, 1150};
  for (size_t i = 0; i < v.memory.size(); ++i) {
    const MemoryView& m = v.memory[i];
    const double y = top + row * static_cast<double>(i);
    s += fmt::format("<text x='4' y='{:.1f}'>{}</text>", y + 14, esc(m.title.substr(0, 40)));
    double acc = 0;
    for (int c = 0; c < kMemCats; ++c) {
      const double g = m.at_peak_gib[static_cast<size_t>(c)];
      if (g <= 0) continue;
      s += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='{:.2f}' height='{:.0f}' fill='{}'><title>{}: {:.2f} GiB</title></rect>", x(acc), y,
                       x(acc + g) - x(acc), row - 6, kMemColour[c], memcat_name(static_cast<MemCat>(c)), g);
      acc += g;
    }
    s += fmt::format("<text x='{:.1f}' y='{:.1f}'>{:.1f} GiB</text>", x(acc) + 4, y + 14, acc);
  }
  const double cy = top + row * static_cast<double>(v.memory.size());
  s += fmt::format("<line x1='{0:.1f}' x2='{0:.1f}' y1='{1:.1f}' y2='{2:.1f}' stroke='#d62728' stroke-dasharray='6 4'/>"
                   "<text x='{0:.1f}' y='{3:.1f}' text-anchor='middle' fill='#d62728'>capacity {4:.1f} GiB</text>",
                   x(v.capacity_gib), top - 4, cy, cy + 12, v.capacity_gib);
  for (int c = 0; c < kMemCats; ++c) s += legend_item(260 + 130 * c, cy + 36, kMemColour[c], memcat_name(static_cast<MemCat>(c)));
  return s + "</svg>";
}

std::string svg_where_time_goes(const StepView& v) {
  if (v.where_time_goes.empty() || v.step_s <= 0) return "";
  const double row = 22;
  std::string s = svg_open(1270, static_cast<int>(row * static_cast<double>(v.where_time_goes.size()) + 16), "where the time goes");
  double most = 0;
  for (const auto& w : v.where_time_goes) most = std::max(most, w.second);
  const Scale x{0, most, 180, 1000};
  for (size_t i = 0; i < v.where_time_goes.size(); ++i) {
    const auto& [name, sec] = v.where_time_goes[i];
    const double y = 6 + row * static_cast<double>(i);
    int kind = kPhases - 1;
    for (int k = 0; k < kPhases; ++k)
      if (name == phase_name(static_cast<Phase>(k))) kind = k;
    if (name == "comm_exposed") kind = kSpanExposed;
    if (name == "idle") kind = kSpanBubble;
    s += fmt::format("<text x='170' y='{:.1f}' text-anchor='end'>{}</text>", y + 13, esc(name));
    s += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='{:.2f}' height='16' fill='{}' stroke='#999' stroke-width='0.5'/>", x.p0, y,
                     std::max(0.5, x(sec) - x.p0), kind_colour(kind));
    s += fmt::format("<text x='{:.1f}' y='{:.1f}'>{} ({:.1f} % of the step)</text>", x(sec) + 6, y + 13, seconds(sec), 100 * sec / v.step_s);
  }
  return s + "</svg>";
}

// Throughput against GPUs. Where every row has the same GPU count (a plan at one count), against
// peak memory per GPU instead, with the GPU's capacity as a line: the Pareto front then shows how
// much headroom each layout gives up for its speed.
std::string svg_throughput(const Json& doc) {
  const Json& rows = doc["rows"];
  double gmin = 0, gmax = 0, tmax = 0, mmax = 0, capacity = 0;
  for (const Json& r : rows) {
    const auto g = row_number(r, "gpus");
    if (!g || *g <= 0) continue;
    gmin = gmin > 0 ? std::min(gmin, *g) : *g;
    gmax = std::max(gmax, *g);
    tmax = std::max(tmax, row_number(r, "tokens_per_s").value_or(0));
    mmax = std::max(mmax, row_number(r, "peak_mem_gib").value_or(0));
    capacity = std::max(capacity, row_number(r, "capacity_gib").value_or(0));
  }
  if (gmax <= 0) return "";
  const bool by_memory = gmin == gmax && std::max(mmax, capacity) > 0;
  const char* xkey = by_memory ? "peak_mem_gib" : "gpus";
  const bool log = !by_memory && gmax / gmin >= 2;
  const Scale x = by_memory ? Scale{0, std::max(mmax, capacity) * 1.05, 90, 1000}
                            : Scale{log ? gmin / 1.3 : gmin - 0.5 - 0.05 * (gmax - gmin), log ? gmax * 1.3 : gmax + 0.5 + 0.05 * (gmax - gmin), 90, 1000, log};
  const Scale y{0, tmax > 0 ? tmax * 1.1 : 1, 360, 20};
  std::string s = svg_open(1270, 410, by_memory ? "throughput against peak memory per GPU" : "throughput against GPUs");
  s += axes(x, y, by_memory ? fmt::format("peak memory per GPU, GiB ({:.0f} GPUs)", gmax) : "GPUs", "tokens per second");
  if (by_memory && capacity > 0)
    s += fmt::format("<line x1='{0:.1f}' x2='{0:.1f}' y1='{1:.1f}' y2='{2:.1f}' stroke='#d62728' stroke-dasharray='4,3'/>"
                     "<text x='{3:.1f}' y='{2:.1f}' class='small' fill='#d62728' text-anchor='end'>capacity {4:.0f} GiB</text>",
                     x(capacity), y.p0, y.p1 + 10, x(capacity) - 4, capacity);
  // Layouts with no prediction (invalid, or out of memory without a step time) sit in a band at the bottom.
  s += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='14' fill='#d62728' opacity='0.08'/>"
                   "<text x='{:.1f}' y='{:.1f}' class='small' fill='#d62728' text-anchor='end'>no prediction (invalid or does not fit)</text>",
                   x.p0, y.p0 - 14, x.p1 - x.p0, x.p1 - 4, y.p0 - 3);
  std::vector<std::pair<double, double>> front;
  for (const Json& r : rows) {
    const auto g = row_number(r, "gpus");
    const auto xv = row_number(r, xkey);  // none: an invalid layout has no peak memory (drawn at the left)
    if (!g || *g <= 0) continue;
    const std::string status = r.value("status", "ok");
    const auto tps = row_number(r, "tokens_per_s");
    const std::string tip = esc(fmt::format("#{} {} | {} | {} GPUs{}{}", r.value("rank", 0), row_settings(r), status, *g,
                                            tps ? fmt::format(" | {:.0f} tokens/s", *tps) : "", r.contains("why") ? " | " + r.value("why", "") : ""));
    const double cx = xv ? x(*xv) : x.p0 + 6, cy = tps && status != "invalid" ? y(*tps) : y.p0 - 7;
    if (status == "ok") {
      const bool pareto = r.value("pareto", false);
      if (pareto && tps && xv) front.emplace_back(*xv, *tps);
      s += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='{}' fill='{}' fill-opacity='{}' stroke='{}'><title>{}</title></circle>", cx, cy,
                       pareto ? 5 : 3.5, pareto ? "#f28e2b" : "#4e79a7", pareto ? 0.95 : 0.5, pareto ? "#7a3f00" : "none", tip);
    } else {
      s += fmt::format("<path d='M{0:.1f},{1:.1f} l8,8 m0,-8 l-8,8' stroke='#d62728' stroke-width='1.6'><title>{2}</title></path>", cx - 4,
                       cy - 4, tip);
    }
  }
  std::sort(front.begin(), front.end());
  if (front.size() > 1) {
    std::string pts;
    for (size_t i = 0; i < front.size(); ++i) {
      if (i > 0) pts += fmt::format(" {:.1f},{:.1f}", x(front[i].first), y(front[i - 1].second));
      pts += fmt::format(" {:.1f},{:.1f}", x(front[i].first), y(front[i].second));
    }
    s += fmt::format("<polyline fill='none' stroke='#f28e2b' stroke-width='1.5' points='{}'/>", pts);
  }
  s += legend_item(1015, 40, "#4e79a7", "fits");
  s += legend_item(1015, 60, "#f28e2b", "Pareto front");
  s += "<path d='M1015,71 l10,10 m0,-10 l-10,10' stroke='#d62728' stroke-width='1.6'/><text x='1031' y='80'>out of memory / invalid</text>";
  return s + "</svg>";
}

std::string svg_time_cost_curve(const Json& doc) {
  const auto c = doc.find("curve");
  if (c == doc.end() || c->size() < 1) return "";
  std::vector<std::array<double, 3>> pts;  // gpus, days, cost or GPU-hours
  bool has_cost = true;
  for (const Json& p : *c) has_cost = has_cost && row_number(p, "cost").has_value();
  for (const Json& p : *c) {
    const auto g = row_number(p, "gpus"), d = row_number(p, "days"), m = row_number(p, has_cost ? "cost" : "gpu_hours");
    if (g && d && m && *g > 0) pts.push_back({*g, *d, *m});
  }
  if (pts.empty()) return "";
  std::sort(pts.begin(), pts.end());
  double dmax = 0, mmax = 0;
  for (const auto& p : pts) dmax = std::max(dmax, p[1]), mmax = std::max(mmax, p[2]);
  const double g0 = pts.front()[0], g1 = pts.back()[0];
  const bool log = g1 / g0 >= 2;
  const Scale x{log ? g0 / 1.3 : g0 * 0.9, log ? g1 * 1.3 : g1 * 1.1, 90, 1000, log};
  const Scale yd{0, dmax * 1.1, 330, 20}, ym{0, mmax * 1.1, 330, 20};
  const std::string mname = has_cost ? "cost" : "GPU-hours";
  std::string s = svg_open(1270, 380, "days and " + mname + " against GPUs");
  s += axes(x, yd, "GPUs", "days to train", false, "#4e79a7");
  s += axes(x, ym, "", mname, true, "#f28e2b");
  for (int series = 1; series <= 2; ++series) {
    const Scale& y = series == 1 ? yd : ym;
    const char* col = series == 1 ? "#4e79a7" : "#f28e2b";
    std::string line;
    for (const auto& p : pts) line += fmt::format(" {:.1f},{:.1f}", x(p[0]), y(p[static_cast<size_t>(series)]));
    s += fmt::format("<polyline fill='none' stroke='{}' stroke-width='2' points='{}'/>", col, line);
    for (const auto& p : pts)
      s += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='3.5' fill='{}'><title>{} GPUs: {:.4g} {}</title></circle>", x(p[0]),
                       y(p[static_cast<size_t>(series)]), col, p[0], p[static_cast<size_t>(series)], series == 1 ? "days" : mname);
  }
  s += legend_item(1090, 40, "#4e79a7", "days");
  s += legend_item(1090, 60, "#f28e2b", mname);
  return s + "</svg>";
}

namespace {

const char* kCss = R"(body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px auto;max-width:1290px;color:#222;padding:0 12px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}caption{text-align:left;color:#555;padding:2px 0}
p.note{color:#555;font-size:12.5px;margin:4px 0}ul.notes{color:#555;font-size:13px}
svg{display:block;margin:8px 0;max-width:100%;height:auto}svg text{font:11px system-ui,Helvetica,Arial,sans-serif;fill:#333}
svg text.small{font-size:10px;fill:#666}svg text.rank{font-weight:600}svg text.axis{font-size:12px}
svg line.grid{stroke:#eee}svg line.frame{stroke:#999})";

std::string html_table(const Table& t) {
  std::string s = "<table>";
  if (!t.caption.empty()) s += "<caption>" + esc(t.caption) + "</caption>";
  s += "<tr>";
  for (const auto& h : t.header) s += "<th>" + esc(h) + "</th>";
  s += "</tr>";
  for (const auto& r : t.rows) {
    s += "<tr>";
    for (const auto& c : r) {
      const bool numeric = t.align_numbers && !c.empty() && (std::isdigit(static_cast<unsigned char>(c[0])) || c[0] == '-') && c.size() < 30 &&
                           c.find_first_not_of("0123456789.,-+e %()smuGiBTk") == std::string::npos;
      s += std::string(numeric ? "<td class='n'>" : "<td>") + esc(c) + "</td>";
    }
    s += "</tr>";
  }
  s += "</table>";
  for (const auto& n : t.notes) s += "<p class='note'>" + esc(n) + "</p>";
  return s;
}

std::string chart(const std::string& name, const ReportDoc& doc) {
  if (doc.step) {
    if (name == "gantt") return svg_gantt(*doc.step);
    if (name == "memory") return svg_memory(*doc.step) + svg_memory_breakdown(*doc.step);
    if (name == "time") return svg_where_time_goes(*doc.step);
  }
  if (doc.table) {
    if (name == "throughput") return svg_throughput(*doc.table);
    if (name == "curve") return svg_time_cost_curve(*doc.table);
  }
  return "";
}

}  // namespace

std::string html_report(const ReportDoc& doc) {
  std::string s = "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><meta name='generator' content='parasim report'>";
  s += "<title>" + esc(doc.title) + "</title><style>" + kCss + "</style></head><body>\n";
  s += "<h1>" + esc(doc.title) + "</h1>";
  if (!doc.notes.empty()) {
    s += "<ul class='notes'>";
    for (const auto& n : doc.notes) s += "<li>" + esc(n) + "</li>";
    s += "</ul>";
  }
  for (const ReportSection& sec : report_sections(doc)) {
    s += "\n<section id='" + sec.id + "'><h2>" + esc(sec.heading) + "</h2>";
    if (!sec.chart.empty()) s += chart(sec.chart, doc);
    for (const Table& t : sec.tables) s += html_table(t);
    s += "</section>";
  }
  return s + "\n</body></html>\n";
}

}  // namespace parasim
