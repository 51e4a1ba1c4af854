#include "sim/planning/rows.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>

namespace parasim {

Objective parse_objective(const std::string& name, const std::string& what) {
  for (int i = 0; i < 3; ++i)
    if (name == kObjectives[i]) return static_cast<Objective>(i);
  throw ConfigError(what + ": unknown objective \"" + name + "\"; expected throughput, cost or time");
}

const char* objective_name(Objective o) { return kObjectives[static_cast<int>(o)]; }

Row make_row(const Scenario& sc, const SimulationOutput& out, std::size_t index, Json settings) {
  const Result& res = out.result;
  Row r;
  r.index = index;
  r.settings = std::move(settings);
  r.gpus = sc.cluster.gpus();
  r.step_s = res.step_time_s;
  r.tokens_per_s = res.tokens_per_s;
  r.tokens_per_s_per_gpu = res.tokens_per_s / static_cast<double>(r.gpus);
  r.mfu = res.mfu;
  r.bubble = res.bubble_fraction;
  r.peak_mem_gib = res.peak_mem_gib;
  r.capacity_gib = res.capacity_gib;
  r.headroom = res.capacity_gib > 0 ? 1.0 - res.peak_mem_gib / res.capacity_gib : 0.0;
  r.exposed = res.exposed;
  const auto rc = res.breakdown.find("recompute_s");
  r.recompute_s = rc == res.breakdown.end() ? 0.0 : rc->second;
  const auto hw = res.breakdown.find(kHostWaitKey);
  r.host_wait_s = hw == res.breakdown.end() ? 0.0 : hw->second;
  r.gpu_hours_per_mtok = res.tokens_per_s > 0 ? static_cast<double>(r.gpus) / 3600.0 / res.tokens_per_s * 1e6 : 0.0;
  if (!res.fits_in_memory) {
    r.status = "oom";
    r.reason = fmt::format("peak {:.1f} GiB exceeds the {:.1f} GiB of the GPU", res.peak_mem_gib, res.capacity_gib);
  }
  return r;
}

namespace {

// Smaller is better.
double objective_key(const Row& r, Objective o) {
  switch (o) {
    case Objective::Throughput: return -r.tokens_per_s;
    case Objective::Cost: return r.gpu_hours_per_mtok;
    case Objective::StepTime: return r.step_s;
  }
  return 0;
}

bool dominates(const Row& a, const Row& b) {
  const bool no_worse = a.tokens_per_s >= b.tokens_per_s && a.gpus <= b.gpus && a.headroom >= b.headroom;
  const bool better = a.tokens_per_s > b.tokens_per_s || a.gpus < b.gpus || a.headroom > b.headroom;
  return no_worse && better;
}

// The named costs a row pays, seconds per step, for the why line.
std::vector<std::pair<std::string, double>> costs(const Row& r) {
  return {{"bubble", r.bubble * r.step_s}, {"exposed TP comm", r.exposed.tp}, {"exposed DP comm", r.exposed.dp},
          {"exposed PP comm", r.exposed.pp}, {"exposed EP comm", r.exposed.ep}, {"exposed CP comm", r.exposed.cp},
          {"recompute", r.recompute_s}, {"waiting on the host", r.host_wait_s},
          // The rest of the step: the GPU computing (kernel efficiency at this shape).
          {"compute", r.step_s - r.bubble * r.step_s - r.exposed.total() - r.recompute_s - r.host_wait_s}};
}

std::string why_for(const Row& r, const Row* best, Objective o) {
  if (r.status != "ok") return r.reason;
  const auto own = costs(r);
  if (best == nullptr || best == &r) {
    auto top = *std::max_element(own.begin(), own.end() - 1, [](const auto& a, const auto& b) { return a.second < b.second; });
    return fmt::format("best by {}; {:.0f} % memory headroom; its largest overhead: {} {:.3g} s of {:.3g} s", objective_name(o),
                       100 * r.headroom, top.first, top.second, r.step_s);
  }
  const auto theirs = costs(*best);
  size_t worst = 0;
  for (size_t i = 1; i < own.size(); ++i)
    if (own[i].second - theirs[i].second > own[worst].second - theirs[worst].second) worst = i;
  const double gap = best->tokens_per_s_per_gpu > 0 ? 1.0 - r.tokens_per_s_per_gpu / best->tokens_per_s_per_gpu : 0.0;
  // #1 ranks first by the objective (total throughput, cost, ...), so a row may have more tokens/s per GPU.
  std::string s = gap >= 0 ? fmt::format("{:.1f} % less tokens/s/GPU than #1", 100 * gap)
                           : fmt::format("{:.1f} % more tokens/s/GPU than #1, which ranks first by {}", -100 * gap, objective_name(o));
  if (own[worst].second - theirs[worst].second > 0)
    s += fmt::format("; loses most on {} ({:.3g} s vs {:.3g} s)", own[worst].first, own[worst].second, theirs[worst].second);
  s += fmt::format("; {:.0f} % headroom", 100 * r.headroom);
  return s;
}

}  // namespace

void rank_rows(std::vector<Row>& rows, Objective objective) {
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    const bool aok = a.status == "ok", bok = b.status == "ok";
    if (aok != bok) return aok;
    const double ka = aok ? objective_key(a, objective) : -a.headroom, kb = bok ? objective_key(b, objective) : -b.headroom;
    if (ka != kb) return ka < kb;
    return a.index < b.index;
  });
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& r = rows[i];
    r.rank = static_cast<std::int64_t>(i) + 1;
    r.pareto = r.status == "ok" &&
               std::none_of(rows.begin(), rows.end(), [&](const Row& o) { return o.status == "ok" && dominates(o, r); });
  }
  const Row* best = !rows.empty() && rows.front().status == "ok" ? &rows.front() : nullptr;
  for (Row& r : rows) r.why = why_for(r, best, objective);
}

