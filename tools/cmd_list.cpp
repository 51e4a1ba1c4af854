#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "sim/cost/cost_model.h"
#include "tools/commands.h"
#include "tools/report.h"

namespace parasim {

namespace {

// One entry of `parasim list WHAT`: printed as a line, or as an object of --json (docs/outputs.md).
void list_choice(const NamedChoice& c, Json* out) {
  for (const auto& e : c.names) {
    if (out) out->push_back({{"name", e.name}, {"description", e.description}, {"reference", e.reference}});
    else fmt::print("{:<14} {}\n{:<14} reference: {}\n", e.name, e.description, "", e.reference);
  }
}

void list_models(const Context& ctx, Json* out) {
  for (const auto& n : zoo_model_names(ctx.data_dir)) {
    const ModelSpec m = load_zoo_model(ctx.data_dir, n, "list");
    const std::string moe = m.moe ? moe_summary(m) : std::string();
    if (out) {
      out->push_back({{"name", n}, {"params", std::llround(count_params(m).total())}, {"layers", m.layers}, {"hidden", m.hidden}, {"heads", m.heads},
                      {"kv_heads", m.kv_heads}, {"activation", name_of(m.activation)}, {"moe", m.moe ? Json(moe) : Json(nullptr)}});
    } else {
      fmt::print("{:<22} {:>9.2f}B params  layers {:>3}  hidden {:>5}  heads {:>3}/{:<3} {}{}\n", n, count_params(m).total() / 1e9,
                 m.layers, m.hidden, m.heads, m.kv_heads, name_of(m.activation), m.moe ? "  MoE " + moe : std::string());
    }
  }
}

void list_stacks(const Context& ctx, Json* out) {
  for (const auto& n : stack_names(ctx.data_dir)) {
    const Stack st = load_stack(ctx.data_dir, n, "list");
    if (out) out->push_back({{"name", n}, {"description", st.description}, {"framework", st.framework}, {"release", st.release}});
    else fmt::print("{:<28} {}\n{:<28} {}, {}\n", n, st.description, "", st.framework, st.release);
  }
}

void list_gpus(const Context& ctx, Json* out) {
  for (const auto& n : profile_names(ctx.data_dir)) {
    const Profile p = load_profile(ctx.data_dir, n, "list");
    const char* dt = p.peak_tflops.count("bf16") ? "bf16" : "fp16";  // Volta has fp16 tensor cores only
    if (out) {
      Json peak = Json::object();
      for (const auto& [k, f] : p.peak_tflops) peak[k] = f.value;
      out->push_back({{"name", n}, {"device", p.device.name}, {"memory_gib", p.device.memory_bytes / kGiB}, {"peak_tflops", peak},
                      {"how", p.device.how}});
      continue;
    }
    // The low-precision GEMM rates the profile prices (training.dtype fp8 and its recipes).
    std::string low;
    for (const char* l : {"fp8", "mxfp8", "nvfp4"})
      if (p.peak_tflops.count(l)) low += fmt::format("  {} {:.0f}", l, p.peak_tflops.at(l).value);
    fmt::print("{:<22} {:<28} {:>6.1f} GiB  {} {:>6.0f} TFLOP/s{}  ({})\n", n, p.device.name, p.device.memory_bytes / kGiB, dt,
               p.peak_tflops.count(dt) ? p.peak_tflops.at(dt).value : 0.0, low, p.device.how);
  }
}

}  // namespace

void add_list_command(CLI::App& app, Context& ctx) {
  auto what = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* list = app.add_subcommand("list", "list what can be named in a scenario");
  std::vector<std::string> kinds;
  for (const NamedChoice& c : named_choices(ctx.registries))  // keys that share a list (FSDP's two dtypes) name it once
    if (std::find(kinds.begin(), kinds.end(), c.list) == kinds.end()) kinds.push_back(c.list);
  kinds.insert(kinds.end(), {"models", "gpus", "stacks"});
  std::string help;
  for (const auto& k : kinds) help += (help.empty() ? "" : " | ") + k;
  list->add_option("what", *what, help)->required()->check(CLI::IsMember(kinds));
  list->add_flag("--json", *json, "print {schema: parasim.list/1, what, items: [...]} on stdout (docs/outputs.md)");
  list->callback([what, json, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      Json items = Json::array();
      Json* out = *json ? &items : nullptr;
      const auto choices = named_choices(ctx.registries);
      const auto c = std::find_if(choices.begin(), choices.end(), [&](const NamedChoice& n) { return n.list == *what; });
      if (c != choices.end()) list_choice(*c, out);
      else if (*what == "models") list_models(ctx, out);
      else if (*what == "stacks") list_stacks(ctx, out);
      else list_gpus(ctx, out);
      if (out) std::cout << Json{{"schema", "parasim.list/1"}, {"what", *what}, {"items", items}}.dump(2) << "\n";
      return 0;
    });
  });
}

