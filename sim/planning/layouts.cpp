#include "sim/planning/layouts.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <queue>

#include <fmt/format.h>

#include "sim/memory/memory_model.h"

namespace parasim {

namespace {

std::vector<std::int64_t> divisors(std::int64_t n, std::int64_t max) {
  std::vector<std::int64_t> d;
  for (std::int64_t k = 1; k <= n && k <= max; ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}

std::vector<std::int64_t> powers_of_two(std::int64_t max) {
  std::vector<std::int64_t> v;
  for (std::int64_t k = 1; k <= max; k *= 2) v.push_back(k);
  return v;
}

}  // namespace

void choose_base(PlanJob& job, const std::string& dir) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const Json j = read_json_file(f.string());
    const Json::json_pointer gpu("/cluster/gpu");
    if (!j.is_object() || !j.contains(gpu) || j.at(gpu) != job.gpu) continue;
    if (j.value("/cluster/inter_node/kind"_json_pointer, name_of(InterNode::FatTree)) == name_of(InterNode::Custom)) continue;  // fixed node count
    job.base = {{"schema", "parasim.scenario/1"}, {"cluster", j.at("cluster")}, {"training", Json::object()}};
    job.base_file = f.filename().string();
    return;
  }
  job.base = {{"schema", "parasim.scenario/1"},
              {"cluster", {{"gpu", job.gpu}, {"gpus_per_node", 8}, {"intra_node", {{"kind", name_of(IntraNode::NvSwitch)}}},
                           {"inter_node", {{"kind", name_of(InterNode::FatTree)}}}}},
              {"training", Json::object()}};
  job.base_file = "(the profile's reference node)";
}

const char* name_of(PlanSharding s) {
  switch (s) {
    case PlanSharding::Zero1: return "zero1";
    case PlanSharding::Fsdp: return "fsdp";
    case PlanSharding::None: break;
  }
  return "none";
}

Json layout_settings(const PlanLayout& l) {
  Json s = {{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"vpp", l.vpp}, {"cp", l.cp}, {"ep", l.ep}, {"etp", l.etp},
            {"micro_batch", l.micro_batch}, {"schedule", name_of(l.schedule)}, {"sharding", name_of(l.sharding)}, {"recompute", name_of(l.recompute)},
            {"sp", l.sequence_parallel}, {"tp_overlap", l.tp_comm_overlap}};
  return s;
}

namespace {
// A job smaller than the base's node runs on part of one node, and that part is its node (an NVL72
// rack's 64-GPU NVLink domain planned at 8 GPUs: 8 GPUs on NVLink, a NIC per GPU as the base has).
std::int64_t job_gpus_per_node(const PlanJob& job) {
  const std::int64_t per_node = job.base.value("/cluster/gpus_per_node"_json_pointer, std::int64_t{8});
  return job.gpus > 0 && job.gpus < per_node && per_node % job.gpus == 0 ? job.gpus : per_node;
}
}  // namespace

Json layout_scenario(const PlanJob& job, const PlanLayout& l) {
  Json j = job.base;
  j["name"] = fmt::format("plan-{}-{}x{}", job.model, job.gpus, job.gpu);
  j["model"] = job.model;
  const std::int64_t base_per_node = j["cluster"].value("gpus_per_node", std::int64_t{8}), per_node = job_gpus_per_node(job);
  if (per_node != base_per_node) {
    j["cluster"]["gpus_per_node"] = per_node;
    const Json::json_pointer nics("/cluster/inter_node/nics_per_node");
    if (j.contains(nics)) j[nics] = std::max<std::int64_t>(1, j[nics].get<std::int64_t>() * per_node / base_per_node);
  }
  j["cluster"]["nodes"] = job.gpus / per_node;
  j["training"]["global_batch"] = job.global_batch;
  j["training"]["micro_batch"] = l.micro_batch;
  j["training"]["seq_len"] = job.seq;
  Json p = {{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}, {"schedule", name_of(l.schedule)}, {"recompute", name_of(l.recompute)},
            {"sequence_parallel", l.sequence_parallel}, {"tp_comm_overlap", l.tp_comm_overlap}};
  if (l.vpp > 1) p["vpp"] = l.vpp;
  if (l.ep > 1) p["ep"] = l.ep;
  if (l.etp > 0 && (l.ep > 1 || l.etp != l.tp)) p["etp"] = l.etp;
  if (l.sharding == PlanSharding::Zero1) p["zero_stage"] = 1;
  if (l.sharding == PlanSharding::Fsdp) p["fsdp"] = {{"sharding", name_of(FsdpSharding::Full)}};
  j["parallel"] = p;
  return j;
}

