// Megatron's pipeline schedules (parallel.pipeline_impl "megatron"): once a stage's output is sent,
// its data is freed (deallocate_output_tensor; autograd keeps only its graph), which the emitter's
// activation accounting already does, so the engine adds nothing.
#include "sim/parallel/pipeline_engine.h"

namespace parasim {

void register_megatron_pipeline_engine(PipelineEngineRegistry& r) {
  r.add({"megatron", "Megatron's pipeline schedules: a stage output's data is freed once it is sent (autograd keeps its graph)",
         "megatron/core/pipeline_parallel/schedules.py deallocate_output_tensor",
         {PipelineImpl::Megatron, [](const LoweringInput& in, Emitter& em, Program& prog) { return std::make_unique<PipelineEngine>(in, em, prog); }}});
}

}  // namespace parasim
