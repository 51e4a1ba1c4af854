#include "sim/uncertainty.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "sim/config/json_reader.h"
#include "sim/core/parallel_for.h"
#include "sim/parallel/moe_dispatch.h"

namespace parasim {

namespace {

// splitmix64: tiny, portable and fully specified, unlike std::uniform_real_distribution.
struct SplitMix {
  std::uint64_t s;
  double next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }
};

// The dispatcher table's points the scenario reads at `at` (Profile::dispatch_bracket), named.
void add_dispatch_points(std::vector<std::pair<std::string, Figure*>>& out, Profile::DispatchTable& table, MoeDispatcher d,
                         std::int64_t at, std::string (*name)(MoeDispatcher, std::int64_t)) {
  const auto it = table.find(d);
  if (it == table.end() || at <= 0) return;
  const auto [i, j] = Profile::dispatch_bracket(it->second, at);
  for (size_t k : {i, j}) {
    Profile::DispatchPoint& pt = it->second[k];
    out.push_back({name(d, pt.at), &pt.efficiency});
    if (i == j) break;
  }
}

// The profile figures with a spread that this scenario's prediction reads; the dispatcher's points
// at the rates dispatch_rates reads (its group's nodes and ranks per NVLink domain, 0: none).
std::vector<std::pair<std::string, Figure*>> ranged(Profile& p, const TrainingSpec& t, MoeDispatcher dispatcher,
                                                    const DispatchRates& read, std::int64_t nodes, std::int64_t ranks_per_node) {
  std::vector<std::pair<std::string, Figure*>> out;
  add_dispatch_points(out, p.moe_dispatch_rdma, dispatcher, read.nic > 0 ? nodes : 0, Profile::dispatch_rdma_figure_name);
  add_dispatch_points(out, p.moe_dispatch_nvlink, dispatcher, read.nvlink > 0 ? ranks_per_node : 0, Profile::dispatch_nvlink_figure_name);
  for (auto& [dt, f] : p.gemm_max_efficiency) out.push_back({"gemm_max_efficiency." + dt, &f});
  const std::string kernel = t.priced_attention_kernel();
  if (kernel != kAttentionDefault || p.has_fused_attention) {
    const auto [fwd, bwd] = p.attention_efficiency(kernel);
    const std::string prefix = kernel == kAttentionDefault ? "attention_" : "attention_kernels." + kernel + ".";
    out.push_back({prefix + "fwd_efficiency", fwd});
    out.push_back({prefix + "bwd_efficiency", bwd});
  }
  for (auto& [name, f] : std::initializer_list<std::pair<const char*, Figure*>>{
           {"hbm_efficiency", &p.hbm_efficiency}, {"kernel_overhead_us", &p.kernel_overhead_us},
           {"gemm_fixed_us", &p.gemm_fixed_us}, {"gemm_epilogue_gbps", &p.gemm_epilogue_gbps},
           {"gemm_unaligned_ratio", &p.gemm_unaligned_ratio},
           {"attention_gemm_unaligned_ratio", &p.attention_gemm_unaligned_ratio},
           {"overlap_compute_slowdown", &p.overlap_compute_slowdown},
           {"intra_bus_efficiency", &p.intra_bus_efficiency},
           {"inter_bus_efficiency", &p.inter_bus_efficiency}, {"inter_alpha_us", &p.inter_alpha_us},
           {"sustained_clock_ratio", &p.sustained_clock_ratio}, {"gpu_speed_spread", &p.gpu_speed_spread}})
    out.push_back({name, f});
  for (const auto& f : Profile::kKernelClassFigures) out.push_back({std::string("kernel_class_ratio.") + f.name, &(p.kernel_class_ratio.*f.member)});
  std::erase_if(out, [](const auto& x) { return !x.second->has_range(); });
  return out;
}

}  // namespace

Interval predict_interval(const Scenario& sc, const Registries& reg, std::int64_t samples, std::uint64_t seed, int jobs) {
  Interval iv;
  Scenario s = sc;
  const ScenarioDispatch ep = scenario_dispatch(s);
  auto figs = ranged(s.profile, s.training, s.parallel.moe_dispatcher, ep.rates, ep.nodes, ep.ranks_per_node);
  for (const auto& f : figs) iv.figures.push_back(f.first);
  std::vector<double> steps;
  if (figs.empty()) {
    const double t = simulate(sc, reg).result.step_time_s;
    iv.step_time_p10_s = iv.step_time_p90_s = t;
    iv.samples = 1;
    iv.steps = {t};
    return iv;
  }
  // Every sample's figures drawn in order from one generator, then simulated on `jobs` threads, each
  // sample on its own copy of the scenario: the interval is the same for any count.
  SplitMix rng{seed};
  std::vector<double> draws;
  draws.reserve(static_cast<size_t>(samples) * figs.size());
  for (std::int64_t i = 0; i < samples; ++i)
    for (auto& [name, f] : figs) draws.push_back(f->low + (f->high - f->low) * rng.next());
  steps.assign(static_cast<size_t>(samples), 0.0);
  parallel_for(static_cast<std::size_t>(samples), thread_count(jobs), nullptr, [&](std::size_t i) {
    Scenario local = s;
    auto mine = ranged(local.profile, local.training, local.parallel.moe_dispatcher, ep.rates, ep.nodes, ep.ranks_per_node);
    for (size_t k = 0; k < mine.size(); ++k) mine[k].second->value = draws[i * mine.size() + k];
    steps[i] = simulate(local, reg).result.step_time_s;
  });
  std::sort(steps.begin(), steps.end());
  iv.step_time_p10_s = quantile_sorted(steps, 0.10);
  iv.step_time_p90_s = quantile_sorted(steps, 0.90);
  iv.samples = samples;
  iv.steps = std::move(steps);
  return iv;
}

