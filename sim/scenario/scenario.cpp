#include "sim/scenario/scenario.h"

#include "sim/config/json_pointer.h"
#include "sim/memory/memory_model.h"
#include "sim/parallel/pipeline_engine.h"
#include "sim/parallel/schedule.h"
#include "sim/scenario/scenario_keys.h"
#include "sim/scenario/stack.h"
#include "sim/topology/builder.h"
#include "sim/topology/topology.h"

#include <algorithm>
#include <limits>
#include <filesystem>
#include <numeric>

#include <fmt/format.h>

namespace parasim {

const char* name_of(ParallelDim d) {
  switch (d) {
    case ParallelDim::Tp: return "tp";
    case ParallelDim::Cp: return "cp";
    case ParallelDim::Dp: return "dp";
    case ParallelDim::Pp: return "pp";
  }
  return "?";
}

namespace {

std::string itos(std::int64_t v) { return std::to_string(v); }

// "naive, gpipe, ...": the schedules that need pp > 1.
std::string pipeline_schedule_list(const ScheduleRegistry& r) {
  std::string out;
  for (const auto& e : r.entries())
    if (e.factory.pipeline) out += (out.empty() ? "" : ", ") + e.name;
  return out;
}

ClusterSpec parse_cluster(const JsonObject& o) {
  ClusterSpec c;
  c.gpu = o.str("gpu");
  c.nodes = o.integer("nodes", 1, 1 << 20);
  c.gpus_per_node = o.integer("gpus_per_node", 1, 1024);
  if (auto in = o.object_opt("intra_node")) {
    c.intra_kind = parse_enum(*in, "kind", intra_node_kinds(), IntraNode::NvSwitch);
    c.intra_gbps = in->number("gbps", 0.1, 1e5, 0);
    in->finish();
  }
  if (auto out = o.object_opt("inter_node")) {
    c.inter_kind = parse_enum(*out, "kind", inter_node_kinds(), InterNode::FatTree);
    c.nics_per_node = out->integer("nics_per_node", 1, 1024, 0);
    c.nic_gbps = out->number("nic_gbps", 0.1, 1e5, 0);
    c.oversubscription = out->number("oversubscription", 1.0, 64.0, 1.0);
    c.leaf_ports = out->integer("leaf_ports", 1, 1 << 16, 32);
    c.spines = out->integer("spines", 1, 1 << 16, 8);
    if (c.inter_kind == InterNode::Custom) {
      c.custom.file = out->file();
      c.custom.pointer = out->pointer();
      const Json& sw = out->raw("switches");
      if (!sw.is_array()) out->fail("switches", "expected an array of switch names");
      for (size_t i = 0; i < sw.size(); ++i) {
        if (!sw[i].is_string() || sw[i].get<std::string>().empty())
          throw_config(out->file(), out->path("switches") + "/" + std::to_string(i), "expected a switch name (string)");
        const std::string name = sw[i].get<std::string>();
        if (std::find(c.custom.switches.begin(), c.custom.switches.end(), name) != c.custom.switches.end())
          throw_config(out->file(), out->path("switches") + "/" + std::to_string(i), "duplicate switch name \"" + name + "\"");
        if (name.starts_with("node"))
          throw_config(out->file(), out->path("switches") + "/" + std::to_string(i), "switch names may not start with \"node\" (reserved for node<i>.nic<j>)");
        c.custom.switches.push_back(name);
      }
      const Json& links = out->raw("links");
      if (!links.is_array() || links.empty()) out->fail("links", "expected a non-empty array of {a, b, gbps, latency_us}");
      for (size_t i = 0; i < links.size(); ++i) {
        const JsonObject l(links[i], out->file(), out->path("links") + "/" + std::to_string(i), out->declared());
        CustomLink cl;
        cl.a = l.str("a");
        cl.b = l.str("b");
        cl.gbps = l.number("gbps", 0.01, 1e6);
        cl.latency_us = l.number("latency_us", 0, 1e6, 0);
        cl.where = l.pointer();
        l.finish();
        c.custom.links.push_back(cl);
      }
    } else if (out->has("switches") || out->has("links")) {
      out->fail(out->has("switches") ? "switches" : "links", "only a \"custom\" inter_node fabric lists switches and links");
    }
    out->finish();
  }
  o.finish();
  return c;
}

TrainingSpec parse_training(const JsonObject& o) {
  TrainingSpec t;
  t.global_batch = o.integer("global_batch", 1, 1LL << 40);
  t.micro_batch = o.integer("micro_batch", 1, 1LL << 30, 1);
  t.seq_len = o.integer("seq_len", 1, 1LL << 30);
  t.dtype = parse_enum(o, "dtype", dtypes(), Dtype::Bf16);
  t.optimizer = parse_enum(o, "optimizer", optimizers(), Optimizer::Adam);
  t.flash_attention = o.boolean("flash_attention", true);
  t.attention_kernel = parse_enum(o, "attention_kernel", attention_kernel_kinds(), AttentionKernel::Flash);
  if (!t.flash_attention && o.has("attention_kernel"))
    o.fail("attention_kernel", "names a fused attention kernel, but flash_attention is false (unfused attention)");
  t.fp32_grad_accumulation = o.boolean("fp32_grad_accumulation", false);
  t.grad_accumulation_fusion = o.boolean("grad_accumulation_fusion", true);
  t.te_op_fuser = o.boolean("te_op_fuser", false);
  t.norm_impl = parse_enum(o, "norm_impl", norm_impls(), NormImpl::Fused);
  t.rope_impl = parse_enum(o, "rope_impl", rope_impls(), RopeImpl::Fused);
  t.dropout_add_impl = parse_enum(o, "dropout_add_impl", dropout_add_impls(), DropoutAddImpl::Fused);
  t.loss_impl = parse_enum(o, "loss_impl", loss_impls(), LossImpl::Megatron);
  t.optimizer_impl = parse_enum(o, "optimizer_impl", optimizer_impls(), OptimizerImpl::Fused);
  if (o.has("train_metrics")) t.train_metrics = o.choice_list("train_metrics", train_metric_names());
  t.mtp_layers = o.integer("mtp_layers", 0, 16, 0);
  t.host_launch_us = o.number("host_launch_us", 0, 1e4, 0);
  t.host_loop_launch_us = o.number("host_loop_launch_us", 0, 1e4, 0);
  t.host_op_us = o.number("host_op_us", 0, 1e4, 0);
  if (o.has("cuda_graph_scope")) t.cuda_graph_scope = parse_enum_list(o, "cuda_graph_scope", cuda_graph_scopes());
  t.cuda_graph_impl = parse_enum(o, "cuda_graph_impl", cuda_graph_impls(), CudaGraphImpl::TransformerEngine);
  if (t.cuda_graph_impl == CudaGraphImpl::FullIteration && !t.cuda_graph_scope.empty())
    o.fail("cuda_graph_scope", "must be empty with cuda_graph_impl \"full_iteration\" (the whole step is one graph)");
  t.launch_impl = parse_enum(o, "launch_impl", launch_impls(), LaunchImpl::MegatronTe);
  // Bounded by the model in validate(): at most experts / top_k; any capacity factor above that keeps every token.
  t.moe_routing.expert_load = o.number("moe_expert_load", 1, 1e300, 0);
  t.moe_routing.capacity_factor = o.number("moe_capacity_factor", -std::numeric_limits<double>::max(), std::numeric_limits<double>::max(), 0);
  if (o.has("moe_capacity_factor") && !(t.moe_routing.capacity_factor > 0 && t.moe_routing.capacity_factor <= 1e6))
    o.fail("moe_capacity_factor", "expected a number > 0 and at most 1e6, got " + o.raw("moe_capacity_factor").dump() +
                                      " (a capacity of 0 drops every token; leave the key out for dropless)");
  t.moe_routing.pad_to_capacity = o.boolean("moe_pad_to_capacity", false);
  t.make_vocab_size_divisible_by = o.integer("make_vocab_size_divisible_by", 1, 1 << 20, 1);
  t.fp8_recipe = parse_enum(o, "fp8_recipe", fp8_recipes(), Fp8Recipe::Delayed);
  if (t.dtype != Dtype::Fp8 && o.has("fp8_recipe"))
    o.fail("fp8_recipe", "applies to dtype \"fp8\" only (dtype is \"" + name_of(t.dtype) + "\")");
  o.finish();
  return t;
}

// parallel.order ("tp-cp-dp-pp"): each dimension once, joined by '-'; false otherwise.
bool parse_order(const std::string& text, std::array<ParallelDim, 4>& order) {
  size_t start = 0, n = 0;
  unsigned seen = 0;
  for (; n < order.size(); ++n) {
    const size_t dash = text.find('-', start);
    const std::string d = text.substr(start, dash == std::string::npos ? std::string::npos : dash - start);
    const auto it = std::find_if(kMegatronOrder.begin(), kMegatronOrder.end(), [&](ParallelDim x) { return d == name_of(x); });
    if (it == kMegatronOrder.end() || (seen >> static_cast<unsigned>(*it) & 1U)) return false;
    seen |= 1U << static_cast<unsigned>(*it);
    order[n] = *it;
    if (dash == std::string::npos) return n + 1 == order.size();
    start = dash + 1;
  }
  return false;
}

ParallelSpec parse_parallel(const JsonObject& o) {
  ParallelSpec p;
  p.dp = o.integer("dp", 1, 1 << 24, 1);
  p.tp = o.integer("tp", 1, 1 << 16, 1);
  p.pp = o.integer("pp", 1, 1 << 16, 1);
  p.vpp = o.integer("vpp", 1, 1 << 10, 1);
  p.cp = o.integer("cp", 1, 1 << 16, 1);
  p.cp_impl = parse_enum(o, "cp_impl", cp_impls(), CpImpl::Ring);
  p.ep = o.integer("ep", 1, 1 << 16, 1);
  p.etp = o.integer("etp", 1, 1 << 16, p.tp);
  p.schedule = parse_choice(o, "schedule", schedule_registry(), default_schedule(p.pp)).factory.value;
  p.sequence_parallel = o.boolean("sequence_parallel", false);
  p.recompute = parse_choice(o, "recompute", recompute_modes(), Recompute::None).factory.value;
  if (o.has("recompute_modules")) {
    p.recompute_modules = RecomputeModules::from_names(o.choice_list("recompute_modules", recompute_module_names()));
    if (p.recompute != Recompute::Selective)
      o.fail("recompute_modules", "applies to recompute \"selective\" (Megatron-Core's --recompute-modules), but recompute is \"" +
                                      name_of(p.recompute) + "\"");
  }
  p.recompute_fused_attention = o.boolean("recompute_fused_attention", true);
  if (o.has("recompute_num_layers")) {
    p.recompute_num_layers = o.integer("recompute_num_layers", 0, 1 << 20);
    if (p.recompute != Recompute::Full)
      o.fail("recompute_num_layers", "applies to recompute \"full\" (Megatron's block method), but recompute is \"" + name_of(p.recompute) + "\"");
  }
  p.activation_offload_layers = o.integer("activation_offload_layers", 0, 1 << 20, 0);
  p.zero_stage = o.integer("zero_stage", 0, 3, 0);
  const auto zero = parse_choice(o, "zero_impl", zero_impls(), ZeroImpl::Megatron);
  p.zero_impl = zero.factory.value;
  if (!(zero.factory.stages & (1u << p.zero_stage)))
    o.fail("zero_impl", "\"" + zero.name + "\" describes " + zero.description + ", but zero_stage is " + std::to_string(p.zero_stage));
  if (auto f = o.object_opt("fsdp")) {
    FsdpSpec s;
    s.sharding = parse_enum(*f, "sharding", fsdp_shardings(), FsdpSharding::Full);
    s.shard_group = f->integer("shard_group", 0, 1 << 24, 0);
    s.prefetch = f->integer("prefetch", 0, 64, 1);
    s.offload = f->boolean("offload", false);
    if (f->has("param_dtype")) s.param_dtype = fsdp_dtypes().find(f->choice("param_dtype", fsdp_dtypes().names()))->factory.value;
    if (f->has("reduce_dtype")) s.reduce_dtype = fsdp_dtypes().find(f->choice("reduce_dtype", fsdp_dtypes().names()))->factory.value;
    s.version = static_cast<int>(f->integer("version", 1, 2, 2));
    s.backward_prefetch = parse_choice(*f, "backward_prefetch", backward_prefetches(), BackwardPrefetch::Pre).factory.value;
    if (s.backward_prefetch == BackwardPrefetch::Post && s.version != 1)
      f->fail("backward_prefetch", "\"post\" is FSDP1's BackwardPrefetch.BACKWARD_POST (parallel.fsdp.version 1); FSDP2 always "
                                   "prefetches the next unit before the current one's backward (\"pre\")");
    f->finish();
    p.fsdp = s;
  }
  if (o.has("stage_layers")) {
    p.stage_layers = o.int_list("stage_layers", 0, 1 << 20);
    if (p.stage_layers.empty()) o.fail("stage_layers", "expected the layers of each pipeline stage (leave stage_layers out for an even split)");
  }
  p.bucket_mb = o.number("bucket_mb", 0.001, 1e6, 25);
  if (o.has("order")) {
    const std::string ord = o.str("order");
    if (!parse_order(ord, p.order))
      o.fail("order", "expected the four dimensions tp, cp, dp, pp once each, innermost first, joined by '-' (e.g. \"tp-cp-dp-pp\"), got \"" + ord + "\"");
  }
  p.tp_comm_overlap = o.boolean("tp_comm_overlap", false);
  p.ep_comm_overlap = o.boolean("ep_comm_overlap", false);
  p.moe_dispatcher = parse_choice(o, "moe_dispatcher", moe_dispatchers(), MoeDispatcher::AllToAll).factory.value;
  p.p2p_sync = o.boolean("p2p_sync", true);
  p.pipeline_impl = parse_choice(o, "pipeline_impl", pipeline_engines(), PipelineImpl::Megatron).factory.value;
  // DeepSpeed's PipelineEngine turns the backward-hook gradient reduction off and reduces in its
  // ReduceGrads instruction after the step's last backward (deepspeed/runtime/pipe/engine.py,
  // enable_backward_allreduce = False), so with pp > 1 the reduction does not overlap by default.
  p.overlap_grad_reduce = o.boolean("overlap_grad_reduce", !(p.pipeline_impl == PipelineImpl::DeepSpeed && p.pp > 1));
  if (p.pipeline_impl == PipelineImpl::DeepSpeed && p.pp > 1 && (p.zero_stage >= 2 || p.fsdp))
    o.fail("pipeline_impl", "DeepSpeed's PipelineEngine runs ZeRO stage 0 or 1 only (deepspeed/runtime/pipe/engine.py asserts "
                            "zero_optimization_stage() < 2: \"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\"), but "
                            "zero_stage is " + std::to_string(p.zero_stage) + (p.fsdp ? " with FSDP" : ""));
  o.finish();
  return p;
}

// A path named in the scenario `file`, relative to that file's folder (as measured runs resolve
// their scenario); as given when absolute or read from standard input. `file` may carry an inline
// location suffix: "run.json (/scenario)".
std::string relative_to_file(const std::string& file, const std::string& p) {
  if (p.empty() || p.front() == '/' || file == input_name("-")) return p;
  const auto inline_at = file.find(" (/");
  const std::filesystem::path f = file.substr(0, inline_at);
  return (f.parent_path() / p).string();
}

// The schedule's rules: pipeline schedules with pp > 1 and the others with pp = 1, model chunks
// with the chunked (interleaved) schedule only, the naive schedule's whole batch, DataParallel's
// single process.
void check_schedule(const Scenario& s, const std::string& par) {
  const auto fail = [&](const std::string& ptr, const std::string& msg) { throw_config(s.file, ptr, msg); };
  const ParallelSpec& p = s.parallel;
  const ScheduleRegistry& sched = schedule_registry();
  const auto& e = entry_of(sched, p.schedule);
  const std::string quoted = "\"" + e.name + "\"";
  if (p.pp > 1 && !e.factory.pipeline)
    fail(par + "/schedule", "with pp = " + itos(p.pp) + " the schedule must be a pipeline schedule (" + pipeline_schedule_list(sched) +
                                "), got " + quoted);
  if (p.pp == 1 && e.factory.pipeline)
    fail(par + "/schedule", "pipeline schedule " + quoted + " needs pp > 1; with pp = 1 use \"" + name_of(Schedule::Ddp) + "\" or \"" +
                                name_of(Schedule::DataParallel) + "\"");
  if (e.factory.chunked && p.vpp < 2) fail(par + "/vpp", "the " + e.name + " schedule needs vpp >= 2");
  if (p.vpp > 1 && !e.factory.chunked)
    fail(par + "/vpp", "vpp > 1 needs schedule \"" + name_of(Schedule::Interleaved) + "\", got " + quoted);
  // Every microbatch is replayed op by op; past this the step needs gigabytes and minutes.
  if (s.microbatches() > kMaxMicrobatches)
    fail("/training/global_batch", "global_batch / (micro_batch * dp) = " + itos(s.microbatches()) +
                                       " microbatches per pipeline step; parasim replays each one and simulates at most " +
                                       itos(kMaxMicrobatches) + " (raise micro_batch, or simulate a smaller global_batch)");
  if (e.factory.chunked && s.microbatches() % p.pp != 0)
    fail("/training/global_batch", "the " + e.name + " schedule needs microbatches per pipeline (" + itos(s.microbatches()) +
                                       ") divisible by pp (" + itos(p.pp) + ")");
  if (!e.factory.microbatched && s.microbatches() != 1)
    fail("/training/micro_batch", "the " + e.name + " schedule does not split the batch: micro_batch must be global_batch/dp = " +
                                      itos(s.training.global_batch / p.dp) + " (use gpipe or 1f1b for microbatching)");
  if (e.factory.single_process && (p.tp != 1 || p.cp != 1 || s.cluster.nodes != 1))
    fail(par + "/schedule", quoted + " (single-process torch.nn.DataParallel) runs on one node with tp = cp = 1");
  if (e.factory.single_process && (p.zero_stage != 0 || p.fsdp))
    fail(par + "/schedule", quoted + " cannot be combined with zero_stage or fsdp");
}

// Megatron-Core's own refusals for its MoE features, which a prediction must not run past.
// - EP all-to-all overlap (transformer_config.py, overlap_moe_expert_parallel_comm): an MoE model
//   with ep > 1, vpp with pp > 1, no full recomputation and no recomputed MoE block, a bf16/fp16
//   model (FP8 recipes run on one), at most one MTP layer.
// - DeepEP (token_dispatcher.py MoEFlexTokenDispatcher: "DeepEP dispatcher requires TPxEP > 1"),
//   and DeepEP's and HybridEP's kernels move tokens over NVLink inside a node.
// - CUDA-graph scopes with cuda_graph_impl "transformer_engine" (transformer_config.py): the
//   router's and dispatcher's scopes need an MoE model, moe_preprocess needs moe_router.
void check_moe_features(const Scenario& s, const std::string& par) {
  const auto fail = [&](const std::string& ptr, const std::string& msg) { throw_config(s.file, ptr, msg); };
  const ParallelSpec& p = s.parallel;
  const std::string overlap = par + "/ep_comm_overlap";
  if (p.ep_comm_overlap) {
    if (!s.model.moe) fail(overlap, "overlaps the expert-parallel all-to-alls, but the model has no experts (model.moe)");
    if (p.ep == 1) fail(overlap, "needs expert parallelism (ep > 1)");
    if (p.pp > 1 && p.vpp == 1) fail(overlap, "with pp > 1 Megatron-Core needs virtual pipeline stages (vpp > 1, schedule \"interleaved\")");
    if (p.recompute == Recompute::Full || p.recompute_modules.has(RecomputeModule::Moe))
      fail(overlap, "Megatron-Core runs it without full recomputation and without recomputing the MoE block");
    if (s.training.dtype == Dtype::Fp32) fail(overlap, "Megatron-Core runs it with a bf16 or fp16 model, not fp32");
    if (s.training.mtp_layers > 1) fail(overlap, "Megatron-Core runs it with at most one MTP layer, got " + itos(s.training.mtp_layers));
  }
  if (p.moe_dispatcher == MoeDispatcher::DeepEp && p.tp * p.ep == 1)
    fail(par + "/moe_dispatcher", "\"deepep\" needs tp x ep > 1 (Megatron-Core's flex dispatcher)");
  if (p.moe_dispatcher != MoeDispatcher::AllToAll && s.cluster.intra_kind == IntraNode::Pcie)
    fail(par + "/moe_dispatcher", "\"" + name_of(p.moe_dispatcher) + "\"'s kernels move tokens over NVLink; the cluster's GPUs are on PCIe "
                                  "(cluster.intra_node.kind): use \"alltoall\"");
  const auto& scope = s.training.cuda_graph_scope;
  const auto has = [&](CudaGraphScope x) { return std::find(scope.begin(), scope.end(), x) != scope.end(); };
  for (CudaGraphScope x : {CudaGraphScope::MoeRouter, CudaGraphScope::MoePreprocess})
    if (has(x) && !s.model.moe)
      fail("/training/cuda_graph_scope", "\"" + name_of(x) + "\" captures a mixture-of-experts layer's part, but the model has no experts");
  if (has(CudaGraphScope::MoePreprocess) && !has(CudaGraphScope::MoeRouter))
    fail("/training/cuda_graph_scope", "\"moe_preprocess\" is captured only with \"moe_router\" (Megatron-Core's transformer_config.py)");
  // A recomputed module must lie wholly inside or outside a graph: Megatron-Core refuses the MoE block's
  // recompute around a graphed router (transformer_config.py, "moe recompute is not supported with
  // moe_router CUDA graph", core_v0.16.0 on).
  if (has(CudaGraphScope::MoeRouter) && s.parallel.recompute == Recompute::Selective && s.parallel.recompute_modules.has(RecomputeModule::Moe))
    fail("/parallel/recompute_modules", "\"moe\" is not recomputed around a CUDA-graphed router (training.cuda_graph_scope has \"moe_router\"; "
                                        "Megatron-Core's transformer_config.py refuses it)");
}

// The parallel layout against the cluster, the batch and the model's dimensions.
void check_layout(const Scenario& s, const std::string& par) {
  const auto& p = s.parallel;
  const auto& m = s.model;
  const auto& t = s.training;
  const auto fail = [&](const std::string& ptr, const std::string& msg) { throw_config(s.file, ptr, msg); };
  // In double: each factor may be up to 2^24, so the int64 product can overflow before the check.
  const double prod = static_cast<double>(p.dp) * static_cast<double>(p.tp) * static_cast<double>(p.pp) * static_cast<double>(p.cp);
  if (prod != static_cast<double>(s.cluster.gpus()))
    fail(par, "dp*tp*pp*cp = " + itos(p.dp) + "*" + itos(p.tp) + "*" + itos(p.pp) + "*" + itos(p.cp) + " = " + fmt::format("{:.0f}", prod) +
                  " but the cluster has " + itos(s.cluster.nodes) + "*" + itos(s.cluster.gpus_per_node) + " = " +
                  itos(s.cluster.gpus()) + " GPUs");
  if (t.global_batch % (t.micro_batch * p.dp) != 0)
    fail("/training/global_batch", "global_batch " + itos(t.global_batch) + " is not divisible by micro_batch*dp = " +
                                       itos(t.micro_batch) + "*" + itos(p.dp) + " = " + itos(t.micro_batch * p.dp));
  if (m.heads % p.tp != 0) fail(par + "/tp", "model heads (" + itos(m.heads) + ") must be divisible by tp (" + itos(p.tp) + ")");
  // Megatron-Core splits the key-value heads over tensor-parallel ranks and refuses more ranks than
  // heads (megatron/core/transformer/attention.py: num_query_groups divisible by the tp size).
  if (p.tp > m.kv_heads)
    fail(par + "/tp", "tp (" + itos(p.tp) + ") exceeds the model's kv_heads (" + itos(m.kv_heads) +
                          "): Megatron-Core needs the key-value heads (num_query_groups) divisible by tp");
  if (m.kv_heads % p.tp != 0)
    fail(par + "/tp", "model kv_heads (" + itos(m.kv_heads) + ") must be divisible by tp (" + itos(p.tp) + ")");
  if (m.ffn_hidden % p.tp != 0 && !m.moe)
    fail(par + "/tp", "model ffn_hidden (" + itos(m.ffn_hidden) + ") must be divisible by tp (" + itos(p.tp) + ")");
  // Megatron-Core splits a Mamba-2 mixer's heads and groups over the tensor-parallel ranks
  // (megatron/core/ssm/mamba_mixer.py asserts nheads % tp == 0 and ngroups % tp == 0).
  if (m.mamba && (m.mamba->heads % p.tp != 0 || m.mamba->groups % p.tp != 0))
    fail(par + "/tp", "tp (" + itos(p.tp) + ") must divide the model's mamba heads (" + itos(m.mamba->heads) + ") and groups (" +
                          itos(m.mamba->groups) + "): Megatron-Core splits the Mamba-2 mixer by heads and groups");
  if (m.mamba && p.cp > 1) fail(par + "/cp", "context parallelism with Mamba-2 layers (model.mamba) is not modelled");
  if (m.head_dim_override > 0 && m.q_dim() % p.tp != 0)
    fail(par + "/tp", "the query projection (heads x head_dim = " + itos(m.q_dim()) + ") must be divisible by tp (" + itos(p.tp) + ")");
}

// Expert parallelism, its dispatcher and the routing keys against the model's experts.
void check_moe_layout(const Scenario& s, const JsonObject& root, const std::string& par) {
  const auto& p = s.parallel;
  const auto& m = s.model;
  const auto& t = s.training;
  const auto fail = [&](const std::string& ptr, const std::string& msg) { throw_config(s.file, ptr, msg); };
  if (p.moe_dispatcher != MoeDispatcher::AllToAll && !m.moe)
    fail(par + "/moe_dispatcher", "\"" + name_of(p.moe_dispatcher) + "\" dispatches a mixture-of-experts layer's tokens, but the model has "
                                  "no experts (model.moe)");
  if (p.ep > 1 && !m.moe) fail(par + "/ep", "expert parallelism (ep = " + itos(p.ep) + ") needs a mixture-of-experts model (model.moe)");
  if (m.moe) {
    const std::int64_t etp = p.expert_tp();
    if (etp != 1 && etp != p.tp)
      fail(par + "/etp", "expert tensor parallelism is modelled as 1 or tp (" + itos(p.tp) + "), got " + itos(etp));
    if (m.moe->experts % p.ep != 0)
      fail(par + "/ep", "model experts (" + itos(m.moe->experts) + ") must be divisible by ep (" + itos(p.ep) + ")");
    if (m.moe->expert_ffn_hidden % etp != 0)
      fail(par + "/etp", "model expert_ffn_hidden (" + itos(m.moe->expert_ffn_hidden) + ") must be divisible by etp (" + itos(etp) + ")");
    if ((p.tp * p.cp * p.dp) % (p.ep * etp) != 0)
      fail(par + "/ep", "ep * etp = " + itos(p.ep) + "*" + itos(etp) + " must divide tp*cp*dp = " + itos(p.tp * p.cp * p.dp) +
                            " (the expert groups are carved out of each pipeline stage's ranks)");
    if (etp == 1 && p.tp > 1 && !p.sequence_parallel)
      fail(par + "/sequence_parallel", "Megatron-Core runs MoE layers with tensor parallelism (tp = " + itos(p.tp) +
                                           ") and etp = 1 on sequence-parallel tokens: set sequence_parallel true");
    if (!p.fsdp && p.zero_stage >= 2)
      fail(par + "/zero_stage", "mixture-of-experts layers are modelled with Megatron-Core's data parallelism (zero_stage 0 or 1, its "
                                "distributed optimizer) or with FSDP (full sharding, the experts over the expert-data-parallel "
                                "group), not with ZeRO-2/3");
    if (p.fsdp && (p.fsdp->sharding != FsdpSharding::Full || p.fsdp->offload))
      fail(par + "/fsdp", "mixture-of-experts layers are modelled with FSDP's full sharding without CPU offload (torchtitan's and NeMo "
                          "AutoModel's FSDP2 with expert parallelism)");
    if (p.ep > 1 && p.schedule == Schedule::DataParallel)
      fail(par + "/ep", "expert parallelism needs a Megatron-style schedule (ddp or a pipeline schedule), not \"dataparallel\"");
    if (p.ep > 1 && p.order != kMegatronOrder)
      fail(par + "/order", "expert parallelism is modelled with Megatron's default rank order tp-cp-dp-pp");
    if (const double most = max_expert_load(m.moe->experts, m.moe->top_k); t.moe_routing.expert_load > most)
      fail("/training/moe_expert_load", fmt::format("{} is more than one expert can receive: every token, experts / top_k = {}/{} = {:.4g} "
                                                    "times the mean", t.moe_routing.expert_load, m.moe->experts, m.moe->top_k, most));
    if (t.moe_routing.pad_to_capacity && t.moe_routing.capacity_factor == 0)
      fail("/training/moe_pad_to_capacity", "needs moe_capacity_factor: the experts are padded to their capacity (Megatron-Core: "
                                            "moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity)");
    if (t.moe_routing.capacity_factor > 0 && !t.moe_routing.pad_to_capacity && p.moe_dispatcher == MoeDispatcher::AllToAll &&
        std::find(t.cuda_graph_scope.begin(), t.cuda_graph_scope.end(), CudaGraphScope::MoePreprocess) != t.cuda_graph_scope.end())
      fail("/training/cuda_graph_scope", "\"moe_preprocess\" cannot be graphed when the all-to-all dispatcher drops tokens without "
                                         "padding: its preprocess copies the token counts to the host (Megatron-Core refuses it, "
                                         "transformer_config.py)");
    if (t.moe_routing.pad_to_capacity && p.moe_dispatcher == MoeDispatcher::DeepEp)
      fail("/training/moe_pad_to_capacity", "Megatron-Core's flex dispatcher with the deepep backend does not pad the experts' input "
                                            "to capacity (transformer_config.py); use moe_dispatcher \"alltoall\" or \"hybridep\"");
  } else {
    for (const char* key : {"moe_expert_load", "moe_capacity_factor", "moe_pad_to_capacity"})
      if (root.object("training").has(key))
        fail(std::string("/training/") + key, "routes a mixture-of-experts layer's tokens, but the model has no experts (model.moe)");
  }
}

// Context parallelism, multi-token prediction, metrics, sequence parallelism and offloading.
void check_training_features(const Scenario& s, const std::string& par) {
  const auto& p = s.parallel;
  const auto& m = s.model;
  const auto& t = s.training;
  const auto fail = [&](const std::string& ptr, const std::string& msg) { throw_config(s.file, ptr, msg); };
  if (t.seq_len % p.cp != 0) fail(par + "/cp", "seq_len (" + itos(t.seq_len) + ") must be divisible by cp (" + itos(p.cp) + ")");
  if (t.mtp_layers > 0 && !m.hybrid_pattern.empty())
    fail("/training/mtp_layers", "multi-token prediction in a hybrid model (model.hybrid_pattern) is not modelled: Megatron-Core describes "
                                 "its MTP layers by their own pattern (after '/'), which is not read");
  if (t.mtp_layers > 0 && (p.fsdp || p.zero_stage >= 2 || p.schedule == Schedule::DataParallel))
    fail("/training/mtp_layers", "multi-token prediction is modelled with Megatron-Core's schedules and data parallelism (zero_stage 0 "
                                 "or 1, no FSDP, not \"dataparallel\")");
  if (!t.train_metrics.empty() && p.pp > 1)
    fail("/training/train_metrics", "training metrics are modelled for a training loop without pipeline parallelism (Composer's "
                                    "trainer, which has none): pp must be 1, got " + itos(p.pp));
  if (m.sliding_window > 0 && p.cp > 1)
    fail(par + "/cp", "context parallelism with sliding-window attention (model.sliding_window) is not modelled");
  // The shared experts' split, kept here (after the sequence checks) so that a scenario with several
  // errors names the same one first as before.
  if (m.moe && m.moe->shared_expert_ffn_hidden % p.expert_tp() != 0)
    fail(par + "/etp", "model shared_expert_ffn_hidden (" + itos(m.moe->shared_expert_ffn_hidden) + ") must be divisible by etp (" +
                           itos(p.expert_tp()) + ")");
  if (p.sequence_parallel && p.tp == 1) fail(par + "/sequence_parallel", "sequence_parallel needs tp > 1");
  if (p.activation_offload_layers > 0) {
    // Megatron-Core's TransformerConfig checks (transformer_config.py, cpu_offloading).
    if (p.activation_offload_layers >= s.model.layers)
      fail(par + "/activation_offload_layers", "CPU offloading can be done for fewer layers than the model's " + itos(s.model.layers) +
                                                   ", got " + itos(p.activation_offload_layers));
    if (p.pp > 1) fail(par + "/activation_offload_layers", "activation offloading runs with pp = 1 only (Megatron-Core has no support for it with pipeline parallelism)");
    if (p.recompute != Recompute::None)
      fail(par + "/activation_offload_layers", "activation offloading does not run with activation recomputation (recompute is \"" +
                                                   name_of(p.recompute) + "\")");
  }
  // Megatron-Core scatters each sequence's positions over the tp ranks (mappings.py
  // _split_along_first_dim asserts the first dimension divides by the tp size).
  if (p.sequence_parallel && (t.seq_len / p.cp) % p.tp != 0)
    fail(par + "/sequence_parallel", "sequence parallel splits each sequence over the tp ranks: seq_len / cp (" +
                                         itos(t.seq_len / p.cp) + ") must be divisible by tp (" + itos(p.tp) + ")");
}

// Sharding, the kernels the training settings name, and the sequence, against the model and the GPU profile.
void check_sharding_and_kernels(const Scenario& s, const std::string& par) {
  const auto& p = s.parallel;
  const auto& t = s.training;
  const auto fail = [&](const std::string& ptr, const std::string& msg) { throw_config(s.file, ptr, msg); };
  if (p.fsdp && p.zero_stage != 0) fail(par + "/zero_stage", "set either fsdp or zero_stage, not both");
  if (p.fsdp && p.fsdp->offload && p.fsdp->sharding == FsdpSharding::GradOp)
    fail(par + "/fsdp/offload", "CPU offload is modelled for \"full\" and \"hybrid\" sharding (parameters gathered per unit), not \"grad_op\"");
  if (p.fsdp && p.fsdp->offload && !s.profile.has_host)
    fail(par + "/fsdp/offload", "CPU offload needs the profile's memory.host_memory_gbps and memory.host_optimizer_efficiency (" + s.profile.file + " has neither)");
  if (p.fsdp && p.fsdp->sharding == FsdpSharding::Hybrid) {
    const auto g = p.fsdp->shard_group;
    if (g < 1 || p.dp % g != 0)
      fail(par + "/fsdp/shard_group", "hybrid sharding needs shard_group dividing dp (" + itos(p.dp) + "), got " + itos(g));
  }
  if (t.norm_impl == NormImpl::Eager && s.model.norm != NormKind::RmsNorm)
    fail("/training/norm_impl", "\"eager\" is the Llama reference RMSNorm; the model's norm is \"" + name_of(s.model.norm) + "\"");
  if (t.rope_impl == RopeImpl::Eager && s.model.position_embedding != PositionEmbedding::Rope)
    fail("/training/rope_impl", "\"eager\" is the Llama reference rotary embedding; the model's position_embedding is \"" +
                                    name_of(s.model.position_embedding) + "\"");
  if (t.rope_impl == RopeImpl::Unfused && s.model.position_embedding != PositionEmbedding::Rope)
    fail("/training/rope_impl", "\"unfused\" is Megatron-Core's rotary embedding; the model's position_embedding is \"" +
                                    name_of(s.model.position_embedding) + "\"");
  if (t.flash_attention && t.attention_kernel == AttentionKernel::Flash && !s.profile.has_fused_attention)
    fail("/training/flash_attention", "the GPU profile \"" + s.profile.name + "\" (" + s.profile.file +
                                          ") prices no fused attention kernel (FlashAttention needs Ampere or later): set "
                                          "flash_attention false for unfused attention");
  if (t.flash_attention && t.attention_kernel != AttentionKernel::Flash && !s.profile.attention_kernels.count(name_of(t.attention_kernel)))
    fail("/training/attention_kernel", "the GPU profile \"" + s.profile.name + "\" (" + s.profile.file +
                                           ") has no figures for attention kernel \"" + name_of(t.attention_kernel) +
                                           "\" (compute.attention_kernels)");
  for (const auto& [figures, what] : {std::pair{&s.profile.peak_tflops, "peak (compute.peak_tflops."},
                                      std::pair{&s.profile.gemm_max_efficiency, "GEMM efficiency (compute.gemm_max_efficiency."}})
    if (!figures->count(name_of(t.dtype)))
      fail("/training/dtype", "the GPU profile \"" + s.profile.name + "\" (" + s.profile.file + ") has no " + name_of(t.dtype) + " " + what +
                                  name_of(t.dtype) + ")" + (t.dtype == Dtype::Bf16 ? "; GPUs before Ampere have no bf16 tensor cores: use fp16" : ""));
  const std::string gd = t.gemm_dtype();
  if ((gd == "mxfp8" || gd == "nvfp4") && !(s.profile.peak_tflops.count(gd) && s.profile.gemm_max_efficiency.count(gd)))
    fail("/training/fp8_recipe", gd + " needs block-scaled " + (gd == "mxfp8" ? "FP8" : "FP4") +
                                     " tensor cores (Blackwell): the GPU profile \"" + s.profile.name + "\" (" + s.profile.file +
                                     ") has no compute.peak_tflops." + gd + " and compute.gemm_max_efficiency." + gd);
  if (s.model.position_embedding == PositionEmbedding::Learned && t.seq_len > s.model.max_positions)
    fail("/training/seq_len", "seq_len " + itos(t.seq_len) + " is longer than the model's learned position table (max_positions " +
                                  itos(s.model.max_positions) + "): positions past it have no embedding");
}

// The layers' split over the pipeline's stages and chunks, and what recompute_num_layers counts.
void check_pipeline_split(const Scenario& s, const std::string& par) {
  const auto& p = s.parallel;
  const auto& m = s.model;
  const auto fail = [&](const std::string& ptr, const std::string& msg) { throw_config(s.file, ptr, msg); };
  if (p.pp > m.layers)
    fail(par + "/pp", "pp " + itos(p.pp) + " is more than the model's " + itos(m.layers) +
                          " layers: every pipeline stage needs at least one transformer layer");
  const std::int64_t chunks = p.pp * p.vpp;
  if (!p.stage_layers.empty()) {
    const auto n = static_cast<std::int64_t>(p.stage_layers.size());
    // pp entries (layers per pipeline stage, split evenly over its vpp chunks), or with vpp > 1
    // pp*vpp entries: layers per virtual stage in model order (chunk c of stage s is virtual
    // stage c*pp + s, Megatron's interleaving), for uneven chunks such as Llama 3's first and
    // last stages one layer short.
    if (n != p.pp && !(p.vpp > 1 && n == chunks))
      fail(par + "/stage_layers", "expected " + itos(p.pp) + " entries (one per pipeline stage)" +
                                      (p.vpp > 1 ? " or " + itos(chunks) + " (one per virtual stage, pp*vpp)" : std::string()) +
                                      ", got " + itos(n));
    const std::int64_t sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), std::int64_t{0});
    if (sum != m.layers) fail(par + "/stage_layers", "entries sum to " + itos(sum) + " but the model has " + itos(m.layers) + " layers");
    if (n == p.pp)
      for (size_t i = 0; i < p.stage_layers.size(); ++i) {
        if (p.stage_layers[i] == 0) fail(par + "/stage_layers/" + std::to_string(i), "a pipeline stage needs at least one layer");
        if (p.stage_layers[i] % p.vpp != 0)
          fail(par + "/stage_layers/" + std::to_string(i), "must be divisible by vpp (" + itos(p.vpp) + "), or list " + itos(chunks) +
                                                               " entries, one per virtual stage");
      }
    else
      // Only the virtual stages that hold the embedding (the first) or the output layer (the last)
      // may be empty: Megatron's account_for_embedding_in_pipeline_split and
      // account_for_loss_in_pipeline_split give each of them a layer's slot.
      for (std::int64_t i = 1; i + 1 < n; ++i)
        if (p.stage_layers[static_cast<size_t>(i)] == 0)
          fail(par + "/stage_layers/" + std::to_string(i),
               "only the first virtual stage (embedding) and the last (output layer) may hold no transformer layer");
  } else if (m.layers % chunks != 0) {
    fail(par + "/pp", "model layers (" + itos(m.layers) + ") are not divisible among pp*vpp = " + itos(chunks) +
                          " chunks; " + (chunks <= m.layers ? "give parallel.stage_layers for an uneven split" : "lower vpp"));
  }
  if (p.recompute_num_layers > 0) {
    std::int64_t most = 0;  // layers in the largest model chunk
    for (std::int64_t st = 0; st < p.pp; ++st)
      for (std::int64_t c = 0; c < p.vpp; ++c) most = std::max(most, s.layers_in_chunk(st, c));
    if (p.recompute_num_layers > most)
      fail(par + "/recompute_num_layers", "recomputes " + itos(p.recompute_num_layers) + " layers of each model chunk, but the largest chunk has " +
                                              itos(most) + " (model layers over pp*vpp)");
  }
}

