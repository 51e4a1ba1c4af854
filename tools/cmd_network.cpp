// `parasim collective` (one collective's predicted time and bandwidths) and `parasim topology`
// (the cluster graph: summary, routes, Graphviz).
#include <iostream>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "sim/network/flow_network.h"
#include "tools/cli_checks.h"
#include "tools/collective.h"
#include "tools/commands.h"

namespace parasim {

namespace {

// The GPUs --dump-routes describes: GPU 0 to every GPU of the first two nodes and to the last GPU.
std::vector<std::int64_t> route_targets(const Topology& topo) {
  const std::int64_t gpn = topo.gpus_per_node;
  std::vector<std::int64_t> to;
  for (std::int64_t b = 1; b < std::min<std::int64_t>(topo.gpus(), 2 * gpn); ++b) to.push_back(b);
  if (topo.gpus() > 2 * gpn) to.push_back(topo.gpus() - 1);
  return to;
}

// `topology --json`: parasim.topology/1 (docs/outputs.md).
Json topology_json(const Topology& topo, bool routes) {
  Json vertices = Json::object();
  for (auto [v, end] = boost::vertices(topo.graph); v != end; ++v) {
    const char* k = vertex_kind_name(topo.graph[*v].kind);
    vertices[k] = vertices.value(k, 0) + 1;
  }
  std::map<double, std::int64_t> speeds;
  for (double g : topo.link_gbps) ++speeds[g];
  Json link_speeds = Json::array();
  for (const auto& [g, n] : speeds) link_speeds.push_back({{"gbps", g}, {"links", n}});
  Json j = {{"schema", "parasim.topology/1"}, {"gpus", topo.gpus()}, {"gpus_per_node", topo.gpus_per_node},
            {"intra_node", topo.intra_kind}, {"inter_node", topo.inter_kind}, {"vertices", vertices},
            {"links", topo.link_gbps.size()}, {"link_speeds", link_speeds}};
  if (routes) {
    j["routes"] = Json::array();
    for (std::int64_t b : route_targets(topo))
      j["routes"].push_back({{"from", 0}, {"to", b}, {"links", topo.route(0, b).size()}, {"route", topo.describe_route(0, b)}});
  }
  return j;
}

}  // namespace

void add_network_commands(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<CollectiveQuery>();
  auto json = std::make_shared<bool>(false);
  CLI::App* c = app.add_subcommand("collective", "predict one collective: time, algorithm bandwidth and bus bandwidth");
  c->add_option("--gpu", o->gpu, "GPU profile name or path")->required();
  c->add_option("--op", o->op, "all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | send_recv")
      ->check(CLI::IsMember({"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"}));
  c->add_option("--ranks", o->ranks, "ranks in the group")->check(integer_in(1, kMaxCollectiveRanks));
  c->add_option("--gpus-per-node", o->gpus_per_node, "GPUs per node (the group fills nodes in order)")->check(integer_in(1, kMaxGpusPerNode));
  c->add_option("--bytes", o->bytes, "message size (AR: buffer; AG: output; RS: input), e.g. 1GiB");
  const std::vector<std::string> models = network_kinds().names(), fabrics = collective_fabrics();
  c->add_option("--network", o->network, join_names(models, " | "))->check(CLI::IsMember(models));
  c->add_option("--concurrent-groups", o->concurrent_groups, "groups of this collective running at once on each node")
      ->check(integer_in(1, kMaxConcurrentGroups));
  c->add_option("--nics-per-node", o->nics_per_node, "NICs per node (default: one per GPU, up to the profile's reference node's count)")->check(integer_in(1, kMaxNicsPerNode));
  c->add_option("--nic-gbps", o->nic_gbps, "GB/s per NIC per direction (default: the profile's reference node)")->check(positive_number());
  const std::vector<std::string> algos = nccl_algorithm_choice().name_list(), protos = nccl_protocol_choice().name_list();
  c->add_option("--algorithm", o->algorithm, "force NCCL's algorithm (like NCCL_ALGO): " + join_names(algos, " | "))->check(CLI::IsMember(algos));
  c->add_option("--protocol", o->protocol, "force NCCL's protocol (like NCCL_PROTO): " + join_names(protos, " | "))->check(CLI::IsMember(protos));
  c->add_flag("--all", o->all, "also list every algorithm/protocol the tuner priced");
  c->add_flag("--json", *json, "print the answer (parasim.collective/1) as JSON on stdout");
  c->add_option("--inter-node", o->inter_node, join_names(fabrics, " | "))->check(CLI::IsMember(fabrics));
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
    bool routes = false, dot = false, json = false;
  };
  auto t = std::make_shared<TopoOpts>();
  CLI::App* tc = app.add_subcommand("topology", "print the cluster graph of a scenario");
  tc->add_option("scenario", t->file, "scenario JSON")->required();
  tc->add_flag("--dump-routes", t->routes, "print the route from GPU 0 to every GPU of the first two nodes and one far node");
  tc->add_flag("--dot", t->dot, "print the graph in Graphviz dot format");
  tc->add_flag("--json", t->json, "print the summary (and with --dump-routes the routes) as JSON (parasim.topology/1) on stdout");
  tc->callback([t, &ctx]() {
    ctx.exit_code = run_guarded([&]() {
      const Scenario sc = load_scenario(t->file, ctx.data_dir);
      ClusterSpec cl = sc.cluster;
      const Topology topo = build_topology(cl, sc.profile);
      if (t->dot) {
        std::cout << topo.dot();
        return 0;
      }
      if (t->json) {
        std::cout << topology_json(topo, t->routes).dump(2) << "\n";
        return 0;
      }
      std::cout << topo.summary();
      if (t->routes)
        for (std::int64_t b : route_targets(topo)) std::cout << "  " << topo.describe_route(0, b) << "\n";
      return 0;
    });
  });
}

}  // namespace parasim
