// Whose pipeline engine runs (parallel.pipeline_impl): what a stage does with the output it sends
// on, between that forward and the same microbatch's backward. One file per engine in
// pipeline_engines/, registered by name (register_pipeline_engines); the registry is the one list
// of parallel.pipeline_impl's names, which the parser reads.
#pragma once
#include <memory>

#include "sim/parallel/emitter.h"

namespace parasim {

class PipelineEngine {
 public:
  PipelineEngine(const LoweringInput& in, Emitter& em, Program& prog) : in_(in), em_(em), prog_(prog) {}
  virtual ~PipelineEngine() = default;
  // After a forward whose output stage `s` sends on (`after`: the forward's last op).
  virtual void output_sent(std::int32_t s, const Action& a, OpId after) { (void)s, (void)a, (void)after; }
  // After that microbatch's backward on stage `s`.
  virtual void backward_done(std::int32_t s, const Action& a, OpId after) { (void)s, (void)a, (void)after; }

 protected:
  const LoweringInput& in_;
  Emitter& em_;
  Program& prog_;
};

struct PipelineEngineDef {
  PipelineImpl value;
  std::unique_ptr<PipelineEngine> (*make)(const LoweringInput&, Emitter&, Program&);
};
using PipelineEngineRegistry = Registry<PipelineEngineDef>;
void register_pipeline_engines(PipelineEngineRegistry& r);
const PipelineEngineRegistry& pipeline_engines();  // the built-in ones (built once, read only)
std::string name_of(PipelineImpl v);

// Each engine file's registration.
void register_megatron_pipeline_engine(PipelineEngineRegistry& r);
void register_deepspeed_pipeline_engine(PipelineEngineRegistry& r);

}  // namespace parasim
