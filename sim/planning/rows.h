// One evaluated layout as a row of a sweep or a plan (the ROW of the shared parasim.sweep/1 and
// parasim.plan/1 formats), how rows are ranked by an objective, the Pareto front of throughput
// against GPUs and memory headroom, and the one-line "why" of each row.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/simulation.h"

namespace parasim {

enum class Objective { Throughput, Cost, StepTime };
inline constexpr const char* kObjectives[] = {"throughput", "cost", "time"};
// "throughput" | "cost" | "time"; anything else is a ConfigError listing them (`what` names the option).
Objective parse_objective(const std::string& name, const std::string& what);
const char* objective_name(Objective o);


struct Row {
  std::size_t index = 0;     // position in the enumeration: the stable tie-break
  Json settings = Json::object();
  std::string status = "ok";  // ok | oom
  std::string reason;
  std::int64_t gpus = 0;
  double step_s = 0, tokens_per_s = 0, tokens_per_s_per_gpu = 0, mfu = 0, bubble = 0;
  double peak_mem_gib = 0, capacity_gib = 0, headroom = 0;
  ExposedComm exposed;
  double recompute_s = 0;
  double host_wait_s = 0;  // the GPU waiting on the host thread (with the host launch model)
  double gpu_hours_per_mtok = 0;  // GPU-hours per million tokens (cost without a price)
  bool pareto = false;
  std::string why;
  std::int64_t rank = 0;
};

// The row of one simulated scenario.
Row make_row(const Scenario& sc, const SimulationOutput& out, std::size_t index, Json settings);

// Sorts rows: fitting layouts first, by the objective (throughput: tokens/s descending; cost:
// GPU-hours per token ascending; time: step time ascending), then out-of-memory ones by how far
// they overflow; ties by index. Numbers the ranks from 1, marks the Pareto front among fitting
// rows (no other row has at least the throughput, at most the GPUs and at least the headroom, one
// of them strictly) and writes each row's why.
void rank_rows(std::vector<Row>& rows, Objective objective);

// price_per_gpu_hour <= 0: no price, "cost_per_mtok" is null.
Json row_json(const Row& r, double price_per_gpu_hour);
// A row back from row_json (index and price-dependent fields aside), every double exact.
Row row_from_json(const Json& j);
// CSV with a header line; setting columns in `setting_names` order.
std::string rows_csv(const std::vector<Row>& rows, const std::vector<std::string>& setting_names, double price_per_gpu_hour);
// A fixed-width table for the terminal (at most `limit` rows; 0 = all).
std::string rows_table(const std::vector<Row>& rows, const std::vector<std::string>& setting_names, std::size_t limit);

}  // namespace parasim
