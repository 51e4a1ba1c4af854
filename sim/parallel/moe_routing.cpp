#include "sim/parallel/moe_routing.h"

#include <algorithm>
#include <cmath>

namespace parasim {

double forced_balance_ratio(std::int64_t experts, std::int64_t top_k, std::int64_t tokens, std::int64_t ep, double draw) {
  if (ep <= 1 || tokens <= 0) return 1.0;
  const double E = static_cast<double>(experts), k = static_cast<double>(top_k), n = static_cast<double>(ep);
  const double share = 1.0 / n;                        // L / E: the experts one rank holds
  const double N = n * static_cast<double>(tokens);     // the tokens the group routes
  const double mean = N * k * share;
  const double var = E > 1 ? N * k * share * (1 - share) * (E - k) / (E - 1) : 0.0;
  return 1.0 + draw * std::sqrt(var) / (mean * std::sqrt(1.0 - 1.0 / n));
}

double max_expert_load(std::int64_t experts, std::int64_t top_k) { return static_cast<double>(experts) / static_cast<double>(top_k); }

namespace {
// The busiest rank's experts' loads over the mean, as fractions of the mean: the busiest expert's
// `hot` and its rank's L - 1 others' `rest` each.
double rank_share(double hot, double rest, std::int64_t held) { return (hot + static_cast<double>(held - 1) * rest) / static_cast<double>(held); }
}  // namespace

MoeLoad moe_load(std::int64_t experts, std::int64_t top_k, std::int64_t tokens, std::int64_t ep, const MoeRouting& r, double draw) {
  const std::int64_t held = experts / std::max<std::int64_t>(1, ep);
  const double E = static_cast<double>(experts);
  // Measured: the busiest expert's load and its rank's other experts' share of what is left (each
  // (E - hot) / (E - 1) of the mean). Random routing: the busiest rank's excess (forced_balance_ratio)
  // stands for its every expert, the rest of the experts at the mean.
  const double hot = r.expert_load > 0 ? r.expert_load : forced_balance_ratio(experts, top_k, tokens, ep, draw);
  const double rest = r.expert_load > 0 && experts > 1 ? (E - hot) / (E - 1) : hot;
  const auto busiest = [&](double h, double o) { return r.expert_load > 0 ? rank_share(h, o, held) : h; };
  if (r.capacity_factor <= 0) return {1.0, busiest(hot, rest)};
  // Megatron-Core's get_capacity(num_tokens = T x top_k, num_experts, capacity_factor).
  const double mean = static_cast<double>(tokens * top_k) / E;
  const double capacity = std::ceil(mean * r.capacity_factor);
  if (capacity > static_cast<double>(tokens)) {
    // No token dropped; padded, every expert takes every token.
    const double all = max_expert_load(experts, top_k);
    return r.pad_to_capacity ? MoeLoad{all, all} : MoeLoad{1.0, busiest(hot, rest)};
  }
  const double cap = capacity / mean;
  if (r.pad_to_capacity) return {cap, cap};
  // Each expert keeps at most the capacity; a rank sends what its experts keep.
  const double kept_hot = std::min(hot, cap), kept_rest = std::min(rest, cap);
  const double sent = r.expert_load > 0 ? (kept_hot + (E - 1) * kept_rest) / E : std::min(1.0, cap);
  return {sent, busiest(kept_hot, kept_rest)};
}

}  // namespace parasim