namespace {
// Every figure of a profile by a stable name, for show and diff.
std::vector<std::pair<std::string, Figure>> figures(const Profile& p) {
  std::vector<std::pair<std::string, Figure>> out;
  for (const auto& [dt, f] : p.peak_tflops) out.push_back({"peak_tflops." + dt, f});
  for (const auto& [dt, f] : p.gemm_max_efficiency) out.push_back({"gemm_max_efficiency." + dt, f});
  for (const auto& [k, f] : std::initializer_list<std::pair<const char*, const Figure*>>{
           {"gemm_tile_m", &p.gemm_tile_m}, {"gemm_tile_n", &p.gemm_tile_n}, {"gemm_unaligned_ratio", &p.gemm_unaligned_ratio},
           {"attention_gemm_unaligned_ratio", &p.attention_gemm_unaligned_ratio}, {"gemm_fixed_us", &p.gemm_fixed_us},
           {"gemm_epilogue_gbps", &p.gemm_epilogue_gbps}, {"kernel_overhead_us", &p.kernel_overhead_us},
           {"overlap_compute_slowdown", &p.overlap_compute_slowdown}, {"sustained_clock_ratio", &p.sustained_clock_ratio},
           {"gpu_speed_spread", &p.gpu_speed_spread},
           {"hbm_gbps", &p.hbm_gbps}, {"hbm_efficiency", &p.hbm_efficiency},
           {"runtime_reserved_gib", &p.runtime_reserved_gib}, {"pcie_gbps", &p.pcie_gbps}, {"nvlink_gbps", &p.nvlink_gbps},
           {"intra_bus_efficiency", &p.intra_bus_efficiency}, {"intra_alpha_us", &p.intra_alpha_us},
           {"inter_bus_efficiency", &p.inter_bus_efficiency}, {"inter_alpha_us", &p.inter_alpha_us}, {"node_nics", &p.node_nics},
           {"node_nic_gbps", &p.node_nic_gbps}})
    out.push_back({k, *f});
  for (const auto& f : Profile::kKernelClassFigures) out.push_back({std::string("kernel_class_ratio.") + f.name, p.kernel_class_ratio.*f.member});
  const auto attention = [&](const std::string& prefix, const Profile::AttentionKernel& a) {
    for (const auto& f : Profile::kAttentionFigures) out.push_back({prefix + f.name, a.*f.member});
  };
  if (p.has_fused_attention) attention("attention_", p.attention);
  for (const auto& [k, a] : p.attention_kernels) attention("attention_kernels." + k + ".", a);
  for (const auto& [d, pts] : p.moe_dispatch_rdma)
    for (const auto& pt : pts) out.push_back({Profile::dispatch_rdma_figure_name(d, pt.at), pt.efficiency});
  for (const auto& [d, pts] : p.moe_dispatch_nvlink)
    for (const auto& pt : pts) out.push_back({Profile::dispatch_nvlink_figure_name(d, pt.at), pt.efficiency});
  if (p.has_host) {
    out.push_back({"host_memory_gbps", p.host_memory_gbps});
    out.push_back({"host_optimizer_efficiency", p.host_optimizer_efficiency});
  }
  return out;
}

// What the GEMM kernel model derives from a profile's figures (sim/cost/cost_model.h):
// (name, value, how it was derived).
std::vector<std::tuple<std::string, double, std::string>> derived_figures(const Profile& p) {
  std::vector<std::tuple<std::string, double, std::string>> out;
  for (const auto& [dt, f] : p.gemm_max_efficiency) {
    const GemmKernelModel g = gemm_kernel_model(p, dt);
    const auto it = p.gemm_best_shape.find(dt);
    out.emplace_back("gemm_main_loop_efficiency." + dt, g.main_efficiency,
                     it == p.gemm_best_shape.end()
                         ? std::string("gemm_max_efficiency taken as is (no shape_mnk)")
                         : fmt::format("solved so that the GEMM kernel model reproduces gemm_max_efficiency at {}x{}x{}", it->second[0],
                                       it->second[1], it->second[2]));
  }
  return out;
}

// `profile show --json`: parasim.profile/1 (docs/outputs.md).
Json profile_json(const Profile& p) {
  Json figs = Json::array(), derived = Json::array();
  for (const auto& [k, f] : figures(p)) {
    Json j = {{"name", k}, {"value", f.value}, {"how", f.how}, {"source", f.source}, {"range", nullptr}};
    if (f.has_range()) j["range"] = {{"low", f.low}, {"high", f.high}, {"source", f.range_source}};
    figs.push_back(j);
  }
  for (const auto& [k, v, how] : derived_figures(p)) derived.push_back({{"name", k}, {"value", v}, {"how", how}});
  return {{"schema", "parasim.profile/1"}, {"name", p.name}, {"file", p.file},
          {"device", {{"name", p.device.name}, {"sms", p.device.sms}, {"memory_gib", p.device.memory_bytes / kGiB}, {"how", p.device.how}}},
          {"figures", figs}, {"derived", derived}, {"gemm_points", p.gemm_points.size()},
          {"collective_points", p.collective_points.size()}};
}

void print_profile(const Profile& p) {
  fmt::print("{} ({}) — {}, {} SMs, {:.1f} GiB, profile made by: {}\n", p.name, p.file, p.device.name, p.device.sms,
             p.device.memory_bytes / kGiB, p.device.how);
  const auto figs = figures(p);
  size_t w = 28;  // the name column: the longest figure name
  for (const auto& [k, f] : figs) w = std::max(w, k.size());
  for (const auto& [k, f] : figs)
    fmt::print("  {:<{}} {:>10.4g}  [{}] {}{}\n", k, w, f.value, f.how, f.source,
               f.has_range() ? fmt::format(" (range {:.4g}..{:.4g}: {})", f.low, f.high, f.range_source) : "");
  for (const auto& [k, v, how] : derived_figures(p)) fmt::print("  {:<{}} {:>10.4g}  [derived] {}\n", k, w, v, how);
  fmt::print("  gemm_points: {}   collective_points: {}\n", p.gemm_points.size(), p.collective_points.size());
}

// A figure two profiles disagree on: its value and how in each (nullopt: absent from that one).
struct FigureDiff {
  std::string name;
  std::optional<Figure> a, b;
};

// Figures of a that differ in b (in a's order), then those only in b.
std::vector<FigureDiff> profile_diff(const Profile& a, const Profile& b) {
  std::map<std::string, Figure> fb;
  for (const auto& [k, f] : figures(b)) fb[k] = f;
  std::vector<FigureDiff> out;
  std::set<std::string> in_a;
  for (const auto& [k, f] : figures(a)) {
    in_a.insert(k);
    auto it = fb.find(k);
    if (it == fb.end()) out.push_back({k, f, std::nullopt});
    else if (it->second.value != f.value || it->second.how != f.how) out.push_back({k, f, it->second});
  }
  for (const auto& [k, f] : figures(b))
    if (!in_a.count(k)) out.push_back({k, std::nullopt, f});
  return out;
}

void print_profile_diff(const Profile& a, const Profile& b, const std::vector<FigureDiff>& diff) {
  size_t w = 28;  // the name column: the longest figure name; the value columns: the profile names
  for (const FigureDiff& d : diff) w = std::max(w, d.name.size());
  const size_t wa = std::max<size_t>(12, a.name.size()), wb = std::max<size_t>(12, b.name.size());
  fmt::print("{:<{}} {:>{}} {:>{}} {:>9}  how\n", "figure", w, a.name, wa, b.name, wb, "change");
  for (const FigureDiff& d : diff) {
    if (!d.b) fmt::print("{:<{}} {:>{}.4g} {:>{}} {:>9}  {}\n", d.name, w, d.a->value, wa, "-", wb, "", d.a->how);
    else if (!d.a) fmt::print("{:<{}} {:>{}} {:>{}.4g} {:>9}  {}\n", d.name, w, "-", wa, d.b->value, wb, "", d.b->how);
    else
      fmt::print("{:<{}} {:>{}.4g} {:>{}.4g} {:>+8.1f}%  {} -> {}\n", d.name, w, d.a->value, wa, d.b->value, wb,
                 100 * (d.b->value / d.a->value - 1), d.a->how, d.b->how);
  }
  fmt::print("{} figures differ; GEMM points {} vs {}, collective points {} vs {}\n", diff.size(), a.gemm_points.size(), b.gemm_points.size(),
             a.collective_points.size(), b.collective_points.size());
}

// `profile diff --json`: parasim.profile_diff/1 (docs/outputs.md).
Json profile_diff_json(const Profile& a, const Profile& b, const std::vector<FigureDiff>& diff) {
  const auto side = [](const std::optional<Figure>& f) { return f ? Json{{"value", f->value}, {"how", f->how}} : Json(nullptr); };
  Json figs = Json::array();
  for (const FigureDiff& d : diff) figs.push_back({{"name", d.name}, {"a", side(d.a)}, {"b", side(d.b)}});
  return {{"schema", "parasim.profile_diff/1"}, {"a", a.name}, {"b", b.name}, {"differ", diff.size()}, {"figures", figs},
          {"gemm_points", {a.gemm_points.size(), b.gemm_points.size()}},
          {"collective_points", {a.collective_points.size(), b.collective_points.size()}}};
}
}  // namespace

