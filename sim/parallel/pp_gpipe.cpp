// GPipe (Huang et al. 2019): every stage runs all forwards, then all backwards. Also the order of
// naive model parallelism, which is GPipe with a single microbatch.
#include "sim/parallel/schedule.h"

namespace parasim {

StageOrder order_gpipe(const ScheduleSpec& s) {
  StageOrder out(static_cast<size_t>(s.stages));
  for (auto& stage : out) {
    for (std::int32_t mb = 0; mb < s.microbatches; ++mb) stage.push_back({Action::F, mb, 0});
    for (std::int32_t mb = 0; mb < s.microbatches; ++mb) stage.push_back({Action::B, mb, 0});
  }
  return out;
}

}  // namespace parasim
