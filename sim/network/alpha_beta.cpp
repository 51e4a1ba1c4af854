#include "sim/network/network_model.h"
#include "sim/network/algorithms/algorithms.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace parasim {

const char* coll_op_name(CollOp op) {
  switch (op) {
    case CollOp::AllReduce: return "all_reduce";
    case CollOp::AllGather: return "all_gather";
    case CollOp::ReduceScatter: return "reduce_scatter";
    case CollOp::AllToAll: return "all_to_all";
    case CollOp::Broadcast: return "broadcast";
    case CollOp::SendRecv: return "send_recv";
  }
  return "?";
}

double bus_factor(CollOp op, std::int64_t n) {
  const double nd = static_cast<double>(n);
  switch (op) {
    case CollOp::AllReduce: return 2.0 * (nd - 1) / nd;
    case CollOp::AllGather:
    case CollOp::ReduceScatter:
    case CollOp::AllToAll: return (nd - 1) / nd;
    case CollOp::Broadcast:
    case CollOp::SendRecv: return 1.0;
  }
  return 1.0;
}

namespace {
// Latency steps of the ring algorithm over n ranks.
double ring_steps(CollOp op, std::int64_t n) {
  const double nd = static_cast<double>(n);
  switch (op) {
    case CollOp::AllReduce: return 2.0 * (nd - 1);
    case CollOp::SendRecv: return 1.0;
    default: return nd - 1;
  }
}
}  // namespace

AlphaBetaNetwork::AlphaBetaNetwork(const Profile& p, const ClusterSpec& c)
    : p_(p),
      c_(c),
      // PCIe nodes move GPU-to-GPU data over each GPU's PCIe link (the profile's achievable PCIe
      // rate); NVSwitch nodes over NVLink at the link rate times the measured bus efficiency.
      link_gbps_(c.intra_kind == IntraNode::Pcie ? (c.intra_gbps > 0 ? c.intra_gbps : p.pcie_gbps.value) / p.intra_bus_efficiency.value
                                        : (c.intra_gbps > 0 ? c.intra_gbps : p.nvlink_gbps.value)) {}

std::vector<const CollectivePoint*> AlphaBetaNetwork::measured_points(const CollectiveSpec& c) const {
  // Measured points of the same group shape (ranks and nodes): NCCL's choice (ring, tree, NVLS,
  // protocol) depends on both. The same op if present, else all-reduce on one node (ring bus
  // bandwidth per chunk is close across ring collectives: 367 vs 361 GB/s AR vs AG on 8x H200).
  const std::int64_t nodes = c.nodes();
  // A group inside one NVSwitch node smaller than the measured one runs NCCL's ring over the same
  // switch ports, so its bus bandwidth at the same per-rank chunk is the measured group's (ring
  // all-reduce at 8 GiB on 4..7 of 8 H200s: 363.3-365.7 GB/s, shared/validation/
  // published_microbench.json ids nccl-allreduce-8GiB-h200-*gpu, NVLS disabled). Only where the
  // node has no NVLink SHARP: NVLS keeps the algorithm bandwidth, not the bus bandwidth, across
  // group sizes (414 against 482 GB/s bus at 5 and 8 GPUs), and is not run below its minimum group.
  const bool subgroup_ok = nodes == 1 && c_.intra_kind == IntraNode::NvSwitch && !(p_.nccl.present && p_.nccl.nvls_algbw_gbps.value > 0);
  std::vector<const CollectivePoint*> pts;
  for (const bool sub : {false, true}) {
    if (sub && !subgroup_ok) break;
    for (const std::string& op : {std::string(coll_op_name(c.op)), std::string("all_reduce")}) {
      if (op == "all_reduce" && nodes > 1 && c.op != CollOp::AllReduce) break;
      pts.clear();
      std::int64_t ranks = sub ? 0 : c.ranks;  // the sub-group case takes the smallest larger measured group
      if (sub)
        for (const auto& pt : p_.collective_points)
          if (pt.op == op && pt.nodes == 1 && pt.ranks > c.ranks && (ranks == 0 || pt.ranks < ranks)) ranks = pt.ranks;
      for (const auto& pt : p_.collective_points)
        if (pt.op == op && pt.nodes == nodes && pt.ranks == ranks) pts.push_back(&pt);
      if (pts.size() >= 2) return pts;
    }
  }
  pts.clear();
  return pts;
}