void add_profile_command(CLI::App& app, Context& ctx) {
  auto name = std::make_shared<std::string>();
  CLI::App* prof = app.add_subcommand("profile", "inspect calibration profiles");
  prof->require_subcommand(1);
  CLI::App* show = prof->add_subcommand("show", "print every figure of a profile with how it was obtained and its source");
  show->add_option("profile", *name, "profile name or path")->required();
  auto show_json = std::make_shared<bool>(false);
  show->add_flag("--json", *show_json, "print the profile (parasim.profile/1) as JSON on stdout");
  show->callback([name, show_json, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const Profile p = load_profile(ctx.data_dir, *name, "profile show");
      if (*show_json) std::cout << profile_json(p).dump(2) << "\n";
      else print_profile(p);
      return 0;
    });
  });
  add_profile_derive_command(prof, ctx);
  auto ab = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* diff = prof->add_subcommand("diff", "compare two profiles figure by figure");
  diff->add_option("a", ab->first, "first profile")->required();
  diff->add_option("b", ab->second, "second profile")->required();
  auto diff_json = std::make_shared<bool>(false);
  diff->add_flag("--json", *diff_json, "print the differences (parasim.profile_diff/1) as JSON on stdout");
  diff->callback([ab, diff_json, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const Profile a = load_profile(ctx.data_dir, ab->first, "profile diff"), b = load_profile(ctx.data_dir, ab->second, "profile diff");
      const std::vector<FigureDiff> d = profile_diff(a, b);
      if (*diff_json) std::cout << profile_diff_json(a, b, d).dump(2) << "\n";
      else print_profile_diff(a, b, d);
      return 0;
    });
  });
}

}  // namespace parasim
