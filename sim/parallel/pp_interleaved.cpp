// Interleaved 1F1B (Narayanan et al. SC'21 §2.2, Megatron-LM): each GPU holds v model chunks;
// microbatches advance through chunks in groups of p. Stage i runs (p-i-1)*2 + (v-1)*p warm-up
// forwards, then one forward one backward, then the remaining backwards.
#include <algorithm>

#include "sim/parallel/schedule.h"

namespace parasim {

StageOrder order_interleaved(const ScheduleSpec& s) {
  const auto p = static_cast<std::int32_t>(s.stages);
  const auto m = static_cast<std::int32_t>(s.microbatches);
  const auto v = static_cast<std::int32_t>(s.chunks);
  const std::int32_t total = m * v;
  auto mb_of = [&](std::int32_t k) { return (k / (p * v)) * p + k % p; };
  auto fwd_chunk = [&](std::int32_t k) { return (k / p) % v; };
  auto bwd_chunk = [&](std::int32_t k) { return v - 1 - (k / p) % v; };
  StageOrder out(static_cast<size_t>(p));
  for (std::int32_t i = 0; i < p; ++i) {
    auto& o = out[static_cast<size_t>(i)];
    const std::int32_t warm = std::min((p - i - 1) * 2 + (v - 1) * p, total);
    std::int32_t f = 0, b = 0;
    for (; f < warm; ++f) o.push_back({Action::F, mb_of(f), fwd_chunk(f)});
    for (; f < total; ++f, ++b) {
      o.push_back({Action::F, mb_of(f), fwd_chunk(f)});
      o.push_back({Action::B, mb_of(b), bwd_chunk(b)});
    }
    for (; b < total; ++b) o.push_back({Action::B, mb_of(b), bwd_chunk(b)});
  }
  return out;
}

}  // namespace parasim
