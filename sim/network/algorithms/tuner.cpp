#include <algorithm>

#include "sim/core/errors.h"
#include "sim/network/algorithms/algorithms.h"

namespace parasim {

namespace {
const NcclAlgo kAlgos[] = {NcclAlgo::Ring, NcclAlgo::Tree, NcclAlgo::Nvls, NcclAlgo::Hierarchical, NcclAlgo::Direct, NcclAlgo::P2p};
const NcclProto kProtos[] = {NcclProto::LL, NcclProto::LL128, NcclProto::Simple};

std::optional<AlgoEstimate> estimate(const AlgoInput& in, NcclAlgo a, NcclProto p) {
  switch (a) {
    case NcclAlgo::Ring: return ring_estimate(in, p);
    case NcclAlgo::Tree: return tree_estimate(in, p);
    case NcclAlgo::Nvls: return nvls_estimate(in, p);
    case NcclAlgo::Hierarchical: return hierarchical_estimate(in, p);
    case NcclAlgo::Direct: return direct_estimate(in, p);
    case NcclAlgo::P2p: return p2p_estimate(in, p);
  }
  return std::nullopt;
}

bool legacy(const AlgoInput& in) { return !in.tuning || !in.tuning->present; }
}  // namespace

NcclProtoCost proto_cost(const AlgoInput& in, NcclAlgo a, NcclProto p) {
  if (legacy(in)) return {0, in.intra_alpha_us, in.inter_alpha_us, 1.0};
  const auto& cost = in.tuning->cost;
  auto it = cost.find(a == NcclAlgo::Tree ? NcclAlgo::Tree : NcclAlgo::Ring);
  NcclProtoCost c = it->second.at(p);
  // A communicator across nodes: NCCL's model slows its NVLink steps (LL: x1.8).
  if (in.nodes > 1) c.nvlink_step_us *= in.tuning->multinode_nvlink_step_factor.at(p);
  return c;
}

std::vector<AlgoEstimate> tuner_candidates(const AlgoInput& in, const TunerOverride& o) {
  std::vector<AlgoEstimate> out;
  for (NcclAlgo a : kAlgos) {
    if (o.algorithm && *o.algorithm != a) continue;
    // NCCL has no such algorithm (its multi-node all-gather and reduce-scatter are rings; its
    // low-latency all-reduce is the tree): the hierarchical schedule runs only when a scenario
    // asks for it (a framework's own two-level collective), never by NCCL's choice.
    if (!o.algorithm && a == NcclAlgo::Hierarchical) continue;
    // Without NCCL tables in the profile only ring/Simple and the direct/p2p paths are priced.
    if (legacy(in) && a != NcclAlgo::Ring && a != NcclAlgo::Direct && a != NcclAlgo::P2p) continue;
    for (NcclProto p : kProtos) {
      if (o.protocol && *o.protocol != p) continue;
      if (legacy(in) && p != NcclProto::Simple) continue;
      if (auto e = estimate(in, a, p)) out.push_back(*e);
    }
  }
  return out;
}

AlgoEstimate tuner_choose(const AlgoInput& in, const TunerOverride& o) {
  if (!legacy(in) && !o.algorithm && !o.protocol) {
    for (const NcclRule& r : in.tuning->rules) {
      if (r.op != "any" && r.op != coll_op_name(in.op)) continue;
      if (in.nodes < r.min_nodes || in.nodes > r.max_nodes || in.bytes < r.min_bytes || in.bytes > r.max_bytes) continue;
      if (auto e = estimate(in, r.algo, r.proto)) return *e;
    }
  }
  const auto cands = tuner_candidates(in, o);
  if (cands.empty())
    throw ForcedAlgorithmError(
        std::string("no collective algorithm can run ") + coll_op_name(in.op) + " with algorithm \"" + override_name(o.algorithm) +
        "\" and protocol \"" + override_name(o.protocol) + "\"" +
        (legacy(in) ? " (the GPU profile has no network.nccl tables: only ring/simple, direct and p2p)"
                    : o.algorithm == NcclAlgo::Tree || o.algorithm == NcclAlgo::Nvls
                          ? " (NCCL's tree and NVLS run all-reduce only; NCCL too refuses a global NCCL_ALGO=" + override_name(o.algorithm) +
                                " for the job's other collectives: \"no algorithm/protocol available\")"
                          : ""));
  return *std::min_element(cands.begin(), cands.end(), [](const AlgoEstimate& a, const AlgoEstimate& b) { return a.time_s < b.time_s; });
}

}  // namespace parasim