void validate(const Scenario& s, const JsonObject& root) {
  const std::string par = "/parallel";
  check_layout(s, par);
  check_moe_layout(s, root, par);
  check_training_features(s, par);
  check_schedule(s, par);
  check_moe_features(s, par);
  check_sharding_and_kernels(s, par);
  check_pipeline_split(s, par);
}

// For an error in a scenario that names a stack: which values the stack supplied.
// The stack's part in a validation error: the fields the stack supplied that the message names
// (its JSON pointer or dotted path), so an error about a field of the scenario's own is not
// followed by the stack's whole list.
std::string stack_blame(const Scenario& s, const std::string& message) {
  std::string from;
  for (const auto& o : s.origins) {
    if (o.from != "stack") continue;
    if (message.find(dotted_pointer(o.field)) != std::string::npos || message.find(o.field) != std::string::npos)
      from += (from.empty() ? "" : ", ") + o.field;
  }
  return from.empty() ? "" : " (stack \"" + s.stack + "\" supplied " + from + "; a field the scenario sets overrides the stack's)";
}

}  // namespace

std::vector<std::int64_t> Scenario::layers_per_stage() const {
  std::vector<std::int64_t> out(static_cast<size_t>(parallel.pp), 0);
  for (std::int64_t s = 0; s < parallel.pp; ++s)
    for (std::int64_t c = 0; c < parallel.vpp; ++c) out[static_cast<size_t>(s)] += layers_in_chunk(s, c);
  return out;
}

