// The shared lowering of pipeline-style schedules (DDP is the one-stage case): static model
// states per stage, each action through the Emitter, p2p transfers between virtual stages,
// data-parallel gradient synchronisation (DDP buckets, ZeRO reduce-scatter, FSDP per-layer
// gather / reduce-scatter), the optimizer step and the ZeRO parameter all-gather.
//
// Symmetry folding: one simulated rank per pipeline stage stands for its tp*cp*dp peers, which do
// identical work; their collectives are costed for the full group by the network model.
#include <algorithm>
#include <functional>
#include <map>

#include "sim/parallel/emitter.h"

namespace parasim {

namespace {

// One layer's parameters on this rank: its TP shard (and, with MoE, its experts' share: E / ep
// experts, each split over etp), and the experts' part of it, whose gradients reduce and optimizer
// states shard over the expert-data-parallel group instead of dp x cp.
struct LayerParams {
  double all = 0;
  double experts = 0;
};
LayerParams layer_params(const Scenario& sc, std::int64_t layer) {
  LayerParams l;
  const double experts = expert_params(sc.model, layer);
  l.experts = experts / static_cast<double>(sc.parallel.ep * (sc.model.moe ? sc.parallel.expert_tp() : 1));
  l.all = (parasim::layer_params(sc.model, layer) - experts) / static_cast<double>(sc.parallel.tp) + l.experts;
  return l;
}

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
    const double norm = sc.model.norm == "layernorm" ? 2 * h : h;
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

// The op most recently emitted on a rank's stream, or -1.
OpId last_op_on(const Program& prog, std::int32_t rank, Stream stream) {
  for (size_t i = prog.ops.size(); i-- > 0;)
    if (prog.ops[i].rank == rank && prog.ops[i].stream == stream) return static_cast<OpId>(i);
  return -1;
}

}  // namespace

Program lower_pipeline(const LoweringInput& in, const StageOrder& order, bool split) {
  const Scenario& sc = in.scenario;
  const ParallelSpec& par = sc.parallel;
  Program prog;
  Emitter em(in, prog);
  const Layout& L = em.layout();
  const auto p = static_cast<std::int32_t>(par.pp);
  const auto v = static_cast<std::int32_t>(par.vpp);
  const auto m = static_cast<std::int32_t>(sc.microbatches());
  const std::string fsdp_kind = par.fsdp ? par.fsdp->sharding : "";
  const Sharding sh = sharding_for(par.zero_stage, fsdp_kind, par.dp * par.cp, par.fsdp ? par.fsdp->shard_group * par.cp : 0);
  const StateBytesPerParam sb = state_bytes(sc.training.dtype, sc.training.optimizer, sc.training.fp32_grad_accumulation);
  const bool per_layer_sharded = sh.weights;  // ZeRO-3 / FSDP full / HSDP
  const double nd = static_cast<double>(sh.nd);
  // DeepSpeed 0.3's ZeRO-3 (parallel.zero_impl "deepspeed-0.3"): one all-gather per parameter
  // tensor, each after torch.cuda.synchronize() (so nothing is prefetched and no gather overlaps
  // compute or the previous gradient reduction), with the list form of all_gather: ProcessGroupNCCL
  // gathers into one flat buffer and copies each rank's slice back, one copy per rank. Gradients
  // are reduce-scattered tensor by tensor with the list form of reduce_scatter, whose per-rank
  // inputs are first copied into one buffer. Each copy is a kernel (profile kernel_overhead_us)
  // that also moves its bytes through HBM. With full recompute the replayed forward gathers the
  // layer again (the module hooks fire once more) before the backward's own gather.
  const bool ds03 = per_layer_sharded && par.zero_impl == "deepspeed-0.3";
  const bool uniform = sc.model.uniform();
  // Models whose layers differ: the model index of each virtual stage's first layer.
  std::vector<std::int64_t> chunk_first_layer;
  for (std::int64_t vs = 0; !uniform && vs < par.pp * par.vpp; ++vs)
    chunk_first_layer.push_back(sc.first_layer_in_chunk(vs % par.pp, vs / par.pp));
  const LayerParams lp0 = layer_params(sc, 0);
  const std::vector<double> tensors0 = ds03 ? layer_tensor_params(sc.model, 0) : std::vector<double>{};
  const double per_rank_copies_s = sc.profile.kernel_overhead_us.value * 1e-6 * nd;
  const std::int64_t prefetch = ds03 ? 0 : par.fsdp ? par.fsdp->prefetch : 1;
  const bool bwd_post = par.fsdp && par.fsdp->backward_prefetch == "post";
  const bool fsdp2 = per_layer_sharded && par.fsdp && par.fsdp->version == 2;
  const bool fsdp1 = per_layer_sharded && par.fsdp && par.fsdp->version == 1;
  const bool grad_sync = par.dp * par.cp > 1;
  const bool keeps_outputs = par.pipeline_impl == "deepspeed" && p * v > 1;
  // FSDP CPU offload: fp32 parameter and gradient shards and the optimizer live in host memory;
  // each unit's shard crosses PCIe before its all-gather and its gradient shard after the
  // reduce-scatter; the optimizer step runs on the CPU over the node's DRAM, which the node's
  // GPU processes share.
  const bool offload = par.fsdp && par.fsdp->offload;
  const double pcie_bps = sc.profile.pcie_gbps.value * 1e9;
  const double host_bps = offload ? sc.profile.host_memory_gbps.value * 1e9 * sc.profile.host_optimizer_efficiency.value /
                                        static_cast<double>(sc.cluster.gpus_per_node)
                                  : 0.0;
  constexpr double kMasterBytes = 4;   // fp32 master parameter / gradient shard on the host
  const bool ds_bf16 = par.zero_impl == "deepspeed-bf16";
  constexpr double kCpuAdamBytes = 28; // read p, g, m, v (16 B), write p, m, v (12 B), fp32

  for (std::int32_t s = 0; s < p; ++s) {
    SimRank r;
    r.real_rank = static_cast<std::int32_t>(s * L.tp * L.cp * L.dp);
    r.count = L.tp * L.cp * L.dp;
    r.stage = s;
    r.role = p > 1 ? "stage " + std::to_string(s) : "every rank";
    const StageParams stp = stage_params(sc, s);
    const double stage_total = stp.total;
    ModelStates ms = model_states(stp.dense_total(), sb, sh);
    if (stp.expert_total > 0) {  // expert states shard over the expert-data-parallel group
      Sharding esh = sh;
      esh.nd = par.expert_dp();
      const ModelStates me = model_states(stp.expert_total, sb, esh);
      ms.weights += me.weights;
      ms.grads += me.grads;
      ms.optimizer += me.optimizer;
    }
    // Offloaded states stay on the host; the GPU holds gathered units only.
    r.static_mem[static_cast<size_t>(MemCat::Weights)] = to_bytes(offload ? 0.0 : ms.weights);
    // DeepSpeed's BF16 optimizer also keeps an fp32 accumulation buffer for every local parameter.
    const double bf16_buffer = ds_bf16 ? kMasterBytes * stage_total : 0.0;
    r.static_mem[static_cast<size_t>(MemCat::Grads)] = to_bytes(offload ? 0.0 : ms.grads + bf16_buffer);
    r.static_mem[static_cast<size_t>(MemCat::Optimizer)] = to_bytes(offload ? 0.0 : ms.optimizer);
    r.static_mem[static_cast<size_t>(MemCat::Workspace)] = to_bytes(sc.profile.runtime_reserved_gib.value * kGiB);
    prog.ranks.push_back(r);
  }

  // Room for every op up front: growing the vector would copy each op and touch twice the memory.
  // A forward or backward action emits at most about six ops per layer (blocks, TP communication,
  // recompute, gathers) and a few around them; pages reserved and never written cost nothing.
  size_t op_room = 0;
  for (std::int32_t s = 0; s < p; ++s)
    for (const Action& a : order[static_cast<size_t>(s)])
      op_room += static_cast<size_t>(6 * sc.layers_in_chunk(s, a.chunk) + 8);
  prog.ops.reserve(op_room);
  // Each stage's sends, priced by where its ranks and the next (previous) stage's really sit.
  std::vector<CollectiveSpec> send_next, send_prev;
  for (std::int32_t s = 0; s < p; ++s) {
    const double bytes = p > 1 ? in.graph.p2p_bytes : 0.0;
    send_next.push_back(L.pp_p2p(bytes, s, (s + 1) % p));
    send_prev.push_back(L.pp_p2p(bytes, s, (s + p - 1) % p));
  }
  const std::int32_t nvs = p * v;
  std::vector<std::vector<OpId>> fsend(static_cast<size_t>(nvs), std::vector<OpId>(static_cast<size_t>(m), -1));
  auto bsend = fsend, ffirst = fsend, bfirst = fsend;
  // The data-parallel group a gradient or parameter collective runs over.
  auto dp_spec = [&](CollOp op, double bytes) {
    if (!per_layer_sharded || sh.nd == par.dp * par.cp) return L.dpcp_group(op, bytes);
    return L.dpcp_inner(op, sh.nd, bytes);  // HSDP shard group
  };

  std::vector<OpId> norm_ops;
  const double norm_s = in.network.time_s(L.group(CollOp::AllReduce, 1, L.tp * L.pp, 4.0));
  for (std::int32_t s = 0; s < p; ++s) {
    const StageParams sp = stage_params(sc, s);
    const auto& acts = order[static_cast<size_t>(s)];
    // Last gradient-producing action of each chunk: there the DP gradient sync happens.
    std::vector<size_t> last_grad(static_cast<size_t>(v), acts.size());
    for (size_t i = 0; i < acts.size(); ++i)
      if (acts[i].kind == (split ? Action::W : Action::B)) last_grad[static_cast<size_t>(acts[i].chunk)] = i;
    std::vector<OpId> sync_ops;
    OpId last_send = -1;  // with p2p_sync the stage's next action waits for it

    for (size_t i = 0; i < acts.size(); ++i) {
      const Action a = acts[i];
      const std::int32_t vs = a.chunk * p + s;
      const bool first = vs == 0, last = vs == nvs - 1;
      const std::int64_t layers = sc.layers_in_chunk(s, a.chunk);
      // DDP / ZeRO-1 bucketed gradient sync, hung on the layer ops of the last backward. Sharded
      // gradients (ZeRO-2, FSDP grad_op) are reduce-scattered after every microbatch's backward and
      // accumulate as the rank's shard: DeepSpeed's stage_1_and_2.py reduces in the gradient hooks
      // when partition_gradients or at the accumulation boundary (ZeRO-1 only there), and FSDP's
      // post-backward hook reduce-scatters in every backward outside no_sync().
      const bool sync_here =
          grad_sync && !per_layer_sharded && (sh.grads || i == last_grad[static_cast<size_t>(a.chunk)]);
      double bucket = 0;
      double ebucket = 0;  // MoE: expert gradients, reduced over the expert-data-parallel group
      const double bucket_cap = par.bucket_mb * 1e6;
      const CollOp grad_op = sh.optimizer ? CollOp::ReduceScatter : CollOp::AllReduce;
      auto flush = [&](OpId after) {
        if (bucket > 0)
          sync_ops.push_back(em.comm_op(s, Stream::Comm, Phase::DpComm, sh.optimizer ? Label("grad reduce-scatter") : Label("grad all-reduce"),
                                        dp_spec(grad_op, bucket), {after}, a.microbatch, a.chunk));
        if (ebucket > 0 && par.expert_dp() > 1)
          sync_ops.push_back(em.comm_op(s, Stream::Comm, Phase::DpComm,
                                        sh.optimizer ? Label("expert grad reduce-scatter") : Label("expert grad all-reduce"),
                                        L.edp_group(grad_op, ebucket), {after}, a.microbatch, a.chunk));
        bucket = ebucket = 0;
      };
      // FSDP / ZeRO-3: gather each layer's parameters before use, free after, reduce-scatter grads.
      std::vector<OpId> layer_done;
      // A layer's gradient reduce-scatter is issued after the next layer's parameter all-gather:
      // FSDP's default backward prefetch (BACKWARD_PRE), FSDP2 and DeepSpeed ZeRO-3 issue the next
      // unit's all-gather when the current unit's backward starts, and one NCCL communicator runs
      // its collectives in issue order, so the gather does not wait behind the reduction.
      std::function<void()> pending_grad_reduce;
      auto flush_grad_reduce = [&] {
        if (!pending_grad_reduce) return;
        auto emit = std::move(pending_grad_reduce);
        pending_grad_reduce = nullptr;
        emit();
      };
      // Layer `layer` of this chunk: its parameters on this rank, their gathered bytes (FSDP /
      // ZeRO-3 unit), and DeepSpeed 0.3's tensors.
      const std::int64_t chunk_first = uniform ? 0 : chunk_first_layer[static_cast<size_t>(vs)];
      auto lparams = [&](std::int64_t layer) { return uniform ? lp0 : layer_params(sc, chunk_first + layer); };
      auto unit_bytes = [&](const LayerParams& lp) { return lp.all * sc.fsdp_param_bytes(); };
      // FSDP over a mixture of experts (torchtitan's and NeMo AutoModel's FSDP2 with EP): a layer's
      // dense parameters are sharded over the FSDP group, its experts' over the expert-data-parallel
      // group (the ranks holding the same experts); each part is gathered and reduced over its own.
      const double edp = static_cast<double>(par.expert_dp());
      auto gathered_bytes = [&](const LayerParams& lp) {
        if (lp.experts <= 0) return unit_bytes(lp) * (1.0 - 1.0 / nd);
        return (lp.all - lp.experts) * sc.fsdp_param_bytes() * (1.0 - 1.0 / nd) + lp.experts * sc.fsdp_param_bytes() * (1.0 - 1.0 / edp);
      };
      auto tensors_of = [&](std::int64_t layer) {
        return uniform || !ds03 ? tensors0 : layer_tensor_params(sc.model, chunk_first + layer);
      };
      auto pre = [&](Action::Kind k, std::int64_t layer) -> std::vector<OpId> {
        if (!per_layer_sharded) return {};
        const LayerParams lp = lparams(layer);
        const double unit_w = unit_bytes(lp);
        const double gathered = gathered_bytes(lp);
        std::vector<OpId> d;
        // BACKWARD_POST: the gather is issued after the previous unit's gradient computation.
        const std::int64_t depth = k != Action::F && bwd_post ? 0 : prefetch;
        const auto idx = static_cast<std::int64_t>(layer_done.size()) - 1 - depth;
        if (idx >= 0) d.push_back(layer_done[static_cast<size_t>(idx)]);
        if (offload) {
          const double shard = lp.all / nd * kMasterBytes;
          d = {em.op(s, Stream::Comm, Phase::FsdpGather, "param shard H2D (offload)", shard / pcie_bps, d, a.microbatch, a.chunk)};
        }
        if (ds03) {
          // torch.cuda.synchronize(): the gathers wait for every op this rank issued before them
          // (the communication stream runs in issue order; the compute stream's last op here).
          d.clear();
          if (const OpId c = last_op_on(prog, s, Stream::Compute); c >= 0) d.push_back(c);
          const int passes = k == Action::B && em.recomputes(layer) ? 2 : 1;
          OpId first_ag = -1;
          const std::vector<double> tensors = tensors_of(layer);
          for (int pass = 0; pass < passes; ++pass)
            for (const double t : tensors) {
              const double bytes = t / static_cast<double>(par.tp) * sc.fsdp_param_bytes();
              const OpId ag = em.comm_op(s, Stream::Comm, Phase::FsdpGather, "param all-gather (one tensor)",
                                         dp_spec(CollOp::AllGather, bytes), d, a.microbatch, a.chunk);
              if (first_ag < 0) first_ag = ag;
              d = {em.op(s, Stream::Comm, Phase::FsdpGather, "all-gather copy-back (one per rank)",
                         per_rank_copies_s + in.cost.memory_s(2 * bytes), {ag}, a.microbatch, a.chunk)};
            }
          prog.ops[static_cast<size_t>(first_ag)].at_start = {MemCat::GatheredParams, to_bytes(gathered)};
          return d;
        }
        OpId ag = em.comm_op(s, Stream::Comm, Phase::FsdpGather, k == Action::F ? "param all-gather fwd" : "param all-gather bwd",
                             dp_spec(CollOp::AllGather, unit_bytes({lp.all - lp.experts, 0.0})), d, a.microbatch, a.chunk);
        prog.ops[static_cast<size_t>(ag)].at_start = {MemCat::GatheredParams, to_bytes(gathered)};
        if (lp.experts > 0 && par.expert_dp() > 1)
          ag = em.comm_op(s, Stream::Comm, Phase::FsdpGather, k == Action::F ? "expert param all-gather fwd" : "expert param all-gather bwd",
                          L.edp_group(CollOp::AllGather, unit_bytes({lp.experts, 0.0})), {ag}, a.microbatch, a.chunk);
        flush_grad_reduce();  // the previous layer's reduce-scatter queues behind this prefetch
        if (fsdp2)  // the unit's pre-forward / pre-backward waits for the gather and copies it out
          return {em.op(s, Stream::Compute, Phase::Other, "all-gather copy-out (FSDP2)", in.cost.memory_s(2 * unit_w), {ag}, a.microbatch, a.chunk)};
        return {ag};
      };
      // Unfused gradient accumulation (training.grad_accumulation_fusion false): after each
      // layer's weight gradient, one pass adds it into the replicated gradient buffer, reading
      // the new 16-bit gradient and reading and writing the buffer (2 or 4 bytes). Returns the op
      // after which the layer's gradient is final.
      auto accumulate = [&](double params, OpId after) {
        if (sc.training.grad_accumulation_fusion || per_layer_sharded || params <= 0) return after;
        const double bytes = params * (sc.dtype_bytes() + 2 * (ds_bf16 ? kMasterBytes : sb.grads));
        return em.op(s, Stream::Compute, Phase::Backward, "grad accumulate", in.cost.memory_s(bytes), {after}, a.microbatch, a.chunk);
      };
      auto post = [&](Action::Kind k, std::int64_t layer, OpId op) {
        const LayerParams lp = lparams(layer);
        if (per_layer_sharded) {
          const double gathered = gathered_bytes(lp);
          const bool needs_free = k == Action::F || k == Action::B;  // W needs no weights
          if (needs_free) {
            const OpId rel = em.op(s, Stream::Compute, Phase::Other, "release gathered params", 0, {op}, a.microbatch, a.chunk);
            prog.ops[static_cast<size_t>(rel)].at_end = {MemCat::GatheredParams, -to_bytes(gathered)};
            layer_done.push_back(rel);
          }
          if (grad_sync && ds03 && k == (split ? Action::W : Action::B)) {
            // Issued at once (DeepSpeed's backward hook); the next gather's synchronize waits for it.
            OpId prev = op;
            for (const double t : tensors_of(layer)) {
              const double gbytes = t / static_cast<double>(par.tp) * sc.fsdp_reduce_bytes();
              const OpId cp = em.op(s, Stream::Comm, Phase::DpComm, "reduce-scatter copy-in (one per rank)",
                                    per_rank_copies_s + in.cost.memory_s(2 * gbytes), {prev}, a.microbatch, a.chunk);
              prev = em.comm_op(s, Stream::Comm, Phase::DpComm, "grad reduce-scatter (one tensor)",
                                dp_spec(CollOp::ReduceScatter, gbytes), {cp}, a.microbatch, a.chunk);
              sync_ops.push_back(prev);
            }
          } else if (grad_sync && k == (split ? Action::W : Action::B)) {
            flush_grad_reduce();
            // FSDP1's flat parameter: the layer's weights are split views of it, so autograd's
            // split backward concatenates their gradients into one flat gradient on the compute
            // stream (read and write it in the parameter dtype); the post-backward hook then, on
            // its own stream, casts it to the reduce dtype when that differs and divides it by the
            // gradient pre-divide factor before the reduce-scatter (torch.distributed.fsdp
            // _runtime_utils._post_backward_hook; FSDP2 copies into its reduce-scatter buffer
            // instead, the copy-in below). Those kernels run on FSDP's post-backward (FSDP2:
            // reduce-scatter) stream beside the next layer's backward, but unlike an NCCL kernel,
            // which holds a few SMs (one per channel), an elementwise kernel over the whole
            // gradient launches blocks for every SM: the two streams take turns on the SMs, so
            // the side kernel costs the compute stream its full time. They are priced on the
            // compute stream, where the next layer's backward waits behind them (the copy stream
            // is for the DMA engines' host transfers, which do run beside the SMs).
            const OpId grad_ready =
                fsdp1 ? em.op(s, Stream::Compute, Phase::Backward, "flat gradient concat (FSDP1)",
                              in.cost.memory_s(2 * lp.all * sc.fsdp_param_bytes()), {op}, a.microbatch, a.chunk)
                      : op;
            pending_grad_reduce = [&, grad_ready, lp] {
              const double gbytes = (lp.all - lp.experts) * sc.fsdp_reduce_bytes();
              const double ebytes = lp.experts * sc.fsdp_reduce_bytes();
              const double pbytes = lp.all * sc.fsdp_param_bytes();
              const double all_g = gbytes + ebytes;
              const double cast = sc.fsdp_reduce_dtype() != sc.fsdp_param_dtype() ? pbytes + all_g : 0.0;
              const OpId in_op = fsdp2   ? em.op(s, Stream::Compute, Phase::Other, "reduce-scatter copy-in (FSDP2)",
                                                 in.cost.memory_s(pbytes + all_g), {grad_ready}, a.microbatch, a.chunk)
                                 : fsdp1 ? em.op(s, Stream::Compute, Phase::Other, "gradient cast and pre-divide (FSDP1)",
                                                 in.cost.memory_s(cast + 2 * all_g), {grad_ready}, a.microbatch, a.chunk)
                                         : grad_ready;
              const OpId rs = em.comm_op(s, Stream::Comm, Phase::DpComm, "grad reduce-scatter", dp_spec(CollOp::ReduceScatter, gbytes), {in_op}, a.microbatch, a.chunk);
              const double unsharded = gbytes * (1.0 - 1.0 / nd) + ebytes * (1.0 - 1.0 / edp);
              prog.ops[static_cast<size_t>(rs)].at_start = {MemCat::Grads, to_bytes(unsharded)};
              prog.ops[static_cast<size_t>(rs)].at_end = {MemCat::Grads, -to_bytes(unsharded)};
              sync_ops.push_back(rs);
              if (ebytes > 0 && par.expert_dp() > 1)
                sync_ops.push_back(em.comm_op(s, Stream::Comm, Phase::DpComm, "expert grad reduce-scatter",
                                              L.edp_group(CollOp::ReduceScatter, ebytes), {in_op}, a.microbatch, a.chunk));
              if (sh.nd < par.dp * par.cp) {  // HSDP: all-reduce the shard across replicas
                sync_ops.push_back(em.comm_op(s, Stream::Comm, Phase::DpComm, "grad all-reduce (replicas)",
                                              L.dpcp_outer(CollOp::AllReduce, sh.nd, gbytes / nd), {rs}, a.microbatch, a.chunk));
              }
              if (offload)  // the reduced shard goes to the host for the CPU optimizer
                sync_ops.push_back(em.op(s, Stream::Comm, Phase::DpComm, "grad shard D2H (offload)", lp.all / nd * kMasterBytes / pcie_bps,
                                         {sync_ops.back()}, a.microbatch, a.chunk));
            };
          }
          return;
        }
        if (k != (split ? Action::W : Action::B)) return;
        const OpId ready = accumulate(lp.all, op);
        if (!sync_here) return;
        bucket += (lp.all - lp.experts) * sb.grads;
        ebucket += lp.experts * sb.grads;
        if (bucket + ebucket >= bucket_cap && par.overlap_grad_reduce) flush(ready);
      };

      std::vector<OpId> after_send;
      if (par.p2p_sync && last_send >= 0) after_send.push_back(last_send);
      if (a.kind == Action::F) {
        const auto r = em.forward(s, a.microbatch, a.chunk, layers, first, last, after_send, pre, post);
        ffirst[static_cast<size_t>(vs)][static_cast<size_t>(a.microbatch)] = r.first;
        if (!last) {
          if (keeps_outputs) {  // DeepSpeed's pipe buffer holds the output until the backward
            const OpId keep =
                em.op(s, Stream::Compute, Phase::Other, "keep stage output (DeepSpeed pipe buffer)", 0, {r.last}, a.microbatch, a.chunk);
            prog.ops[static_cast<size_t>(keep)].at_end = {MemCat::Activations, to_bytes(in.graph.p2p_bytes)};
          }
          last_send = fsend[static_cast<size_t>(vs)][static_cast<size_t>(a.microbatch)] =
              em.comm_op(s, Stream::P2P, Phase::PpComm, "pp send activations", send_next[static_cast<size_t>(s)], {r.last}, a.microbatch, a.chunk);
        }
      } else if (a.kind == Action::B) {
        const auto r = em.backward(s, a.microbatch, a.chunk, layers, first, last, split, after_send, pre, post);
        if (keeps_outputs && !last) {
          const OpId drop =
              em.op(s, Stream::Compute, Phase::Other, "drop stage output (DeepSpeed pipe buffer)", 0, {r.last}, a.microbatch, a.chunk);
          prog.ops[static_cast<size_t>(drop)].at_end = {MemCat::Activations, -to_bytes(in.graph.p2p_bytes)};
        }
        bfirst[static_cast<size_t>(vs)][static_cast<size_t>(a.microbatch)] = r.first;
        if (!first)
          last_send = bsend[static_cast<size_t>(vs)][static_cast<size_t>(a.microbatch)] =
              em.comm_op(s, Stream::P2P, Phase::PpComm, "pp send gradients", send_prev[static_cast<size_t>(s)], {r.last}, a.microbatch, a.chunk);
        const double ends = sp.chunk_extra(first, last);
        const OpId ready = split ? r.last : accumulate(ends, r.last);
        if (sync_here && !split) {
          bucket += ends * sb.grads;
          if (last) ebucket += sp.mtp_experts * sb.grads;
          flush(ready);
        }
      } else {
        const auto r = em.weight_grad(s, a.microbatch, a.chunk, layers, last, {}, post);
        const double ends = sp.chunk_extra(first, last);
        const OpId ready = accumulate(ends, r.last);
        if (sync_here) {
          bucket += ends * sb.grads;
          if (last) ebucket += sp.mtp_experts * sb.grads;
          flush(ready);
        }
      }
      flush_grad_reduce();
    }
    // Gradient clipping needs the global gradient norm: a small all-reduce over the model-parallel
    // ranks once every stage's gradients are final (Megatron's clip_grad). A rendezvous of stages.
    std::vector<OpId> deps = sync_ops;
    if (const OpId c = last_op_on(prog, s, Stream::Compute); c >= 0) deps.push_back(c);
    norm_ops.push_back(em.op(s, Stream::Comm, Phase::DpComm, "grad-norm all-reduce", norm_s, deps));
    prog.ops[static_cast<size_t>(norm_ops.back())].collective = static_cast<std::int32_t>(prog.collectives.size());
  }
  prog.collectives.push_back(norm_ops);
  for (std::int32_t s = 0; s < p; ++s) {
    // Optimizer on this rank's shard; ZeRO-1/2 then all-gather the updated parameters.
    const StageParams sp = stage_params(sc, s);
    const double opt_params = sh.optimizer ? sp.dense_total() / nd + sp.expert_total / static_cast<double>(par.expert_dp()) : sp.total;
    // A separate fp32 master (Megatron, DeepSpeed) is copied back into the 16-bit weights after the
    // step; Megatron also casts 16-bit gradients into fp32 main gradients first (DeepSpeed's cast is
    // priced below). FSDP's sharded parameters are themselves the fp32 copy.
    const bool mixed = sc.training.dtype != "fp32";
    const double traffic = optimizer_step_bytes(sb, sc.training.optimizer, sc.training.optimizer_impl, mixed && !par.fsdp,
                                                mixed && !par.fsdp && par.zero_impl == "megatron");
    // DeepSpeed's ZeRO-1/2 step first flattens this rank's 16-bit gradient partition into a new
    // tensor and casts that into a new fp32 one (stage_1_and_2.py / stage2.py step():
    // self.flatten(self.averaged_gradients[i]).to(fp32)): the flat 16-bit copy (read and write
    // 2 B) lives while the cast (read 2 B, write 4 B) runs, so the step's peak holds both; the
    // fp32 gradient lives until the Adam step is done.
    const bool ds_cast = par.zero_impl == "deepspeed";
    const double fp32_grad_partition = ds_cast ? (kMasterBytes + sb.grads) * opt_params : 0.0;
    const double cast_s = ds_cast ? in.cost.memory_s((3 * sb.grads + kMasterBytes) * opt_params) : 0.0;
    const double opt_s = offload ? kCpuAdamBytes * opt_params / host_bps : in.cost.optimizer_s(traffic * opt_params) + cast_s;
    const OpId opt = em.op(s, Stream::Compute, Phase::Optimizer, offload ? Label("optimizer step (CPU)") : Label("optimizer step"), opt_s,
                           {norm_ops[static_cast<size_t>(s)]});
    if (ds_cast) {
      prog.ops[static_cast<size_t>(opt)].at_start = {MemCat::Optimizer, to_bytes(fp32_grad_partition)};
      prog.ops[static_cast<size_t>(opt)].at_end = {MemCat::Optimizer, -to_bytes(fp32_grad_partition)};
    }
    if (sh.optimizer && !sh.weights && grad_sync)
      em.comm_op(s, Stream::Comm, Phase::DpComm, "param all-gather", dp_spec(CollOp::AllGather, sp.dense_total() * sb.weights), {opt});
    if (sh.optimizer && sp.expert_total > 0 && par.expert_dp() > 1)
      em.comm_op(s, Stream::Comm, Phase::DpComm, "expert param all-gather", L.edp_group(CollOp::AllGather, sp.expert_total * sb.weights), {opt});
  }
  // Wire p2p: forward input from the previous virtual stage, backward input from the next.
  for (std::int32_t vs = 0; vs < nvs; ++vs)
    for (std::int32_t mb = 0; mb < m; ++mb) {
      const auto i = static_cast<size_t>(vs), j = static_cast<size_t>(mb);
      if (vs > 0 && ffirst[i][j] >= 0) prog.ops[static_cast<size_t>(ffirst[i][j])].deps.push_back(fsend[i - 1][j]);
      if (vs < nvs - 1 && bfirst[i][j] >= 0) prog.ops[static_cast<size_t>(bfirst[i][j])].deps.push_back(bsend[i + 1][j]);
    }
  return prog;
}

}  // namespace parasim
