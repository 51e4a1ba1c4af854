#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "calibrate/profile/cost_model.h"
#include "tools/commands.h"
#include "tools/report.h"

namespace parasim {

void add_list_command(CLI::App& app, Context& ctx) {
  auto what = std::make_shared<std::string>();
  CLI::App* list = app.add_subcommand("list", "list what can be named in a scenario");
  list->add_option("what", *what, "schedules | models | gpus | stacks")->required()->check(CLI::IsMember({"schedules", "models", "gpus", "stacks"}));
  list->callback([what, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      if (*what == "schedules") {
        for (const auto& e : ctx.registries.schedules.entries())
          fmt::print("{:<14} {}\n{:<14} reference: {}\n", e.name, e.description, "", e.reference);
      } else if (*what == "models") {
        for (const auto& n : zoo_model_names(ctx.data_dir)) {
          const ModelSpec m = load_zoo_model(ctx.data_dir, n, "list");
          const std::string moe = m.moe ? "  MoE " + moe_summary(m) : std::string();
          fmt::print("{:<22} {:>9.2f}B params  layers {:>3}  hidden {:>5}  heads {:>3}/{:<3} {}{}\n", n,
                     count_params(m).total() / 1e9, m.layers, m.hidden, m.heads, m.kv_heads, m.activation, moe);
        }
      } else if (*what == "stacks") {
        for (const auto& n : stack_names(ctx.data_dir)) {
          const Stack st = load_stack(ctx.data_dir, n, "list");
          fmt::print("{:<28} {}\n{:<28} {}, {}\n", n, st.description, "", st.framework, st.release);
        }
      } else {
        for (const auto& n : profile_names(ctx.data_dir)) {
          const Profile p = load_profile(ctx.data_dir, n, "list");
          const char* dt = p.peak_tflops.count("bf16") ? "bf16" : "fp16";  // Volta has fp16 tensor cores only
          // The low-precision GEMM rates the profile prices (training.dtype fp8 and its recipes).
          std::string low;
          for (const char* l : {"fp8", "mxfp8", "nvfp4"})
            if (p.peak_tflops.count(l)) low += fmt::format("  {} {:.0f}", l, p.peak_tflops.at(l).value);
          fmt::print("{:<22} {:<28} {:>6.1f} GiB  {} {:>6.0f} TFLOP/s{}  ({})\n", n, p.device.name, p.device.memory_bytes / kGiB, dt,
                     p.peak_tflops.count(dt) ? p.peak_tflops.at(dt).value : 0.0, low, p.device.how);
        }
      }
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
  if (p.has_host) {
    out.push_back({"host_memory_gbps", p.host_memory_gbps});
    out.push_back({"host_optimizer_efficiency", p.host_optimizer_efficiency});
  }
  return out;
}
}  // namespace

void add_profile_command(CLI::App& app, Context& ctx) {
  auto name = std::make_shared<std::string>();
  CLI::App* prof = app.add_subcommand("profile", "inspect calibration profiles");
  prof->require_subcommand(1);
  CLI::App* show = prof->add_subcommand("show", "print every figure of a profile with how it was obtained and its source");
  show->add_option("profile", *name, "profile name or path")->required();
  show->callback([name, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const Profile p = load_profile(ctx.data_dir, *name, "profile show");
      fmt::print("{} ({}) — {}, {} SMs, {:.1f} GiB, profile made by: {}\n", p.name, p.file, p.device.name, p.device.sms,
                 p.device.memory_bytes / kGiB, p.device.how);
      for (const auto& [k, f] : figures(p))
        fmt::print("  {:<28} {:>10.4g}  [{}] {}{}\n", k, f.value, f.how, f.source,
                   f.has_range() ? fmt::format(" (range {:.4g}..{:.4g}: {})", f.low, f.high, f.range_source) : "");
      // What the GEMM kernel model derives from the figures above (calibrate/profile/cost_model.h).
      for (const auto& [dt, f] : p.gemm_max_efficiency) {
        const GemmKernelModel g = gemm_kernel_model(p, dt);
        const auto it = p.gemm_best_shape.find(dt);
        fmt::print("  {:<28} {:>10.4g}  [derived] {}\n", "gemm_main_loop_efficiency." + dt, g.main_efficiency,
                   it == p.gemm_best_shape.end()
                       ? std::string("gemm_max_efficiency taken as is (no shape_mnk)")
                       : fmt::format("solved so that the GEMM kernel model reproduces gemm_max_efficiency at {}x{}x{}", it->second[0],
                                     it->second[1], it->second[2]));
      }
      fmt::print("  gemm_points: {}   collective_points: {}\n", p.gemm_points.size(), p.collective_points.size());
      return 0;
    });
  });
  add_profile_derive_command(prof, ctx);
  auto ab = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* diff = prof->add_subcommand("diff", "compare two profiles figure by figure");
  diff->add_option("a", ab->first, "first profile")->required();
  diff->add_option("b", ab->second, "second profile")->required();
  diff->callback([ab, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const Profile a = load_profile(ctx.data_dir, ab->first, "profile diff"), b = load_profile(ctx.data_dir, ab->second, "profile diff");
      fmt::print("{:<28} {:>12} {:>12} {:>9}  how\n", "figure", a.name.substr(0, 12), b.name.substr(0, 12), "change");
      std::map<std::string, Figure> fb;
      for (const auto& [k, f] : figures(b)) fb[k] = f;
      int differ = 0;
      for (const auto& [k, f] : figures(a)) {
        auto it = fb.find(k);
        if (it == fb.end()) {
          fmt::print("{:<28} {:>12.4g} {:>12} {:>9}  {}\n", k, f.value, "-", "", f.how);
          ++differ;
          continue;
        }
        if (it->second.value == f.value && it->second.how == f.how) continue;
        ++differ;
        fmt::print("{:<28} {:>12.4g} {:>12.4g} {:>+8.1f}%  {} -> {}\n", k, f.value, it->second.value, 100 * (it->second.value / f.value - 1),
                   f.how, it->second.how);
      }
      std::set<std::string> in_a;
      for (const auto& [k, f] : figures(a)) in_a.insert(k);
      for (const auto& [k, f] : figures(b))
        if (!in_a.count(k)) {
          fmt::print("{:<28} {:>12} {:>12.4g} {:>9}  {}\n", k, "-", f.value, "", f.how);
          ++differ;
        }
      fmt::print("{} figures differ; GEMM points {} vs {}, collective points {} vs {}\n", differ, a.gemm_points.size(), b.gemm_points.size(),
                 a.collective_points.size(), b.collective_points.size());
      return 0;
    });
  });
}

}  // namespace parasim