const std::vector<PlanRule>& plan_rules() {
  static const std::vector<PlanRule> rules = {
      {"tp*pp*cp divides the GPU count", "dp = GPUs / (tp*pp*cp) must be whole (Megatron-Core parallel_state)"},
      {"TP within a node", "tensor parallelism inside one NVLink domain (--allow-cross-node-tp lifts it)"},
      {"tp divides heads and kv_heads (tp <= kv_heads)", "Megatron-Core: num_query_groups % tp == 0"},
      {"tp divides ffn_hidden", "column-parallel MLP shards"},
      {"tp divides mamba heads and groups", "Megatron-Core mamba_mixer.py: nheads % tp == 0 and ngroups % tp == 0"},
      {"no context parallelism with Mamba-2 layers", "not modelled"},
      {"cp divides seq/2", "load-balanced causal context parallelism: seq % (2*cp) == 0 (Megatron-Core / Transformer Engine)"},
      {"layers divisible by pp*vpp", "Megatron-LM: even layers per virtual stage"},
      {"schedule matches pp and vpp", "ddp iff pp = 1; interleaved iff vpp > 1; 1f1b / zb-h1 with vpp = 1"},
      {"global batch divisible by micro_batch*dp", "whole microbatches per data-parallel rank"},
      {"interleaved: microbatches divisible by pp", "Megatron-LM's interleaved schedule"},
      {"sequence parallel needs tp > 1", "Megatron-LM"},
      {"sequence parallel: tp divides seq/cp", "sequence shards per TP rank"},
      {"TP overlap needs sequence parallel", "Megatron-LM: tp_comm_overlap requires sequence_parallel"},
      {"FSDP with pp = 1", "FSDP is planned for data-parallel layouts without pipelining"},
      {"sharding needs dp*cp > 1", "with one data-parallel rank ZeRO-1 / FSDP equal no sharding (counted once)"},
      {"selective recompute never beats none under fused attention",
       "selective recompute of the core attention drops its score matrix, which a fused attention kernel never stores: the "
       "memory of none, and the same step (legacy Megatron-LM) or slower by the replayed kernel (Megatron-Core), so never "
       "better than none"},
      {"ep divides experts", "Megatron-Core: num_moe_experts % ep == 0"},
      {"ep*etp divides tp*cp*dp", "Megatron-Core expert rank groups"},
      {"etp = tp counted once when tp = 1", "duplicate of etp = 1"},
  };
  return rules;
}

ModelParams model_params(const ModelSpec& m) {
  ModelParams p;
  p.total = count_params(m).total();
  for (std::int64_t i = 0; i < m.layers; ++i) p.experts += expert_params(m, i);
  return p;
}

double memory_lower_bound(const Scenario& base, const PlanLayout& l, const ScheduleRegistry& schedules) {
  return memory_lower_bound(base, l, schedules, model_params(base.model));
}

