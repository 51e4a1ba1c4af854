// NCCL's collective algorithms as cost functions, one file each, and the tuner that picks an
// algorithm and protocol per call the way NCCL's does: every enabled (algorithm, protocol) pair is
// priced as latency + bytes / bandwidth from the profile's tables and the cheapest one runs,
// unless a profile rule or the scenario (like NCCL_ALGO / NCCL_PROTO) forces the choice.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "calibrate/profile/profile.h"
#include "sim/network/network_model.h"

namespace parasim {

// One collective call placed on the cluster, with the bandwidths its links give it.
struct AlgoInput {
  CollOp op = CollOp::AllReduce;
  double bytes = 0;
  std::int64_t ranks = 1;   // n
  std::int64_t per_node = 1;  // g: ranks of the group on each node
  std::int64_t nodes = 1;
  double intra_busbw = 0;  // B/s: achievable ring bus bandwidth inside a node (NVLink or PCIe)
  double net_busbw = 0;    // B/s: the node's NIC share for this group, achievable (0 on one node)
  bool nvswitch = true;    // NVLink SHARP needs an NVSwitch node
  double intra_alpha_us = 0, inter_alpha_us = 0;  // per-step latencies when the profile has no NCCL tables
  const NcclTuning* tuning = nullptr;
  std::optional<LinkLoads> loads = std::nullopt;  // all-to-all by an MoE dispatcher's kernels: per-rank NVLink and NIC bytes
};

struct AlgoEstimate {
  NcclAlgo algo = NcclAlgo::Ring;
  NcclProto proto = NcclProto::Simple;
  double latency_s = 0;
  double time_s = 0;
};

// Each returns nullopt where NCCL cannot run the algorithm for this call.
std::optional<AlgoEstimate> ring_estimate(const AlgoInput& in, NcclProto p);
std::optional<AlgoEstimate> tree_estimate(const AlgoInput& in, NcclProto p);
std::optional<AlgoEstimate> nvls_estimate(const AlgoInput& in, NcclProto p);
std::optional<AlgoEstimate> hierarchical_estimate(const AlgoInput& in, NcclProto p);
std::optional<AlgoEstimate> direct_estimate(const AlgoInput& in, NcclProto p);
std::optional<AlgoEstimate> p2p_estimate(const AlgoInput& in, NcclProto p);

// Every enabled candidate, priced (for `parasim collective --all` and the tests).
std::vector<AlgoEstimate> tuner_candidates(const AlgoInput& in, const TunerOverride& o);
// NCCL's choice: the first matching profile rule, else the cheapest candidate. Throws
// ConfigError when an override leaves no algorithm that can run this collective.
AlgoEstimate tuner_choose(const AlgoInput& in, const TunerOverride& o);

// Shared by the algorithm files: the protocol's costs for an algorithm (ring costs when the
// profile has no NCCL tables: latencies from intra/inter_alpha_us, full bandwidth).
NcclProtoCost proto_cost(const AlgoInput& in, NcclAlgo a, NcclProto p);

}  // namespace parasim
