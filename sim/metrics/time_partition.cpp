#include "sim/metrics/time_partition.h"

namespace parasim {

TimePartition partition_time(const Program& p, const Timeline& t, const Result& r) {
  TimePartition out;
  double gpus = 0;
  for (const SimRank& sr : p.ranks) gpus += static_cast<double>(sr.count);
  if (gpus <= 0) return out;
  const auto weight = [&](const Op& op) { return static_cast<double>(p.ranks[static_cast<size_t>(op.rank)].count) / gpus; };
  // Each op, and each segment of a fused op as the op it stands for, in program order; the time a
  // compute-stream op waited on the host as its own line.
  const auto add = [&](const Op& op, Stream stream, Phase phase, Time start, Time end) {
    if (end <= start) return;
    const double s = time_to_seconds(end - start) * weight(op);
    auto& into = stream == Stream::Compute ? out.compute_stream_s : out.other_streams_s;
    into[std::string(phase_name(phase)) + "_s"] += s;
  };
  if (!t.host_wait_before.empty()) out.compute_stream_s[kHostWaitKey] = 0;  // a line whenever the host is modelled
  const Time* seg_end = t.seg_end.data();
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.seg_count == 0) {
      const HostWait hw = host_wait_of(t, op, i);
      add(op, op.stream, op.phase, t.start[i], t.end[i] - hw.within);
      if (hw.before + hw.within > 0) out.compute_stream_s[kHostWaitKey] += time_to_seconds(hw.before + hw.within) * weight(op);
      continue;
    }
    each_segment(p, op, t.start[i], seg_end, [&](const Segment& s, Time from, Time to) { add(op, Stream::Compute, s.phase, from, to); });
    seg_end += op.seg_count;
  }
  out.exposed_s = r.breakdown.count("comm_exposed_s") ? r.breakdown.at("comm_exposed_s") : 0.0;
  out.idle_s = r.breakdown.count("idle_s") ? r.breakdown.at("idle_s") : 0.0;
  return out;
}

}  // namespace parasim