double memory_lower_bound(const Scenario& base, const PlanLayout& l, const ScheduleRegistry& schedules, const ModelParams& params) {
  const ModelSpec& m = base.model;
  const double pp = static_cast<double>(l.pp);
  const double dense = (params.total - params.experts) / (static_cast<double>(l.tp) * pp);
  const std::int64_t etp = l.etp > 0 ? l.etp : l.tp;
  const double local_experts = params.experts / (static_cast<double>(l.ep * etp) * pp);
  const StateBytesPerParam sb = state_bytes(base.training.dtype, base.training.optimizer, base.training.fp32_grad_accumulation);
  const std::int64_t zero = l.sharding == PlanSharding::Zero1 ? 1 : 0;
  const std::optional<FsdpSharding> fsdp = l.sharding == PlanSharding::Fsdp ? std::optional(FsdpSharding::Full) : std::nullopt;
  Sharding sh = sharding_for(zero, fsdp, l.dp * l.cp, 0);
  double bytes = model_states(dense, sb, sh).total();
  sh.nd = std::max<std::int64_t>(1, l.tp * l.cp * l.dp / (l.ep * etp));
  bytes += model_states(local_experts, sb, sh).total();
  bytes += base.profile.runtime_reserved_gib.value * kGiB;
  if (!m.uniform()) return bytes;
  LayerShape shape = layer_shape(base);
  shape.tp = l.tp;
  shape.cp = l.cp;
  shape.cp_allgather = false;
  shape.sequence_parallel = l.sequence_parallel;
  shape.ep = l.ep;
  shape.etp = etp;
  shape.micro_batch = l.micro_batch;
  set_moe_routing(shape, m, base.training.moe_routing, 0.0);  // without the busiest rank's random excess: a lower bound
  const ActivationBytes act = activation_bytes(m, shape, l.recompute);
  const std::int64_t microbatches = base.training.global_batch / (l.micro_batch * l.dp);
  const std::int64_t in_flight = schedule_def(schedules, l.schedule).warmup_holds_stages ? std::min(l.pp, microbatches) : 1;
  return bytes + act.layer_stored * static_cast<double>(m.layers / l.pp) * static_cast<double>(in_flight);
}

namespace {

const std::vector<PlanSharding> kShardings = {PlanSharding::None, PlanSharding::Zero1, PlanSharding::Fsdp};
const std::vector<Recompute> kRecomputes = {Recompute::None, Recompute::Selective, Recompute::Full};
constexpr const char* kSelectiveRule = "selective recompute never beats none under fused attention";

// Walks the dimensions outermost first; a rule is checked at the first level where its
// dimensions are all chosen, and a candidate it rejects there counts with every inner choice.
class Enumerator {
 public:
  Enumerator(const PlanJob& job, const Scenario& base) : job_(job), base_(base), m_(base.model) {
    for (const auto& e : schedules_.entries())
      if (e.factory.planned) planned_.push_back(&e.factory);
    sizes_ = divisors(job.gpus, job.gpus);
    mbs_ = powers_of_two(job.max_micro_batch);
    eps_ = m_.moe ? divisors(m_.moe->experts, job.gpus) : std::vector<std::int64_t>{1};
    etps_ = m_.moe ? 2 : 1;
    capacity_ = base.profile.device.memory_bytes * (1.0 - job.headroom);
    params_ = model_params(base.model);
    per_node_ = base.cluster.gpus_per_node;
  }

  Enumeration run() {
    const double inner = static_cast<double>(job_.max_vpp * planned_.size()) * per_shape();
    out_.candidates = 0;
    for (std::int64_t tp : sizes_)
      for (std::int64_t pp : sizes_) {
        if (pp > m_.layers) continue;  // not a candidate: a stage holds at least one layer
        for (std::int64_t cp : sizes_) {
          out_.candidates += static_cast<std::int64_t>(inner);
          if (const char* r = shape_rule(tp, pp, cp)) {
            out_.pruned[r] += static_cast<std::int64_t>(inner);
            continue;
          }
          PlanLayout l;
          l.tp = tp, l.pp = pp, l.cp = cp, l.dp = job_.gpus / (tp * pp * cp);
          schedules(l);
        }
      }
    return std::move(out_);
  }

 private:
  // Choices under one (tp, pp, cp, vpp, schedule).
  double per_shape() const { return static_cast<double>(mbs_.size() * 4 * kShardings.size() * kRecomputes.size() * eps_.size() * etps_); }

  const char* shape_rule(std::int64_t tp, std::int64_t pp, std::int64_t cp) const {
    if (job_.gpus % (tp * pp * cp) != 0) return "tp*pp*cp divides the GPU count";
    if (!job_.allow_cross_node_tp && (tp > per_node_ || per_node_ % tp != 0)) return "TP within a node";
    if (m_.heads % tp != 0 || m_.kv_heads % tp != 0) return "tp divides heads and kv_heads (tp <= kv_heads)";
    if (m_.ffn_hidden % tp != 0) return "tp divides ffn_hidden";
    if (m_.mamba && (m_.mamba->heads % tp != 0 || m_.mamba->groups % tp != 0)) return "tp divides mamba heads and groups";
    if (m_.mamba && cp > 1) return "no context parallelism with Mamba-2 layers";
    if (job_.seq % (2 * cp) != 0 && cp > 1) return "cp divides seq/2";
    return nullptr;
  }

