// The shared lowering of pipeline-style schedules (DDP is the one-stage case), a driver: static
// model states per stage, each action through the Emitter, p2p transfers between virtual stages,
// the pipeline engine's hooks (pipeline_engine.h), and the grad-norm rendezvous. Data-parallel gradient synchronisation,
// parameter sharding and the optimizer step are the gradient-sync engine's (grad_sync_engine.h,
// one file per engine in engines/), chosen once per run and called around each action and layer.
//
// Symmetry folding: one simulated rank per pipeline stage stands for its tp*cp*dp peers, which do
// identical work; their collectives are costed for the full group by the network model.
#include <memory>
#include <optional>

#include "sim/parallel/grad_sync_engine.h"
#include "sim/parallel/pipeline_engine.h"

namespace parasim {

namespace {

// One simulated rank per stage with its static model states.
void add_stage_ranks(const LoweringInput& in, const SyncSetup& u, Program& prog, const Layout& L) {
  const Scenario& sc = in.scenario;
  const auto p = static_cast<std::int32_t>(sc.parallel.pp);
  for (std::int32_t s = 0; s < p; ++s) {
    SimRank r;
    r.real_rank = static_cast<std::int32_t>(s * L.tp * L.cp * L.dp);
    r.count = L.tp * L.cp * L.dp;
    r.stage = s;
    r.role = p > 1 ? "stage " + std::to_string(s) : "every rank";
    const StageParams stp = stage_params(sc, s);
    ModelStates ms = model_states(stp.dense_total(), u.sb, u.sh);
    if (stp.expert_total > 0) {  // expert states shard over the expert-data-parallel group
      Sharding esh = u.sh;
      esh.nd = sc.parallel.expert_dp();
      const ModelStates me = model_states(stp.expert_total, u.sb, esh);
      ms.weights += me.weights;
      ms.grads += me.grads;
      ms.optimizer += me.optimizer;
    }
    // Offloaded states stay on the host; the GPU holds gathered units only.
    r.static_mem[static_cast<size_t>(MemCat::Weights)] = to_bytes(u.offload ? 0.0 : ms.weights);
    // DeepSpeed's BF16 optimizer also keeps an fp32 accumulation buffer for every local parameter.
    const double bf16_buffer = u.ds_bf16 ? kMasterBytes * stp.total : 0.0;
    r.static_mem[static_cast<size_t>(MemCat::Grads)] = to_bytes(u.offload ? 0.0 : ms.grads + bf16_buffer);
    r.static_mem[static_cast<size_t>(MemCat::Optimizer)] = to_bytes(u.offload ? 0.0 : ms.optimizer);
    r.static_mem[static_cast<size_t>(MemCat::Workspace)] = to_bytes(sc.profile.runtime_reserved_gib.value * kGiB);
    prog.ranks.push_back(r);
  }
}

// Room for every op up front: growing the vector would copy each op and touch twice the memory.
// A forward or backward action emits at most about six ops per layer (blocks, TP communication,
// recompute, gathers) and a few around them; pages reserved and never written cost nothing.
void reserve_ops(const Scenario& sc, const StageOrder& order, Program& prog) {
  size_t op_room = 0;
  for (std::int32_t s = 0; s < static_cast<std::int32_t>(order.size()); ++s)
    for (const Action& a : order[static_cast<size_t>(s)])
      op_room += static_cast<size_t>(6 * sc.layers_in_chunk(s, a.chunk) + 8);
  prog.ops.reserve(op_room);
}

// The p2p sends of every virtual stage and microbatch, and each action's first op, wired at the end.
// Each stage's two sends are priced at their first use (one op per microbatch and chunk repeats them).
struct P2p {
  P2p(const LoweringInput& in, const Layout& L) {
    const auto p = static_cast<std::int32_t>(in.scenario.parallel.pp);
    nvs = p * static_cast<std::int32_t>(in.scenario.parallel.vpp);
    const auto m = static_cast<size_t>(in.scenario.microbatches());
    // Each stage's sends, priced by where its ranks and the next (previous) stage's really sit.
    for (std::int32_t s = 0; s < p; ++s) {
      const double bytes = p > 1 ? in.graph.p2p_bytes : 0.0;
      send_next.push_back(L.pp_p2p(bytes, s, (s + 1) % p));
      send_prev.push_back(L.pp_p2p(bytes, s, (s + p - 1) % p));
    }
    priced_next.resize(send_next.size());
    priced_prev.resize(send_prev.size());
    fsend.assign(static_cast<size_t>(nvs), std::vector<OpId>(m, -1));
    bsend = ffirst = bfirst = fsend;
  }
  // Forward input from the previous virtual stage, backward input from the next.
  void wire(Program& prog) const {
    for (std::int32_t vs = 0; vs < nvs; ++vs)
      for (size_t j = 0; j < fsend[0].size(); ++j) {
        const auto i = static_cast<size_t>(vs);
        if (vs > 0 && ffirst[i][j] >= 0) prog.ops[static_cast<size_t>(ffirst[i][j])].deps.push_back(fsend[i - 1][j]);
        if (vs < nvs - 1 && bfirst[i][j] >= 0) prog.ops[static_cast<size_t>(bfirst[i][j])].deps.push_back(bsend[i + 1][j]);
      }
  }
  std::int32_t nvs = 1;
  // Stage si's send to the next (previous) stage, priced once.
  const Emitter::PricedComm& next(const Emitter& em, size_t si) { return priced(em, send_next[si], priced_next[si]); }
  const Emitter::PricedComm& prev(const Emitter& em, size_t si) { return priced(em, send_prev[si], priced_prev[si]); }
  static const Emitter::PricedComm& priced(const Emitter& em, const CollectiveSpec& spec, std::optional<Emitter::PricedComm>& slot) {
    if (!slot) slot = em.price(spec);
    return *slot;
  }
  std::vector<CollectiveSpec> send_next, send_prev;
  std::vector<std::optional<Emitter::PricedComm>> priced_next, priced_prev;
  std::vector<std::vector<OpId>> fsend, bsend, ffirst, bfirst;
};

// One stage's actions through the emitter, the engine hooked around each action and layer.
class StageDriver {
 public:
  StageDriver(const LoweringInput& in, Emitter& em, P2p& p2p, PipelineEngine& pipe, GradSyncEngine& engine, bool split)
      : in_(in), em_(em), p2p_(p2p), pipe_(pipe), engine_(engine), split_(split) {}

