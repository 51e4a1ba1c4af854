// Time to train with goodput: tokens -> steps -> wall-clock days, GPU-hours and cost, counting
// what a long synchronous job loses to checkpoints, interruptions, restarts and rework.
//
// First-order model (Young 1974; Daly 2006, section 3): W = steps x step time of compute. Every
// tau seconds of compute the job checkpoints, blocking training for delta; unexpected
// interruptions arrive once per M = 1 / (rate per GPU-hour x GPUs) of that time, each costing the
// restart R plus the work since the last durable checkpoint (tau/2 on average, plus the background
// write d when checkpoints are asynchronous); planned stops arrive at p per second of the job and
// cost R plus one checkpoint. Then
//   T = W (1 + delta/tau) (A + tau / 2M),   A = 1 + (R + d)/M + (R + delta) p,
// minimised at tau* = sqrt(2 delta M A): Young's sqrt(2 delta M) when R, d and p vanish, Daly's
// first-order sqrt(2 delta (M + R)) with a restart. Goodput = W / T.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/json_reader.h"
#include "sim/scenario/scenario.h"

namespace parasim {

// The failure, restart and storage figures, from a data file (calibrate/reliability/), each one
// overridable by the caller.
struct ReliabilityFigures {
  double failures_per_gpu_hour = 0;  // unexpected job interruptions per GPU-hour
  double planned_per_day = 0;        // planned stops of the job per day (do not scale with GPUs)
  double restart_s = 0;              // detect + restart + reload, per interruption
  double storage_gbps = 0;           // aggregate checkpoint write bandwidth, GB/s (10^9 B/s)
  std::string checkpoint_mode = "async";  // "async": block for the host copy only; "sync": for the write
  std::vector<std::string> sources;  // one line per figure: what it is and where it comes from
};
inline constexpr const char* kReliabilityFile = "calibrate/reliability/llama3-herd.json";
inline constexpr std::array<const char*, 2> kCheckpointModes = {"async", "sync"};
// A malformed file is a ConfigError naming it and the JSON pointer.
ReliabilityFigures load_reliability(const std::string& path);

struct GoodputInput {
  double tokens = 0;
  double tokens_per_step = 0;
  double step_s = 0;
  std::int64_t gpus = 1;
  // The model-error band as step-time factors (exp of calibrate/model_error.json's p10 / p90).
  double band_p10 = 1, band_p90 = 1;
  std::vector<std::string> band_sources;
  double checkpoint_bytes = 0;          // the whole model's weights and optimizer states
  double per_gpu_checkpoint_bytes = 0;  // what one GPU copies to the host (async mode)
  double host_copy_gbps = 0;            // device -> host per GPU, GB/s (async mode)
  ReliabilityFigures rel;
  std::optional<double> price_per_gpu_hour;
  std::optional<double> interval_s;  // compute seconds between checkpoints; default: the optimum
};

struct TimeToTrain {
  double tokens = 0, steps = 0, step_s = 0;
  std::int64_t gpus = 1;
  double ideal_days = 0, days = 0, gpu_hours = 0, goodput = 0;
  std::optional<double> price_per_gpu_hour, cost;
  double band_p10_factor = 1, band_p90_factor = 1;
  double p10_days = 0, p90_days = 0, p10_gpu_hours = 0, p90_gpu_hours = 0;
  struct {
    std::string mode;
    double bytes = 0, write_s = 0, drain_s = 0, interval_s = 0, optimal_interval_s = 0;
  } checkpoint;
  struct {
    double per_gpu_per_hour = 0, mtbf_h = 0, expected_interruptions = 0, planned_per_day = 0, planned_interruptions = 0;
    double restart_s = 0, lost_work_s = 0;  // lost_work_s: per unexpected interruption, on average
  } failures;
  // Where the wall clock goes, seconds: compute, checkpoint pauses, restarts, rework.
  double compute_s = 0, checkpoint_s = 0, restart_total_s = 0, rework_s = 0;
  std::vector<std::string> sources;
};

// Throws ConfigError on inputs the model cannot take (non-positive step, tokens, bandwidth).
TimeToTrain time_to_train(const GoodputInput& in);
// The model's expected wall-clock seconds for a given step time and checkpoint interval (the
// quantity the optimal interval minimises).
double expected_wall_s(const GoodputInput& in, double step_s, double interval_s);
// The interval that minimises expected_wall_s (before the clamps that time_to_train applies).
double optimal_interval_s(const GoodputInput& in);

// Bytes a checkpoint holds: every parameter's weights and optimizer states (the memory model's
// per-parameter state sizes), not the gradients.
double checkpoint_bytes(const Scenario& sc);
// A GoodputInput for a scenario at a step time: tokens per step, GPUs, checkpoint sizes and the
// host-copy bandwidth of the scenario's profile; band and price left at their defaults.
GoodputInput goodput_input(const Scenario& sc, double step_s, double tokens, const ReliabilityFigures& rel);

// The TTT object of the shared planning format (sim/planning/README.md).
Json ttt_json(const TimeToTrain& t);
// A few lines for a terminal or a report, each figure with its unit.
std::string ttt_summary(const TimeToTrain& t);

}  // namespace parasim