  void schedules(PlanLayout l) {
    const double inner = per_shape();
    for (std::int64_t vpp = 1; vpp <= job_.max_vpp; ++vpp)
      for (const ScheduleDef* sched : planned_) {
        const char* r = nullptr;
        if (m_.layers % (l.pp * vpp) != 0) r = "layers divisible by pp*vpp";
        else if ((l.pp > 1) != sched->pipeline || (vpp > 1) != sched->chunked) r = "schedule matches pp and vpp";
        if (r) {
          out_.pruned[r] += static_cast<std::int64_t>(inner);
          continue;
        }
        l.vpp = vpp;
        l.schedule = sched->value;
        micro_batches(l);
      }
  }

  void micro_batches(PlanLayout l) {
    const double inner = static_cast<double>(4 * kShardings.size() * kRecomputes.size() * eps_.size() * etps_);
    for (std::int64_t mb : mbs_) {
      const char* r = nullptr;
      if (job_.global_batch % (mb * l.dp) != 0) r = "global batch divisible by micro_batch*dp";
      else if (l.schedule == Schedule::Interleaved && (job_.global_batch / (mb * l.dp)) % l.pp != 0)
        r = "interleaved: microbatches divisible by pp";
      if (r) {
        out_.pruned[r] += static_cast<std::int64_t>(inner);
        continue;
      }
      l.micro_batch = mb;
      tp_options(l);
    }
  }

  void tp_options(PlanLayout l) {
    const double inner = static_cast<double>(kShardings.size() * kRecomputes.size() * eps_.size() * etps_);
    for (int sp = 0; sp < 2; ++sp)
      for (int ov = 0; ov < 2; ++ov) {
        const char* r = nullptr;
        if (sp && l.tp == 1) r = "sequence parallel needs tp > 1";
        else if (sp && (job_.seq / l.cp) % l.tp != 0) r = "sequence parallel: tp divides seq/cp";
        else if (ov && !sp) r = "TP overlap needs sequence parallel";
        if (r) {
          out_.pruned[r] += static_cast<std::int64_t>(inner);
          continue;
        }
        l.sequence_parallel = sp != 0;
        l.tp_comm_overlap = ov != 0;
        memory_options(l);
      }
  }

  void memory_options(PlanLayout l) {
    const double inner = static_cast<double>(eps_.size() * etps_);
    for (const PlanSharding sharding : kShardings)
      for (const Recompute rc : kRecomputes) {
        const char* r = nullptr;
        if (sharding == PlanSharding::Fsdp && l.pp > 1) r = "FSDP with pp = 1";
        else if (sharding != PlanSharding::None && l.dp * l.cp == 1) r = "sharding needs dp*cp > 1";
        else if (rc == Recompute::Selective && base_.training.flash_attention) r = kSelectiveRule;
        if (r) {
          out_.pruned[r] += static_cast<std::int64_t>(inner);
          continue;
        }
        l.sharding = sharding;
        l.recompute = rc;
        experts(l);
      }
  }

  void experts(PlanLayout l) {
    for (std::int64_t ep : eps_)
      for (std::int64_t k = 0; k < etps_; ++k) {
        const std::int64_t etp = m_.moe ? (k == 0 ? 1 : l.tp) : l.tp;
        const char* r = nullptr;
        if (m_.moe && m_.moe->experts % ep != 0) r = "ep divides experts";
        else if (m_.moe && (l.tp * l.cp * l.dp) % (ep * etp) != 0) r = "ep*etp divides tp*cp*dp";
        else if (m_.moe && k == 1 && l.tp == 1) r = "etp = tp counted once when tp = 1";
        if (r) {
          ++out_.pruned[r];
          continue;
        }
        l.ep = ep;
        l.etp = m_.moe ? etp : 0;
        keep(l);
      }
  }

