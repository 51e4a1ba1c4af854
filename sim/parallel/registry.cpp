#include "sim/parallel/pipeline_engine.h"
#include "sim/parallel/schedule.h"

namespace parasim {

void register_builtins(ScheduleRegistry& r) {
  r.add({"dataparallel", "torch.nn.DataParallel: GPU 0 broadcasts parameters, scatters inputs, gathers outputs and gradients, steps the optimizer",
         "PyTorch docs, torch.nn.DataParallel; GPU 0 heavier in memory and time", {nullptr, lower_dataparallel, false, {}, false}});
  r.add({"ddp", "DistributedDataParallel: gradient all-reduce in buckets overlapped with backward, optimizer on every rank",
         "Li et al. 2020, 'PyTorch Distributed' (VLDB); step = compute when communication is free", {order_ddp, nullptr, false, {}, false}});
  r.add({"naive", "vertical model parallel: contiguous layers on successive GPUs, one batch at a time",
         "bubble (p-1)/p", {order_gpipe, nullptr, false}});
  r.add({"gpipe", "all forwards, then all backwards, flush", "Huang et al. 2019; bubble (p-1)/(m+p-1)", {order_gpipe, nullptr, false}});
  r.add({"1f1b", "PipeDream-flush / Megatron non-interleaved: warm-up, steady one-forward-one-backward, cool-down",
         "Narayanan et al. 2021; bubble (p-1)/(m+p-1), stage i holds min(p-i, m) microbatches", {order_1f1b, nullptr, false}});
  r.add({"interleaved", "Megatron interleaved 1F1B over vpp model chunks per GPU",
         "Narayanan et al. SC'21 §2.2; bubble (p-1)/(v*m+p-1)", {order_interleaved, nullptr, false, {2, true}}});
  r.add({"zb-h1", "zero bubble H1: 1F1B with backward split into input (B) and weight (W) gradients, W deferred into the cool-down bubbles",
         "Qi et al. 2024, 'Zero Bubble Pipeline Parallelism'; bubble about (p-1)(F+B-W) against 1F1B's (p-1)(F+B+W), weight-gradient activations held longer", {order_zb_h1, nullptr, true, {2, false}}});
}

void register_pipeline_engines(PipelineEngineRegistry& r) {
  register_megatron_pipeline_engine(r);
  register_deepspeed_pipeline_engine(r);
}

PipelineEngineRegistry pipeline_engines() {
  PipelineEngineRegistry r("pipeline engine");
  register_pipeline_engines(r);
  return r;
}

std::string name_of(PipelineImpl v) { return name_of(pipeline_engines(), v); }

Program lower(const ScheduleRegistry& r, const LoweringInput& in) {
  const auto& e = r.get(in.scenario.parallel.schedule, in.scenario.file + ": /parallel/schedule");
  if (e.factory.lower) return e.factory.lower(in);
  const auto& p = in.scenario.parallel;
  ScheduleSpec spec{p.pp, in.scenario.microbatches(), p.vpp};
  return lower_pipeline(in, e.factory.order(spec), e.factory.splits_backward);
}

}  // namespace parasim
