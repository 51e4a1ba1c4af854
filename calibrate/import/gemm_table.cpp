#include "calibrate/import/gemm_table.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "sim/cost/cost_model.h"

namespace parasim {

namespace {
ConfigError bad(const std::string& file, const std::string& pointer, const std::string& what) {
  return ConfigError(file + ": " + pointer + ": " + what);
}
}  // namespace

GemmTable parse_gemm_table(const Json& j, const std::string& file) {
  GemmTable t;
  t.file = file;
  if (!j.is_object()) throw bad(file, "/", "expected an object (parasim.gemm_table/1)");
  if (!j.contains("schema") || j["schema"] != "parasim.gemm_table/1")
    throw bad(file, "/schema", "expected \"parasim.gemm_table/1\"");
  if (!j.contains("dtype") || !j["dtype"].is_string()) throw bad(file, "/dtype", "expected the GEMM dtype, e.g. \"bf16\"");
  t.dtype = j["dtype"].get<std::string>();
  if (!j.contains("source") || !j["source"].is_object() || !j["source"].contains("title") || !j["source"]["title"].is_string())
    throw bad(file, "/source/title", "expected the table's source (title, address) for the fitted figures' provenance");
  const Json& s = j["source"];
  t.source = s["title"].get<std::string>();
  for (const char* k : {"address", "commit", "date"})
    if (s.contains(k) && s[k].is_string()) t.source += std::string(", ") + k + " " + s[k].get<std::string>();
  const Json expect_cols = Json::array({"b", "m", "n", "k", "flops_per_s"});
  if (!j.contains("columns") || j["columns"] != expect_cols) throw bad(file, "/columns", "expected [\"b\", \"m\", \"n\", \"k\", \"flops_per_s\"]");
  if (!j.contains("rows") || !j["rows"].is_array() || j["rows"].empty()) throw bad(file, "/rows", "expected a non-empty array of rows");
  const Json& rows = j["rows"];
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string ptr = "/rows/" + std::to_string(i);
    const Json& r = rows[i];
    if (!r.is_array() || r.size() != 5) throw bad(file, ptr, "expected [b, m, n, k, flops_per_s]");
    double v[5];
    for (size_t c = 0; c < 5; ++c) {
      if (!r[c].is_number()) throw bad(file, ptr + "/" + std::to_string(c), "expected a number");
      v[c] = r[c].get<double>();
      if (!std::isfinite(v[c]) || v[c] <= 0) throw bad(file, ptr + "/" + std::to_string(c), "expected a positive finite number");
    }
    for (size_t c = 0; c < 4; ++c)
      if (v[c] != std::floor(v[c]) || v[c] > 1e9) throw bad(file, ptr + "/" + std::to_string(c), "expected a whole GEMM dimension up to 1e9");
    GemmTiming g;
    g.batch = v[0];
    g.m = v[1];
    g.n = v[2];
    g.k = v[3];
    g.time_s = 2.0 * g.batch * g.m * g.n * g.k / v[4];
    if (g.time_s < kMinPointTimeS || g.time_s > kMaxPointTimeS)
      throw bad(file, ptr + "/4", fmt::format("a GEMM time of {:g} s, outside what a profile holds", g.time_s));
    t.points.push_back(g);
  }
  return t;
}

GemmTable load_gemm_table(const std::string& path) { return parse_gemm_table(read_json_file(path), path); }

GemmTableError gemm_table_error(const Profile& p, const GemmTable& table) {
  const CostModel cm(p, table.dtype);
  double sum = 0, t_meas = 0, t_pred = 0;
  for (const auto& g : table.points) {
    const double pred = cm.benchmark_gemm_s(static_cast<std::int64_t>(g.m), static_cast<std::int64_t>(g.n), static_cast<std::int64_t>(g.k),
                                  static_cast<std::int64_t>(g.batch));
    sum += std::abs(pred / g.time_s - 1);
    t_meas += g.time_s;
    t_pred += pred;
  }
  return {sum / static_cast<double>(table.points.size()), t_pred / t_meas};
}

std::vector<std::string> merge_gemm_fit(Json& profile, const Profile& base, const GemmTable& table) {
  try {
    base.peak_flops(table.dtype);
    base.gemm_efficiency(table.dtype);
  } catch (const ConfigError& e) {
    throw bad(table.file, "/dtype", "\"" + table.dtype + "\" cannot be fitted on this profile (" + e.what() + ")");
  }
  const GemmKernelFit f = fit_gemm_kernel(base, table.dtype, table.points);
  if (!f.ok)
    throw ConfigError(table.file + ": the GEMM kernel model does not fit these " + std::to_string(table.points.size()) +
                      " rows (needs at least 4, and a non-negative fixed time, a positive epilogue rate and a main loop at "
                      "most the peak)");
  const std::string src = fmt::format(
      "fitted: least squares on time of the GEMM kernel model to {} {} GEMMs of {} ({}; mean error {:.1f} %, max {:.1f} %, "
      "main loop {:.3f} of peak on that table)",
      table.points.size(), table.dtype, table.file, table.source, 100 * f.mean_abs_error, 100 * f.max_abs_error, f.main_efficiency);
  Json& c = profile["compute"];
  c["gemm_fixed_us"] = {{"value", std::round(f.fixed_s * 1e8) / 100.0}, {"how", "fitted"}, {"source", src}};
  c["gemm_epilogue_gbps"] = {{"value", std::round(f.epilogue_bytes_per_s / 1e9)}, {"how", "fitted"}, {"source", src}};
  std::vector<std::string> notes;
  notes.push_back(fmt::format("gemm_fixed_us {:.2f} (was {:g}), gemm_epilogue_gbps {:.0f} (was {:g}): fit over {} rows, mean error "
                              "{:.1f} %, max {:.1f} %",
                              f.fixed_s * 1e6, base.gemm_fixed_us.value, f.epilogue_bytes_per_s / 1e9, base.gemm_epilogue_gbps.value,
                              table.points.size(), 100 * f.mean_abs_error, 100 * f.max_abs_error));
  // The profile as written: its main loop is solved from its best-shape efficiency, which the
  // table may disagree with; say by how much.
  Profile fitted;
  try {
    fitted = parse_profile(profile, base.file);
    // Every dtype's main loop is solved from its best-shape measurement with these figures: the
    // fit must leave each of them room.
    for (const auto& [dtype, shape] : fitted.gemm_best_shape) gemm_kernel_model(fitted, dtype);
  } catch (const ConfigError& err) {
    throw ConfigError(table.file + fmt::format(": the fitted figures (gemm_fixed_us {:.2f}, gemm_epilogue_gbps {:.0f}) do not suit "
                                               "the profile: ",
                                               f.fixed_s * 1e6, f.epilogue_bytes_per_s / 1e9) +
                      err.what());
  }
  const GemmTableError e = gemm_table_error(fitted, table);
  notes.push_back(fmt::format("the profile's model on the table (main loop solved from gemm_max_efficiency.{}): mean error {:.1f} %, "
                              "total time {:+.1f} %",
                              table.dtype, 100 * e.mean_abs, 100 * (e.total_ratio - 1)));
  return notes;
}

}  // namespace parasim