  void keep(const PlanLayout& l) {
    const double bound = memory_lower_bound(base_, l, schedules_, params_);
    if (bound > capacity_) {
      ++out_.pruned[fmt::format("memory: lower bound above {:.0f} % of the GPU's memory", 100 * (1 - job_.headroom))];
      if (out_.memory_pruned_sample.size() < 64) out_.memory_pruned_sample.push_back(l);
      return;
    }
    out_.layouts.push_back(l);
  }

  const PlanJob& job_;
  const Scenario& base_;
  const ModelSpec& m_;
  const ScheduleRegistry& schedules_ = schedule_registry();
  std::vector<const ScheduleDef*> planned_;  // the schedules the planner searches, in the registry's order
  std::vector<std::int64_t> sizes_, mbs_, eps_;
  std::int64_t etps_ = 1, per_node_ = 8;
  double capacity_ = 0;
  ModelParams params_;  // the model's parameters, for every candidate's memory bound
  Enumeration out_;
};

}  // namespace

Enumeration enumerate_layouts(const PlanJob& job, const Scenario& base) { return Enumerator(job, base).run(); }

Scenario plan_base_scenario(const PlanJob& job, const std::string& data_dir) {
  if (job.gpus <= 0 || job.seq <= 0 || job.global_batch <= 0)
    throw ConfigError("plan: --gpus, --seq and --global-batch must be positive");
  const std::int64_t per_node = job_gpus_per_node(job);
  if (job.gpus % per_node != 0)
    throw ConfigError(fmt::format("plan: --gpus {} is not a whole number of {}-GPU nodes, nor a part of one that divides it ({}; "
                                  "--base names a scenario whose cluster to plan on)",
                                  job.gpus, per_node, job.base_file));
  PlanLayout l;
  l.dp = job.gpus;
  PlanJob any = job;
  any.global_batch = job.gpus;  // divisible whatever the job's batch; only model, GPU and dtypes are used
  return parse_scenario(layout_scenario(any, l), job.base_file, data_dir);
}

