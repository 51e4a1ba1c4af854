// One interface for the cost of a collective or transfer, so that fidelity can be swapped:
// the analytical alpha-beta model here; the flow-level topology model behind the same interface.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "calibrate/profile/profile.h"
#include "sim/scenario/scenario.h"

namespace parasim {

enum class CollOp { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, SendRecv };
const char* coll_op_name(CollOp op);

// What one rank of an all-to-all puts on NVLink and through its node's NICs, where the traffic is
// not NCCL's even spread over the group (an MoE dispatcher's own kernels: sim/parallel/moe_dispatch.h).
struct LinkLoads {
  double nvlink = 0, nic = 0;  // bytes
  // The fraction of the NIC line rate the dispatcher's kernels move `nic` at (the profile's
  // network.moe_dispatch_rdma); 0: the profile's inter_bus_efficiency, as NCCL's kernels.
  double nic_efficiency = 0;
  // The fraction of the NVLink line rate they move `nvlink` at (network.moe_dispatch_nvlink); 0:
  // NCCL's all-to-all rate over the same bytes.
  double nvlink_efficiency = 0;
};

struct CollectiveSpec {
  CollOp op = CollOp::AllReduce;
  std::int64_t ranks = 1;             // group size
  std::int64_t ranks_per_node = 1;    // of this group on each node it spans
  std::int64_t groups_per_node = 1;   // groups of this kind active at once on a node (share its NICs)
  double bytes = 0;                   // AR: buffer; AG: gathered output; RS: input; send: message
  // All-to-all run by an MoE dispatcher's kernels (DeepEP, HybridEP): each rank's loads, priced
  // instead of an even spread of `bytes` (NCCL's all-to-all) when present.
  std::optional<LinkLoads> loads = std::nullopt;
  // The group's ranks on each node it spans (at least 1, at most the group), and how many nodes.
  std::int64_t per_node() const { return std::max<std::int64_t>(1, std::min(ranks_per_node, ranks)); }
  std::int64_t nodes() const { return (ranks + per_node() - 1) / per_node(); }
};

struct AlgoInput;
struct AlgoEstimate;

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual std::string name() const = 0;
  virtual double time_s(const CollectiveSpec& c) const = 0;
  // How the call is run ("ring/simple", "tree/ll128", "measured", ...), for reports.
  virtual std::string algorithm(const CollectiveSpec& c) const = 0;
};

// Another model's times times a factor (Profile::time_scale.network, for error attribution).
class ScaledNetwork final : public NetworkModel {
 public:
  ScaledNetwork(const NetworkModel& inner, double scale) : inner_(inner), scale_(scale) {}
  std::string name() const override { return inner_.name(); }
  double time_s(const CollectiveSpec& c) const override { return scale_ * inner_.time_s(c); }
  std::string algorithm(const CollectiveSpec& c) const override { return inner_.algorithm(c); }

 private:
  const NetworkModel& inner_;
  double scale_;
};

// Analytical (no contention): measured single-node collective points of the same group size are
// interpolated (log-log, by per-rank chunk) when NCCL's own choice is asked for; otherwise NCCL's
// tuner prices ring, tree, NVLS, hierarchical, direct and p2p from the profile's tables and picks.
class AlphaBetaNetwork final : public NetworkModel {
 public:
  AlphaBetaNetwork(const Profile& p, const ClusterSpec& c);
  std::string name() const override { return name_of(NetworkKind::Analytical); }
  double time_s(const CollectiveSpec& c) const override;
  std::string algorithm(const CollectiveSpec& c) const override;
  // The tuner's choice for this call (scenario overrides and profile rules applied), and its
  // price of one given algorithm/protocol ("ring", "simple"); for the flow model.
  AlgoEstimate choose(const CollectiveSpec& c) const;
  AlgoEstimate price(const CollectiveSpec& c, const TunerOverride& forced) const;
  // Every algorithm/protocol the tuner priced for this call ("ring/simple" -> seconds).
  std::vector<std::pair<std::string, double>> candidates(const CollectiveSpec& c) const;
  // True when the profile has measured points of this group shape and NCCL's own choice is asked
  // for: those points price it (shared by the flow model).
  bool use_measured(const CollectiveSpec& c) const;

 private:
  double measured_time(const CollectiveSpec& c) const;
  double dispatch_time(const CollectiveSpec& c) const;
  std::vector<const CollectivePoint*> measured_points(const CollectiveSpec& c) const;
  AlgoInput tuner_input(const CollectiveSpec& c) const;
  const Profile& p_;
  ClusterSpec c_;
  double link_gbps_;
  // Lowering asks for the same few collectives many times (per layer, per microbatch).
  mutable std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, double>, double> cache_;
};

// Bus-bandwidth factor of nccl-tests: time = factor * S / busbw.
double bus_factor(CollOp op, std::int64_t n);

}  // namespace parasim
