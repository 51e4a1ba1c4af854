// What `parasim plan` computes and prints as --json (parasim.plan/1), shared by the command
// (tools/cmd_plan.cpp) and the Python module's parasim.plan: the job from the options, every GPU
// count of the range planned (sim/planning/layouts.h), the time-to-train curve and the document.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "sim/planning/layouts.h"
#include "tools/progress.h"

namespace parasim {

struct PlanOpts {
  std::string model, gpu, range, csv, base, objective = "throughput", search = "exhaustive";
  std::int64_t gpus = 0, seq = 0, global_batch = 0, top = 5;
  double tokens = 0, price = 0, deadline_days = 0, headroom = 0.1;
  bool json = false, cross_node_tp = false, dry_run = false;
  int jobs = 1;
  std::int64_t max_mb = 8, max_vpp = 8;
};

// The job of the options at o.gpus, its base scenario from --base or scenarios/ (choose_base).
// ConfigError on options that contradict each other.
PlanJob plan_job_of(const PlanOpts& o, const std::string& data_dir);

struct PlanOutcome {
  PlanJob job;         // at o.gpus
  PlanResult result;   // of o.gpus: the table and the rows
  Json curve = Json::array();  // one point per GPU count, ascending (empty on a part other than 0 of an mpirun)
  Json time_to_train;  // of the best layout at o.gpus (null without --tokens)
  Json deadline;       // the first curve point meeting --deadline-days (null otherwise)
  bool interrupted = false;
};

struct PlanHooks {
  bool root = true;  // this process prints (part 0 of an mpirun): only it builds the curve
  std::function<ProgressFn(std::int64_t gpus)> progress;                                   // per GPU count
  std::function<void(std::int64_t gpus, const PlanResult& r, double seconds)> planned;  // after each count
};

// o.gpus first (its layouts are the table), then the rest of --gpus-range.
PlanOutcome plan_outcome(const PlanOpts& o, const std::string& data_dir, const Registries& reg, EvalOptions opt,
                         const PlanHooks& hooks);

// The setting columns of a plan's table and CSV.
const std::vector<std::string>& plan_setting_names();

// The parasim.plan/1 document (docs/outputs.md).
Json plan_json(const PlanOpts& o, const PlanOutcome& p);

}  // namespace parasim
