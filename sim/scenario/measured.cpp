#include "sim/scenario/measured.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

namespace parasim {

std::string parallel_family(const ParallelSpec& p) {
  if (p.pp > 1 && (p.tp > 1 || p.cp > 1)) return "3D";
  if (p.pp > 1) return "PP";
  if (p.tp > 1 || p.cp > 1) return "TP";
  return "DP/FSDP";
}

bool is_measured_document(const Json& j) {
  const auto s = j.is_object() ? j.find("schema") : j.end();
  return j.is_object() && s != j.end() && s->is_string() && s->get<std::string>().rfind("parasim.measured", 0) == 0;
}

namespace {
// A measured step time and tokens/s per GPU are one figure twice: global batch x sequence length
// over GPUs x rate is the step. Published pairs agree to rounding (the shipped runs within 2 %); more
// than 10 % apart, one of them was mistyped or measured over another window, and judging the
// prediction against both would pass or fail it twice for contradictory reasons.
void check_step_and_rate_agree(const JsonObject& meas, const MeasuredRun& m) {
  double step = 0, rate = 0;
  for (const MeasuredFigure& f : m.figures) {
    if (f.name == "step_time_s") step = f.value;
    if (f.name == "tokens_per_s_per_gpu") rate = f.value;
  }
  if (step <= 0 || rate <= 0) return;
  const double tokens = static_cast<double>(m.scenario.training.global_batch) * static_cast<double>(m.scenario.training.seq_len);
  const double implied = tokens / (rate * static_cast<double>(m.scenario.cluster.gpus()));
  if (std::max(implied / step, step / implied) - 1 > 0.10)
    meas.fail("tokens_per_s_per_gpu", fmt::format("{:.6g} tokens/s per GPU means a step of {:.4g} s ({} x {} tokens on {} GPUs), but "
                                                  "step_time_s is {:.4g} s: the two measured figures disagree by more than 10 %",
                                                  rate, implied, m.scenario.training.global_batch, m.scenario.training.seq_len,
                                                  m.scenario.cluster.gpus(), step));
}
}  // namespace

MeasuredRun load_measured(const std::string& path, const std::string& data_dir) {
  return parse_measured(read_json_file(path), input_name(path), data_dir);
}

MeasuredRun parse_measured(const Json& j, const std::string& path, const std::string& data_dir) {
  const JsonObject root(j, path, "");
  if (root.str("schema") != "parasim.measured/1") root.fail("schema", "expected \"parasim.measured/1\"");
  MeasuredRun m;
  m.file = path;
  m.id = root.str("id", std::filesystem::path(path).stem().string());
  const Json& sj = root.raw("scenario");
  if (sj.is_string()) {
    // A path relative to the measured file; what goes wrong there is told from this file's /scenario.
    const std::filesystem::path sp = std::filesystem::path(path).parent_path() / sj.get<std::string>();
    try {
      m.scenario = load_scenario(sp.string(), data_dir);
    } catch (const ConfigError& e) {
      throw ConfigError(path + ": /scenario: the scenario file it names: " + e.what());
    }
  } else if (sj.is_object()) {
    // Errors inside the inline scenario name the measured file and /scenario/...
    try {
      m.scenario = parse_scenario(sj, path + " (/scenario)", data_dir);
    } catch (const ConfigError& e) {
      throw ConfigError(e.what());
    }
  } else {
    root.fail("scenario", "expected an inline scenario object or a path to one");
  }
  const JsonObject meas = root.object("measured");
  auto plain = [&](const char* k, double max) {
    if (meas.has(k)) m.figures.push_back({k, meas.number(k, 1e-12, max), ""});
  };
  plain("step_time_s", 1e7);
  plain("tokens_per_s_per_gpu", 1e9);
  plain("mfu", 1.0);
  plain("hfu", 1.0);
  if (auto t = meas.object_opt("tflops_per_gpu")) {
    m.figures.push_back({"tflops_per_gpu", t->number("value", 1e-6, 1e5), t->choice("flops", {"model", "model_causal", "hardware"})});
    t->finish();
  }
  if (auto mem = meas.object_opt("peak_mem_gib")) {
    m.figures.push_back({"peak_mem_gib", mem->number("value", 1e-6, 1e5), mem->choice("read", {"framework", "nvidia-smi"})});
    mem->finish();
  }
  // Components a profiler can measure on a real run (e.g. from a Perfetto/Nsight trace), so that
  // an error can be traced to the part of the model that caused it.
  if (auto comp = meas.object_opt("components")) {
    for (const char* k : {"compute_s", "comm_exposed_s", "bubble_fraction"})
      if (comp->has(k)) m.figures.push_back({std::string("component.") + k, comp->number(k, 0, 1e7), ""});
    comp->finish();
  }
  if (meas.has("oom")) {
    m.has_oom = true;
    m.oom = meas.boolean("oom");
  }
  meas.finish();
  check_step_and_rate_agree(meas, m);
  if (m.figures.empty() && !m.has_oom)
    root.fail("measured", "no measured figure: give at least one of step_time_s, tokens_per_s_per_gpu, tflops_per_gpu, mfu, hfu, peak_mem_gib, oom");
  const JsonObject src = root.object("source");
  m.source_title = src.str("title");
  m.source_where = src.str("where", "");
  m.source_address = src.str("address", "");
  src.finish();
  m.confidence = root.choice("confidence", {"high", "medium", "low"}, "");
  m.family = root.str("family", parallel_family(m.scenario.parallel));
  root.str("hardware_note", "");
  root.str("notes", "");
  root.object_opt("inferred_fields");
  root.object_opt("conversion_inferred");
  root.finish();
  return m;
}

}  // namespace parasim
