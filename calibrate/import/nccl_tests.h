// Importer of nccl-tests text output (all_reduce_perf, all_gather_perf, ...): result rows
// (size, count, type, redop, root, out-of-place time/algbw/busbw, in-place ...), the devices
// block (ranks, hosts, GPU name) and the NCCL version when NCCL_DEBUG=INFO printed it.
#pragma once
#include <string>
#include <vector>

#include "calibrate/profile/profile.h"

namespace parasim {

struct NcclTestsLog {
  std::string file;
  std::string op;           // all_reduce | all_gather | ...
  std::int64_t ranks = 0;
  std::int64_t nodes = 0;   // distinct hosts
  std::string gpu_name;
  std::string gpu_where;    // "file:line" or "file: /pointer" of the GPU name, for messages
  std::string nccl_version;
  struct Row {
    double bytes = 0, time_s = 0, algbw_gbps = 0, busbw_gbps = 0;
    std::string where;  // "file:line" or "file: /pointer", for messages
  };
  std::vector<Row> rows;    // out-of-place results
};

// Throws ConfigError naming the file and line on anything it cannot read.
NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& file, const std::string& op_override = "");

// nccl-tests' JSON output (-J FILE; format version 2: args, nccl_version, config.devices, results
// with out_of_place {time, alg_bw, bus_bw, nwrong}). Throws ConfigError naming the file and the
// JSON pointer; a file cut short by a crashed run is reported as such.
NcclTestsLog parse_nccl_tests_json(const std::string& text, const std::string& file, const std::string& op_override = "");

// Either format, told apart by the first non-blank character ('{' = JSON).
NcclTestsLog parse_nccl_tests_any(const std::string& text, const std::string& file, const std::string& op_override = "");

// Checks a log against the profile it is to be merged into: the GPU the log names must be the
// profile's device, and no row may move data faster than the GPU's links allow. For every op
// nccl-tests runs on n >= 2 ranks, some GPU sends or receives at least (n-1)/n of the op's bytes
// over its links, so bytes / time * (n-1)/n cannot exceed the profile's NVLink rate per
// direction (network.nvlink_gbps; the fastest link a GPU has). Throws ConfigError naming the file
// and line (or JSON pointer).
void check_nccl_tests_log(const NcclTestsLog& log, const Profile& profile);

// Adds the log's rows to a profile JSON as collective_points (replacing points of the same op,
// ranks and nodes); returns the notes on what was replaced.
std::vector<std::string> merge_nccl_tests(Json& profile, const NcclTestsLog& log);

}  // namespace parasim
