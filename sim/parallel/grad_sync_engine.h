// Data-parallel gradient synchronisation and parameter sharding as engines (DDP buckets and
// ZeRO-1/2 reduce-scatter, per-layer sharded ZeRO-3 / FSDP, DeepSpeed 0.3's per-tensor ZeRO-3).
// lower_pipeline (the driver) makes one engine per pipeline stage and calls its hooks around each
// action and layer; the engine emits its ops through the Emitter. One engine is chosen per run
// from the scenario (grad_sync_engine_name) and made through a registry by name
// (register_grad_sync_engines).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "sim/core/registry.h"
#include "sim/parallel/emitter.h"

namespace parasim {

// One layer's parameters on this rank: its TP shard (and, with MoE, its experts' share: E / ep
// experts, each split over etp), and the experts' part of it, whose gradients reduce and optimizer
// states shard over the expert-data-parallel group instead of dp x cp.
struct LayerParams {
  double all = 0;
  double experts = 0;
};
LayerParams layer_params(const Scenario& sc, std::int64_t layer);

struct StageParams {
  double total = 0;  // everything on this stage, this rank's TP shard
  double extra = 0;  // embedding / head on this stage
  // The part of `extra` on the stage's first virtual stage (the embedding, on stage 0) and on its
  // last (the output layer and what goes with it, on stage pp-1): each chunk's gradients are
  // reduced once, with the chunk's own layers.
  double first_extra = 0, last_extra = 0;
  double chunk_extra(bool first_vs, bool last_vs) const {
    return first_vs && last_vs ? extra : first_vs ? first_extra : last_vs ? last_extra : 0.0;
  }
  double expert_total = 0;  // the experts' part of `total`
  double mtp_experts = 0;   // the multi-token-prediction layers' experts (last stage)
  double dense_total() const { return total - expert_total; }
};
StageParams stage_params(const Scenario& sc, std::int64_t stage);

// The op most recently emitted on a rank's stream, or -1.
OpId last_op_on(const Program& prog, std::int32_t rank, Stream stream);

constexpr double kMasterBytes = 4;    // fp32 master parameter / gradient shard (host or DeepSpeed's buffer)
constexpr double kCpuAdamBytes = 28;  // read p, g, m, v (16 B), write p, m, v (12 B), fp32

// What the scenario's data-parallel ranks shard (ZeRO stage or FSDP strategy).
Sharding scenario_sharding(const Scenario& sc);

// What every stage's engine shares, computed once per run from the scenario.
struct SyncSetup {
  SyncSetup(const LoweringInput& in, bool split);
  const LoweringInput& in;
  bool split = false;            // the schedule splits backward into B and W
  Sharding sh;
  StateBytesPerParam sb;
  double nd = 1;                 // ranks a sharded state is split over
  bool grad_sync = false;        // dp x cp > 1
  bool offload = false;          // FSDP CPU offload
  double pcie_bps = 0, host_bps = 0;
  bool ds_bf16 = false;          // DeepSpeed's BF16 optimizer (parallel.zero_impl "deepspeed-bf16")
  bool uniform = true;
  std::vector<std::int64_t> chunk_first_layer;  // models whose layers differ: each virtual stage's first layer
  LayerParams lp0;
  // Layer `layer` of virtual stage vs.
  LayerParams chunk_layer(std::int32_t vs, std::int64_t layer) const {
    return uniform ? lp0 : layer_params(in.scenario, chunk_first(vs) + layer);
  }
  std::int64_t chunk_first(std::int32_t vs) const { return uniform ? 0 : chunk_first_layer[static_cast<size_t>(vs)]; }
  // The data-parallel group a gradient or parameter collective runs over (HSDP: the shard group).
  CollectiveSpec dp_spec(const Layout& L, CollOp op, double bytes) const;
  Action::Kind grad_kind() const { return split ? Action::W : Action::B; }
};

// One stage's engine sees the run, the emitter and its stage.
struct SyncContext {
  const SyncSetup& setup;
  Emitter& em;
  Program& prog;
  std::int32_t rank = 0;   // the stage's simulated rank
  StageParams stage;
};

class GradSyncEngine {
 public:
  explicit GradSyncEngine(SyncContext ctx) : c_(std::move(ctx)) {}
  virtual ~GradSyncEngine() = default;
  // Before each action; last_grad_of_chunk: it is the chunk's last gradient-producing action.
  virtual void begin_action(const Action& a, bool last_grad_of_chunk) {
    a_ = a;
    (void)last_grad_of_chunk;
  }
  // Before a layer's forward / backward: the deps its first kernel waits on.
  virtual std::vector<OpId> before_layer(Action::Kind, std::int64_t) { return {}; }
  // After a layer's forward / backward / weight-gradient op.
  virtual void after_layer(Action::Kind, std::int64_t, OpId) {}
  // After a B or W action's chunk: its embedding / head gradients (last: its final op).
  virtual void after_chunk(Action::Kind, OpId, bool, bool) {}
  // After each action.
  virtual void end_action() {}
  // The stage's gradient-sync ops, which the grad-norm rendezvous waits on.
  const std::vector<OpId>& sync_ops() const { return sync_ops_; }
  // The optimizer step on this stage after the grad-norm all-reduce `norm`, and what follows it.
  virtual void optimizer_step(OpId norm);

 protected:
  const Scenario& sc() const { return c_.setup.in.scenario; }
  const Layout& layout() const { return c_.em.layout(); }
  std::int32_t vs() const { return a_.chunk * static_cast<std::int32_t>(sc().parallel.pp) + c_.rank; }
  OpId op(Stream st, Phase ph, Label label, double seconds, Deps deps) {
    return c_.em.op(c_.rank, st, ph, label, seconds, deps, a_.microbatch, a_.chunk);
  }
  OpId comm(Phase ph, Label label, const CollectiveSpec& spec, Deps deps) {
    return c_.em.comm_op(c_.rank, Stream::Comm, ph, label, spec, deps, a_.microbatch, a_.chunk);
  }
  SyncContext c_;
  Action a_{};
  std::vector<OpId> sync_ops_;
};

using GradSyncFactory = std::unique_ptr<GradSyncEngine> (*)(SyncContext);
using GradSyncRegistry = Registry<GradSyncFactory>;
template <class Engine>
std::unique_ptr<GradSyncEngine> make_engine(SyncContext ctx) {
  return std::make_unique<Engine>(std::move(ctx));
}
// The built-in engines (sim/parallel/engines/), and the one a scenario runs (from its ZeRO stage
// and implementation and its FSDP version).
void register_grad_sync_engines(GradSyncRegistry& r);
std::string grad_sync_engine_name(const Scenario& sc);

// Each engine file's registration.
void register_ddp_engine(GradSyncRegistry& r);
void register_zero3_engine(GradSyncRegistry& r);  // engines/fsdp.cpp: the sharded-weights base
void register_fsdp1_engine(GradSyncRegistry& r);
void register_fsdp2_engine(GradSyncRegistry& r);
void register_deepspeed_zero3_v03_engine(GradSyncRegistry& r);

}  // namespace parasim
