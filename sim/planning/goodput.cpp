#include "sim/planning/goodput.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "sim/memory/memory_model.h"

namespace parasim {

namespace {
constexpr double kDay = 86400, kHour = 3600;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Job MTBF in seconds for unexpected interruptions; infinite at a zero rate.
double job_mtbf_s(const GoodputInput& in) {
  const double per_s = in.rel.failures_per_gpu_hour * static_cast<double>(in.gpus) / kHour;
  return per_s > 0 ? 1 / per_s : kInf;
}
bool async_mode(const GoodputInput& in) { return in.rel.checkpoint_mode == "async"; }
// What training waits for per checkpoint (delta), and the background write after it (d).
double blocking_s(const GoodputInput& in) {
  if (async_mode(in)) return in.host_copy_gbps > 0 ? in.per_gpu_checkpoint_bytes / (in.host_copy_gbps * 1e9) : 0;
  return in.checkpoint_bytes / (in.rel.storage_gbps * 1e9);
}
double drain_s(const GoodputInput& in) { return async_mode(in) ? in.checkpoint_bytes / (in.rel.storage_gbps * 1e9) : 0; }
double planned_per_s(const GoodputInput& in) { return in.rel.planned_per_day / kDay; }
// A = 1 + (R + d)/M + (R + delta) p: the interval-independent overhead factor.
double overhead_a(const GoodputInput& in) {
  const double m = job_mtbf_s(in), r = in.rel.restart_s;
  return 1 + (r + drain_s(in)) / m + (r + blocking_s(in)) * planned_per_s(in);
}

void check_input(const GoodputInput& in) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw ConfigError("time to train: " + what);
  };
  need(in.tokens > 0, "tokens must be > 0");
  need(in.tokens_per_step > 0, "tokens per step must be > 0");
  need(in.step_s > 0 && std::isfinite(in.step_s), "the step time must be a positive number of seconds");
  need(in.gpus >= 1, "the GPU count must be >= 1");
  need(in.rel.failures_per_gpu_hour >= 0, "the failure rate per GPU-hour must be >= 0");
  need(in.rel.planned_per_day >= 0, "planned interruptions per day must be >= 0");
  need(in.rel.restart_s >= 0, "the restart time must be >= 0 s");
  need(in.rel.storage_gbps > 0, "the storage write bandwidth must be > 0 GB/s");
  need(in.checkpoint_bytes >= 0 && in.per_gpu_checkpoint_bytes >= 0, "checkpoint bytes must be >= 0");
  need(!in.interval_s || *in.interval_s > 0, "the checkpoint interval must be > 0 s");
  need(!in.price_per_gpu_hour || *in.price_per_gpu_hour >= 0, "the price per GPU-hour must be >= 0");
  need(in.band_p10 > 0 && in.band_p90 > 0, "the model-error band factors must be > 0");
}
}  // namespace

double expected_wall_s(const GoodputInput& in, double step_s, double interval_s) {
  const double steps = std::ceil(in.tokens / in.tokens_per_step);
  const double w = steps * step_s;
  const double m = job_mtbf_s(in), delta = blocking_s(in);
  const double ckpt = std::isfinite(interval_s) ? delta / interval_s : 0;
  const double rework = std::isfinite(m) ? interval_s / (2 * m) : 0;
  return w * (1 + ckpt) * (overhead_a(in) + rework);
}

double optimal_interval_s(const GoodputInput& in) {
  const double m = job_mtbf_s(in), delta = blocking_s(in);
  if (!std::isfinite(m)) return kInf;  // never interrupted: never worth pausing to checkpoint
  return std::sqrt(2 * delta * m * overhead_a(in));
}