namespace {

// The expected cost of simulating (or lowering) layout `l` of the job (expected_cost).
double layout_cost(const PlanJob& job, const PlanLayout& l, std::int64_t model_layers) {
  const Periodicity& periodic = schedule_def(schedule_registry(), l.schedule).periodicity;
  return expected_cost(job.global_batch / (l.micro_batch * l.dp), fold_points(periodic, l.pp), model_layers, l.pp, l.vpp);
}

// parallel_for over `todo`'s layouts, the costliest started first (longest-processing-time order,
// Graham 1969): a batch's threads then finish close together instead of one waiting on a deep
// pipeline taken last. fn(k) gets the position k in `todo`, so results land where they would in
// order, whatever the thread count.
void parallel_costliest_first(const PlanJob& job, const std::vector<PlanLayout>& layouts, const std::vector<std::size_t>& todo,
                              const EvalOptions& opt, std::int64_t model_layers, const std::function<void(std::size_t)>& fn) {
  std::vector<std::size_t> by_cost(todo.size());
  for (std::size_t k = 0; k < todo.size(); ++k) by_cost[k] = k;
  if (opt.jobs > 1) {
    std::vector<double> cost(todo.size());
    for (std::size_t k = 0; k < todo.size(); ++k) cost[k] = layout_cost(job, layouts[todo[k]], model_layers);
    std::stable_sort(by_cost.begin(), by_cost.end(), [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  }
  parallel_for(todo.size(), opt.jobs, opt.stop, [&](std::size_t k) { fn(by_cost[k]); });
}

// One layout parsed by the strict loader, simulated and made a row; a ConfigError as the kind of
// rule it broke.
Outcome evaluate_layout(const PlanJob& job, const std::string& data_dir, const Registries& reg, const PlanLayout& layout,
                        std::size_t index, const LoadedData& loaded) {
  Outcome o;
  try {
    const Scenario sc = parse_scenario(layout_scenario(job, layout), job.base_file, data_dir, &loaded);
    Row r = make_row(sc, simulate(sc, reg), index, layout_settings(layout));
    if (r.status == "ok" && r.headroom < job.headroom) {
      r.status = "oom";
      r.reason = fmt::format("fits, but with {:.1f} % of memory free, less than the {:.0f} % asked", 100 * r.headroom, 100 * job.headroom);
    }
    o.row = std::move(r);
  } catch (const ConfigError& e) {
    o.skipped = "loader: " + error_kind(e.what(), job.base_file);
    o.skipped_example = fmt::format("dp={}, tp={}, pp={}, vpp={}, cp={}, ep={}, etp={}, micro_batch={}: {}", layout.dp, layout.tp, layout.pp,
                                    layout.vpp, layout.cp, layout.ep, layout.etp, layout.micro_batch, without_file(e.what(), job.base_file));
  }
  return o;
}

// Simulates the layouts `todo` at once and adds their rows, the steps that fit to `best` (ascending,
// at most job.search_top).
void simulate_batch(const PlanJob& job, const std::string& data_dir, const Registries& reg, const std::vector<PlanLayout>& layouts,
                    const std::vector<std::size_t>& todo, const EvalOptions& opt, const LoadedData& loaded, std::vector<double>& best,
                    Evaluated& ev) {
  std::vector<std::optional<Outcome>> got(todo.size());  // empty: not run (the search was stopped)
  const std::int64_t model_layers = loaded.models.at(job.model).layers;
  parallel_costliest_first(job, layouts, todo, opt, model_layers,
                           [&](std::size_t k) { got[k] = evaluate_layout(job, data_dir, reg, layouts[todo[k]], todo[k], loaded); });
  for (std::optional<Outcome>& slot : got) {
    if (!slot) continue;
    Outcome& o = *slot;
    ++ev.evaluated;
    if (!o.row) {
      ++ev.skipped[o.skipped];
      ev.skipped_examples.emplace(o.skipped, o.skipped_example);
      continue;
    }
    if (o.row->status == "ok") {
      best.insert(std::upper_bound(best.begin(), best.end(), o.row->step_s), o.row->step_s);
      if (best.size() > static_cast<std::size_t>(job.search_top)) best.pop_back();
    }
    ev.rows.push_back(std::move(*o.row));
  }
}

// Each layout's bound by `bound` (step_floor_s or step_lower_bound_s), for the layouts `which`;
// 0 where the loader refuses it (it is then simulated, and its refusal counted as the exhaustive
// search counts it).
std::vector<double> layout_bounds(const PlanJob& job, const std::string& data_dir, const std::vector<PlanLayout>& layouts,
                                  const std::vector<std::size_t>& which, const EvalOptions& opt, const LoadedData& loaded,
                                  const std::function<double(const Scenario&)>& bound) {
  std::vector<double> out(which.size(), 0.0);
  parallel_costliest_first(job, layouts, which, opt, loaded.models.at(job.model).layers, [&](std::size_t k) {
    try {
      out[k] = bound(parse_scenario(layout_scenario(job, layouts[which[k]]), job.base_file, data_dir, &loaded));
    } catch (const ConfigError&) {
      out[k] = 0.0;
    }
  });
  return out;
}

// The search for the best job.search_top layouts, in two levels of bounds. Every layout gets its
// floor (step_floor_s, no lowering); in the order of the floors, a batch at a time, layouts get
// the bound from lowering (step_lower_bound_s) and keep the larger of the two (the floor counts
// the pipeline's fill and drain, the lowered bound every op of the busiest compute stream); a
// layout is simulated once its bound is the lowest of all (every unrefined floor included), until the lowest bound left is above the
// search_top-th best step that fits. A skipped layout's step is at least its bound, so above that
// step: the best search_top rows are those of the exhaustive search, and so are their figures.
// Batches are fixed, so what is simulated does not depend on the thread count.
Evaluated bound_search(const PlanJob& job, const std::string& data_dir, const Registries& reg, const std::vector<PlanLayout>& layouts,
                       const EvalOptions& opt, const LoadedData& loaded) {
  std::vector<std::size_t> order(layouts.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const std::vector<double> floors = layout_bounds(job, data_dir, layouts, order, opt, loaded, [&](const Scenario& sc) { return step_floor_s(sc, reg); });
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return floors[a] < floors[b]; });
  using Refined = std::pair<double, std::size_t>;  // (bound, layout), the lowest first
  std::priority_queue<Refined, std::vector<Refined>, std::greater<>> refined;
  Evaluated ev;
  ev.total = layouts.size();
  std::vector<double> best;  // the steps of the rows that fit, ascending, at most search_top
  const auto top = static_cast<std::size_t>(job.search_top);
  constexpr std::size_t batch = 32;
  const auto ranked_out = [&](double bound) { return best.size() >= top && bound > best.back() * (1 + 1e-9); };
  constexpr double none = std::numeric_limits<double>::infinity();
  std::size_t next = 0;  // the next layout in `order` without its refined bound
  while (!(opt.stop && opt.stop->load())) {
    const double floor_next = next < order.size() ? floors[order[next]] : none;
    const double refined_next = refined.empty() ? none : refined.top().first;
    if (std::min(floor_next, refined_next) == none || ranked_out(std::min(floor_next, refined_next))) break;
    if (refined_next <= floor_next) {
      std::vector<std::size_t> todo;
      while (!refined.empty() && todo.size() < batch && refined.top().first <= floor_next && !ranked_out(refined.top().first)) {
        todo.push_back(refined.top().second);
        refined.pop();
      }
      simulate_batch(job, data_dir, reg, layouts, todo, opt, loaded, best, ev);
    } else {
      const std::vector<std::size_t> todo(order.begin() + static_cast<std::ptrdiff_t>(next),
                                          order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), next + batch)));
      next += todo.size();
      const std::vector<double> b = layout_bounds(job, data_dir, layouts, todo, opt, loaded, [&](const Scenario& sc) { return step_lower_bound_s(sc, reg); });
      for (std::size_t k = 0; k < todo.size(); ++k) refined.push({std::max(b[k], floors[todo[k]]), todo[k]});
    }
    if (opt.progress) opt.progress(ev.evaluated, order.size());
  }
  const bool stopped = opt.stop && opt.stop->load();
  ev.bound_skipped = stopped ? 0 : order.size() - next + refined.size();
  ev.evaluated += ev.bound_skipped;
  ev.interrupted = ev.evaluated < ev.total;
  std::sort(ev.rows.begin(), ev.rows.end(), [](const Row& a, const Row& b) { return a.index < b.index; });
  return ev;
}

}  // namespace

