// How many routed tokens a mixture-of-experts layer's experts compute, and how many a rank sends,
// once routing is uneven or capped (Megatron-Core's router: megatron/core/transformer/moe/router.py
// and moe_utils.py):
//
// - Balanced by force (moe_router_force_load_balancing, the published benchmarks' setting; the
//   default here): the router's logits are replaced by random ones (apply_random_logits), so each
//   token's top_k experts are a uniformly drawn set of distinct experts. A rank holding L = E / ep
//   experts then receives, from the group's N = ep x T tokens, a sum of N hypergeometric hit counts:
//   mean N k L / E, variance N k (L/E) (1 - L/E) (E - k) / (E - 1). The ranks' counts sum to N k
//   exactly (correlation -1 / (ep - 1)), so the busiest rank expects mean + sigma x e_ep /
//   sqrt(1 - 1/ep), e_ep the expected maximum of ep standard normal draws (normal approximation).
// - Measured (training.moe_expert_load): the busiest expert's routed tokens over the mean, per MoE
//   layer (MaxVio + 1 in Wang et al. 2024, "Auxiliary-Loss-Free Load Balancing Strategy for
//   Mixture-of-Experts", arXiv 2408.15664), as read from one's own run: a property of the trained
//   router and the data, the same whatever the layout. The busiest rank holds that expert and L - 1
//   others, which share the rest of the tokens evenly: (r + (L - 1) o) / L of the mean, o = (E - r) /
//   (E - 1) (1 for ep = 1, r for one expert per rank).
// - Capacity (training.moe_capacity_factor, Megatron --moe-expert-capacity-factor): each rank keeps
//   at most ceil(T k / E x factor) of its T routed tokens (the router's: this rank's sequence-parallel
//   share with etp 1) per expert and drops the rest before the dispatch
//   (get_capacity, apply_router_token_dropping), so no expert computes more than that over the mean
//   T k / E. With training.moe_pad_to_capacity (--moe-pad-expert-input-to-capacity) every expert
//   gets exactly that many from every rank, padded, and every rank sends them; when the capacity
//   exceeds T the router's mask keeps every token for every expert (no dropping, and padded: all T
//   tokens to each expert).
//
// Approximations: under random routing a capacity caps the busiest rank's excess as a whole, while
// Megatron drops against each source rank's count per expert, which spreads more (at factor 1 about
// 2 % of Qwen3-30B-A3B's copies at 4,096 tokens), so the kept load errs high by that much; a measured
// load replaces the random excess, so it should be the busiest expert of a microbatch in one
// expert-parallel group (a whole batch's average is lower).
//
// The combine all-to-all makes every rank of the expert-parallel group wait for the busiest one,
// so the lowering prices each rank's expert GEMMs and its all-to-all as the busiest rank's.
#pragma once
#include <cstdint>

namespace parasim {

struct MoeRouting {
  double expert_load = 0;      // 0: balanced by force (random routing); else the busiest expert's routed tokens over the mean
  double capacity_factor = 0;  // 0: dropless
  bool pad_to_capacity = false;
};

struct MoeLoad {
  double sent = 1;     // routed token copies a rank permutes and sends, over tokens x top_k
  double busiest = 1;  // routed token copies the busiest rank's experts compute and receive, over the balanced mean
};

// The busiest of ep ranks under routing balanced by force, over the mean (1 for ep = 1: one rank
// holds every expert). tokens: T, the tokens each rank routes; draw: E[max of ep standard normal
// draws] (expected_max_standard_normal(ep)).
double forced_balance_ratio(std::int64_t experts, std::int64_t top_k, std::int64_t tokens, std::int64_t ep, double draw);

// The most one expert can receive over the mean: every token, E / top_k.
double max_expert_load(std::int64_t experts, std::int64_t top_k);

MoeLoad moe_load(std::int64_t experts, std::int64_t top_k, std::int64_t tokens, std::int64_t ep, const MoeRouting& r, double draw);

}  // namespace parasim