std::int64_t Scenario::layers_in_chunk(std::int64_t stage, std::int64_t chunk) const {
  const auto& sl = parallel.stage_layers;
  if (sl.empty()) return model.layers / (parallel.pp * parallel.vpp);
  if (static_cast<std::int64_t>(sl.size()) == parallel.pp) return sl[static_cast<size_t>(stage)] / parallel.vpp;
  return sl[static_cast<size_t>(chunk * parallel.pp + stage)];  // one entry per virtual stage
}

std::int64_t Scenario::first_layer_in_chunk(std::int64_t stage, std::int64_t chunk) const {
  std::int64_t first = 0;
  for (std::int64_t vs = 0; vs < chunk * parallel.pp + stage; ++vs) first += layers_in_chunk(vs % parallel.pp, vs / parallel.pp);
  return first;
}

double Scenario::dtype_bytes() const {
  if (training.dtype == Dtype::Fp32) return 4;
  return 2;  // fp8 / nvfp4 training keeps bf16 activations and master weights; GEMM inputs are cast
}

// FSDP mixed precision: the named dtype, else the dtype the states hold (state_bytes: 4-byte
// weights / gradients are fp32, 2-byte ones the training's 16-bit type).
namespace {
Dtype state_dtype(double bytes, Dtype training_dtype) {
  return bytes == 4 ? Dtype::Fp32 : training_dtype == Dtype::Fp16 ? Dtype::Fp16 : Dtype::Bf16;
}
}  // namespace
Dtype Scenario::fsdp_param_dtype() const {
  if (parallel.fsdp && parallel.fsdp->param_dtype) return *parallel.fsdp->param_dtype;
  return state_dtype(state_bytes(training.dtype, training.optimizer, training.fp32_grad_accumulation).weights, training.dtype);
}
Dtype Scenario::fsdp_reduce_dtype() const {
  if (parallel.fsdp && parallel.fsdp->reduce_dtype) return *parallel.fsdp->reduce_dtype;
  return state_dtype(state_bytes(training.dtype, training.optimizer, training.fp32_grad_accumulation).grads, training.dtype);
}
double Scenario::fsdp_param_bytes() const { return fsdp_param_dtype() == Dtype::Fp32 ? 4.0 : 2.0; }
double Scenario::fsdp_reduce_bytes() const { return fsdp_reduce_dtype() == Dtype::Fp32 ? 4.0 : 2.0; }

