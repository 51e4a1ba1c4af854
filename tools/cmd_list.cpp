#include <iostream>

#include <fmt/format.h>

#include "tools/commands.h"

namespace parasim {

void add_list_command(CLI::App& app, Context& ctx) {
  auto what = std::make_shared<std::string>();
  CLI::App* list = app.add_subcommand("list", "list what can be named in a scenario");
  list->add_option("what", *what, "schedules | models | gpus")->required()->check(CLI::IsMember({"schedules", "models", "gpus"}));
  list->callback([what, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      if (*what == "schedules") {
        for (const auto& e : ctx.registries.schedules.entries())
          fmt::print("{:<14} {}\n{:<14} reference: {}\n", e.name, e.description, "", e.reference);
      } else if (*what == "models") {
        for (const auto& n : zoo_model_names(ctx.data_dir)) {
          const ModelSpec m = load_zoo_model(ctx.data_dir, n, "list");
          fmt::print("{:<22} {:>9.2f}B params  layers {:>3}  hidden {:>5}  heads {:>3}/{:<3} {}\n", n,
                     count_params(m).total(m.layers) / 1e9, m.layers, m.hidden, m.heads, m.kv_heads, m.activation);
        }
      } else {
        for (const auto& n : profile_names(ctx.data_dir)) {
          const Profile p = load_profile(ctx.data_dir, n, "list");
          fmt::print("{:<22} {:<28} {:>6.1f} GiB  bf16 {:>6.0f} TFLOP/s  ({})\n", n, p.device.name, p.device.memory_bytes / kGiB,
                     p.peak_tflops.count("bf16") ? p.peak_tflops.at("bf16").value : 0.0, p.device.how);
        }
      }
      return 0;
    });
  });
}

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
      auto row = [](const std::string& k, const Figure& f) { fmt::print("  {:<28} {:>10.4g}  [{}] {}\n", k, f.value, f.how, f.source); };
      for (const auto& [dt, f] : p.peak_tflops) row("peak_tflops." + dt, f);
      for (const auto& [dt, f] : p.gemm_max_efficiency) row("gemm_max_efficiency." + dt, f);
      row("gemm_tile_m", p.gemm_tile_m);
      row("gemm_tile_n", p.gemm_tile_n);
      row("attention_fwd_efficiency", p.attention_fwd_efficiency);
      row("attention_bwd_efficiency", p.attention_bwd_efficiency);
      row("kernel_overhead_us", p.kernel_overhead_us);
      row("overlap_compute_slowdown", p.overlap_compute_slowdown);
      row("hbm_gbps", p.hbm_gbps);
      row("hbm_efficiency", p.hbm_efficiency);
      row("runtime_reserved_gib", p.runtime_reserved_gib);
      row("pcie_gbps", p.pcie_gbps);
      row("nvlink_gbps", p.nvlink_gbps);
      row("intra_bus_efficiency", p.intra_bus_efficiency);
      row("intra_alpha_us", p.intra_alpha_us);
      row("inter_bus_efficiency", p.inter_bus_efficiency);
      row("inter_alpha_us", p.inter_alpha_us);
      row("node_nics", p.node_nics);
      row("node_nic_gbps", p.node_nic_gbps);
      fmt::print("  gemm_points: {}   collective_points: {}\n", p.gemm_points.size(), p.collective_points.size());
      return 0;
    });
  });
}

}  // namespace parasim