TimeToTrain time_to_train(const GoodputInput& in) {
  check_input(in);
  TimeToTrain t;
  t.tokens = in.tokens;
  t.steps = std::ceil(in.tokens / in.tokens_per_step);
  t.step_s = in.step_s;
  t.gpus = in.gpus;
  const double m = job_mtbf_s(in), delta = blocking_s(in), d = drain_s(in);
  const double opt = optimal_interval_s(in);
  // The optimum, rounded to whole steps (a checkpoint is taken between steps), at least one step
  // and, asynchronously, at least the background write (the next checkpoint cannot start before
  // the previous one is on storage).
  double tau = in.interval_s ? *in.interval_s : opt;
  if (!in.interval_s && std::isfinite(tau)) {
    tau = std::max(1.0, std::round(tau / in.step_s)) * in.step_s;
    if (tau < d) tau = std::ceil(d / in.step_s) * in.step_s;
  }
  const double wall = expected_wall_s(in, in.step_s, tau);
  const double gpus = static_cast<double>(in.gpus);
  t.compute_s = t.steps * in.step_s;
  t.ideal_days = t.compute_s / kDay;
  t.days = wall / kDay;
  t.gpu_hours = wall * gpus / kHour;
  t.goodput = t.compute_s / wall;
  t.price_per_gpu_hour = in.price_per_gpu_hour;
  if (in.price_per_gpu_hour) t.cost = t.gpu_hours * *in.price_per_gpu_hour;
  t.band_p10_factor = in.band_p10;
  t.band_p90_factor = in.band_p90;
  t.p10_days = expected_wall_s(in, in.step_s * in.band_p10, tau) / kDay;
  t.p90_days = expected_wall_s(in, in.step_s * in.band_p90, tau) / kDay;
  t.p10_gpu_hours = t.p10_days * kDay * gpus / kHour;
  t.p90_gpu_hours = t.p90_days * kDay * gpus / kHour;
  t.checkpoint = {in.rel.checkpoint_mode, in.checkpoint_bytes, delta, d, tau, opt};
  // Interruptions arrive over the uninterrupted time (compute + checkpoint pauses): first order, as in the model.
  const double uninterrupted = t.compute_s * (1 + (std::isfinite(tau) ? delta / tau : 0));
  const double unexpected = std::isfinite(m) ? uninterrupted / m : 0, planned = uninterrupted * planned_per_s(in);
  t.failures = {in.rel.failures_per_gpu_hour, std::isfinite(m) ? m / kHour : kInf, unexpected, in.rel.planned_per_day, planned,
                in.rel.restart_s, std::isfinite(tau) ? tau / 2 + d : 0};
  t.checkpoint_s = std::isfinite(tau) ? t.compute_s / tau * delta + planned * delta : planned * delta;
  t.restart_total_s = (unexpected + planned) * in.rel.restart_s;
  t.rework_s = unexpected * t.failures.lost_work_s;
  t.sources = in.rel.sources;
  t.sources.insert(t.sources.end(), in.band_sources.begin(), in.band_sources.end());
  t.sources.push_back("checkpoint interval: J. W. Young, 'A first order approximation to the optimum checkpoint interval', CACM 17(9), "
                      "1974 (sqrt(2 delta M)); J. T. Daly, 'A higher order estimate of the optimum checkpoint interval for restart "
                      "dumps', Future Generation Computer Systems 22(3), 2006 (first order with restart: sqrt(2 delta (M + R)))");
  return t;
}

double checkpoint_bytes(const Scenario& sc) {
  const StateBytesPerParam b = state_bytes(sc.training.dtype, sc.training.optimizer, sc.training.fp32_grad_accumulation);
  return count_params(sc.model).total() * (b.weights + b.optimizer);
}

GoodputInput goodput_input(const Scenario& sc, double step_s, double tokens, const ReliabilityFigures& rel) {
  GoodputInput in;
  in.tokens = tokens;
  in.tokens_per_step = static_cast<double>(sc.training.global_batch * sc.training.seq_len);
  in.step_s = step_s;
  in.gpus = sc.cluster.gpus();
  in.checkpoint_bytes = checkpoint_bytes(sc);
  // Distributed checkpointing writes each tensor once and spreads the writes over the ranks.
  in.per_gpu_checkpoint_bytes = in.checkpoint_bytes / static_cast<double>(in.gpus);
  in.host_copy_gbps = sc.profile.pcie_gbps.value;
  in.rel = rel;
  const StateBytesPerParam b = state_bytes(sc.training.dtype, sc.training.optimizer, sc.training.fp32_grad_accumulation);
  in.rel.sources.push_back(fmt::format("checkpoint: {:.4g} parameters x {:g} B of weights and optimizer states each (the memory "
                                       "model's state_bytes; gradients are not saved); host copy at {:g} GB/s per GPU: profile {} "
                                       "memory.pcie_gbps ({})",
                                       count_params(sc.model).total(), b.weights + b.optimizer, in.host_copy_gbps, sc.profile.name,
                                       sc.profile.pcie_gbps.source));
  return in;
}