  void run(std::int32_t s, const std::vector<Action>& acts) {
    s_ = s;
    // Last gradient-producing action of each chunk: there the DP gradient sync happens.
    std::vector<size_t> last_grad(static_cast<size_t>(in_.scenario.parallel.vpp), acts.size());
    for (size_t i = 0; i < acts.size(); ++i)
      if (acts[i].kind == (split_ ? Action::W : Action::B)) last_grad[static_cast<size_t>(acts[i].chunk)] = i;
    for (size_t i = 0; i < acts.size(); ++i) {
      engine_.begin_action(acts[i], i == last_grad[static_cast<size_t>(acts[i].chunk)]);
      action(acts[i]);
      engine_.end_action();
    }
  }

 private:
  void action(const Action& a) {
    const std::int32_t p = static_cast<std::int32_t>(in_.scenario.parallel.pp);
    const std::int32_t vs = a.chunk * p + s_;
    const bool first = vs == 0, last = vs == p2p_.nvs - 1;
    const std::int64_t layers = in_.scenario.layers_in_chunk(s_, a.chunk);
    const auto i = static_cast<size_t>(vs), j = static_cast<size_t>(a.microbatch), si = static_cast<size_t>(s_);
    auto pre = [this](Action::Kind k, std::int64_t layer) { return engine_.before_layer(k, layer); };
    auto post = [this](Action::Kind k, std::int64_t layer, OpId op) { engine_.after_layer(k, layer, op); };
    Deps after_send;  // with p2p_sync the stage's next action waits for its last send
    if (in_.scenario.parallel.p2p_sync && last_send_ >= 0) after_send.push_back(last_send_);
    if (a.kind == Action::F) {
      const auto r = em_.forward(s_, a.microbatch, a.chunk, layers, first, last, after_send, pre, post);
      p2p_.ffirst[i][j] = r.first;
      if (!last) {
        pipe_.output_sent(s_, a, r.last);
        last_send_ = p2p_.fsend[i][j] =
            em_.comm_op(s_, Stream::P2P, Phase::PpComm, "pp send activations", p2p_.next(em_, si), {r.last}, a.microbatch, a.chunk);
      }
    } else if (a.kind == Action::B) {
      const auto r = em_.backward(s_, a.microbatch, a.chunk, layers, first, last, split_, after_send, pre, post);
      if (!last) pipe_.backward_done(s_, a, r.last);
      p2p_.bfirst[i][j] = r.first;
      if (!first)
        last_send_ = p2p_.bsend[i][j] =
            em_.comm_op(s_, Stream::P2P, Phase::PpComm, "pp send gradients", p2p_.prev(em_, si), {r.last}, a.microbatch, a.chunk);
      engine_.after_chunk(Action::B, r.last, first, last);
    } else {
      const auto r = em_.weight_grad(s_, a.microbatch, a.chunk, layers, last, {}, post);
      engine_.after_chunk(Action::W, r.last, first, last);
    }
  }

