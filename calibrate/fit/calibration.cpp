#include "calibrate/fit/calibration.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>
#include <set>

#include <fmt/format.h>

#include "sim/cost/cost_model.h"
#include "models/layer_graph.h"

namespace parasim {

std::vector<GemmShape> calibration_shapes(const std::string& data_dir, const std::vector<std::string>& models,
                                          const std::vector<std::int64_t>& tps, const std::vector<std::int64_t>& tokens,
                                          std::int64_t grid_lo, std::int64_t grid_hi) {
  std::set<GemmShape> s;
  for (const auto& name : models) {
    const ModelSpec m = load_zoo_model(data_dir, name, "calibration shapes");
    for (auto tp : tps) {
      if (m.heads % tp || m.ffn_hidden % tp) continue;
      for (auto t : tokens) {
        LayerShape sh;
        sh.tp = tp;
        sh.micro_batch = 1;
        sh.seq_len = t;
        for (const LayerGraph& g : build_model_graph(m, sh).kinds)  // every kind of layer the model has
          for (const Block* b : {&g.attn_fwd, &g.attn_bwd, &g.mlp_fwd, &g.mlp_bwd, &g.head_fwd, &g.head_bwd})
            for (const auto& k : b->kernels)
              if (k.kind == KernelKind::Gemm && k.batch == 1) s.insert({k.m, k.n, k.k});
      }
    }
  }
  if (grid_lo > 0)
    for (std::int64_t m = grid_lo; m <= grid_hi; m *= 2)
      for (std::int64_t n = grid_lo; n <= grid_hi; n *= 2)
        for (std::int64_t k = grid_lo; k <= grid_hi; k *= 2) s.insert({m, n, k});
  return {s.begin(), s.end()};
}

namespace {
AlphaBetaSegment line(const std::vector<std::pair<double, double>>& p, size_t a, size_t b) {
  // Least squares of time = alpha + bytes/beta, weighted by 1/time (relative error).
  double s00 = 0, s01 = 0, s11 = 0, t0 = 0, t1 = 0;
  for (size_t i = a; i <= b; ++i) {
    const double w = 1.0 / p[i].second, x = p[i].first;
    s00 += w * w;
    s01 += w * w * x;
    s11 += w * w * x * x;
    t0 += w * w * p[i].second;
    t1 += w * w * x * p[i].second;
  }
  const double det = s00 * s11 - s01 * s01;
  AlphaBetaSegment seg{p[a].first, p[b].first, 0, 0};
  if (b == a || std::abs(det) < 1e-300) {
    seg.alpha_s = p[a].second;
    seg.beta_bytes_per_s = INFINITY;
    return seg;
  }
  const double alpha = (t0 * s11 - t1 * s01) / det, inv_beta = (s00 * t1 - s01 * t0) / det;
  seg.alpha_s = std::max(0.0, alpha);
  seg.beta_bytes_per_s = inv_beta > 0 ? 1.0 / inv_beta : INFINITY;
  return seg;
}
double eval(const AlphaBetaSegment& s, double x) { return s.alpha_s + (std::isinf(s.beta_bytes_per_s) ? 0.0 : x / s.beta_bytes_per_s); }
}  // namespace

std::vector<AlphaBetaSegment> fit_alpha_beta(std::vector<std::pair<double, double>> p, double tol) {
  std::sort(p.begin(), p.end());
  std::vector<AlphaBetaSegment> out;
  size_t a = 0;
  while (a < p.size()) {
    size_t b = a;
    AlphaBetaSegment best = line(p, a, a);
    // Grow the segment while one line fits every point within tolerance.
    for (size_t c = a + 1; c < p.size(); ++c) {
      const AlphaBetaSegment s = line(p, a, c);
      bool ok = true;
      for (size_t i = a; i <= c && ok; ++i) ok = std::abs(eval(s, p[i].first) - p[i].second) <= tol * p[i].second;
      if (!ok) break;
      best = s;
      b = c;
    }
    out.push_back(best);
    a = b + 1;
  }
  return out;
}

GemmKernelFit fit_gemm_kernel(const Profile& p, const std::string& dtype, const std::vector<GemmTiming>& points) {
  GemmKernelFit f;
  if (points.size() < 4) return f;
  const double peak = p.peak_flops(dtype);
  const double out_bytes = dtype == "fp32" || dtype == "tf32" ? 4.0 : 2.0;
  // Normal equations of the 3-column least squares, columns scaled to order one.
  double ata[3][3] = {}, aty[3] = {};
  const double s_fixed = 1e-6, s_out = 1e-12;  // 1 us; 1 byte at 1 TB/s
  std::vector<std::array<double, 3>> rows;
  for (const auto& g : points) {
    const double flops = 2.0 * g.m * g.n * g.k * g.batch;
    const std::array<double, 3> a = {s_fixed, out_bytes * g.m * g.n * g.batch * s_out,
                                     flops / (peak * wave_quantisation(p, g.m, g.n, g.batch))};
    rows.push_back(a);
    for (int i = 0; i < 3; ++i) {
      aty[i] += a[static_cast<size_t>(i)] * g.time_s;
      for (int j = 0; j < 3; ++j) ata[i][j] += a[static_cast<size_t>(i)] * a[static_cast<size_t>(j)];
    }
  }
  // Gauss-Jordan with partial pivoting.
  for (int c = 0; c < 3; ++c) {
    int piv = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::abs(ata[r][c]) > std::abs(ata[piv][c])) piv = r;
    if (std::abs(ata[piv][c]) < 1e-300) return f;
    std::swap(ata[c], ata[piv]);
    std::swap(aty[c], aty[piv]);
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double m = ata[r][c] / ata[c][c];
      for (int j = 0; j < 3; ++j) ata[r][j] -= m * ata[c][j];
      aty[r] -= m * aty[c];
    }
  }
  const double x0 = aty[0] / ata[0][0], x1 = aty[1] / ata[1][1], x2 = aty[2] / ata[2][2];
  if (!(x0 >= 0 && x1 > 0 && x2 > 0)) return f;
  f.fixed_s = x0 * s_fixed;
  f.epilogue_bytes_per_s = 1.0 / (x1 * s_out);
  f.main_efficiency = 1.0 / x2;
  double sum = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double pred = x0 * rows[i][0] + x1 * rows[i][1] + x2 * rows[i][2];
    const double e = std::abs(pred / points[i].time_s - 1.0);
    sum += e;
    f.max_abs_error = std::max(f.max_abs_error, e);
  }
  f.mean_abs_error = sum / static_cast<double>(rows.size());
  f.ok = f.main_efficiency <= 1.0;
  return f;
}

