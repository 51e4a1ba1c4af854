// ZB-H1 (Qi et al. 2024): the 1F1B order with each backward split into B (input gradients, on the
// critical path) and W (weight gradients, off it). Stage i defers the W of its last p-i-1 steady
// microbatches into the cool-down, where 1F1B leaves the stage waiting for downstream backwards.
#include <algorithm>
#include <deque>

#include "sim/parallel/schedule.h"

namespace parasim {

StageOrder order_zb_h1(const ScheduleSpec& s) {
  const auto p = static_cast<std::int32_t>(s.stages);
  const auto m = static_cast<std::int32_t>(s.microbatches);
  StageOrder out(static_cast<size_t>(p));
  for (std::int32_t i = 0; i < p; ++i) {
    auto& o = out[static_cast<size_t>(i)];
    const std::int32_t warm = std::min(p - i - 1, m);
    std::deque<std::int32_t> deferred;
    std::int32_t f = 0, b = 0;
    for (; f < warm; ++f) o.push_back({Action::F, f, 0});
    for (; f < m; ++f, ++b) {
      o.push_back({Action::F, f, 0});
      o.push_back({Action::B, b, 0});
      if (m - f <= warm) deferred.push_back(b);  // keep W's for the cool-down
      else o.push_back({Action::W, b, 0});
    }
    for (; b < m; ++b) {
      o.push_back({Action::B, b, 0});
      deferred.push_back(b);
      // fill the wait for the next backward with one deferred weight-gradient pass
      if (!deferred.empty() && b + 1 < m) {
        o.push_back({Action::W, deferred.front(), 0});
        deferred.pop_front();
      }
    }
    for (auto w : deferred) o.push_back({Action::W, w, 0});
  }
  return out;
}

}  // namespace parasim