  const LoweringInput& in_;
  Emitter& em_;
  P2p& p2p_;
  PipelineEngine& pipe_;
  GradSyncEngine& engine_;
  bool split_;
  std::int32_t s_ = 0;
  OpId last_send_ = -1;
};

}  // namespace

Program lower_pipeline(const LoweringInput& in, const StageOrder& order, bool split) {
  const Scenario& sc = in.scenario;
  Program prog;
  Emitter em(in, prog);
  const Layout& L = em.layout();
  const auto p = static_cast<std::int32_t>(sc.parallel.pp);
  const SyncSetup setup(in, split);
  add_stage_ranks(in, setup, prog, L);
  reserve_ops(sc, order, prog);
  P2p p2p(in, L);
  const PipelineEngineRegistry& pipe_engines = pipeline_engines();
  const std::unique_ptr<PipelineEngine> pipe = entry_of(pipe_engines, sc.parallel.pipeline_impl).factory.make(in, em, prog);
  GradSyncRegistry engine_registry("gradient-sync engine");
  register_grad_sync_engines(engine_registry);
  const GradSyncFactory make = engine_registry.get(grad_sync_engine_name(sc), sc.file + ": /parallel").factory;

  std::vector<std::unique_ptr<GradSyncEngine>> engines;
  std::vector<OpId> norm_ops;
  const double norm_s = in.network.time_s(L.group(CollOp::AllReduce, 1, L.tp * L.pp, 4.0));
  for (std::int32_t s = 0; s < p; ++s) {
    engines.push_back(make(SyncContext{setup, em, prog, s, stage_params(sc, s)}));
    StageDriver(in, em, p2p, *pipe, *engines.back(), split).run(s, order[static_cast<size_t>(s)]);
    // Gradient clipping needs the global gradient norm: a small all-reduce over the model-parallel
    // ranks once every stage's gradients are final (Megatron's clip_grad). A rendezvous of stages.
    std::vector<OpId> deps = engines.back()->sync_ops();
    if (const OpId c = last_op_on(prog, s, Stream::Compute); c >= 0) deps.push_back(c);
    norm_ops.push_back(em.op(s, Stream::Comm, Phase::DpComm, "grad-norm all-reduce", norm_s, deps));
    prog.ops[static_cast<size_t>(norm_ops.back())].collective = static_cast<std::int32_t>(prog.collectives.size());
  }
  prog.collectives.push_back(norm_ops);
  for (std::int32_t s = 0; s < p; ++s) engines[static_cast<size_t>(s)]->optimizer_step(norm_ops[static_cast<size_t>(s)]);
  p2p.wire(prog);
  return prog;
}

}  // namespace parasim
