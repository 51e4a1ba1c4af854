// Helpers shared by the test suites. Data is located through CMake-configured directories.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include <sys/wait.h>

#include <gtest/gtest.h>

#include "calibrate/fit/calibration.h"
#include "sim/metrics/time_partition.h"
#include "sim/simulation.h"

namespace parasim::test {

inline std::string data_dir() { return PARASIM_DATA_DIR; }
inline std::string test_data(const std::string& rel) { return std::string(PARASIM_TEST_DATA_DIR) + "/" + rel; }

// A scenario from a JSON literal, as if read from "test.json".
inline Scenario scenario_from(const Json& j) { return parse_scenario(j, "test.json", data_dir()); }
// The ConfigError message a scenario is rejected with, or "(no error)".
inline std::string scenario_error(const Json& j) {
  try {
    scenario_from(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

// A shell command's exit status and standard output (its standard error merged in, or dropped).
struct Ran {
  int code;
  std::string out;
};
inline Ran run_shell(const std::string& command, bool merge_stderr = true) {
  FILE* f = popen((command + (merge_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), f)) out.append(buf.data(), n);
  const int st = pclose(f);
  return {WEXITSTATUS(st), out};
}
// The parasim binary run with `args`.
inline Ran run_cli(const std::string& args, bool merge_stderr = true) { return run_shell(std::string(PARASIM_BINARY) + " " + args, merge_stderr); }
// The parasim binary's standard output (stderr dropped) and exit status for `args`.
inline std::pair<int, std::string> cli_stdout(const std::string& args) {
  const Ran r = run_cli(args, false);
  return {r.code, r.out};
}

// A whole file's text ("" when it cannot be read), and a file of `text` in the test's temporary directory.
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// The kernel of a block named `name` (a std::runtime_error when there is none).
inline const Kernel& kernel_named(const Block& b, const std::string& name) {
  for (const auto& k : b.kernels)
    if (k.name == name) return k;
  throw std::runtime_error("no kernel " + name);
}

// A small valid scenario to modify in tests.
inline Json base_scenario() {
  return Json::parse(R"({
    "schema": "parasim.scenario/1", "name": "t", "model": "llama2-7b",
    "cluster": {"gpu": "h100-sxm5-80g", "nodes": 1, "gpus_per_node": 8},
    "training": {"global_batch": 64, "micro_batch": 1, "seq_len": 4096},
    "parallel": {"dp": 8, "tp": 1, "pp": 1, "schedule": "ddp"}
  })");
}

// Every shipped scenario and measured run (scenarios/*.json, scenarios/measured/*.json), sorted;
// a file of another schema among them (the list of skipped runs) is the caller's to skip.
inline std::vector<std::filesystem::path> scenario_and_measured_files() {
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"scenarios", "scenarios/measured"})
    for (const auto& e : std::filesystem::directory_iterator(data_dir() + "/" + dir))
      if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// The harness context of a recorded calibration run, for building measured profiles in tests.
inline HarnessContext harness_context(const std::string& gpu, std::int64_t sms, double memory_bytes, const std::string& date = "",
                                      const std::string& command = "") {
  HarnessContext c;
  c.gpu_name = gpu;
  c.sms = sms;
  c.memory_bytes = memory_bytes;
  c.date = date;
  c.command = command;
  return c;
}

// A network where every transfer is free: for closed-form tests.
class FreeNetwork final : public NetworkModel {
 public:
  std::string name() const override { return "free"; }
  double time_s(const CollectiveSpec&) const override { return 0.0; }
  std::string algorithm(const CollectiveSpec&) const override { return "free"; }
};

// The whole simulation with a chosen network model; with free communication, overlapped
// communication does not slow compute either.
inline SimulationOutput simulate_with(Scenario sc, const NetworkModel& net) {
  static const Registries reg;
  if (net.name() == "free") {
    sc.profile.overlap_compute_slowdown.value = 0;
    sc.profile.has_tp_overlap = false;  // no TP collective, no SMs held for one
  }
  return simulate(sc, reg, &net, Detail::Timeline);
}

// Two "where the time went" partitions line by line, to 1e-9 of each line (a folded step's against
// the whole step's).
inline void expect_same_partition(const TimePartition& a, const TimePartition& b, const std::string& what) {
  auto near = [&](double x, double y, const std::string& line) { EXPECT_NEAR(x, y, 1e-9 * std::max(1.0, std::abs(y))) << what << " " << line; };
  for (const auto* maps : {&a.compute_stream_s, &a.other_streams_s}) {
    const auto& other = maps == &a.compute_stream_s ? b.compute_stream_s : b.other_streams_s;
    ASSERT_EQ(maps->size(), other.size()) << what;
    for (const auto& [k, v] : *maps) near(v, other.at(k), k);
  }
  near(a.exposed_s, b.exposed_s, "exposed");
  near(a.idle_s, b.idle_s, "idle");
}

// Outcomes of a fuzz test's mutants, and one mutant: `body` runs the code under test and sets
// `skipped` when the test declines the input (too large to simulate quickly). A ConfigError must
// start with one of `prefixes` (the file, and the JSON pointer where the format has one); anything
// else thrown is a failure. `input` is printed with any failure.
struct FuzzTally {
  int accepted = 0, rejected = 0, skipped = 0;
};
inline void fuzz_case(FuzzTally& tally, std::initializer_list<std::string> prefixes, const std::string& input,
                      const std::function<void(bool& skipped)>& body) {
  SCOPED_TRACE(input);  // printed with any failure inside body
  try {
    bool skipped = false;
    body(skipped);
    ++(skipped ? tally.skipped : tally.accepted);
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    bool named = false;
    for (const auto& p : prefixes) named = named || m.rfind(p, 0) == 0;
    EXPECT_TRUE(named) << m << "\n" << input;
    ++tally.rejected;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected " << typeid(e).name() << ": " << e.what() << "\n" << input;
  }
}

}  // namespace parasim::test
