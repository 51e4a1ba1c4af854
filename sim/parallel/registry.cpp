#include "sim/parallel/pipeline_engine.h"
#include "sim/parallel/schedule.h"

namespace parasim {

namespace {
// The ideal bubble fractions of equal stages with free sends (the references' closed forms).
double bubble_naive(double p, double, double) { return (p - 1) / p; }
double bubble_flush(double p, double m, double) { return (p - 1) / (m + p - 1); }
double bubble_interleaved(double p, double m, double v) { return (p - 1) / (v * m + p - 1); }
}  // namespace

void register_builtins(ScheduleRegistry& r) {
  r.add({"dataparallel", "torch.nn.DataParallel: GPU 0 broadcasts parameters, scatters inputs, gathers outputs and gradients, steps the optimizer",
         "PyTorch docs, torch.nn.DataParallel; GPU 0 heavier in memory and time",
         {.value = Schedule::DataParallel, .lower = lower_dataparallel, .pipeline = false, .single_process = true}});
  r.add({"ddp", "DistributedDataParallel: gradient all-reduce in buckets overlapped with backward, optimizer on every rank",
         "Li et al. 2020, 'PyTorch Distributed' (VLDB); step = compute when communication is free",
         {.value = Schedule::Ddp, .order = order_ddp, .pipeline = false, .planned = true}});
  r.add({"naive", "vertical model parallel: contiguous layers on successive GPUs, one batch at a time", "bubble (p-1)/p",
         {.value = Schedule::Naive, .order = order_gpipe, .microbatched = false, .bubble = {"(p-1)/p", bubble_naive}}});
  r.add({"gpipe", "all forwards, then all backwards, flush", "Huang et al. 2019; bubble (p-1)/(m+p-1)",
         {.value = Schedule::Gpipe, .order = order_gpipe, .bubble = {"(p-1)/(m+p-1)", bubble_flush}}});
  r.add({"1f1b", "PipeDream-flush / Megatron non-interleaved: warm-up, steady one-forward-one-backward, cool-down",
         "Narayanan et al. 2021; bubble (p-1)/(m+p-1), stage i holds min(p-i, m) microbatches",
         {.value = Schedule::OneFOneB, .order = order_1f1b, .bubble = {"(p-1)/(m+p-1)", bubble_flush}, .planned = true,
          .warmup_holds_stages = true}});
  r.add({"interleaved", "Megatron interleaved 1F1B over vpp model chunks per GPU", "Narayanan et al. SC'21 §2.2; bubble (p-1)/(v*m+p-1)",
         {.value = Schedule::Interleaved, .order = order_interleaved, .periodicity = {2, true}, .chunked = true,
          .bubble = {"(p-1)/(v*m+p-1)", bubble_interleaved}, .planned = true}});
  r.add({"zb-h1", "zero bubble H1: 1F1B with backward split into input (B) and weight (W) gradients, W deferred into the cool-down bubbles",
         "Qi et al. 2024, 'Zero Bubble Pipeline Parallelism'; bubble about (p-1)(F+B-W) against 1F1B's (p-1)(F+B+W), weight-gradient activations held longer",
         {.value = Schedule::ZbH1, .order = order_zb_h1, .splits_backward = true, .periodicity = {2, false}, .planned = true,
          .warmup_holds_stages = true}});
}

const ScheduleRegistry& schedule_registry() {
  static const ScheduleRegistry registry = [] {
    ScheduleRegistry r("schedule");
    register_builtins(r);
    return r;
  }();
  return registry;
}

const ScheduleDef& schedule_def(const ScheduleRegistry& r, Schedule s) { return entry_of(r, s).factory; }

std::string name_of(Schedule v) { return name_of(schedule_registry(), v); }

void register_pipeline_engines(PipelineEngineRegistry& r) {
  register_megatron_pipeline_engine(r);
  register_deepspeed_pipeline_engine(r);
}

const PipelineEngineRegistry& pipeline_engines() {
  static const PipelineEngineRegistry registry = [] {
    PipelineEngineRegistry r("pipeline engine");
    register_pipeline_engines(r);
    return r;
  }();
  return registry;
}

std::string name_of(PipelineImpl v) { return name_of(pipeline_engines(), v); }

Program lower(const ScheduleRegistry& r, const LoweringInput& in) {
  const auto& e = entry_of(r, in.scenario.parallel.schedule);
  if (e.factory.lower) return e.factory.lower(in);
  const auto& p = in.scenario.parallel;
  ScheduleSpec spec{p.pp, in.scenario.microbatches(), p.vpp};
  return lower_pipeline(in, e.factory.order(spec), e.factory.splits_backward);
}

}  // namespace parasim
