// What every gradient-sync engine shares: the stage's parameter counts, the run's setup, the
// optimizer step, and the registry of engines by name.
#include "sim/parallel/grad_sync_engine.h"

namespace parasim {

LayerParams layer_params(const Scenario& sc, std::int64_t layer) {
  LayerParams l;
  const double experts = expert_params(sc.model, layer);
  l.experts = experts / static_cast<double>(sc.parallel.ep * (sc.model.moe ? sc.parallel.expert_tp() : 1));
  l.all = (parasim::layer_params(sc.model, layer) - experts) / static_cast<double>(sc.parallel.tp) + l.experts;
  return l;
}

StageParams stage_params(const Scenario& sc, std::int64_t stage) {
  const ParamCount pc = count_params(sc.model);
  const double tp = static_cast<double>(sc.parallel.tp);
  const std::int64_t p = sc.parallel.pp;
  StageParams s;
  double first = 0, last = 0;
  if (stage == 0) first = pc.embedding;
  if (stage == p - 1) last = pc.head + (sc.model.tied_embeddings && p > 1 ? pc.embedding : 0.0);
  s.extra = (first + last) / tp;
  s.first_extra = first / tp;
  s.last_extra = last / tp;
  double layers = 0, experts = 0;
  if (sc.model.uniform()) {
    const LayerParams one = layer_params(sc, 0);
    const double n = static_cast<double>(sc.layers_per_stage()[static_cast<size_t>(stage)]);
    layers = n * one.all;
    experts = n * one.experts;
  } else {
    for (std::int64_t c = 0; c < sc.parallel.vpp; ++c)
      for (std::int64_t i = 0; i < sc.layers_in_chunk(stage, c); ++i) {
        const LayerParams one = layer_params(sc, sc.first_layer_in_chunk(stage, c) + i);
        layers += one.all;
        experts += one.experts;
      }
  }
  // Multi-token prediction on the last stage: per module a layer of the last layer's kind, the
  // 2h -> h projection and three norms (its embedding and output layer are the model's: a stage
  // without the embedding keeps a copy, as Megatron-Core's shared embedding).
  const std::int64_t mtp = sc.training.mtp_layers;
  if (stage == p - 1 && mtp > 0) {
    const LayerParams mtp_layer = layer_params(sc, sc.model.layers - 1);
    const double h = static_cast<double>(sc.model.hidden);
    const double norm = sc.model.norm == NormKind::LayerNorm ? 2 * h : h;
    const double module = (mtp_layer.all - mtp_layer.experts) + (2 * h * h + 3 * norm) / tp;
    const double added = static_cast<double>(mtp) * module + (p > 1 && !sc.model.tied_embeddings ? pc.embedding / tp : 0.0);
    s.extra += added;
    s.last_extra += added;
    s.mtp_experts = static_cast<double>(mtp) * mtp_layer.experts;
  }
  s.total = layers + s.extra + s.mtp_experts;
  s.expert_total = experts + s.mtp_experts;
  return s;
}

OpId last_op_on(const Program& prog, std::int32_t rank, Stream stream) {
  for (size_t i = prog.ops.size(); i-- > 0;)
    if (prog.ops[i].rank == rank && prog.ops[i].stream == stream) return static_cast<OpId>(i);
  return -1;
}


Sharding scenario_sharding(const Scenario& sc) {
  const ParallelSpec& par = sc.parallel;
  const std::optional<FsdpSharding> fsdp_kind = par.fsdp ? std::optional(par.fsdp->sharding) : std::nullopt;
  return sharding_for(par.zero_stage, fsdp_kind, par.dp * par.cp, par.fsdp ? par.fsdp->shard_group * par.cp : 0);
}

SyncSetup::SyncSetup(const LoweringInput& input, bool split_backward) : in(input), split(split_backward) {
  const Scenario& sc = in.scenario;
  const ParallelSpec& par = sc.parallel;
  sh = scenario_sharding(sc);
  sb = state_bytes(sc.training.dtype, sc.training.optimizer, sc.training.fp32_grad_accumulation);
  nd = static_cast<double>(sh.nd);
  grad_sync = par.dp * par.cp > 1;
  // FSDP CPU offload: fp32 parameter and gradient shards and the optimizer live in host memory;
  // each unit's shard crosses PCIe before its all-gather and its gradient shard after the
  // reduce-scatter; the optimizer step runs on the CPU over the node's DRAM, which the node's
  // GPU processes share.
  offload = par.fsdp && par.fsdp->offload;
  pcie_bps = sc.profile.pcie_gbps.value * 1e9;
  host_bps = offload ? sc.profile.host_memory_gbps.value * 1e9 * sc.profile.host_optimizer_efficiency.value /
                           static_cast<double>(sc.cluster.gpus_per_node)
                     : 0.0;
  ds_bf16 = par.zero_impl == ZeroImpl::DeepSpeedBf16;
  uniform = sc.model.uniform();
  for (std::int64_t vs = 0; !uniform && vs < par.pp * par.vpp; ++vs)
    chunk_first_layer.push_back(sc.first_layer_in_chunk(vs % par.pp, vs / par.pp));
  lp0 = layer_params(sc, 0);
}

CollectiveSpec SyncSetup::dp_spec(const Layout& L, CollOp op, double bytes) const {
  const ParallelSpec& par = in.scenario.parallel;
  if (!sh.weights || sh.nd == par.dp * par.cp) return L.dpcp_group(op, bytes);
  return L.dpcp_inner(op, sh.nd, bytes);  // HSDP shard group
}

void GradSyncEngine::optimizer_step(OpId norm) {
  // Optimizer on this rank's shard; ZeRO-1/2 then all-gather the updated parameters.
  const SyncSetup& u = c_.setup;
  const Sharding& sh = u.sh;
  const StateBytesPerParam& sb = u.sb;
  const ParallelSpec& par = sc().parallel;
  const StageParams& sp = c_.stage;
  Emitter& em = c_.em;
  const std::int32_t s = c_.rank;
  const double opt_params = sh.optimizer ? sp.dense_total() / u.nd + sp.expert_total / static_cast<double>(par.expert_dp()) : sp.total;
  // A separate fp32 master (Megatron, DeepSpeed) is copied back into the 16-bit weights after the
  // step; Megatron also casts 16-bit gradients into fp32 main gradients first (DeepSpeed's cast is
  // priced below). FSDP's sharded parameters are themselves the fp32 copy.
  const bool mixed = sc().training.dtype != Dtype::Fp32;
  const double traffic = optimizer_step_bytes(sb, sc().training.optimizer, sc().training.optimizer_impl, mixed && !par.fsdp,
                                              mixed && !par.fsdp && par.zero_impl == ZeroImpl::Megatron);
  // DeepSpeed's ZeRO-1/2 step first flattens this rank's 16-bit gradient partition into a new
  // tensor and casts that into a new fp32 one (stage_1_and_2.py / stage2.py step():
  // self.flatten(self.averaged_gradients[i]).to(fp32)): the flat 16-bit copy (read and write
  // 2 B) lives while the cast (read 2 B, write 4 B) runs, so the step's peak holds both; the
  // fp32 gradient lives until the Adam step is done.
  const bool ds_cast = par.zero_impl == ZeroImpl::DeepSpeed;
  const double fp32_grad_partition = ds_cast ? (kMasterBytes + sb.grads) * opt_params : 0.0;
  const double cast_s = ds_cast ? u.in.cost.memory_s((3 * sb.grads + kMasterBytes) * opt_params) : 0.0;
  const double opt_s = u.offload ? kCpuAdamBytes * opt_params / u.host_bps : u.in.cost.optimizer_s(traffic * opt_params) + cast_s;
  const OpId opt = em.op(s, Stream::Compute, Phase::Optimizer, u.offload ? Label(op_label::kOptimizerStepCpu) : Label("optimizer step"), opt_s,
                         {norm});
  if (ds_cast) {
    c_.prog.ops[static_cast<size_t>(opt)].at_start = {MemCat::Optimizer, to_bytes(fp32_grad_partition)};
    c_.prog.ops[static_cast<size_t>(opt)].at_end = {MemCat::Optimizer, -to_bytes(fp32_grad_partition)};
  }
  const Layout& L = layout();
  if (sh.optimizer && !sh.weights && u.grad_sync)
    em.comm_op(s, Stream::Comm, Phase::DpComm, "param all-gather", u.dp_spec(L, CollOp::AllGather, sp.dense_total() * sb.weights), {opt});
  if (sh.optimizer && sp.expert_total > 0 && par.expert_dp() > 1)
    em.comm_op(s, Stream::Comm, Phase::DpComm, "expert param all-gather", L.edp_group(CollOp::AllGather, sp.expert_total * sb.weights), {opt});
}

void register_grad_sync_engines(GradSyncRegistry& r) {
  register_ddp_engine(r);
  register_zero3_engine(r);
  register_fsdp1_engine(r);
  register_fsdp2_engine(r);
  register_deepspeed_zero3_v03_engine(r);
}

std::string grad_sync_engine_name(const Scenario& sc) {
  if (!scenario_sharding(sc).weights) return "ddp";  // replicated weights: DDP, ZeRO-1/2
  if (sc.parallel.zero_impl == ZeroImpl::DeepSpeedV03) return "deepspeed-zero3-0.3";
  // Full or hybrid sharding, with or without CPU offload (options of every sharded engine).
  if (!sc.parallel.fsdp) return "zero3";
  return sc.parallel.fsdp->version == 1 ? "fsdp1" : "fsdp2";
}

}  // namespace parasim
