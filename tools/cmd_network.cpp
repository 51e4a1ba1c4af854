// `parasim collective` (one collective's predicted time and bandwidths) and `parasim topology`
// (the cluster graph: summary, routes, Graphviz).
#include <iostream>

#include <fmt/format.h>

#include "sim/network/flow_network.h"
#include "tools/collective.h"
#include "tools/commands.h"

namespace parasim {

void add_network_commands(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<CollectiveQuery>();
  auto json = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand("collective", "predict one collective: time, algorithm bandwidth and bus bandwidth");
  c->add_option("--gpu", o->gpu, "GPU profile name or path")->required();
  c->add_option("--op", o->op, "all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | send_recv")
      ->check(CLI::IsMember({"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"}));
  c->add_option("--ranks", o->ranks, "ranks in the group")->check(CLI::PositiveNumber);
  c->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node (the group fills nodes in order)")->check(CLI::PositiveNumber);
  c->add_option("--bytes", o->bytes, "message size (AR: buffer; AG: output; RS: input), e.g. 1GiB");
  c->add_option("--network", o->network, "analytical | flow")->check(CLI::IsMember({"analytical", "flow"}));
  c->add_option("--concurrent-groups", o->concurrent_groups, "groups of this collective running at once on each node");
  c->add_option("--nics-per-node", o->nics_per_node, "NICs per node (default: the profile's reference node)");
  c->add_option("--nic-gbps", o->nic_gbps, "GB/s per NIC per direction (default: the profile's reference node)");
  c->add_option("--algorithm", o->algorithm, "force NCCL's algorithm (like NCCL_ALGO): auto | ring | tree | nvls | hierarchical")
      ->check(CLI::IsMember({"auto", "ring", "tree", "nvls", "hierarchical"}));
  c->add_option("--protocol", o->protocol, "force NCCL's protocol (like NCCL_PROTO): auto | ll | ll128 | simple")
      ->check(CLI::IsMember({"auto", "ll", "ll128", "simple"}));
  c->add_flag("--all", o->all, "also list every algorithm/protocol the tuner priced");
  c->add_flag("--json", *json, "print the answer (parasim.collective/1) as JSON on stdout");
  c->add_option("--inter-node", o->inter_node, "fat_tree | rail_optimized")->check(CLI::IsMember({"fat_tree", "rail_optimized"}));
  c->callback([o, json, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const Json j = predict_collective(*o, ctx.data_dir);
      if (*json) {
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      fmt::print("{} of {:.6g} bytes over {} ranks ({} node(s) x {}), {} network, profile {}\n", o->op, j["bytes"].get<double>(),
                 j["ranks"].get<std::int64_t>(), j["nodes"].get<std::int64_t>(), j["gpus_per_node"].get<std::int64_t>(),
                 j["network"].get<std::string>(), j["profile"].get<std::string>());
      fmt::print("  algorithm {}\n", j["algorithm"].get<std::string>());
      if (!j["algbw_gbps"].is_null())
        fmt::print("  time    {:.4g} us\n  algbw   {:.2f} GB/s\n  busbw   {:.2f} GB/s\n", j["time_s"].get<double>() * 1e6,
                   j["algbw_gbps"].get<double>(), j["busbw_gbps"].get<double>());
      else  // nothing to move (0 bytes, or one rank): no bandwidth to report
        fmt::print("  time    0 us\n  algbw   n/a\n  busbw   n/a\n");
      if (o->all) {
        fmt::print("  tuner candidates (analytical):\n");
        for (const Json& cand : j["candidates"])
          fmt::print("    {:<20} {:>12.4g} us\n", cand["name"].get<std::string>(), cand["time_s"].get<double>() * 1e6);
      }
      return 0;
    });
  });

  struct TopoOpts {
    std::string file;
    bool routes = false, dot = false;
  };
  auto t = std::make_shared<TopoOpts>();
  CLI::App* tc = app.add_subcommand("topology", "print the cluster graph of a scenario");
  tc->add_option("scenario", t->file, "scenario JSON")->required();
  tc->add_flag("--dump-routes", t->routes, "print the route from GPU 0 to every GPU of the first two nodes and one far node");
  tc->add_flag("--dot", t->dot, "print the graph in Graphviz dot format");
  tc->callback([t, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const Scenario sc = load_scenario(t->file, ctx.data_dir);
      ClusterSpec cl = sc.cluster;
      const Topology topo = build_topology(cl, sc.profile);
      if (t->dot) {
        std::cout << topo.dot();
        return 0;
      }
      std::cout << topo.summary();
      if (t->routes) {
        const std::int64_t gpn = cl.gpus_per_node;
        for (std::int64_t b = 1; b < std::min<std::int64_t>(topo.gpus(), 2 * gpn); ++b) std::cout << "  " << topo.describe_route(0, b) << "\n";
        if (topo.gpus() > 2 * gpn) std::cout << "  " << topo.describe_route(0, topo.gpus() - 1) << "\n";
      }
      return 0;
    });
  });
}

}  // namespace parasim

