// `parasim collective` (one collective's predicted time and bandwidths) and `parasim topology`
// (the cluster graph: summary, routes, Graphviz).
#include <charconv>
#include <cmath>
#include <iostream>
#include <regex>

#include <fmt/format.h>

#include "sim/network/flow_network.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"

namespace parasim {

namespace {
double parse_bytes(const std::string& s) {
  static const std::regex re(R"(^\s*([0-9]*\.?[0-9]+)\s*(|B|K|KB|KiB|M|MB|MiB|G|GB|GiB|T|TB|TiB)\s*$)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) throw ConfigError("--bytes: expected a size like 1GiB, 256MB or 4096, got \"" + s + "\"");
  const std::string num = m[1];
  double v = 0;
  if (std::from_chars(num.data(), num.data() + num.size(), v).ec != std::errc() || !std::isfinite(v) || v > 1e18)
    throw ConfigError("--bytes: \"" + s + "\" is out of range (at most 1e18 bytes)");
  const std::string u = m[2];
  const double k = u.empty() || u == "B" ? 1 : u[0] == 'K' ? 1e3 : u[0] == 'M' ? 1e6 : u[0] == 'G' ? 1e9 : 1e12;
  const double ki = u.empty() || u == "B" ? 1 : u[0] == 'K' ? 1024.0 : u[0] == 'M' ? 1048576.0 : u[0] == 'G' ? kGiB : kGiB * 1024;
  return v * (u.size() == 3 || u.size() == 1 ? ki : k);
}
}  // namespace

void add_network_commands(CLI::App& app, Context& ctx) {
  struct CollOpts {
    std::string gpu, op = "all_reduce", bytes = "1GiB", network = "analytical", inter = "rail_optimized";
    std::string algorithm = "auto", protocol = "auto";
    bool all = false;
    std::int64_t ranks = 8, gpn = 8, nics = 0, groups = 1;
    double nic_gbps = 0;
  };
  auto o = std::make_shared<CollOpts>();
  CLI::App* c = app.add_subcommand("collective", "predict one collective: time, algorithm bandwidth and bus bandwidth");
  c->add_option("--gpu", o->gpu, "GPU profile name or path")->required();
  c->add_option("--op", o->op, "all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | send_recv")
      ->check(CLI::IsMember({"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"}));
  c->add_option("--ranks", o->ranks, "ranks in the group")->check(integer_in(1, 1 << 24));
  c->add_option("--gpus-per-node", o->gpn, "GPUs per node (the group fills nodes in order)")->check(integer_in(1, 1024));
  c->add_option("--bytes", o->bytes, "message size (AR: buffer; AG: output; RS: input), e.g. 1GiB");
  c->add_option("--network", o->network, "analytical | flow")->check(CLI::IsMember({"analytical", "flow"}));
  c->add_option("--concurrent-groups", o->groups, "groups of this collective running at once on each node")->check(integer_in(1, 1 << 20));
  c->add_option("--nics-per-node", o->nics, "NICs per node (default: the profile's reference node)")->check(integer_in(1, 1024));
  c->add_option("--nic-gbps", o->nic_gbps, "GB/s per NIC per direction (default: the profile's reference node)")->check(positive_number());
  c->add_option("--algorithm", o->algorithm, "force NCCL's algorithm (like NCCL_ALGO): auto | ring | tree | nvls | hierarchical")
      ->check(CLI::IsMember({"auto", "ring", "tree", "nvls", "hierarchical"}));
  c->add_option("--protocol", o->protocol, "force NCCL's protocol (like NCCL_PROTO): auto | ll | ll128 | simple")
      ->check(CLI::IsMember({"auto", "ll", "ll128", "simple"}));
  c->add_flag("--all", o->all, "also list every algorithm/protocol the tuner priced");
  c->add_option("--inter-node", o->inter, "fat_tree | rail_optimized")->check(CLI::IsMember({"fat_tree", "rail_optimized"}));
  c->callback([o, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const Profile p = load_profile(ctx.data_dir, o->gpu, "--gpu");
      ClusterSpec cl;
      cl.gpu = o->gpu;
      cl.gpus_per_node = std::min(o->gpn, o->ranks);
      cl.nodes = (o->ranks + cl.gpus_per_node - 1) / cl.gpus_per_node;
      cl.nics_per_node = o->nics > 0 ? o->nics : static_cast<std::int64_t>(p.node_nics.value);
      cl.nic_gbps = o->nic_gbps > 0 ? o->nic_gbps : p.node_nic_gbps.value;
      cl.inter_kind = o->inter;
      cl.nccl_algorithm = o->algorithm;
      cl.nccl_protocol = o->protocol;
      const std::map<std::string, CollOp> ops = {{"all_reduce", CollOp::AllReduce}, {"all_gather", CollOp::AllGather},
                                                 {"reduce_scatter", CollOp::ReduceScatter}, {"all_to_all", CollOp::AllToAll},
                                                 {"broadcast", CollOp::Broadcast}, {"send_recv", CollOp::SendRecv}};
      CollectiveSpec s;
      s.op = ops.at(o->op);
      s.ranks = o->op == "send_recv" ? 2 : o->ranks;
      s.ranks_per_node = o->op == "send_recv" && o->ranks > cl.gpus_per_node ? 1 : cl.gpus_per_node;
      s.groups_per_node = o->groups;
      s.bytes = parse_bytes(o->bytes);
      const auto net = make_network(o->network, p, cl);
      const double t = net->time_s(s);
      const double algbw = t > 0 ? s.bytes / t / 1e9 : 0.0;
      fmt::print("{} of {:.6g} bytes over {} ranks ({} node(s) x {}), {} network, profile {}\n", o->op, s.bytes, s.ranks, cl.nodes,
                 cl.gpus_per_node, net->name(), p.name);
      fmt::print("  algorithm {}\n", net->algorithm(s));
      if (t > 0)
        fmt::print("  time    {:.4g} us\n  algbw   {:.2f} GB/s\n  busbw   {:.2f} GB/s\n", t * 1e6, algbw, algbw * bus_factor(s.op, s.ranks));
      else  // nothing to move (0 bytes, or one rank): no bandwidth to report
        fmt::print("  time    0 us\n  algbw   n/a\n  busbw   n/a\n");
      if (o->all) {
        const AlphaBetaNetwork tuner(p, cl);
        fmt::print("  tuner candidates (analytical):\n");
        for (const auto& [name, secs] : tuner.candidates(s)) fmt::print("    {:<20} {:>12.4g} us\n", name, secs * 1e6);
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
