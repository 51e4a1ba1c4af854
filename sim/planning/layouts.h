// `parasim plan`: every layout of one training job (dp/tp/pp/vpp/cp/ep/etp, schedule,
// micro-batch, ZeRO/FSDP, recompute, sequence parallel, TP overlap) under the rules the frameworks
// enforce, each rule counting the layouts it removed; a memory lower bound that removes layouts
// before any simulation; the survivors as scenarios for the strict loader and the simulator.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/parallel/schedule.h"
#include "sim/planning/evaluate.h"

namespace parasim {

struct PlanJob {
  std::string model;  // zoo name
  std::string gpu;    // profile name
  std::int64_t gpus = 0;
  std::int64_t seq = 0;
  std::int64_t global_batch = 0;
  double tokens = 0;     // tokens to train on (0: unknown)
  double headroom = 0.1; // fraction of GPU memory left free
  bool allow_cross_node_tp = false;
  std::int64_t max_micro_batch = 8;
  std::int64_t max_vpp = 8;
  // > 0: only the best `search_top` layouts need be exact. Layouts are simulated in the order of
  // their step's lower bound (step_lower_bound_s), and one whose bound is above the search_top-th
  // best step that fits is not simulated: it cannot rank among them. 0: simulate every layout.
  std::int64_t search_top = 0;
  // The scenario every layout starts from: cluster (nodes set from gpus), training and network
  // blocks; parallel is replaced by each layout.
  Json base;
  std::string base_file;  // where `base` came from (names errors)
};

// The cluster plan starts from: that of the first scenario in `scenarios_dir` (by file name)
// whose cluster.gpu is job.gpu and whose fabric is not a listed (fixed-size) one; with none, the
// GPU profile's reference node (8 GPUs per node, NVSwitch, a fat tree with the profile's NICs).
// Training keys other than the job's take the loader's defaults (bf16, Adam, flash attention).
// Sets job.base and job.base_file.
void choose_base(PlanJob& job, const std::string& scenarios_dir);

// What shards a planned layout's model states: nothing, ZeRO-1 (Megatron's distributed optimizer)
// or FSDP's full sharding.
enum class PlanSharding : std::uint8_t { None, Zero1, Fsdp };
const char* name_of(PlanSharding s);  // "none" | "zero1" | "fsdp"

struct PlanLayout {
  std::int64_t dp = 1, tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1, micro_batch = 1;
  Schedule schedule = Schedule::Ddp;
  PlanSharding sharding = PlanSharding::None;
  Recompute recompute = Recompute::None;
  bool sequence_parallel = false, tp_comm_overlap = false;
};
Json layout_settings(const PlanLayout& l);
Json layout_scenario(const PlanJob& job, const PlanLayout& l);

// The framework rules, in the order they are applied: a candidate is counted against the first
// one it breaks.
struct PlanRule {
  const char* name;
  const char* source;
};
const std::vector<PlanRule>& plan_rules();

struct Enumeration {
  std::int64_t candidates = 0;                // the cartesian product of every dimension's values
  std::map<std::string, std::int64_t> pruned; // rule (or memory bound) -> layouts it removed
  std::vector<PlanLayout> layouts;                // survivors, in enumeration order
  std::vector<PlanLayout> memory_pruned_sample;   // up to 64 layouts the memory bound removed (tests check them)
};
Enumeration enumerate_layouts(const PlanJob& job, const Scenario& base);

// A lower bound of one GPU's peak memory, bytes: the model states of an average stage (the
// memory model's ZeRO / FSDP sharding) plus the runtime's reserve plus the stored activations of
// the first stage's microbatches in flight (1F1B and ZB-H1: min(pp, microbatches); otherwise one).
double memory_lower_bound(const Scenario& base, const PlanLayout& l, const ScheduleRegistry& schedules);
// The model's parameters and expert parameters, which the bound needs and which are the same for
// every layout of a job (an enumeration counts them once, not once per candidate).
struct ModelParams {
  double total = 0;
  double experts = 0;
};
ModelParams model_params(const ModelSpec& m);
double memory_lower_bound(const Scenario& base, const PlanLayout& l, const ScheduleRegistry& schedules, const ModelParams& params);

// The job's model and GPU loaded once, with a placeholder data-parallel layout (what the
// enumeration reads: model, profile, dtypes).
Scenario plan_base_scenario(const PlanJob& job, const std::string& data_dir);

struct PlanResult {
  Enumeration enumeration;
  Evaluated evaluated;
};
PlanResult run_plan(const PlanJob& job, const std::string& data_dir, const Registries& reg, Objective objective,
                    const EvalOptions& opt);

}  // namespace parasim
