#include "tools/time_to_train.h"

#include <cmath>

#include <fmt/format.h>

#include "sim/uncertainty.h"
#include "tools/cli_checks.h"

namespace parasim {

void TimeToTrainOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--tokens", tokens, "also print the time to train on this many tokens, with goodput (checkpoints, failures, restarts)")
      ->check(positive_number());
  cmd.add_option("--price-per-gpu-hour", price_per_gpu_hour, "price of one GPU-hour, for the cost of --tokens")
      ->check(non_negative_number());
  cmd.add_option("--storage-gbps", storage_gbps, "checkpoint write bandwidth to storage, GB/s (default: the reliability file's)")
      ->check(positive_number());
  cmd.add_option("--failures-per-gpu-hour", failures_per_gpu_hour, "unexpected job interruptions per GPU-hour (default: Llama 3's)")
      ->check(non_negative_number());
  cmd.add_option("--planned-per-day", planned_per_day, "planned job interruptions per day (default: Llama 3's)")
      ->check(non_negative_number());
  cmd.add_option("--restart-s", restart_s, "seconds to detect an interruption, restart and reload (default: the reliability file's)")
      ->check(non_negative_number());
  cmd.add_option("--checkpoint", checkpoint_mode, "async (training pauses for the copy to host memory) or sync (for the write)")
      ->check(CLI::IsMember({"async", "sync"}));
  cmd.add_option("--checkpoint-interval-s", interval_s, "seconds of training between checkpoints (default: the Young/Daly optimum)")
      ->check(positive_number());
  cmd.add_option("--reliability", reliability_file, "failure, restart and storage figures (default: calibrate/reliability/llama3-herd.json)");
}

ReliabilityFigures TimeToTrainOptions::figures(const std::string& data_dir) const {
  const std::string file = !reliability_file.empty() ? reliability_file : data_dir + "/" + kReliabilityFile;
  ReliabilityFigures f = load_reliability(file);
  auto override_with = [&f](const auto& opt, auto& field, const char* what) {
    if (!opt) return;
    field = *opt;
    f.sources.push_back(fmt::format("{} overridden on the command line: {}", what, *opt));
  };
  override_with(storage_gbps, f.storage_gbps, "storage write GB/s");
  override_with(failures_per_gpu_hour, f.failures_per_gpu_hour, "unexpected interruptions per GPU-hour");
  override_with(planned_per_day, f.planned_per_day, "planned interruptions per day");
  override_with(restart_s, f.restart_s, "restart seconds");
  override_with(checkpoint_mode, f.checkpoint_mode, "checkpoint mode");
  return f;
}

TimeToTrain TimeToTrainOptions::evaluate(const Scenario& sc, double step_s, const std::string& data_dir) const {
  GoodputInput in = goodput_input(sc, step_s, tokens, figures(data_dir));
  in.price_per_gpu_hour = price_per_gpu_hour;
  in.interval_s = interval_s;
  if (const std::optional<ModelErrorBands> error = load_model_error(data_dir)) {
    const auto [band, name] = error->band_for(model_class(sc.model));
    in.band_p10 = std::exp(band->p10);
    in.band_p90 = std::exp(band->p90);
    in.band_sources.push_back(fmt::format("band: parasim's error on {} measured runs{} ({}): steps took {:.2f}x .. {:.2f}x the "
                                          "predicted time (p10..p90)",
                                          band->log_ratios.size(), name == "all" ? "" : " of " + name + " models", kModelErrorFile,
                                          in.band_p10, in.band_p90));
  }
  return time_to_train(in);
}

}  // namespace parasim