double AlphaBetaNetwork::measured_time(const CollectiveSpec& c) const {
  std::vector<const CollectivePoint*> pts = measured_points(c);
  std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->bytes < b->bytes; });
  const std::int64_t n0 = pts.front()->ranks;
  const CollOp op0 = pts.front()->op == "all_reduce" ? CollOp::AllReduce : c.op;
  // Same per-rank chunk on the measured group size.
  const double s0 = c.bytes * static_cast<double>(n0) / static_cast<double>(c.ranks);
  if (s0 <= pts.front()->bytes)  // latency-bound: scale the smallest point by step count
    return pts.front()->time_s * ring_steps(c.op, c.ranks) / ring_steps(op0, n0);
  double busbw = 0;
  if (s0 >= pts.back()->bytes) {
    busbw = bus_factor(op0, n0) * pts.back()->bytes / pts.back()->time_s;
  } else {
    for (size_t i = 1; i < pts.size(); ++i) {
      if (s0 > pts[i]->bytes) continue;
      const double x0 = std::log(pts[i - 1]->bytes), x1 = std::log(pts[i]->bytes);
      const double b0 = std::log(bus_factor(op0, n0) * pts[i - 1]->bytes / pts[i - 1]->time_s);
      const double b1 = std::log(bus_factor(op0, n0) * pts[i]->bytes / pts[i]->time_s);
      const double w = x1 > x0 ? (std::log(s0) - x0) / (x1 - x0) : 0.0;
      busbw = std::exp(b0 + w * (b1 - b0));
      break;
    }
  }
  // Another op priced from all-reduce points moves its bytes over the wires. Where NCCL picked
  // NVLink SHARP (NVLS) for the all-reduce, the switch reduces the data and the all-reduce's bus
  // bandwidth exceeds what the links carry (8x H200: 482 GB/s NVLS against 367 ring; ring
  // all-gather 361, reduce-scatter 363; NCCL's maintainers: about 370 GB/s effective NVLink for
  // ring or any collective other than all-reduce, shared/validation/published_microbench.json ids
  // nccl-h200-8gpu-16GiB-*, nccl-h100-8gpu-expected-peaks-maintainer). So those ops run at no
  // more than the link rate times the profile's measured ring bus efficiency.
  if (op0 == CollOp::AllReduce && c.op != CollOp::AllReduce)
    busbw = std::min(busbw, link_gbps_ * 1e9 * p_.intra_bus_efficiency.value);
  return bus_factor(c.op, c.ranks) * c.bytes / busbw;
}

bool AlphaBetaNetwork::use_measured(const CollectiveSpec& c) const {
  if (c_.intra_kind == IntraNode::Pcie || c.op == CollOp::SendRecv) return false;
  if (c_.nccl.algorithm || c_.nccl.protocol) return false;
  // A benchmark ran one group alone; groups sharing a node's NICs are priced by the tuner.
  if (c.nodes() > 1 && c.groups_per_node > 1) return false;
  return !measured_points(c).empty();
}

AlgoInput AlphaBetaNetwork::tuner_input(const CollectiveSpec& c) const {
  AlgoInput in;
  in.op = c.op;
  in.bytes = c.bytes;
  in.ranks = c.ranks;
  in.per_node = c.per_node();
  in.nodes = c.nodes();
  in.intra_busbw = link_gbps_ * 1e9 * p_.intra_bus_efficiency.value;
  // NCCL runs one ring channel per NIC; the node's NICs are shared by the groups active on it.
  in.net_busbw = in.nodes > 1 ? static_cast<double>(c_.nics_per_node) * c_.nic_gbps * 1e9 * p_.inter_bus_efficiency.value /
                                    (c_.oversubscription * static_cast<double>(std::max<std::int64_t>(1, c.groups_per_node)))
                              : 0.0;
  in.nvswitch = c_.intra_kind == IntraNode::NvSwitch;
  in.intra_alpha_us = p_.intra_alpha_us.value;
  in.inter_alpha_us = p_.inter_alpha_us.value;
  in.tuning = &p_.nccl;
  return in;
}