SpeedSpreadFit fit_speed_spread(std::vector<double> t) {
  SpeedSpreadFit f;
  f.gpus = t.size();
  if (t.size() < 4) return f;
  std::sort(t.begin(), t.end());
  auto quantile = [&](double q) {
    const double x = q * static_cast<double>(t.size() - 1);
    const auto i = static_cast<std::size_t>(x);
    return i + 1 < t.size() ? t[i] + (x - static_cast<double>(i)) * (t[i + 1] - t[i]) : t[i];
  };
  f.median_s = quantile(0.5);
  f.iqr_s = quantile(0.75) - quantile(0.25);
  if (!(f.median_s > 0)) return f;
  f.sigma = f.iqr_s / 1.349 / f.median_s;
  f.slowest_over_median = t.back() / f.median_s;
  f.ok = true;
  return f;
}

Json build_measured_profile(const Json& base, const std::string& name, const HarnessContext& ctx, const std::vector<MeasuredGemm>& gemms,
                            const std::vector<MeasuredBandwidth>& bw, const std::vector<MeasuredCollective>& colls,
                            const Json& extra_notes, std::vector<std::string>& notes, const HarnessExtras& extras) {
  const MeasuredSustained& sustained = extras.sustained;
  Json p = base;
  p["name"] = name;
  const std::string src = fmt::format("measured: parasim-calibrate on {} ({}), {}", ctx.gpu_name, ctx.date, ctx.command);
  p["description"] = "Measured by parasim-calibrate; datasheet figures of the base profile kept where nothing was measured.";
  Json& d = p["device"];
  d["name"] = ctx.gpu_name;
  d["sms"] = ctx.sms;
  d["memory_bytes"] = ctx.memory_bytes;
  d["how"] = "measured";
  d["date"] = ctx.date;
  d["driver"] = ctx.driver;
  d["cuda"] = ctx.cuda;
  d["nccl"] = ctx.nccl;
  d["cublas"] = ctx.cublas;
  d["cudnn"] = ctx.cudnn;
  d["clocks_mhz"] = {{"sm_max", ctx.clock_mhz}, {"memory_max", ctx.mem_clock_mhz}};
  d["command"] = ctx.command;
  d["source"] = src;
  // GEMM points and best-shape efficiency per dtype.
  Json pts = Json::array();
  std::map<std::string, std::pair<double, GemmShape>> best;
  for (const auto& g : gemms) {
    if (!g.correct) {
      notes.push_back(fmt::format("dropped {} {}x{}x{}: wrong result", g.dtype, g.shape.m, g.shape.n, g.shape.k));
      continue;
    }
    pts.push_back({{"m", g.shape.m}, {"n", g.shape.n}, {"k", g.shape.k}, {"dtype", g.dtype}, {"time_s", g.p50_s}, {"p10_s", g.p10_s},
                   {"p90_s", g.p90_s}, {"algo", fmt::format("cublasLt algo {} tile {}", g.algo, g.tile)}, {"source", src}});
    const double peak = p["compute"]["peak_tflops"].contains(g.dtype) ? p["compute"]["peak_tflops"][g.dtype]["value"].get<double>() * 1e12 : 0;
    if (peak <= 0) continue;
    const double eff = 2.0 * static_cast<double>(g.shape.m) * static_cast<double>(g.shape.n) * static_cast<double>(g.shape.k) / g.p50_s / peak;
    // The best-shape figure is read by the GEMM kernel model in its own (row-major) orientation,
    // where a dimension that is a leading dimension there may not be one in the harness's
    // column-major TN layout: only shapes aligned in every dimension (multiples of 8) read alike.
    const bool aligned = g.shape.m % 8 == 0 && g.shape.n % 8 == 0 && g.shape.k % 8 == 0;
    if (aligned && eff > best[g.dtype].first) best[g.dtype] = {eff, g.shape};
  }
  if (!gemms.empty()) p["compute"]["gemm_points"] = pts;
  for (const auto& [dt, e] : best)
    p["compute"]["gemm_max_efficiency"][dt] = {
        {"value", std::min(1.0, e.first)}, {"how", "measured"},
        {"source", fmt::format("{}; best of {} measured shapes at {}x{}x{}", src, pts.size(), e.second.m, e.second.n, e.second.k)},
        {"shape_mnk", {e.second.m, e.second.n, e.second.k}}};
  // The GEMM kernel model's fixed time and epilogue rate, fitted to the dtype with the most
  // measured shapes (bf16 on a tie); the base profile's figures stay when the fit fails.
  std::map<std::string, std::vector<GemmTiming>> by_dtype;
  for (const auto& g : gemms)
    if (g.correct)
      by_dtype[g.dtype].push_back({static_cast<double>(g.shape.m), static_cast<double>(g.shape.n), static_cast<double>(g.shape.k), 1.0, g.p50_s});
  std::string fit_dt;
  for (const auto& [dt, v] : by_dtype)
    if (fit_dt.empty() || v.size() > by_dtype[fit_dt].size() || (v.size() == by_dtype[fit_dt].size() && dt == "bf16")) fit_dt = dt;
  if (!fit_dt.empty() && p["compute"]["peak_tflops"].contains(fit_dt)) {
    const auto& v = by_dtype[fit_dt];
    const GemmKernelFit fit = fit_gemm_kernel(parse_profile(p, name + ".json"), fit_dt, v);
    if (fit.ok) {
      const std::string how = fmt::format("{}; GEMM kernel model fitted to {} measured {} shapes (least squares on time; "
                                          "main-loop efficiency {:.4f}, mean error {:.1f} %, max {:.1f} %)",
                                          src, v.size(), fit_dt, fit.main_efficiency, 100 * fit.mean_abs_error, 100 * fit.max_abs_error);
      p["compute"]["gemm_fixed_us"] = {{"value", fit.fixed_s * 1e6}, {"how", "fitted"}, {"source", how}};
      p["compute"]["gemm_epilogue_gbps"] = {{"value", fit.epilogue_bytes_per_s / 1e9}, {"how", "fitted"}, {"source", how}};
    } else {
      notes.push_back(fmt::format("GEMM kernel model not fitted ({} {} shapes; needs 4 or more giving positive figures): "
                                  "the base profile's gemm_fixed_us and gemm_epilogue_gbps stay", v.size(), fit_dt));
    }
  }
  // Sustained clock and the spread between GPUs, from the same GEMM run on every GPU at once.
  if (!sustained.sustained_s.empty() && sustained.burst_s.size() == sustained.sustained_s.size()) {
    std::vector<double> ratios;
    for (std::size_t i = 0; i < sustained.burst_s.size(); ++i)
      if (sustained.sustained_s[i] > 0) ratios.push_back(sustained.burst_s[i] / sustained.sustained_s[i]);
    std::sort(ratios.begin(), ratios.end());
    const std::string run = fmt::format("{}; {} {}x{}x{} GEMMs back to back for {:.0f} s on each of {} GPUs at once ({} node(s))", src,
                                        sustained.dtype, sustained.m, sustained.n, sustained.k, sustained.seconds,
                                        sustained.sustained_s.size(), sustained.nodes);
    if (!ratios.empty()) {
      const double r = ratios.size() % 2 ? ratios[ratios.size() / 2]
                                         : 0.5 * (ratios[ratios.size() / 2 - 1] + ratios[ratios.size() / 2]);
      p["compute"]["sustained_clock_ratio"] = {
          {"value", std::clamp(r, 0.3, 1.0)}, {"how", "measured"},
          {"source", fmt::format("{}: median over GPUs of the burst time (a short benchmark) over the time per GEMM in the "
                                 "window's second half, {:.4f} (GPUs {:.4f} .. {:.4f})",
                                 run, r, ratios.front(), ratios.back())}};
    }
    const SpeedSpreadFit sf = fit_speed_spread(sustained.sustained_s);
    if (sf.ok) {
      p["compute"]["gpu_speed_spread"] = {
          {"value", std::min(0.5, sf.sigma)}, {"how", "measured"},
          {"source", fmt::format("{}: sustained time per GEMM median {:.4g} ms, interquartile range {:.4g} ms, slowest GPU {:.2f} % over "
                                 "the median; sigma = IQR / 1.349 / median = {:.2f} % (the estimator of Sinha et al. SC'22, "
                                 "whose figure this replaces)",
                                 run, 1e3 * sf.median_s, 1e3 * sf.iqr_s, 100 * (sf.slowest_over_median - 1), 100 * sf.sigma)}};
    } else {
      notes.push_back(fmt::format("gpu_speed_spread not measured: {} GPU(s) ran the sustained GEMM, 4 or more are needed; the base "
                                  "profile's figure stays", sf.gpus));
    }
  }
  if (extras.kernel_gap_s > 0)
    p["compute"]["kernel_overhead_us"] = {
        {"value", std::min(1e4, extras.kernel_gap_s * 1e6)}, {"how", "measured"},
        {"source", fmt::format("{}; {} dependent kernels (a 4,096-element triad each) launched back to back on one stream, CUDA "
                               "events: {:.2f} us per kernel, the launch and tail gap every kernel pays at least",
                               src, extras.gap_kernels, extras.kernel_gap_s * 1e6)}};
  const MeasuredHeadPair& hp = extras.attention_heads;
  if (hp.aligned_s > 0 && hp.unaligned_s > 0 && hp.aligned_dim > 0 && hp.unaligned_dim > 0) {
    const double r = (static_cast<double>(hp.unaligned_dim) / hp.unaligned_s) / (static_cast<double>(hp.aligned_dim) / hp.aligned_s);
    p["compute"]["attention_gemm_unaligned_ratio"] = {
        {"value", std::clamp(r, 0.01, 1.0)}, {"how", "measured"},
        {"source", fmt::format("{}; unfused attention's QK^T (bf16, cuBLASLt strided-batched) over {} heads at sequence {}, Q and K "
                               "views into one fused [seq, heads, 3 x head_dim] tensor: head dim {} ({} bytes, off 16) {:.4g} ms, "
                               "head dim {} (aligned) {:.4g} ms; FLOP rate ratio {:.4f}",
                               src, hp.heads, hp.seq, hp.unaligned_dim, 2 * hp.unaligned_dim, 1e3 * hp.unaligned_s, hp.aligned_dim,
                               1e3 * hp.aligned_s, r)}};
  }
  for (const auto& b : bw) {
    if (b.what == "elementwise_triad") {
      const double peak = p["memory"]["hbm_gbps"]["value"].get<double>();
      p["memory"]["hbm_efficiency"] = {{"value", std::min(1.0, b.gbps / peak)}, {"how", "measured"},
                                       {"source", fmt::format("{}; triad {:.0f} GB/s of {:.0f} GB/s", src, b.gbps, peak)}};
    }
    if (b.what == "h2d") p["memory"]["pcie_gbps"] = {{"value", b.gbps}, {"how", "measured"}, {"source", src + "; pinned host-to-device copy"}};
  }
  // The base profile's points stay unless this run measured the same (op, ranks, nodes) group: a
  // multi-node run under mpirun adds to a single-node measured profile.
  Json cp = Json::array();
  if (p["network"].contains("collective_points"))
    for (const auto& old : p["network"]["collective_points"]) {
      bool replaced = false;
      for (const auto& c : colls)
        replaced = replaced || (old.value("op", "") == c.op && old.value("ranks", 0LL) == c.ranks && old.value("nodes", 1LL) == c.nodes);
      if (!replaced) cp.push_back(old);
    }
  std::map<std::tuple<std::string, std::int64_t, std::int64_t>, std::vector<std::pair<double, double>>> series;
  for (const auto& c : colls) {
    cp.push_back({{"op", c.op}, {"ranks", c.ranks}, {"nodes", c.nodes}, {"bytes", c.bytes}, {"time_s", c.p50_s}, {"p10_s", c.p10_s},
                  {"p90_s", c.p90_s}, {"algo", "nccl default"}, {"source", src}});
    series[{c.op, c.ranks, c.nodes}].push_back({c.bytes, c.p50_s});
  }
  if (!colls.empty()) p["network"]["collective_points"] = cp;
  Json fits = Json::object();
  for (const auto& [key, pts2] : series) {
    Json segs = Json::array();
    for (const auto& s : fit_alpha_beta(pts2))
      segs.push_back({{"from_bytes", s.lo}, {"to_bytes", s.hi}, {"alpha_s", s.alpha_s},
                      {"beta_gbps", std::isinf(s.beta_bytes_per_s) ? 0.0 : s.beta_bytes_per_s / 1e9}});
    const auto& [op, ranks, nodes] = key;
    fits[nodes > 1 ? fmt::format("{}/{}/{}nodes", op, ranks, nodes) : fmt::format("{}/{}", op, ranks)] = segs;
  }
  Json n = extra_notes.is_object() ? extra_notes : Json::object();
  n["alpha_beta_fits"] = fits;
  n["harness_notes"] = notes;
  p["notes"] = n;
  return p;
}

}  // namespace parasim
