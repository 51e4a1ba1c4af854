#include "tools/collective.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <regex>

#include "sim/core/units.h"
#include "sim/network/flow_network.h"
#include "sim/topology/builder.h"

namespace parasim {

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

namespace {
void require_one_of(const std::string& what, const std::string& v, const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return;
  std::string msg = what + ": expected one of";
  for (const auto& a : allowed) msg += " " + a;
  throw ConfigError(msg + ", got \"" + v + "\"");
}
void require_in(const std::string& what, std::int64_t v, std::int64_t lo, std::int64_t hi) {
  if (v < lo || v > hi) throw ConfigError(what + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
}
}  // namespace

std::vector<std::string> collective_fabrics() { return {name_of(InterNode::FatTree), name_of(InterNode::RailOptimized)}; }

Json predict_collective(const CollectiveQuery& q, const std::string& data_dir) {
  const std::map<std::string, CollOp> ops = {{"all_reduce", CollOp::AllReduce}, {"all_gather", CollOp::AllGather},
                                             {"reduce_scatter", CollOp::ReduceScatter}, {"all_to_all", CollOp::AllToAll},
                                             {"broadcast", CollOp::Broadcast}, {"send_recv", CollOp::SendRecv}};
  if (!ops.count(q.op)) require_one_of("op", q.op, {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"});
  require_one_of("network", q.network, network_kinds().names());
  require_one_of("inter_node", q.inter_node, collective_fabrics());
  require_one_of("algorithm", q.algorithm, nccl_algorithm_choice().name_list());
  require_one_of("protocol", q.protocol, nccl_protocol_choice().name_list());
  require_in("ranks", q.ranks, 1, kMaxCollectiveRanks);
  require_in("gpus_per_node", q.gpus_per_node, 1, kMaxGpusPerNode);
  require_in("concurrent_groups", q.concurrent_groups, 1, kMaxConcurrentGroups);
  require_in("nics_per_node", q.nics_per_node, 0, kMaxNicsPerNode);  // 0: one per GPU, up to the reference node's (default_nics_per_node)
  if (!std::isfinite(q.nic_gbps) || q.nic_gbps < 0) throw ConfigError("nic_gbps: expected a finite number >= 0 (0: the profile's reference node)");
  const Profile p = load_profile(data_dir, q.gpu, "--gpu");
  ClusterSpec cl;
  cl.gpu = q.gpu;
  cl.gpus_per_node = std::min(q.gpus_per_node, q.ranks);
  cl.nodes = (q.ranks + cl.gpus_per_node - 1) / cl.gpus_per_node;
  cl.nics_per_node = q.nics_per_node > 0 ? q.nics_per_node : default_nics_per_node(p, cl.gpus_per_node);
  cl.nic_gbps = q.nic_gbps > 0 ? q.nic_gbps : p.node_nic_gbps.value;
  cl.inter_kind = inter_node_kinds().find(q.inter_node)->factory.value;
  cl.nccl = nccl_override(q.algorithm, q.protocol, "");
  CollectiveSpec s;
  s.op = ops.at(q.op);
  s.ranks = q.op == "send_recv" ? 2 : q.ranks;
  s.ranks_per_node = q.op == "send_recv" && q.ranks > cl.gpus_per_node ? 1 : cl.gpus_per_node;
  s.groups_per_node = q.concurrent_groups;
  s.bytes = parse_bytes(q.bytes);
  const auto net = make_network(network_kinds().find(q.network)->factory.value, p, cl);
  const double t = net->time_s(s);
  const double algbw = t > 0 ? s.bytes / t / 1e9 : 0.0;
  Json j = {{"schema", "parasim.collective/1"}, {"op", q.op},           {"bytes", s.bytes},
            {"ranks", s.ranks},                 {"nodes", cl.nodes},    {"gpus_per_node", cl.gpus_per_node},
            {"network", net->name()},           {"profile", p.name},    {"algorithm", net->algorithm(s)},
            {"time_s", t},                      {"algbw_gbps", nullptr}, {"busbw_gbps", nullptr}};
  if (t > 0) {  // nothing to move (0 bytes, or one rank): no bandwidth to report
    j["algbw_gbps"] = algbw;
    j["busbw_gbps"] = algbw * bus_factor(s.op, s.ranks);
  }
  if (q.all) {
    j["candidates"] = Json::array();
    for (const auto& [name, secs] : AlphaBetaNetwork(p, cl).candidates(s)) j["candidates"].push_back({{"name", name}, {"time_s", secs}});
  }
  return j;
}

}  // namespace parasim
