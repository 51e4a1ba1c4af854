// DDP with gradient accumulation: one stage, forward then backward per microbatch. The bucketed
// all-reduce of the last microbatch's backward is emitted by the shared lowering.
#include "sim/parallel/schedule.h"

namespace parasim {

StageOrder order_ddp(const ScheduleSpec& s) {
  StageOrder out(1);
  for (std::int32_t mb = 0; mb < s.microbatches; ++mb) {
    out[0].push_back({Action::F, mb, 0});
    out[0].push_back({Action::B, mb, 0});
  }
  return out;
}

}  // namespace parasim
