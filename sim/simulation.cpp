#include "sim/simulation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string_view>

#include "sim/host_launch.h"
#include "sim/network/flow_network.h"
#include "sim/parallel/emitter.h"
#include "sim/parallel/moe_dispatch.h"
#include "sim/parallel/placement.h"

namespace parasim {

RopeImpl rope_impl(const Scenario& sc) {
  const RopeImpl r = sc.training.rope_impl;
  return r == RopeImpl::Fused && sc.model.rope_yarn ? RopeImpl::Unfused : r;
}

LayerShape layer_shape(const Scenario& sc) {
  LayerShape sh;
  sh.tp = sc.parallel.tp;
  sh.cp = sc.parallel.cp;
  sh.cp_allgather = sc.parallel.cp_allgather();
  sh.sequence_parallel = sc.parallel.sequence_parallel;
  sh.ep = sc.parallel.ep;
  sh.etp = sc.parallel.expert_tp();
  sh.micro_batch = sc.training.micro_batch;
  sh.seq_len = sc.training.seq_len;
  sh.dtype_bytes = sc.dtype_bytes();
  sh.flash_attention = sc.training.flash_attention;
  sh.fp8_gemms = sc.training.dtype == Dtype::Fp8;
  sh.fp8_cast_bytes = fp8_cast_bytes(sc.training.fp8_recipe);
  sh.fp8_saved_input_bytes = fp8_saved_input_bytes(sc.training.fp8_recipe);
  sh.eager_norm = sc.training.norm_impl == NormImpl::Eager;
  sh.two_pass_norm = sc.training.norm_impl == NormImpl::TwoPass;
  sh.rope = rope_impl(sc);
  sh.eager_dropout_add = sc.training.dropout_add_impl == DropoutAddImpl::Eager;
  sh.mtp_layers = sc.training.mtp_layers;
  sh.loss = sc.training.loss_impl;
  sh.train_metrics = static_cast<std::int64_t>(sc.training.train_metrics.size());
  sh.eager_launches = sc.training.launch_impl == LaunchImpl::Eager;
  sh.norm_in_linear = !sh.eager_launches;
  sh.moe_python_glue = !sh.eager_launches && !sc.training.te_op_fuser;
  sh.moe_sorts_chunks = sc.parallel.moe_dispatcher == MoeDispatcher::AllToAll;
  sh.fp8_quantize_launches = fp8_quantize_launches(sc.training.fp8_recipe);
  sh.fp8_grouped_quantize_fused = fp8_grouped_quantize_fused(sc.training.fp8_recipe);
  set_moe_routing(sh, sc.model, sc.training.moe_routing, sc.moe_rank_draw);
  return sh;
}

void set_moe_routing(LayerShape& sh, const ModelSpec& m, const MoeRouting& r, double draw) {
  if (!m.moe) return;
  const MoeLoad load = moe_load(m.moe->experts, m.moe->top_k, sh.moe_tokens(), sh.ep, r, draw);
  sh.moe_sent = load.sent;
  sh.moe_busiest = load.busiest;
  sh.moe_padded = r.pad_to_capacity;
}

namespace {

// The CUDA-graph scopes and selective-recompute modules the scenario names that no layer of its
// model has (Megatron accepts them and does nothing): "" when every one applies.
std::string idle_settings_note(const Scenario& sc) {
  const std::vector<LayerKind> kinds = sc.model.kinds();
  const auto any = [&](auto&& pred) { return std::any_of(kinds.begin(), kinds.end(), pred); };
  const bool attention = any([](const LayerKind& k) { return k.has_attention(); });
  const bool mamba = any([](const LayerKind& k) { return k.type == LayerType::Mamba; });
  const bool dense_mlp = any([](const LayerKind& k) { return k.has_mlp() && !k.moe; });
  const bool moe = sc.model.moe.has_value();
  std::vector<std::string> idle;
  for (const CudaGraphScope s : sc.training.cuda_graph_scope) {
    const bool applies = s == CudaGraphScope::Attn ? attention : s == CudaGraphScope::Mamba ? mamba : moe;
    if (!applies) idle.push_back("cuda_graph_scope " + name_of(s));
  }
  if (sc.parallel.recompute == Recompute::Selective)
    for (const std::string& n : sc.parallel.recompute_modules.names()) {
      const RecomputeModule m = recompute_module_from_name(n);
      const bool applies = m == RecomputeModule::CoreAttn    ? attention
                           : m == RecomputeModule::Layernorm ? true
                           : m == RecomputeModule::MlaUpProj ? sc.model.mla.has_value()
                           : m == RecomputeModule::Mlp       ? dense_mlp
                           : m == RecomputeModule::SharedExperts ? moe && sc.model.moe->shared_expert_ffn_hidden > 0
                                                                 : moe;
      if (!applies) idle.push_back("recompute_modules " + n);
    }
  if (idle.empty()) return "";
  std::string s;
  for (const std::string& x : idle) s += (s.empty() ? "" : ", ") + x;
  return "set, but no layer of " + sc.model.name + " has what it names, so it changes nothing: " + s;
}

// How the scenario's MoE layers route (sim/parallel/moe_routing.h), for the notes.
std::string moe_routing_note(const Scenario& sc) {
  const LayerShape sh = layer_shape(sc);
  const MoeRouting& r = sc.training.moe_routing;
  std::string note = r.expert_load > 0
                         ? fmt::format("MoE: the busiest expert receives {:g}x the mean routed tokens (training.moe_expert_load), so the busiest "
                                       "of {} expert-parallel ranks receives {:.4f}x",
                                       r.expert_load, sh.ep, sh.moe_busiest)
                         : fmt::format("MoE: routing taken as balanced by force, each token's experts drawn at random as benchmarks run it "
                                       "(Megatron's moe_router_force_load_balancing): the busiest of {} expert-parallel ranks receives {:.4f}x "
                                       "the mean; a trained router is more uneven (training.moe_expert_load sets your run's)",
                                       sh.ep, forced_balance_ratio(sc.model.moe->experts, sc.model.moe->top_k, sh.moe_tokens(), sh.ep, sc.moe_rank_draw));
  if (r.capacity_factor > 0)
    note += fmt::format("; capacity factor {:g}: each expert keeps at most that times the mean, {}, so each rank sends {:.4f}x its tokens x top_k",
                        r.capacity_factor, r.pad_to_capacity ? "padded to it" : "the rest dropped", sh.moe_sent);
  return note + "; every rank of the group waits for the busiest at the combine";
}

// The host thread is modelled with a launch cost, unless the whole step is one CUDA graph.
bool host_modelled(const Scenario& s) {
  return s.training.host_launch_us > 0 && s.training.cuda_graph_impl != CudaGraphImpl::FullIteration;
}

// The scenario's layer graphs, kernel prices and network, built once and handed to `fn` (a folded
// step and a bound lower several programs from them).
template <class F>
void with_pricing(const Scenario& sc, const NetworkModel* network, F&& fn) {
  const ModelGraph layers = build_model_graph(sc.model, layer_shape(sc));
  const CostModel cost(sc.profile, sc.training.gemm_dtype(), sc.training.priced_attention_kernel(), sc.slowest_gpu);
  const auto own = network ? nullptr : make_network(sc.network, sc.profile, sc.cluster);
  const NetworkModel& base = network ? *network : *own;
  const ScaledNetwork scaled(base, sc.profile.time_scale.network);
  fn(layers, cost, sc.profile.time_scale.network != 1.0 ? static_cast<const NetworkModel&>(scaled) : base);
}

// The program of `s` (then run by `run`, when given): a RangeError or a forced NCCL algorithm that
// does not apply as the scenario's ConfigError.
Program lower_step(const Scenario& s, const Registries& reg, const LoweringInput& in, Timeline* run = nullptr,
                   bool memory_curve = true) {
  try {
    Program p = lower(reg.schedules, in);
    if (host_modelled(s))
      add_host_issue(p, host_launch_model(p, in.layers, host_costs(s.training), graphed_modules(s.training.cuda_graph_scope), host_replay(s),
                                          &in.cost));
    if (run) {
      EngineOptions eo;
      eo.overlap_compute_slowdown = s.profile.overlap_compute_slowdown.value;
      eo.memory_curve = memory_curve;
      *run = run_program(p, eo);
    }
    return p;
  } catch (const RangeError& e) {
    throw ConfigError(s.file + ": /training: " + e.what());
  } catch (const ForcedAlgorithmError& e) {
    throw ConfigError(s.file + ": " + (s.cluster.nccl.algorithm ? "/network/algorithm" : "/network/protocol") + ": " + e.what());
  }
}

// Each rank's compute-stream work in seconds: its ops' durations (a collective's the shortest of
// its members', as the engine starts them together).
std::vector<double> compute_work_s(const Program& p) {
  std::vector<Time> shortest(p.collectives.size(), kMaxTime);
  for (size_t c = 0; c < p.collectives.size(); ++c)
    for (const OpId m : p.collectives[c]) shortest[c] = std::min(shortest[c], p.ops[static_cast<size_t>(m)].duration);
  std::vector<double> work(p.ranks.size(), 0.0);
  for (const Op& op : p.ops)
    if (op.stream == Stream::Compute)
      work[static_cast<size_t>(op.rank)] += static_cast<double>(op.collective < 0 ? op.duration : shortest[static_cast<size_t>(op.collective)]);
  for (double& w : work) w /= static_cast<double>(kPicosPerSecond);
  return work;
}

// The kernels the host waits for the GPU before (Kernel::host_sync), as a clause of the host note.
std::string inner_sync_clause(const ModelGraph& layers) {
  std::vector<std::string> names;
  for (const LayerGraph& k : layers.kinds)
    for (const Block* b : {&k.attn_fwd, &k.mlp_fwd})
      for (const Kernel& x : b->kernels)
        if (x.host_sync && std::find(names.begin(), names.end(), x.name) == names.end()) names.push_back(x.name);
  if (names.empty()) return "";
  return fmt::format("; it also waits for the GPU before each {} (a synchronising copy in the framework's code), forward and "
                     "where recompute replays it", fmt::join(names, ", "));
}

// MFU counts the model's FLOPs as the field does (Megatron-LM's formula, Narayanan et al. SC'21,
// appendix: attention over the full score matrix, every token through its top_k experts); HFU counts
// what the kernels execute (causal attention computes half of the matrix; tokens a capacity factor
// drops skip their experts). Only HFU is bounded by the hardware: where MFU passes the part's
// sustained clock the note says why, naming the dropped tokens where the routing drops some
// (`drops`: a layer's routed copies sent below one per token and expert, LayerShape::moe_sent).
std::string mfu_note(const Scenario& sc, const Result& r, bool drops) {
  if (r.mfu <= sc.profile.sustained_clock_ratio.value || r.hfu >= r.mfu) return "";
  const std::string why = drops ? "causal attention's full score matrix and, for every token, its top_k experts, which the "
                                  "tokens the capacity factor drops never reach (moe_capacity_factor)"
                                : "causal attention's full score matrix";
  return fmt::format("MFU {:.0f} % counts {} (the model-FLOPs convention); the FLOPs executed give HFU {:.0f} %", 100 * r.mfu, why,
                     100 * r.hfu);
}

// How close the host thread that launches the kernels comes to the GPU: the rank whose host issue
// time is the largest share of its compute-stream work (a share near or above 1: launch-bound).
std::string host_launch_note(const Scenario& sc, const Program& p, const ModelGraph& layers) {
  const HostCosts costs = host_costs(sc.training);
  const HostLaunch h = host_launch_model(p, layers, costs, graphed_modules(sc.training.cuda_graph_scope), host_replay(sc), nullptr);
  const std::vector<double> host = host_issue_s(p, h), gpu = compute_work_s(p);
  size_t worst = 0;
  for (size_t r = 0; r < host.size(); ++r)
    if (host[r] * gpu[worst] > host[worst] * gpu[r]) worst = r;
  if (host.empty() || gpu[worst] <= 0) return "";
  const double share = host[worst] / gpu[worst];
  const std::string loop = costs.per_loop == costs.per_call ? "" : fmt::format(", {:g} us per further kernel of its own loop", sc.training.host_loop_launch_us);
  const bool any_ops = std::any_of(h.counts.begin(), h.counts.end(), [](const LaunchCount& c) { return c.ops > 0; });
  const std::string op = costs.per_op == costs.per_call || !any_ops
                             ? ""
                             : fmt::format(", {:g} us per bare PyTorch op of a module's Python loop", sc.training.host_op_us);
  return fmt::format("host launch path ({:g} us per framework call{}{}{}): rank {}'s host spends {:.0f} % of its GPU work time issuing its "
                     "kernels{}{}", sc.training.host_launch_us, loop, op, sc.training.cuda_graph_scope.empty() ? "" : ", CUDA graphs over part of each layer",
                     p.ranks[worst].real_rank, 100 * share, share >= 1 ? ": launch-bound, the GPU waits on the host" : "; the GPU waits on it only after sync points",
                     inner_sync_clause(layers));
}

// Host-launch settings the scenario sets that cannot act on it: any of them when the whole step is
// one CUDA graph, a loop or op cost with no cost per call (the host is not modelled), or under eager
// PyTorch's modules (every launch there is a call). (A CUDA-graph scope no layer has: idle_settings_note.)
std::vector<std::string> inert_host_settings(const Scenario& sc) {
  std::vector<std::string> out;
  const TrainingSpec& t = sc.training;
  // A value the scenario's stack supplied is the framework's, not the user's: not told.
  const auto set = [&](std::string_view key, double v) {
    return v > 0 && std::none_of(sc.origins.begin(), sc.origins.end(),
                                 [&](const FieldOrigin& o) { return o.from == "stack" && o.field == "training." + std::string(key); });
  };
  if (t.cuda_graph_impl == CudaGraphImpl::FullIteration) {
    if (set("host_launch_us", t.host_launch_us) || set("host_loop_launch_us", t.host_loop_launch_us) || set("host_op_us", t.host_op_us))
      out.push_back("the host launch costs (training.host_*_us) have no effect with cuda_graph_impl \"full_iteration\" (the step is one CUDA graph)");
    return out;
  }
  for (const auto& [key, v] : {std::pair{"host_loop_launch_us", t.host_loop_launch_us}, std::pair{"host_op_us", t.host_op_us}}) {
    if (!set(key, v)) continue;
    if (t.host_launch_us <= 0)
      out.push_back(fmt::format("training.{} has no effect without training.host_launch_us (the host is not modelled)", key));
    else if (t.launch_impl == LaunchImpl::Eager)
      out.push_back(fmt::format("training.{} has no effect with launch_impl \"eager\" (each launch is a call at host_launch_us)", key));
  }
  return out;
}

// How the dispatcher table's points read at `at` were obtained: "assumed" if either is.
std::string dispatch_point_how(const Profile::DispatchTable& t, MoeDispatcher d, std::int64_t at) {
  const std::vector<Profile::DispatchPoint>& pts = t.at(d);
  const auto [i, j] = Profile::dispatch_bracket(pts, at);
  return pts[j].efficiency.how == "assumed" ? pts[j].efficiency.how : pts[i].efficiency.how;
}

// What rates an MoE dispatcher's own kernels (DeepEP, HybridEP) move their tokens at in this scenario
// (dispatch_rates): over NVLink and, across nodes, over RDMA, each the profile's point or, lacking
// one, NCCL's.
std::string dispatcher_rate_note(const Scenario& sc) {
  const MoeDispatcher d = sc.parallel.moe_dispatcher;
  if (d == MoeDispatcher::AllToAll || !sc.model.moe || sc.parallel.ep <= 1) return "";
  const ScenarioDispatch g = scenario_dispatch(sc);
  const std::int64_t nodes = g.nodes, per_node = g.ranks_per_node;
  const DispatchRates& r = g.rates;
  std::string nvlink;
  if (r.nvlink > 0)
    nvlink = fmt::format("{} move over NVLink among {} ranks at {:.3g} of the NVLink line rate, the profile's {} figure for its "
                         "kernels (network.moe_dispatch_nvlink)", nodes > 1 ? "; its tokens" : ": its tokens", per_node, r.nvlink,
                         dispatch_point_how(sc.profile.moe_dispatch_nvlink, d, per_node));
  if (nodes <= 1) return nvlink.empty() ? "" : fmt::format("MoE dispatcher {}{}", name_of(d), nvlink);
  if (r.nic > 0)
    return fmt::format("MoE dispatcher {} across {} nodes: its cross-node tokens move at {:.3g} of the NIC line rate, the profile's "
                       "{} figure for its kernels (network.moe_dispatch_rdma){}", name_of(d), nodes, r.nic,
                       dispatch_point_how(sc.profile.moe_dispatch_rdma, d, nodes), nvlink);
  return fmt::format("MoE dispatcher {} across {} nodes: profile \"{}\" has no rate for its kernels (network.moe_dispatch_rdma), so its "
                     "cross-node tokens move at NCCL's inter_bus_efficiency ({:.3g}){}", name_of(d), nodes, sc.profile.name,
                     sc.profile.inter_bus_efficiency.value, nvlink);
}

// Lowers, runs and measures the scenario `s` (sc with another microbatch count, when folding); the
// memory curve only for a Timeline.
void simulate_step(const Scenario& s, const Registries& reg, const LayerGraph& graph, const ModelGraph& layers,
                   const CostModel& cost, const NetworkModel& net, Detail detail, SimulationOutput& out) {
  // A layer's ops as one fused op, except where the ops are read one by one: a trace, the host's
  // issue of each op's kernels.
  const LoweringInput in{s, graph, layers, cost, net, detail != Detail::Timeline && !host_modelled(s)};
  out.program = lower_step(s, reg, in, &out.timeline, detail == Detail::Timeline);
  MetricsInput mi;
  mi.scenario = s.name;
  mi.tokens_per_step = static_cast<double>(s.training.global_batch) * static_cast<double>(s.training.seq_len);
  mi.gpus = s.cluster.gpus();
  mi.peak_flops = cost.peak_flops();
  mi.capacity_bytes = s.profile.device.memory_bytes;
  out.result = compute_metrics(mi, out.program, out.timeline);
}

// The step folded onto its steady state (sim/steady_state.h): three microbatch counts past the
// pipeline's fill simulated, the first doubled while the three are not yet periodic; nothing when
// the three would cost as many microbatches as the step itself.
bool simulate_folded(const Scenario& sc, const ScheduleRegistry& schedules,
                     const std::function<void(const Scenario&, SimulationOutput&)>& step, SimulationOutput& out) {
  const std::int64_t m = sc.microbatches();
  const double tokens = static_cast<double>(sc.training.global_batch) * static_cast<double>(sc.training.seq_len);
  FoldPoints f = fold_points(sc, schedules);
  if (f.simulated() >= m) return false;
  Scenario s = sc;  // one copy for the three points (a Scenario holds its profile and model): its batch set per point (set_microbatches)
  for (; f.simulated() < m; f = f.later()) {
    std::array<Result, 3> at;
    std::array<TimePartition, 3> times;
    bool with_times = true;
    for (int k = 0; k < 3; ++k) {
      SimulationOutput part;
      set_microbatches(s, f.at(k));
      step(s, part);
      at[static_cast<size_t>(k)] = std::move(part.result);
      if (part.partition) times[static_cast<size_t>(k)] = std::move(*part.partition);
      else with_times = false;
    }
    std::optional<Result> r = extrapolate_steady_state(at, f, m, tokens);
    if (r && with_times) {
      out.partition = extrapolate_partition(times, f, m);
      if (!out.partition) r.reset();  // a line of the partition not yet periodic: try further on
    }
    if (r) {
      out.result = std::move(*r);
      out.result.scenario = sc.name;
      out.fold.simulated = {f.at(0), f.at(1), f.at(2)};
      return true;
    }
  }
  return false;
}

// The profile figures this scenario's step depends on that are marked assumed; "" if none.
std::string assumed_figures_note(const Scenario& sc, double pace) {
  std::set<std::string> assumed;
  const Profile& p = sc.profile;
  for (const auto& [name, f] : std::initializer_list<std::pair<const char*, const Figure*>>{
           {"gemm_tile", &p.gemm_tile_m}, {"kernel_overhead_us", &p.kernel_overhead_us},
           {"gemm_fixed_us", &p.gemm_fixed_us}, {"gemm_epilogue_gbps", &p.gemm_epilogue_gbps},
           {"hbm_efficiency", &p.hbm_efficiency}, {"runtime_reserved_gib", &p.runtime_reserved_gib},
           {"overlap_compute_slowdown", &p.overlap_compute_slowdown}, {"inter_alpha_us", &p.inter_alpha_us},
           {"pcie_gbps", &p.pcie_gbps}, {"sustained_clock_ratio", &p.sustained_clock_ratio}})
    if (f->how == "assumed") assumed.insert(name);
  if (pace > 1.0 && p.gpu_speed_spread.how == "assumed") assumed.insert("gpu_speed_spread");
  for (const auto& f : Profile::kKernelClassFigures)
    if ((p.kernel_class_ratio.*f.member).how == "assumed") assumed.insert(std::string("kernel_class_ratio.") + f.name);
  // Figures only some plans use: listed when the plan depends on them.
  const std::string gd = sc.training.gemm_dtype();
  if (p.gemm_max_efficiency.count(gd) && p.gemm_max_efficiency.at(gd).how == "assumed") assumed.insert("gemm_max_efficiency." + gd);
  if (sc.training.flash_attention) {
    const Profile::AttentionKernel& a = p.attention_kernel(name_of(sc.training.attention_kernel));
    const bool dflt = sc.training.attention_kernel == AttentionKernel::Flash;
    const std::string k = dflt ? "attention_" : "attention_kernels." + name_of(sc.training.attention_kernel) + ".";
    // One entry for the kernel's efficiencies and one for its sequence and head-dim overheads.
    for (const auto& f : Profile::kAttentionFigures)
      if ((a.*f.member).how == "assumed")
        assumed.insert(std::string_view(f.name).ends_with("efficiency") ? (dflt ? "attention_efficiency" : k + "efficiency") : k + "overheads");
  }
  if (sc.cluster.gpus_per_node > 1 && p.intra_bus_efficiency.how == "assumed") assumed.insert("intra_bus_efficiency");
  if (sc.cluster.nodes > 1 && p.inter_bus_efficiency.how == "assumed") assumed.insert("inter_bus_efficiency");
  if (sc.parallel.fsdp && sc.parallel.fsdp->offload) {
    if (p.host_memory_gbps.how == "assumed") assumed.insert("host_memory_gbps");
    if (p.host_optimizer_efficiency.how == "assumed") assumed.insert("host_optimizer_efficiency");
  }
  if (p.nccl.present && p.nccl.how == "assumed") assumed.insert("network.nccl");
  if (const ScenarioDispatch g = scenario_dispatch(sc); g.rates.nic > 0 || g.rates.nvlink > 0) {
    const MoeDispatcher d = sc.parallel.moe_dispatcher;
    if (g.rates.nic > 0 && dispatch_point_how(p.moe_dispatch_rdma, d, g.nodes) == "assumed") assumed.insert("moe_dispatch_rdma." + name_of(d));
    if (g.rates.nvlink > 0 && dispatch_point_how(p.moe_dispatch_nvlink, d, g.ranks_per_node) == "assumed")
      assumed.insert("moe_dispatch_nvlink." + name_of(d));
  }
  if (assumed.empty()) return "";
  std::string s = "profile figures marked 'assumed' (no measurement yet):";
  for (const auto& a : assumed) s += " " + a;
  return s;
}

// The pace of the slowest GPU (compute.gpu_speed_spread), when it slows the step.
std::string pace_note(const Scenario& sc, double pace) {
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "the slowest of %lld GPUs sets the pace: every kernel takes %.4fx the profile's time (gpu_speed_spread %.2f %% "
                "x %.3f, the expected slowest of %lld draws)",
                static_cast<long long>(sc.cluster.gpus()), pace, 100.0 * sc.profile.gpu_speed_spread.value, sc.slowest_gpu.draw,
                static_cast<long long>(sc.cluster.gpus()));
  return buf;
}

// Without a stack, the framework-dependent choices that took parasim's defaults; "" otherwise.
std::string stack_defaults_note(const Scenario& sc) {
  if (!sc.stack.empty()) return "";
  std::string defaulted;
  for (const auto& o : sc.origins)
    if (o.from == "default") defaulted += (defaulted.empty() ? "" : ", ") + o.field.substr(o.field.find('.') + 1);
  if (defaulted.empty()) return "";
  return "no stack named: these framework-dependent choices took parasim's defaults: " + defaulted +
         "; name the framework that runs the job (\"stack\", `parasim list stacks`); `parasim stack compare " + sc.file +
         "` shows how much each stack changes the step";
}

void add_layout_notes(const Scenario& sc, const Result& r, std::vector<std::string>& w) {
  // Layouts that run but that real jobs regret: tensor parallelism over the inter-node network, and
  // a fit so tight that allocator fragmentation or a longer sequence goes out of memory.
  const Layout layout = make_layout(sc);  // the TP groups' real placement under the rank order
  if (sc.parallel.tp > 1 && place_groups(layout.world(), sc.cluster.gpus_per_node, {{layout.s_tp, layout.tp}}).max_nodes > 1)
    w.push_back("tensor parallelism spans nodes: tp " + std::to_string(sc.parallel.tp) + " over " +
                std::to_string(sc.cluster.gpus_per_node) + " GPUs per node puts every layer's TP collectives on the inter-node network");
  if (const double headroom = 1.0 - r.peak_mem_gib / r.capacity_gib; r.fits_in_memory && r.capacity_gib > 0 && headroom < 0.10) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "tight fit: peak %.1f GiB leaves %.1f %% of the %.1f GiB free; real jobs with under 10 %% headroom "
                  "often go out of memory (fragmentation, longer sequences)", r.peak_mem_gib, 100 * headroom, r.capacity_gib);
    w.push_back(buf);
  }
  if (!r.fits_in_memory) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "out of memory: peak %.1f GiB exceeds the %.1f GiB of %s", r.peak_mem_gib, r.capacity_gib,
                  sc.profile.device.name.c_str());
    w.push_back(buf);
  }
}

}  // namespace