Json row_json(const Row& r, double price) {
  Json j = {{"rank", r.rank}, {"settings", r.settings}, {"status", r.status}, {"reason", r.reason}, {"gpus", r.gpus},
            {"step_s", r.step_s}, {"tokens_per_s", r.tokens_per_s}, {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
            {"mfu", r.mfu}, {"bubble", r.bubble}, {"peak_mem_gib", r.peak_mem_gib}, {"capacity_gib", r.capacity_gib},
            {"headroom", r.headroom},
            {"exposed", {{"tp", r.exposed.tp}, {"dp", r.exposed.dp}, {"pp", r.exposed.pp}, {"ep", r.exposed.ep}, {"cp", r.exposed.cp}}},
            {"recompute_s", r.recompute_s}, {"host_wait_s", r.host_wait_s}, {"gpu_hours_per_mtok", r.gpu_hours_per_mtok},
            {"pareto", r.pareto}, {"why", r.why}};
  j["cost_per_mtok"] = price > 0 ? Json(price * r.gpu_hours_per_mtok) : Json(nullptr);
  return j;
}

Row row_from_json(const Json& j) {
  Row r;
  r.rank = j.at("rank").get<std::int64_t>();
  r.settings = j.at("settings");
  r.status = j.at("status").get<std::string>();
  r.reason = j.at("reason").get<std::string>();
  r.gpus = j.at("gpus").get<std::int64_t>();
  for (const auto& [key, field] : std::initializer_list<std::pair<const char*, double Row::*>>{
           {"step_s", &Row::step_s}, {"tokens_per_s", &Row::tokens_per_s}, {"tokens_per_s_per_gpu", &Row::tokens_per_s_per_gpu},
           {"mfu", &Row::mfu}, {"bubble", &Row::bubble}, {"peak_mem_gib", &Row::peak_mem_gib}, {"capacity_gib", &Row::capacity_gib},
           {"headroom", &Row::headroom}, {"recompute_s", &Row::recompute_s}, {"gpu_hours_per_mtok", &Row::gpu_hours_per_mtok}})
    r.*field = j.at(key).get<double>();
  r.host_wait_s = j.value("host_wait_s", 0.0);  // rows written before it was
  const Json& e = j.at("exposed");
  r.exposed = {e.at("tp").get<double>(), e.at("dp").get<double>(), e.at("pp").get<double>(), e.at("ep").get<double>(),
               e.at("cp").get<double>()};
  r.pareto = j.at("pareto").get<bool>();
  r.why = j.at("why").get<std::string>();
  return r;
}

namespace {

std::string setting_text(const Json& settings, const std::string& name) {
  const auto it = settings.find(name);
  if (it == settings.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string rows_csv(const std::vector<Row>& rows, const std::vector<std::string>& names, double price) {
  std::ostringstream os;
  os << "rank";
  for (const auto& n : names) os << "," << csv_field(n);
  os << ",status,gpus,step_s,tokens_per_s,tokens_per_s_per_gpu,mfu,bubble,peak_mem_gib,capacity_gib,headroom,"
        "exposed_tp_s,exposed_dp_s,exposed_pp_s,exposed_ep_s,exposed_cp_s,recompute_s,gpu_hours_per_mtok,cost_per_mtok,pareto,why\n";
  for (const Row& r : rows) {
    os << r.rank;
    for (const auto& n : names) os << "," << csv_field(setting_text(r.settings, n));
    os << fmt::format(",{},{},{:.9g},{:.9g},{:.9g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{}\n",
                      r.status, r.gpus, r.step_s, r.tokens_per_s, r.tokens_per_s_per_gpu, r.mfu, r.bubble, r.peak_mem_gib,
                      r.capacity_gib, r.headroom, r.exposed.tp, r.exposed.dp, r.exposed.pp, r.exposed.ep, r.exposed.cp,
                      r.recompute_s, r.gpu_hours_per_mtok, price > 0 ? fmt::format("{:.6g}", price * r.gpu_hours_per_mtok) : "",
                      r.pareto ? "true" : "false", csv_field(r.why));
  }
  return os.str();
}

std::string rows_table(const std::vector<Row>& rows, const std::vector<std::string>& names, std::size_t limit) {
  std::vector<size_t> width;
  for (const auto& n : names) {
    size_t w = n.size();
    for (const Row& r : rows) w = std::max(w, setting_text(r.settings, n).size());
    width.push_back(w);
  }
  std::ostringstream os;
  os << fmt::format("{:>5} ", "rank");
  for (size_t i = 0; i < names.size(); ++i) os << fmt::format("{:>{}} ", names[i], width[i]);
  os << fmt::format("{:>6} {:>5} {:>10} {:>11} {:>6} {:>7} {:>9} {:>8} {:>3}  {}\n", "status", "gpus", "step_s", "tok/s/GPU",
                    "MFU", "bubble", "peak_GiB", "headroom", "P", "why");
  for (size_t k = 0; k < rows.size() && (limit == 0 || k < limit); ++k) {
    const Row& r = rows[k];
    os << fmt::format("{:>5} ", r.rank);
    for (size_t i = 0; i < names.size(); ++i) os << fmt::format("{:>{}} ", setting_text(r.settings, names[i]), width[i]);
    os << fmt::format("{:>6} {:>5} {:>10.4g} {:>11.5g} {:>5.1f}% {:>6.1f}% {:>9.1f} {:>7.0f}% {:>3}  {}\n", r.status, r.gpus, r.step_s,
                      r.tokens_per_s_per_gpu, 100 * r.mfu, 100 * r.bubble, r.peak_mem_gib, 100 * r.headroom, r.pareto ? "*" : "",
                      r.why);
  }
  if (limit > 0 && rows.size() > limit) os << fmt::format("  ... {} more rows (--top, --csv or --json for all)\n", rows.size() - limit);
  return os.str();
}

}  // namespace parasim
