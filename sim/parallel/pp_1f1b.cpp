// 1F1B (PipeDream-flush, Narayanan et al. 2021): stage i runs min(p-i-1, m) warm-up forwards,
// then alternates one forward and one backward, then drains the remaining backwards.
#include <algorithm>

#include "sim/parallel/schedule.h"

namespace parasim {

StageOrder order_1f1b(const ScheduleSpec& s) {
  const auto p = static_cast<std::int32_t>(s.stages);
  const auto m = static_cast<std::int32_t>(s.microbatches);
  StageOrder out(static_cast<size_t>(p));
  for (std::int32_t i = 0; i < p; ++i) {
    auto& o = out[static_cast<size_t>(i)];
    const std::int32_t warm = std::min(p - i - 1, m);
    std::int32_t f = 0, b = 0;
    for (; f < warm; ++f) o.push_back({Action::F, f, 0});
    for (; f < m; ++f, ++b) {
      o.push_back({Action::F, f, 0});
      o.push_back({Action::B, b, 0});
    }
    for (; b < m; ++b) o.push_back({Action::B, b, 0});
  }
  return out;
}

}  // namespace parasim