std::vector<NamedChoice> named_choices(const Registries& reg) {
  std::vector<NamedChoice> out = {describe(reg.schedules, "schedules", "/parallel/schedule"),
                                  describe(reg.pipeline_engines, "pipeline-impls", "/parallel/pipeline_impl")};
  for (NamedChoice& c : scenario_choices()) out.push_back(std::move(c));
  return out;
}

SimulationOutput simulate(const Scenario& sc, const Registries& reg, const NetworkModel* network, Detail detail) {
  SimulationOutput out;
  std::int64_t lookups = -1, fallbacks = 0;  // the GEMM shapes one lowering priced (a folded step lowers three times)
  std::string host_note;
  double pace = 1.0;
  bool drops = false;  // the routing drops tokens (a capacity factor under the load, no padding)
  with_pricing(sc, network, [&](const ModelGraph& layers, const CostModel& cost, const NetworkModel& net) {
    pace = cost.pace();
    drops = std::any_of(layers.kinds.begin(), layers.kinds.end(), [](const LayerGraph& k) { return k.shape.moe_sent < 1 && !k.shape.moe_padded; });
    const auto step = [&](const Scenario& s, SimulationOutput& o) {
      simulate_step(s, reg, layers.kinds.front(), layers, cost, net, detail, o);
      if (host_modelled(s)) host_note = host_launch_note(s, o.program, layers);
      if (detail == Detail::Partition) o.partition = partition_time(o.program, o.timeline, o.result);
      if (lookups < 0) lookups = cost.lookups(), fallbacks = cost.fallbacks();
    };
    out.fold.microbatches = sc.microbatches();
    if (detail == Detail::Timeline || !simulate_folded(sc, reg.schedules, step, out)) step(sc, out);
  });
  auto& w = out.result.warnings;
  if (!host_note.empty()) w.push_back(host_note);
  for (std::string& n : inert_host_settings(sc)) w.push_back(std::move(n));
  if (std::string n = dispatcher_rate_note(sc); !n.empty()) w.push_back(std::move(n));
  if (sc.training.rope_impl == RopeImpl::Fused && rope_impl(sc) == RopeImpl::Unfused)
    w.push_back("RoPE: the model's RoPE is YaRN-scaled (position embedding type \"yarn\"), for which Megatron turns its RoPE fusion "
                "off (Megatron-Bridge GPTModelProvider.provide(), utils/fusions.py), so Megatron-Core runs its unfused RoPE: 12 PyTorch "
                "ops forward and 7 backward per query or key tensor (training.rope_impl \"unfused\", rope_utils.py)");
  if (out.fold.folded())
    w.push_back(fmt::format("steady state: of the {} microbatches per pipeline, {}, {} and {} were simulated; every figure of the "
                            "three lies on one line (to 1e-9) and was extended to {} (sim/steady_state.h)",
                            out.fold.microbatches, out.fold.simulated[0], out.fold.simulated[1], out.fold.simulated[2],
                            out.fold.microbatches));
  if (std::string n = mfu_note(sc, out.result, drops); !n.empty()) w.push_back(std::move(n));
  if (fallbacks > 0)
    w.push_back(std::to_string(fallbacks) + " of " + std::to_string(lookups) +
                " GEMM shapes priced by the GEMM kernel model (no measured point in profile \"" + sc.profile.name + "\" within 2x)");
  if (pace > 1.0) w.push_back(pace_note(sc, pace));
  if (std::string n = assumed_figures_note(sc, pace); !n.empty()) w.push_back(std::move(n));
  if (std::string n = stack_defaults_note(sc); !n.empty()) w.push_back(std::move(n));
  if (sc.model.moe) w.push_back(moe_routing_note(sc));
  if (std::string idle = idle_settings_note(sc); !idle.empty()) w.push_back(std::move(idle));
  add_layout_notes(sc, out.result, w);
  return out;
}