#include <filesystem>
#include <fstream>
#include <sstream>

#include "calibrate/import/gemm_table.h"
#include "calibrate/import/nccl_tests.h"

namespace parasim {

namespace {
// The JSON file behind --gpu: a path as given, or a shipped profile's name.
std::string profile_json_path(const std::string& data_dir, const std::string& gpu) {
  return gpu.find('/') != std::string::npos || gpu.ends_with(".json") ? gpu : data_dir + "/calibrate/profiles/" + gpu + ".json";
}
}  // namespace

void add_import_command(CLI::App& app, Context& ctx) {
  struct ImpOpts {
    std::vector<std::string> logs;
    std::string gpu, out, op, table;
    bool force = false;
  };
  auto o = std::make_shared<ImpOpts>();
  CLI::App* imp = app.add_subcommand("import", "import measurements into a calibration profile");
  imp->require_subcommand(1);
  // Both importers: refuse to overwrite, start from the base profile's JSON, merge, check that the
  // result loads, write it. `merge` adds the measurements and returns notes for stderr.
  auto import_into = [o, &ctx](const std::function<std::vector<std::string>(Json&, const Profile&)>& merge) {
    ctx.exit_code = run_guarded([&]() {
      if (std::filesystem::exists(o->out) && !o->force)
        throw ConfigError(o->out + ": exists; refusing to overwrite it (use --force or another name)");
      const Profile base = load_profile(ctx.data_dir, o->gpu, "--gpu");
      Json prof = read_json_file(profile_json_path(ctx.data_dir, o->gpu));
      for (const auto& n : merge(prof, base)) std::cerr << n << "\n";
      prof["name"] = std::filesystem::path(o->out).stem().string();
      parse_profile(prof, o->out);  // the result must load
      std::ofstream out(o->out);
      if (!out) throw ConfigError(o->out + ": cannot write");
      out << prof.dump(1) << "\n";
      std::cerr << "wrote " << o->out << "\n";
      return 0;
    });
  };
  auto common = [o](CLI::App* sub) {
    sub->add_option("--gpu", o->gpu, "profile to start from (name or path)")->required();
    sub->add_option("-o,--output", o->out, "profile file to write (refused if it exists, unless --force)")->required();
    sub->add_flag("--force", o->force, "overwrite the output file");
  };
  CLI::App* nt = imp->add_subcommand("nccl-tests", "read nccl-tests output (text logs or -J JSON files) and write a profile with their points merged in");
  nt->add_option("logs", o->logs, "nccl-tests output files (text, or JSON written with -J)")->required();
  common(nt);
  nt->add_option("--op", o->op, "collective, when the log does not name its *_perf binary");
  nt->callback([o, import_into]() {
    import_into([&](Json& prof, const Profile&) {
      std::vector<std::string> notes;
      for (const auto& f : o->logs) {
        std::ifstream in(f);
        if (!in) throw ConfigError(f + ": cannot open file");
        std::stringstream ss;
        ss << in.rdbuf();
        const NcclTestsLog log = parse_nccl_tests_any(ss.str(), f, o->op);
        for (auto& n : merge_nccl_tests(prof, log)) notes.push_back(std::move(n));
      }
      return notes;
    });
  });
  CLI::App* gt = imp->add_subcommand("gemm-table", "fit the profile's GEMM kernel model (gemm_fixed_us, gemm_epilogue_gbps) to a "
                                                   "table of measured GEMM throughputs (parasim.gemm_table/1) and write the profile");
  gt->add_option("table", o->table, "GEMM table JSON (format parasim.gemm_table/1, as tests/data/xla_sm90_matmul.json)")->required();
  common(gt);
  gt->callback([o, import_into]() {
    import_into([&](Json& prof, const Profile& base) { return merge_gemm_fit(prof, base, load_gemm_table(o->table)); });
  });
}

}  // namespace parasim
