// Flow-level bandwidth sharing: concurrent flows share each link by max-min fairness
// (progressive filling), rates recomputed whenever a flow starts or ends.
#pragma once
#include <cstdint>
#include <vector>

namespace parasim {

struct Flow {
  std::vector<std::int32_t> links;  // link ids of the path
  double bytes = 0;
  double start_s = 0;
};

// Max-min fair rate (bytes/s) of each flow; `capacity` in bytes/s per link id.
std::vector<double> maxmin_rates(const std::vector<const std::vector<std::int32_t>*>& paths, const std::vector<double>& capacity);

struct FlowRun {
  std::vector<double> finish_s;
  double makespan_s = 0;
  std::int64_t recomputations = 0;
};
// Runs flows to completion; link capacity in GB/s (10^9 bytes/s) per link id.
FlowRun run_flows(const std::vector<Flow>& flows, const std::vector<double>& link_gbps);

}  // namespace parasim
