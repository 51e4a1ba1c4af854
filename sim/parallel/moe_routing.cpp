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

double max_load_ratio(std::int64_t experts, std::int64_t top_k, std::int64_t ep) {
  const std::int64_t held = experts / std::max<std::int64_t>(1, ep);
  return static_cast<double>(experts * std::min(top_k, held)) / static_cast<double>(top_k * held);
}

MoeLoad moe_load(std::int64_t experts, std::int64_t top_k, std::int64_t tokens, std::int64_t ep, const MoeRouting& r, double draw) {
  const double natural = r.load_ratio > 0 ? r.load_ratio : forced_balance_ratio(experts, top_k, tokens, ep, draw);
  if (r.capacity_factor <= 0) return {1.0, natural};
  // Megatron-Core's get_capacity(num_tokens = T x top_k, num_experts, capacity_factor).
  const double mean = static_cast<double>(tokens * top_k) / static_cast<double>(experts);
  const double capacity = std::ceil(mean * r.capacity_factor);
  if (capacity > static_cast<double>(tokens)) {
    // No token dropped; padded, every expert takes every token.
    const double all = static_cast<double>(experts) / static_cast<double>(top_k);
    return r.pad_to_capacity ? MoeLoad{all, all} : MoeLoad{1.0, natural};
  }
  const double cap = capacity / mean;
  if (r.pad_to_capacity) return {cap, cap};
  return {std::min(1.0, cap), std::min(natural, cap)};
}

}  // namespace parasim