namespace {
template <class T>
const T* find_loaded(const std::map<std::string, T>& m, const std::string& name) {
  const auto it = m.find(name);
  return it == m.end() ? nullptr : &it->second;
}
// expected_max_standard_normal(n), from the planner's table when it has it (a quadrature, 0.15 ms).
double expected_max_draw(const LoadedData* loaded, std::int64_t n) {
  if (loaded)
    if (const auto it = loaded->expected_max_draws.find(n); it != loaded->expected_max_draws.end()) return it->second;
  return expected_max_standard_normal(n);
}

}  // namespace

Scenario parse_scenario(const Json& given, const std::string& file, const std::string& data_dir, const LoadedData* loaded) {
  Json j = given;  // the stack's values are filled in here
  const JsonObject root(j, file, "", &declared_scenario_pointers());
  root.reject_undeclared();  // a misspelled top-level key gets "did you mean" before "missing /training"
  Scenario s;
  s.file = file;
  const std::string schema = root.str("schema");
  if (schema != "parasim.scenario/1") root.fail("schema", "expected \"parasim.scenario/1\", got \"" + schema + "\"");
  s.name = root.str("name");
  std::optional<Stack> stack;
  if (root.has("stack")) {
    s.stack = root.str("stack");
    stack = load_stack(data_dir, s.stack, file + ": /stack");
  }
  const Json& mj = root.raw("model");
  if (mj.is_string()) {
    s.model_ref = mj.get<std::string>();
    const ModelSpec* known = loaded ? find_loaded(loaded->models, s.model_ref) : nullptr;
    s.model = known ? *known : load_zoo_model(data_dir, s.model_ref, file + ": /model");
  } else if (mj.is_object()) {
    s.model_ref = "inline";
    s.model = parse_model(JsonObject(mj, file, "/model", root.declared()));
  } else {
    root.fail("model", "expected a zoo model name or an inline model object");
  }
  s.cluster = parse_cluster(root.object("cluster"));
  // A profile path (not a shipped profile's name) is relative to the scenario file.
  const bool gpu_is_path = s.cluster.gpu.find('/') != std::string::npos || s.cluster.gpu.ends_with(".json");
  const Profile* known_gpu = loaded && !gpu_is_path ? find_loaded(loaded->profiles, s.cluster.gpu) : nullptr;
  // Two statements, not a conditional: a conditional of a const lvalue and a prvalue is a const
  // prvalue, which copies the profile twice (a plan parses a scenario per layout).
  if (known_gpu) s.profile = *known_gpu;
  else s.profile = load_profile(data_dir, gpu_is_path ? relative_to_file(file, s.cluster.gpu) : s.cluster.gpu, file + ": /cluster/gpu");
  if (s.profile.gpu_speed_spread.value > 0) s.slowest_gpu.draw = expected_max_draw(loaded, s.cluster.gpus());
  // Unstated network: the profile's reference node (e.g. DGX A100: 8 x HDR 200 Gb/s), its NICs
  // scaled to the node's GPUs (default_nics_per_node).
  if (s.cluster.nics_per_node == 0) s.cluster.nics_per_node = default_nics_per_node(s.profile, s.cluster.gpus_per_node);
  if (s.cluster.nic_gbps == 0) s.cluster.nic_gbps = s.profile.node_nic_gbps.value;
  // A listed fabric is checked when loaded (endpoints, every NIC linked, nodes connected), whatever
  // network model runs.
  if (s.cluster.inter_kind == InterNode::Custom && s.cluster.nodes > 1) build_topology(s.cluster, s.profile);
  StackContext ctx = stack_context(j);
  ctx.gpu = s.profile.name;  // a profile given by path (a copy, a derived part) meets its family's conditions
  ctx.norm = name_of(s.model.norm);
  ctx.position_embedding = name_of(s.model.position_embedding);
  s.origins = apply_stack(j, stack ? &*stack : nullptr, ctx);
  try {
    s.training = parse_training(root.object("training"));
    s.parallel = parse_parallel(root.object("parallel"));
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + stack_blame(s, e.what()));
  }
  if (auto net = root.object_opt("network")) {
    s.network = parse_enum(*net, "model", network_kinds(), NetworkKind::Analytical);
    const std::string algorithm = net->choice("algorithm", nccl_algorithm_choice().name_list(), "auto");
    s.cluster.nccl = nccl_override(algorithm, net->choice("protocol", nccl_protocol_choice().name_list(), "auto"), "/network/");
    net->finish();
  }
  if (auto out = root.object_opt("outputs")) {
    if (out->has("trace")) {
      const std::string t = out->str("trace");
      if (t.empty()) out->fail("trace", "expected a file name for the step's trace (leave outputs.trace out for none)");
      s.trace_path = relative_to_file(file, t);
    }
    out->finish();
  }
  root.finish({"description"});
  try {
    validate(s, root);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + stack_blame(s, e.what()));
  }
  if (s.model.moe && s.parallel.ep > 1) s.moe_rank_draw = expected_max_draw(loaded, s.parallel.ep);
  // Megatron's padded vocabulary (validate() has checked tp): every consumer of model.vocab
  // (parameters, embedding, logits GEMMs, loss, FLOPs) then sees the table that actually runs.
  if (const std::int64_t mult = s.training.make_vocab_size_divisible_by * s.parallel.tp; s.training.make_vocab_size_divisible_by > 1)
    s.model.vocab = (s.model.vocab + mult - 1) / mult * mult;
  return s;
}

