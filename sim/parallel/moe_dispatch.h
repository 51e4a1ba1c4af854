// The traffic of a mixture-of-experts dispatch (and of its combine, the same bytes back), per rank
// pair, for each dispatcher of parallel.moe_dispatcher: every token picks top_k distinct experts
// uniformly (Megatron-Core's moe_router_force_load_balancing, the published runs' setting), the
// experts placed contiguously, E / ep per expert-parallel rank; a destination as loaded as the
// busiest rank (DispatchShape::load, sim/parallel/moe_routing.h) receives that many times as much,
// at most every token once.
//
// - alltoall (Megatron-Core's MoEAlltoAllTokenDispatcher over NCCL): a copy of the token per routed
//   expert, so rank i sends rank j tokens x top_k / ep copies, wherever j is.
// - deepep, hybridep: a copy per destination rank inside the node (NVLink), and one per destination
//   node over RDMA to the GPU of the same local index there, which forwards it over NVLink to the
//   ranks of its node that hold a chosen expert (DeepEP README, normal kernels; Hybrid-EP_Implementation.md
//   in DeepEP's hybrid-ep branch: "IB communication between peer GPUs, then each rank distributes the
//   received inter-node data locally", RDMA buffers of tokens x (nodes - 1)).
//
// A token whose k experts are drawn without replacement from E reaches a destination holding e of
// them with probability 1 - C(E - e, k) / C(E, k); the expected number of copies per destination is
// that probability, so expected bytes per rank pair and per node pair are closed forms.
#pragma once
#include <cstdint>

#include "calibrate/profile/profile.h"
#include "sim/network/network_model.h"
#include "sim/scenario/choices.h"

namespace parasim {

// One dispatch on one expert-parallel group.
struct DispatchShape {
  double bytes = 0;  // the tokens each rank routes, one hidden vector each (tokens x hidden x bytes per element)
  std::int64_t experts = 1, top_k = 1;
  std::int64_t ranks = 1;           // ep
  std::int64_t ranks_per_node = 1;  // of the group on each node (the group spans ranks / ranks_per_node nodes)
  double load = 1;  // what each destination receives over the even routing's: the busiest rank's copies over the mean
};

// Expected bytes of one rank's dispatch (the combine sends the same back).
struct DispatchTraffic {
  double to_each_rank = 0;  // of its tokens, what each rank of the group (itself included) receives, by whatever path
  double nic_per_node = 0;  // what it sends through its NIC to each other node
  double nvlink = 0;        // what it puts on NVLink: its tokens for the other ranks of its node, and what it forwards
  std::int64_t ranks_per_node = 1, nodes = 1;
  double node_to_node() const { return static_cast<double>(ranks_per_node) * nic_per_node; }
  // The loads the network model prices (sim/network/algorithms/direct.cpp).
  LinkLoads loads() const { return {nvlink, static_cast<double>(nodes - 1) * nic_per_node}; }
};

// 1 - C(E - held, k) / C(E, k): the chance that a token's k distinct experts include one of `held`.
double hit_probability(std::int64_t experts, std::int64_t held, std::int64_t top_k);

DispatchTraffic dispatch_traffic(MoeDispatcher d, const DispatchShape& s);

// The rates a dispatcher's own kernels move a group's tokens at, as fractions of the line rates
// (LinkLoads::nic_efficiency, nvlink_efficiency): the profile's published points at the group's node
// count (network.moe_dispatch_rdma, across nodes) and at its ranks in one NVLink domain
// (moe_dispatch_nvlink, where the GPUs are linked by NVLink, not PCIe alone); 0 where it has none
// (NCCL's rate), and for NCCL's all-to-all.
struct DispatchRates {
  double nic = 0, nvlink = 0;
};
DispatchRates dispatch_rates(const Profile& p, IntraNode intra, MoeDispatcher d, std::int64_t nodes, std::int64_t ranks_per_node);

// The expert-parallel group a scenario's dispatcher serves (its nodes and ranks per NVLink domain)
// and the rates dispatch_rates gives it: what the run notes, `run --interval` and the assumed-figure
// list read. Rates 0 for a dense model, ep 1 or NCCL's all-to-all.
struct ScenarioDispatch {
  std::int64_t nodes = 1, ranks_per_node = 1;
  DispatchRates rates;
};
struct Scenario;
ScenarioDispatch scenario_dispatch(const Scenario& sc);

}  // namespace parasim
