#include "sim/metrics/time_partition.h"

namespace parasim {

TimePartition partition_time(const Program& p, const Timeline& t, const Result& r) {
  TimePartition out;
  double gpus = 0;
  for (const SimRank& sr : p.ranks) gpus += static_cast<double>(sr.count);
  if (gpus <= 0) return out;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (t.end[i] <= t.start[i]) continue;
    const double w = static_cast<double>(p.ranks[static_cast<size_t>(op.rank)].count) / gpus;
    const double s = time_to_seconds(t.end[i] - t.start[i]) * w;
    auto& into = op.stream == Stream::Compute ? out.compute_stream_s : out.other_streams_s;
    into[std::string(phase_name(op.phase)) + "_s"] += s;
  }
  out.exposed_s = r.breakdown.count("comm_exposed_s") ? r.breakdown.at("comm_exposed_s") : 0.0;
  out.idle_s = r.breakdown.count("idle_s") ? r.breakdown.at("idle_s") : 0.0;
  return out;
}

}  // namespace parasim