Scenario load_scenario(const std::string& path, const std::string& data_dir) {
  return parse_scenario(read_json_file(path), input_name(path), data_dir);
}

namespace {
Json resolved_model(const Scenario& s) {
  Json mj = {{"name", s.model.name},         {"layers", s.model.layers},         {"hidden", s.model.hidden},
             {"heads", s.model.heads},       {"kv_heads", s.model.kv_heads},     {"ffn_hidden", s.model.ffn_hidden},
             {"vocab", s.model.vocab},       {"activation", name_of(s.model.activation)}, {"tied_embeddings", s.model.tied_embeddings},
             {"position_embedding", name_of(s.model.position_embedding)}, {"norm", name_of(s.model.norm)}, {"bias", s.model.bias},
             {"dropout", s.model.dropout}};
  if (s.model.position_embedding == PositionEmbedding::Learned) mj["max_positions"] = s.model.max_positions;
  if (s.model.head_dim_override > 0) mj["head_dim"] = s.model.head_dim_override;
  if (s.model.qk_norm) mj["qk_norm"] = true;
  if (s.model.rope_yarn) mj["rope_scaling"] = "yarn";
  if (s.model.moe) {
    mj["moe"] = {{"experts", s.model.moe->experts}, {"top_k", s.model.moe->top_k}, {"expert_ffn_hidden", s.model.moe->expert_ffn_hidden}};
    if (s.model.moe->shared_expert_ffn_hidden > 0) mj["moe"]["shared_expert_ffn_hidden"] = s.model.moe->shared_expert_ffn_hidden;
    if (s.model.moe->first_dense_layers > 0) mj["moe"]["first_dense_layers"] = s.model.moe->first_dense_layers;
    if (s.model.moe->interval > 1) mj["moe"]["interval"] = s.model.moe->interval;
  }
  if (s.model.mla)
    mj["mla"] = {{"q_lora_rank", s.model.mla->q_lora_rank}, {"kv_lora_rank", s.model.mla->kv_lora_rank},
                 {"qk_nope_head_dim", s.model.mla->qk_nope_head_dim}, {"qk_rope_head_dim", s.model.mla->qk_rope_head_dim},
                 {"v_head_dim", s.model.mla->v_head_dim}};
  if (s.model.sliding_window > 0) mj["sliding_window"] = s.model.sliding_window;
  if (s.model.full_attention_interval > 0) mj["full_attention_interval"] = s.model.full_attention_interval;
  if (s.model.activation_clamp > 0) mj["activation_clamp"] = s.model.activation_clamp;
  if (!s.model.hybrid_pattern.empty()) mj["hybrid_pattern"] = s.model.hybrid_pattern;
  if (s.model.mamba)
    mj["mamba"] = {{"heads", s.model.mamba->heads}, {"head_dim", s.model.mamba->head_dim}, {"state", s.model.mamba->state},
                   {"groups", s.model.mamba->groups}, {"conv_kernel", s.model.mamba->conv_kernel}, {"chunk", s.model.mamba->chunk}};
  return mj;
}

Json resolved_cluster(const Scenario& s) {
  Json c = {{"gpu", s.cluster.gpu},
            {"nodes", s.cluster.nodes},
            {"gpus_per_node", s.cluster.gpus_per_node},
            {"intra_node", {{"kind", name_of(s.cluster.intra_kind)}, {"gbps", s.cluster.intra_gbps > 0 ? s.cluster.intra_gbps : s.profile.nvlink_gbps.value}}},
            {"inter_node", {{"kind", name_of(s.cluster.inter_kind)}, {"nics_per_node", s.cluster.nics_per_node}, {"nic_gbps", s.cluster.nic_gbps}, {"oversubscription", s.cluster.oversubscription}, {"leaf_ports", s.cluster.leaf_ports}, {"spines", s.cluster.spines}}}};
  if (s.cluster.inter_kind == InterNode::Custom) {
    Json links = Json::array();
    for (const auto& l : s.cluster.custom.links) links.push_back({{"a", l.a}, {"b", l.b}, {"gbps", l.gbps}, {"latency_us", l.latency_us}});
    c["inter_node"]["switches"] = s.cluster.custom.switches;
    c["inter_node"]["links"] = links;
  }
  return c;
}

Json resolved_training(const Scenario& s) {
  Json t = {{"global_batch", s.training.global_batch}, {"micro_batch", s.training.micro_batch}, {"seq_len", s.training.seq_len},
            {"dtype", name_of(s.training.dtype)}, {"optimizer", name_of(s.training.optimizer)}, {"flash_attention", s.training.flash_attention},
            {"attention_kernel", name_of(s.training.attention_kernel)},
            {"fp32_grad_accumulation", s.training.fp32_grad_accumulation},
            {"grad_accumulation_fusion", s.training.grad_accumulation_fusion},
            {"norm_impl", name_of(s.training.norm_impl)}, {"rope_impl", name_of(s.training.rope_impl)},
            {"dropout_add_impl", name_of(s.training.dropout_add_impl)}, {"loss_impl", name_of(s.training.loss_impl)},
            {"optimizer_impl", name_of(s.training.optimizer_impl)},
            {"make_vocab_size_divisible_by", s.training.make_vocab_size_divisible_by}};
  if (s.training.dtype == Dtype::Fp8) t["fp8_recipe"] = name_of(s.training.fp8_recipe);
  if (s.training.mtp_layers > 0) t["mtp_layers"] = s.training.mtp_layers;
  if (!s.stack.empty() || !s.training.train_metrics.empty()) t["train_metrics"] = s.training.train_metrics;
  if (s.training.te_op_fuser) t["te_op_fuser"] = true;
  // A stack fills in what the scenario leaves out, so under a stack every field it can set is
  // written, defaults included: the resolved scenario then runs as it was resolved.
  const bool all = !s.stack.empty();
  if (all || s.training.host_launch_us > 0) t["host_launch_us"] = s.training.host_launch_us;
  if (all || s.training.host_loop_launch_us > 0) t["host_loop_launch_us"] = s.training.host_loop_launch_us;
  if (all || s.training.host_op_us > 0) t["host_op_us"] = s.training.host_op_us;
  if (all) t["cuda_graph_scope"] = Json::array();
  for (CudaGraphScope g : s.training.cuda_graph_scope) t["cuda_graph_scope"].push_back(name_of(g));
  if (all || s.training.cuda_graph_impl != CudaGraphImpl::TransformerEngine) t["cuda_graph_impl"] = name_of(s.training.cuda_graph_impl);
  if (all || s.training.launch_impl != LaunchImpl::MegatronTe) t["launch_impl"] = name_of(s.training.launch_impl);
  if (s.training.moe_routing.expert_load > 0) t["moe_expert_load"] = s.training.moe_routing.expert_load;
  if (s.training.moe_routing.capacity_factor > 0) t["moe_capacity_factor"] = s.training.moe_routing.capacity_factor;
  if (s.training.moe_routing.pad_to_capacity) t["moe_pad_to_capacity"] = true;
  return t;
}

Json resolved_parallel(const Scenario& s) {
  Json pj = {{"dp", s.parallel.dp}, {"tp", s.parallel.tp}, {"pp", s.parallel.pp}, {"vpp", s.parallel.vpp}, {"cp", s.parallel.cp},
             {"cp_impl", name_of(s.parallel.cp_impl)}, {"ep", s.parallel.ep}, {"etp", s.parallel.expert_tp()},
             {"schedule", name_of(s.parallel.schedule)}, {"sequence_parallel", s.parallel.sequence_parallel}, {"recompute", name_of(s.parallel.recompute)},
             {"zero_stage", s.parallel.zero_stage}, {"zero_impl", name_of(s.parallel.zero_impl)}, {"bucket_mb", s.parallel.bucket_mb}, {"overlap_grad_reduce", s.parallel.overlap_grad_reduce},
             {"stage_layers", s.parallel.stage_layers.size() > static_cast<size_t>(s.parallel.pp) ? s.parallel.stage_layers : s.layers_per_stage()},
             {"tp_comm_overlap", s.parallel.tp_comm_overlap}, {"ep_comm_overlap", s.parallel.ep_comm_overlap}, {"p2p_sync", s.parallel.p2p_sync},
             {"recompute_fused_attention", s.parallel.recompute_fused_attention},
             {"moe_dispatcher", name_of(s.parallel.moe_dispatcher)},
             {"pipeline_impl", name_of(s.parallel.pipeline_impl)}};
  {
    std::string ord;
    for (ParallelDim d : s.parallel.order) ord += (ord.empty() ? "" : "-") + std::string(name_of(d));
    pj["order"] = ord;
  }
  if (s.parallel.recompute_num_layers >= 0) pj["recompute_num_layers"] = s.parallel.recompute_num_layers;
  if (s.parallel.recompute == Recompute::Selective) pj["recompute_modules"] = s.parallel.recompute_modules.names();
  if (s.parallel.activation_offload_layers > 0) pj["activation_offload_layers"] = s.parallel.activation_offload_layers;
  if (s.parallel.fsdp)
    pj["fsdp"] = {{"sharding", name_of(s.parallel.fsdp->sharding)}, {"shard_group", s.parallel.fsdp->shard_group}, {"prefetch", s.parallel.fsdp->prefetch},
                  {"offload", s.parallel.fsdp->offload}, {"param_dtype", name_of(s.fsdp_param_dtype())}, {"reduce_dtype", name_of(s.fsdp_reduce_dtype())},
                  {"version", s.parallel.fsdp->version}, {"backward_prefetch", name_of(s.parallel.fsdp->backward_prefetch)}};
  else
    pj["fsdp"] = nullptr;
  return pj;
}

// Where each stack-dependent value came from (a "_" key: the resolved scenario still loads).
Json resolved_origins(const Scenario& s) {
  Json origin = Json::object();
  for (const auto& o : s.origins) {
    const std::string from = o.from == "stack" ? "stack " + s.stack : o.from;
    origin[o.field] = o.source.empty() ? from : from + " (" + o.source + ")";
  }
  return origin;
}
}  // namespace

Json Scenario::resolved() const {
  Json j;
  j["schema"] = "parasim.scenario/1";
  j["name"] = name;
  j["model"] = resolved_model(*this);
  j["cluster"] = resolved_cluster(*this);
  j["training"] = resolved_training(*this);
  j["parallel"] = resolved_parallel(*this);
  j["network"] = {{"model", name_of(network)}, {"algorithm", override_name(cluster.nccl.algorithm)}, {"protocol", override_name(cluster.nccl.protocol)}};
  if (!stack.empty()) j["stack"] = stack;
  j["_origins"] = resolved_origins(*this);
  return j;
}

}  // namespace parasim
