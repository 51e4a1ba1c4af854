// DeepSpeed's PipelineEngine (parallel.pipeline_impl "deepspeed"): each stage output stays in its
// pipe buffer from the forward until the backward of the same microbatch. Its other differences
// are the scenario's defaults and checks (sim/scenario/scenario.cpp): the gradient reduction
// after the step's last backward (overlap_grad_reduce false), ZeRO stage 0 or 1 only.
#include "sim/parallel/pipeline_engine.h"

namespace parasim {

namespace {

class DeepSpeedPipelineEngine final : public PipelineEngine {
 public:
  DeepSpeedPipelineEngine(const LoweringInput& in, Emitter& em, Program& prog)
      : PipelineEngine(in, em, prog), on_(in.scenario.parallel.pp * in.scenario.parallel.vpp > 1) {}
  void output_sent(std::int32_t s, const Action& a, OpId after) override { mark(s, a, after, "keep stage output (DeepSpeed pipe buffer)", 1); }
  void backward_done(std::int32_t s, const Action& a, OpId after) override { mark(s, a, after, "drop stage output (DeepSpeed pipe buffer)", -1); }

 private:
  void mark(std::int32_t s, const Action& a, OpId after, Label label, std::int64_t sign) {
    if (!on_) return;
    const OpId o = em_.op(s, Stream::Compute, Phase::Other, label, 0, {after}, a.microbatch, a.chunk);
    prog_.ops[static_cast<size_t>(o)].at_end = {MemCat::Activations, sign * to_bytes(in_.graph.p2p_bytes)};
  }
  bool on_;
};

}  // namespace

void register_deepspeed_pipeline_engine(PipelineEngineRegistry& r) {
  r.add({"deepspeed", "DeepSpeed's PipelineEngine: each stage output stays in its pipe buffer until that microbatch's backward; "
                      "gradients reduced after the step's last backward",
         "deepspeed/runtime/pipe/engine.py (pipe_buffers, ReduceGrads, enable_backward_allreduce = False)",
         {PipelineImpl::DeepSpeed, [](const LoweringInput& in, Emitter& em, Program& prog) -> std::unique_ptr<PipelineEngine> {
            return std::make_unique<DeepSpeedPipelineEngine>(in, em, prog);
          }}});
}

}  // namespace parasim