double quantile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const double x = p * static_cast<double>(sorted.size() - 1);
  const auto i = static_cast<size_t>(x);
  const double w = x - static_cast<double>(i);
  return i + 1 < sorted.size() ? sorted[i] * (1 - w) + sorted[i + 1] * w : sorted[i];
}

std::optional<ModelErrorBands> load_model_error(const std::string& data_dir) {
  const std::string path = (std::filesystem::path(data_dir) / kModelErrorFile).string();
  if (!std::filesystem::exists(path)) return std::nullopt;
  return read_model_error(path);
}

std::string model_class(const ModelSpec& model) { return model.moe ? kModelClasses[1] : kModelClasses[0]; }

std::pair<const ModelErrorBand*, std::string> ModelErrorBands::band_for(const std::string& cls) const {
  const auto it = classes.find(cls);
  if (it != classes.end() && static_cast<std::int64_t>(it->second.log_ratios.size()) >= kMinClassRuns) return {&it->second, cls};
  return {&all, "all"};
}

namespace {

// One band's fields, at the top level of the file (all runs) or under /classes/<name>.
ModelErrorBand read_band(const JsonObject& o, const std::string& path) {
  ModelErrorBand me;
  me.p10 = o.number("p10", -5, 5);
  me.p90 = o.number("p90", -5, 5);
  me.held_out_coverage = o.number("held_out_coverage", 0, 1);
  me.sources = o.integer("sources", 1, 1000000);
  const Json& r = o.raw("log_ratios");
  if (!r.is_array() || r.empty()) o.fail("log_ratios", "expected a non-empty array of numbers");
  for (size_t i = 0; i < r.size(); ++i) {
    if (!r[i].is_number() || !std::isfinite(r[i].get<double>()) || std::abs(r[i].get<double>()) > 5)
      throw_config(path, pointer_child(o.path("log_ratios"), std::to_string(i)), "expected a number within -5..5");
    me.log_ratios.push_back(r[i].get<double>());
  }
  if (!std::is_sorted(me.log_ratios.begin(), me.log_ratios.end())) o.fail("log_ratios", "expected the values sorted ascending");
  if (me.p10 > me.p90) o.fail("p10", "expected p10 <= p90");
  return me;
}

Json band_json(const ModelErrorBand& me) {
  return {{"runs", me.log_ratios.size()}, {"sources", me.sources}, {"p10", me.p10}, {"p90", me.p90},
          {"held_out_coverage", me.held_out_coverage}, {"log_ratios", me.log_ratios}};
}

}  // namespace

ModelErrorBands read_model_error(const std::string& path) {
  const Json j = read_json_file(path);
  const JsonObject o(j, path, "");
  if (o.str("schema") != "parasim.model_error/1") o.fail("schema", "expected \"parasim.model_error/1\"");
  ModelErrorBands me;
  me.all = read_band(o, path);
  if (o.has("classes")) {
    const Json& cs = o.raw("classes");
    if (!cs.is_object()) o.fail("classes", "expected an object of model classes (\"dense\", \"moe\")");
    for (const auto& [name, band] : cs.items()) {
      const std::string at = pointer_child(o.path("classes"), name);
      if (std::find(kModelClasses.begin(), kModelClasses.end(), name) == kModelClasses.end())
        throw_config(path, at, "expected the model class \"dense\" or \"moe\"");
      const JsonObject c(band, path, at);
      me.classes[name] = read_band(c, path);
      c.finish({"runs"});
    }
  }
  o.finish({"what", "runs", "generated_by"});
  return me;
}

Json model_error_json(const ModelErrorBands& me, const std::string& generated_by) {
  Json j = band_json(me.all);
  j["schema"] = "parasim.model_error/1";
  j["what"] = "ln(measured step / predicted step) of each measured run with a throughput figure (positive: the run was slower "
              "than predicted); p10 and p90 of them; held_out_coverage: the fraction of runs inside the p10..p90 band of the "
              "other sources' runs; classes: the same for the runs of dense and of mixture-of-experts models, the band "
              "`parasim run --interval` takes for a scenario of that class when it holds at least " +
              std::to_string(kMinClassRuns) + " runs";
  j["generated_by"] = generated_by;
  Json cs = Json::object();
  for (const auto& [name, band] : me.classes) cs[name] = band_json(band);
  j["classes"] = cs;
  return j;
}

std::pair<double, double> combined_interval(const std::vector<double>& step_samples, const ModelErrorBand& me) {
  std::vector<double> all;
  all.reserve(step_samples.size() * me.log_ratios.size());
  for (const double t : step_samples)
    for (const double r : me.log_ratios) all.push_back(t * std::exp(r));
  std::sort(all.begin(), all.end());
  return {quantile_sorted(all, 0.10), quantile_sorted(all, 0.90)};
}

TimeShares time_shares(const Scenario& sc, const Registries& reg, double step_s) {
  constexpr double kStep = 1.02;
  TimeShares out{};
  if (!(step_s > 0)) return out;
  for (size_t i = 0; i < kTimeClasses.size(); ++i) {
    Scenario s = sc;
    s.profile.time_scale.*kTimeClasses[i].member = kStep;
    out[i] = std::log(simulate(s, reg).result.step_time_s / step_s) / std::log(kStep);
  }
  return out;
}

}  // namespace parasim
