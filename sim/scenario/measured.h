// Measured run (parasim.measured/1): a scenario, what was measured on real hardware, provenance.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "sim/scenario/scenario.h"

namespace parasim {

// Every figure a measured run can hold (MeasuredFigure::name); the component.* ones explain errors.
inline constexpr std::array<const char*, 9> kMeasuredFigureNames = {
    "step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "hfu", "peak_mem_gib",
    "component.compute_s", "component.comm_exposed_s", "component.bubble_fraction"};

struct MeasuredFigure {
  std::string name;    // step_time_s | tokens_per_s_per_gpu | tflops_per_gpu | mfu | hfu | peak_mem_gib
  double value = 0;
  std::string detail;  // tflops: "model" | "model_causal" | "hardware" (compare_figures); memory: "framework" | "nvidia-smi"
};

struct MeasuredRun {
  std::string file;
  std::string id;
  Scenario scenario;
  std::vector<MeasuredFigure> figures;
  bool has_oom = false;  // the source says whether the run ran out of memory
  bool oom = false;
  std::string source_title, source_where, source_address;
  std::string confidence;  // high | medium | low | ""
  std::string family;      // DP/FSDP | TP | PP | 3D (from the plan when absent)
};

// Strict loading; the scenario is inline or a path relative to the measured file.
MeasuredRun load_measured(const std::string& path, const std::string& data_dir);
// The same on JSON already read from `path` (which relative paths resolve against).
MeasuredRun parse_measured(const Json& j, const std::string& path, const std::string& data_dir);
std::string parallel_family(const ParallelSpec& p);
// Whether `j` says it is a measured run, of any version: every command that takes one reads such a
// file as a measured run, so parse_measured refuses another version at /schema rather than the file
// being read as a scenario.
bool is_measured_document(const Json& j);

}  // namespace parasim