PlanResult run_plan(const PlanJob& job, const std::string& data_dir, const Registries& reg, Objective objective,
                    const EvalOptions& opt) {
  PlanResult res;
  const Scenario base = plan_base_scenario(job, data_dir);
  res.enumeration = enumerate_layouts(job, base);
  const std::vector<PlanLayout>& layouts = res.enumeration.layouts;
  // The job's model and GPU profile, read once for all its layouts.
  LoadedData loaded;
  loaded.models.emplace(job.model, load_zoo_model(data_dir, job.model, job.base_file + ": /model"));
  loaded.profiles.emplace(job.gpu, load_profile(data_dir, job.gpu, job.base_file + ": /cluster/gpu"));
  loaded.expected_max_draws.emplace(base.cluster.gpus(), expected_max_standard_normal(base.cluster.gpus()));
  for (const PlanLayout& l : layouts)  // the busiest expert-parallel rank's draw (sim/parallel/moe_routing.h)
    if (l.ep > 1 && !loaded.expected_max_draws.contains(l.ep)) loaded.expected_max_draws.emplace(l.ep, expected_max_standard_normal(l.ep));
  const bool distributed = opt.distribution && opt.distribution->parts > 1;
  if (job.search_top > 0 && !distributed) {
    res.evaluated = bound_search(job, data_dir, reg, layouts, opt, loaded);
    rank_rows(res.evaluated.rows, objective);
    return res;
  }
  const std::int64_t model_layers = base.model.layers;
  EvalOptions eo = opt;
  if (eo.distribution && !eo.cost) eo.cost = [&](std::size_t i) { return layout_cost(job, layouts[i], model_layers); };
  res.evaluated = evaluate_all(
      layouts.size(), [&](std::size_t i) { return evaluate_layout(job, data_dir, reg, layouts[i], i, loaded); }, eo);
  rank_rows(res.evaluated.rows, objective);
  return res;
}

}  // namespace parasim