// An all-to-all of an MoE dispatcher's kernels (CollectiveSpec::loads). Its NVLink load moves at the
// dispatcher's own published rate where the profile has one (LinkLoads::nvlink_efficiency); without
// one, inside a node, it is priced as NCCL's all-to-all moving the same bytes per rank (measured
// points included). Across nodes its NVLink and NIC loads are priced by the direct rule (NCCL's
// latencies stand in for the kernels'), each leg at the dispatcher's published rate where the
// profile has one (nvlink_efficiency, nic_efficiency), NCCL's otherwise.
double AlphaBetaNetwork::dispatch_time(const CollectiveSpec& c) const {
  const LinkLoads& loads = *c.loads;
  if (c.nodes() == 1 && loads.nvlink_efficiency <= 0) {
    CollectiveSpec even = c;
    even.loads.reset();
    even.bytes = loads.nvlink * static_cast<double>(c.ranks) / static_cast<double>(c.ranks - 1);
    return time_s(even);
  }
  AlgoInput in = tuner_input(c);
  in.loads = c.loads;
  if (loads.nvlink_efficiency > 0) in.intra_busbw = link_gbps_ * 1e9 * loads.nvlink_efficiency;
  if (loads.nic_efficiency > 0) in.net_busbw *= loads.nic_efficiency / p_.inter_bus_efficiency.value;
  return direct_estimate(in, NcclProto::Simple)->time_s;
}

double AlphaBetaNetwork::time_s(const CollectiveSpec& c) const {
  if (c.ranks <= 1 || c.bytes <= 0) return 0.0;
  if (c.op == CollOp::AllToAll && c.loads) return dispatch_time(c);
  const auto key = std::make_tuple(static_cast<int>(c.op), c.ranks, c.ranks_per_node, c.groups_per_node, c.bytes);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const double t = use_measured(c) ? measured_time(c) : tuner_choose(tuner_input(c), c_.nccl).time_s;
  cache_.emplace(key, t);
  return t;
}

std::string AlphaBetaNetwork::algorithm(const CollectiveSpec& c) const {
  if (c.ranks <= 1 || c.bytes <= 0) return "none";
  if (c.op == CollOp::AllToAll && c.loads) {
    const bool nic = c.loads->nic_efficiency > 0 && c.nodes() > 1, nvlink = c.loads->nvlink_efficiency > 0;
    const char* rates = nic && nvlink ? "; NVLink and NIC at the dispatcher's published rates"
                        : nvlink      ? "; NVLink at the dispatcher's published rate"
                        : nic         ? "; NIC at the dispatcher's published rate"
                                      : "";
    return std::string("dispatcher kernels (per-rank NVLink and NIC loads, direct") + rates + ")";
  }
  if (use_measured(c)) return "measured (NCCL's choice on this group shape)";
  const AlgoEstimate e = tuner_choose(tuner_input(c), c_.nccl);
  return std::string(nccl_algo_name(e.algo)) + "/" + nccl_proto_name(e.proto);
}

AlgoEstimate AlphaBetaNetwork::choose(const CollectiveSpec& c) const {
  return tuner_choose(tuner_input(c), c_.nccl);
}

AlgoEstimate AlphaBetaNetwork::price(const CollectiveSpec& c, const TunerOverride& forced) const {
  return tuner_choose(tuner_input(c), forced);
}

std::vector<std::pair<std::string, double>> AlphaBetaNetwork::candidates(const CollectiveSpec& c) const {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& e : tuner_candidates(tuner_input(c), c_.nccl))
    out.emplace_back(std::string(nccl_algo_name(e.algo)) + "/" + nccl_proto_name(e.proto), e.time_s);
  return out;
}

}  // namespace parasim