ReliabilityFigures load_reliability(const std::string& path) {
  const Json root = read_json_file(path);
  const JsonObject o(root, path, "");
  if (o.str("schema") != "parasim.reliability/1") o.fail("schema", "expected \"parasim.reliability/1\"");
  o.str("name");
  o.str("description");
  const std::string paper = o.str("source");
  ReliabilityFigures f;
  const JsonObject i = o.object("interruptions");
  const double unexpected = static_cast<double>(i.integer("unexpected", 0, 1'000'000'000));
  const double planned = static_cast<double>(i.integer("planned", 0, 1'000'000'000));
  const double days = i.number("snapshot_days", 1e-3, 1e6);
  const double gpus = static_cast<double>(i.integer("gpus", 1, 100'000'000));
  const std::string isrc = i.str("source"), derivation = i.str("derivation");
  i.finish();
  f.failures_per_gpu_hour = unexpected / (gpus * days * 24);
  f.planned_per_day = planned / days;
  const JsonObject r = o.object("restart_s");
  f.restart_s = r.number("value", 0, 1e7);
  const std::string rsrc = r.str("source");
  r.finish();
  const JsonObject s = o.object("storage");
  f.storage_gbps = s.number("write_gbps", 1e-6, 1e9);
  s.number("sustained_gbps", 1e-6, 1e9);
  const std::string ssrc = s.str("source");
  s.finish();
  const JsonObject c = o.object("checkpoint");
  f.checkpoint_mode = c.choice("mode", {kCheckpointModes.begin(), kCheckpointModes.end()});
  const std::string csrc = c.str("source");
  c.finish();
  o.finish();
  f.sources = {
      fmt::format("failures: {:.4g} unexpected interruptions per GPU-hour, {:.3g} planned per day: {}; {} ({})", f.failures_per_gpu_hour,
                  f.planned_per_day, derivation, paper, isrc),
      fmt::format("restart: {:g} s to detect, restart and reload: {}", f.restart_s, rsrc),
      fmt::format("storage: {:g} GB/s checkpoint writes: {}", f.storage_gbps, ssrc),
      fmt::format("checkpoint mode {}: {}", f.checkpoint_mode, csrc)};
  return f;
}

Json ttt_json(const TimeToTrain& t) {
  auto num = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
  Json j = {{"tokens", t.tokens}, {"steps", t.steps}, {"step_s", t.step_s}, {"gpus", t.gpus}, {"ideal_days", t.ideal_days},
            {"days", t.days}, {"gpu_hours", t.gpu_hours}, {"goodput", t.goodput}};
  j["cost"] = t.cost ? Json(*t.cost) : Json(nullptr);
  j["price_per_gpu_hour"] = t.price_per_gpu_hour ? Json(*t.price_per_gpu_hour) : Json(nullptr);
  j["band"] = {{"p10_days", t.p10_days}, {"p90_days", t.p90_days}, {"p10_gpu_hours", t.p10_gpu_hours},
               {"p90_gpu_hours", t.p90_gpu_hours}, {"p10_step_factor", t.band_p10_factor}, {"p90_step_factor", t.band_p90_factor}};
  if (t.price_per_gpu_hour) {
    j["band"]["p10_cost"] = t.p10_gpu_hours * *t.price_per_gpu_hour;
    j["band"]["p90_cost"] = t.p90_gpu_hours * *t.price_per_gpu_hour;
  }
  j["checkpoint"] = {{"mode", t.checkpoint.mode}, {"bytes", t.checkpoint.bytes}, {"write_s", t.checkpoint.write_s},
                     {"drain_s", t.checkpoint.drain_s}, {"interval_s", num(t.checkpoint.interval_s)},
                     {"optimal_interval_s", num(t.checkpoint.optimal_interval_s)}};
  j["failures"] = {{"per_gpu_per_hour", t.failures.per_gpu_per_hour}, {"mtbf_h", num(t.failures.mtbf_h)},
                   {"expected_interruptions", t.failures.expected_interruptions}, {"planned_per_day", t.failures.planned_per_day},
                   {"planned_interruptions", t.failures.planned_interruptions}, {"restart_s", t.failures.restart_s},
                   {"lost_work_s", t.failures.lost_work_s}};
  j["wall_s"] = {{"compute", t.compute_s}, {"checkpoint", t.checkpoint_s}, {"restart", t.restart_total_s}, {"rework", t.rework_s}};
  j["sources"] = t.sources;
  return j;
}

namespace {
std::string big(double x) {
  if (x >= 1e9) return fmt::format("{:.3g} billion", x / 1e9);
  if (x >= 1e6) return fmt::format("{:.3g} million", x / 1e6);
  return fmt::format("{:.4g}", x);
}
std::string duration(double s) {
  if (!std::isfinite(s)) return "never";
  if (s >= 2 * kHour) return fmt::format("{:.2f} h", s / kHour);
  if (s >= 120) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.3g} s", s);
}
}  // namespace

std::string ttt_summary(const TimeToTrain& t) {
  std::string s = fmt::format("time to train {:.4g} tokens ({:.0f} steps of {:.4g} s on {} GPUs):\n", t.tokens, t.steps, t.step_s, t.gpus);
  s += fmt::format("  {:<22} {:.1f} days (p10..p90 {:.1f} .. {:.1f}; {:.1f} days with no failures or checkpoints)\n", "wall clock", t.days,
                   t.p10_days, t.p90_days, t.ideal_days);
  s += fmt::format("  {:<22} {} (p10..p90 {} .. {})\n", "GPU-hours", big(t.gpu_hours), big(t.p10_gpu_hours), big(t.p90_gpu_hours));
  if (t.cost)
    s += fmt::format("  {:<22} {} at {:g} per GPU-hour (p10..p90 {} .. {})\n", "cost", big(*t.cost), *t.price_per_gpu_hour,
                     big(t.p10_gpu_hours * *t.price_per_gpu_hour), big(t.p90_gpu_hours * *t.price_per_gpu_hour));
  s += fmt::format("  {:<22} {:.1f} % of the wall clock trains (checkpoint pauses {:.1f} %, restarts {:.1f} %, lost work {:.1f} %)\n",
                   "goodput", 100 * t.goodput, 100 * t.checkpoint_s / (t.days * kDay), 100 * t.restart_total_s / (t.days * kDay),
                   100 * t.rework_s / (t.days * kDay));
  s += fmt::format("  {:<22} {:.0f} unexpected (one per {} at {:.3g} per GPU-hour) + {:.0f} planned, {} each to restart\n",
                   "interruptions", t.failures.expected_interruptions, duration(t.failures.mtbf_h * kHour), t.failures.per_gpu_per_hour,
                   t.failures.planned_interruptions, duration(t.failures.restart_s));
  s += fmt::format("  {:<22} {:.3g} TB, {} ({} paused per checkpoint{}), every {} of training{} (optimum {})\n", "checkpoint",
                   t.checkpoint.bytes / 1e12, t.checkpoint.mode, duration(t.checkpoint.write_s),
                   t.checkpoint.drain_s > 0 ? ", " + duration(t.checkpoint.drain_s) + " to storage in the background" : "",
                   duration(t.checkpoint.interval_s),
                   std::isfinite(t.checkpoint.interval_s) ? fmt::format(" = {:.0f} steps", t.checkpoint.interval_s / t.step_s) : "",
                   duration(t.checkpoint.optimal_interval_s));
  return s;
}

}  // namespace parasim
