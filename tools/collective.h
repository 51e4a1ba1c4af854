// One collective's prediction (`parasim collective`, parasim.collective() in Python): the query
// and its answer as JSON (parasim.collective/1, docs/outputs.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/json_reader.h"

namespace parasim {

struct CollectiveQuery {
  std::string gpu;  // profile name or path
  std::string op = "all_reduce", bytes = "1GiB", network = "analytical", inter_node = "rail_optimized";
  std::string algorithm = "auto", protocol = "auto";
  std::int64_t ranks = 8, gpus_per_node = 8, nics_per_node = 0, concurrent_groups = 1;
  double nic_gbps = 0;
  bool all = false;  // also every algorithm/protocol the analytical tuner priced
};

// The ranges `collective` accepts (the CLI's checks and predict_collective's, for the Python module).
inline constexpr std::int64_t kMaxCollectiveRanks = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxGpusPerNode = 1024;
inline constexpr std::int64_t kMaxConcurrentGroups = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxNicsPerNode = 1024;

// A size like "1GiB", "256MB" or "4096" in bytes (at most 1e18); ConfigError otherwise.
double parse_bytes(const std::string& s);
// The inter-node fabrics `collective` builds (a listed "custom" fabric needs a scenario).
std::vector<std::string> collective_fabrics();

// {"schema":"parasim.collective/1","op","bytes","ranks","nodes","gpus_per_node","network","profile",
//  "algorithm","time_s","algbw_gbps","busbw_gbps"(null when nothing moves),"candidates":[{"name","time_s"}]}.
// ConfigError for an unknown op, network, algorithm or protocol, or a bad size.
Json predict_collective(const CollectiveQuery& q, const std::string& data_dir);

}  // namespace parasim