double step_floor_s(const Scenario& sc, const Registries& reg) {
  const ScheduleDef& def = schedule_def(reg.schedules, sc.parallel.schedule);
  const auto m = static_cast<double>(sc.microbatches());
  double busiest = 0;
  with_pricing(sc, nullptr, [&](const ModelGraph& layers, const CostModel& cost, const NetworkModel& net) {
    Program unused;
    const LoweringInput in{sc, layers.kinds.front(), layers, cost, net};
    const Emitter em(in, unused);
    const ParallelSpec& par = sc.parallel;
    // head: the first chunk's forward of one microbatch on the stages before (a stage's first
    // action waits for it); tail: their backward of one microbatch, which follows the stage's last
    // action where that is a first-chunk backward (every schedule that does not split it;
    // tests/core/step_bound_test.cpp checks each schedule's order). Only for schedules the
    // registry gives as stage orders: one that lowers itself promises neither (DataParallel has
    // one stage).
    const bool ordered = static_cast<bool>(def.order);
    double head = 0, tail = 0;
    for (std::int32_t stage = 0; stage < par.pp; ++stage) {
      Emitter::ChunkFloor first;
      double work = 0;
      for (std::int32_t chunk = 0; chunk < par.vpp; ++chunk) {
        const Emitter::ChunkFloor c = em.chunk_floor(stage, chunk, sc.layers_in_chunk(stage, chunk));
        if (chunk == 0) first = c;
        work += c.total();
      }
      busiest = std::max(busiest, head + m * work + (def.splits_backward ? 0.0 : tail));
      if (!ordered) continue;
      head += first.fwd_ps;
      tail += first.bwd_ps;
    }
  });
  return busiest / static_cast<double>(kPicosPerSecond);
}

double step_lower_bound_s(const Scenario& sc, const Registries& reg) {
  const std::int64_t m = sc.microbatches();
  const std::int64_t g = fold_points(sc, reg.schedules).spacing;
  double bound = 0;
  with_pricing(sc, nullptr, [&](const ModelGraph& layers, const CostModel& cost, const NetworkModel& net) {
    if (m <= 2 * g) {
      const LoweringInput in{sc, layers.kinds.front(), layers, cost, net};
      for (const double w : compute_work_s(lower_step(sc, reg, in))) bound = std::max(bound, w);
      return;
    }
    Scenario s = sc;  // one copy for the two points (a Scenario holds its profile and model), its batch set per point
    const auto work = [&](std::int64_t k) {
      set_microbatches(s, k);
      const LoweringInput in{s, layers.kinds.front(), layers, cost, net};
      return compute_work_s(lower_step(s, reg, in));
    };
    const std::vector<double> one = work(g), two = work(2 * g);
    const double groups = static_cast<double>(m - g) / static_cast<double>(g);
    for (size_t r = 0; r < one.size() && r < two.size(); ++r) bound = std::max(bound, one[r] + groups * (two[r] - one[r]));
  });
  return bound;
}

}  // namespace parasim
