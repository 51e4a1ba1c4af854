// The time-to-train options of `parasim run` (--tokens, --price-per-gpu-hour, the reliability
// overrides) and their evaluation on a finished prediction (sim/planning/goodput.h).
#pragma once
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "sim/planning/goodput.h"

namespace parasim {

struct TimeToTrainOptions {
  double tokens = 0;  // 0: not asked for
  std::optional<double> price_per_gpu_hour, storage_gbps, failures_per_gpu_hour, planned_per_day, restart_s, interval_s;
  std::optional<std::string> checkpoint_mode;
  std::string reliability_file;  // default: <data_dir>/calibrate/reliability/llama3-herd.json

  void add_to(CLI::App& cmd);
  bool requested() const { return tokens > 0; }
  // The data file's figures with the overrides applied.
  ReliabilityFigures figures(const std::string& data_dir) const;
  // Time to train for a scenario at a predicted step time, with the model-error band of the
  // scenario's class (when calibrate/model_error.json exists).
  TimeToTrain evaluate(const Scenario& sc, double step_s, const std::string& data_dir) const;
};

}  // namespace parasim
