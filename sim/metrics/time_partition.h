// "Where the time went" as a partition of the step (mean per GPU): each phase's time on the compute
// stream, then the wait on communication (exposed) and the idle rest, which together are the step;
// apart from it, the communication that ran on the other streams, hidden behind compute except for
// its exposed part. A read-only sink on the timeline, like the metrics.
#pragma once
#include <map>
#include <string>

#include "sim/core/program.h"
#include "sim/core/timeline.h"
#include "sim/metrics/metrics.h"

namespace parasim {

struct TimePartition {
  std::map<std::string, double> compute_stream_s;  // phase name -> seconds on the compute stream
  double exposed_s = 0;                             // communication wait, compute stream idle
  double idle_s = 0;                                // the rest of the step (bubble, waiting on peers)
  // phase name -> seconds on comm / p2p / copy streams, and of the collectives overlapped in closed
  // form under the layers' kernels (HiddenComm: tp_comm_overlap, ep_comm_overlap)
  std::map<std::string, double> other_streams_s;
};

TimePartition partition_time(const Program& p, const Timeline& t, const Result& r);

}  // namespace parasim
