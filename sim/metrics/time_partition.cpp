#include "sim/metrics/time_partition.h"

namespace parasim {

TimePartition partition_time(const Program& p, const Timeline& t, const Result& r) {
  TimePartition out;
  double gpus = 0;
  for (const SimRank& sr : p.ranks) gpus += static_cast<double>(sr.count);
  if (gpus <= 0) return out;
  // Each op, and each segment of a fused op as the op it stands for, in program order; a
  // compute-stream op's wait on the host within its span is the host-wait line's, not its phase's.
  const auto add = [&](const Op& op, Stream stream, Phase phase, Time start, Time end) {
    if (end <= start) return;
    const double w = static_cast<double>(p.ranks[static_cast<size_t>(op.rank)].count) / gpus;
    const double s = time_to_seconds(end - start) * w;
    auto& into = stream == Stream::Compute ? out.compute_stream_s : out.other_streams_s;
    into[std::string(phase_name(phase)) + "_s"] += s;
  };
  // Communication overlapped in closed form under an op (HiddenComm): beside the other streams'.
  const auto hidden = [&](const Op& op, const HiddenComm& h) {
    add(op, Stream::Comm, Phase::TpComm, 0, h.tp);
    add(op, Stream::Comm, Phase::EpComm, 0, h.ep);
  };
  const Time* seg_end = t.seg_end.data();
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.seg_count == 0) {
      add(op, op.stream, op.phase, t.start[i], t.end[i] - host_wait_of(t, op, i).within);
      hidden(op, op.hidden);
      continue;
    }
    each_segment(p, op, t.start[i], seg_end, [&](const Segment& s, Time from, Time to) {
      add(op, Stream::Compute, s.phase, from, to);
      hidden(op, s.hidden);
    });
    seg_end += op.seg_count;
  }
  out.exposed_s = r.breakdown.count("comm_exposed_s") ? r.breakdown.at("comm_exposed_s") : 0.0;
  out.idle_s = r.breakdown.count("idle_s") ? r.breakdown.at("idle_s") : 0.0;
  // The GPU's wait on the host, summed by the metrics (a line whenever the host is modelled).
  if (const auto hw = r.breakdown.find(kHostWaitKey); hw != r.breakdown.end()) out.compute_stream_s[kHostWaitKey] = hw->second;
  return out;
}

}  // namespace parasim
