#include "tools/report.h"

#include <algorithm>
#include <array>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "sim/parallel/schedule.h"

namespace parasim {

namespace {
std::string human_s(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}
std::string shape_of(const Kernel& k) {
  if (k.kind == KernelKind::Gemm)
    return k.batch > 1 ? fmt::format("{}x{}x{} x{}", k.m, k.n, k.k, k.batch) : fmt::format("{}x{}x{}", k.m, k.n, k.k);
  if (k.kind == KernelKind::Memory || k.kind == KernelKind::Scan) return fmt::format("{:.1f} MB", k.bytes / 1e6);
  return "";
}

std::string rate_of(const Kernel& k, double s) {
  if (s <= 0) return "";
  if (k.kind == KernelKind::Memory) return fmt::format("{:.0f} GB/s", k.bytes / s / 1e9);
  return fmt::format("{:.1f} TFLOP/s", k.flops / s / 1e12);
}
}  // namespace

void print_kernels(std::ostream& os, const Scenario& sc, const LayerGraph& g, const std::vector<KernelRow>& rows) {
  const auto& sh = g.shape;
  fmt::print(os, "kernels of one transformer layer and of the embedding and output layers, for one microbatch on one rank\n");
  fmt::print(os, "  micro batch {} x seq {}{} = {:.0f} tokens, tp {}{}, {}, profile {} ({})\n", sh.micro_batch, sh.seq_len,
             sh.cp > 1 ? fmt::format(" / cp {}", sh.cp) : "", g.tokens, sh.tp, sh.sequence_parallel ? " with sequence parallel" : "",
             name_of(sc.training.dtype), sc.profile.name, sc.profile.device.name);
  if (const double pace = slowest_gpu_pace(sc.profile, sc.slowest_gpu); pace > 1.0)
    fmt::print(os, "  times at the pace of the slowest of the job's {} GPUs: x{:.4f} the profile's (compute.gpu_speed_spread)\n",
               sc.cluster.gpus(), pace);
  fmt::print(os, "  recompute replays the forward kernels of a layer; communication is not listed (see `run --dump-program`)\n\n");
  size_t bw = 14;  // block column: wider when the blocks name their kind of layer
  for (const auto& r : rows) bw = std::max(bw, r.block.size());
  fmt::print(os, "  {:<{}} {:<22} {:>22} {:>10} {:>11} {:>15}  {}\n", "block", bw, "kernel", "shape m x n x k / bytes", "GFLOP",
             "time us", "rate", "priced by");
  double block_total = 0;
  // Per kind of layer ("" for a uniform model): GEMM, attention and memory-bound time.
  std::vector<std::pair<std::string, std::array<double, 3>>> per_kind;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const Kernel& k = *r.kernel;
    fmt::print(os, "  {:<{}} {:<22} {:>22} {:>10} {:>11.1f} {:>15}  {}\n", r.block, bw, k.name, shape_of(k),
               k.flops > 0 ? fmt::format("{:.2f}", k.flops / 1e9) : "", r.seconds * 1e6, rate_of(k, r.seconds), r.priced_by);
    block_total += r.seconds;
    if (r.layer) {
      const size_t open = r.block.find(" [");
      const std::string kind = open == std::string::npos ? "" : r.block.substr(open + 2, r.block.size() - open - 3);
      auto it = std::find_if(per_kind.begin(), per_kind.end(), [&](const auto& p) { return p.first == kind; });
      if (it == per_kind.end()) it = per_kind.insert(per_kind.end(), {kind, {0, 0, 0}});
      it->second[k.kind == KernelKind::Gemm ? 0 : k.kind == KernelKind::Attention ? 1 : 2] += r.seconds;
    }
    if (i + 1 == rows.size() || rows[i + 1].block != r.block) {
      fmt::print(os, "  {:<{}} {:<22} {:>22} {:>10} {:>11.1f}\n\n", r.block, bw, "total", "", "", block_total * 1e6);
      block_total = 0;
    }
  }
  for (const auto& [kind, t] : per_kind) {
    const double layer = t[0] + t[1] + t[2];
    if (layer > 0)
      fmt::print(os, "  one layer{}, forward + backward: {:.1f} us = GEMM {:.1f} % + attention {:.1f} % + memory-bound {:.1f} %\n",
                 kind.empty() ? "" : " [" + kind + "]", layer * 1e6, 100 * t[0] / layer, 100 * t[1] / layer, 100 * t[2] / layer);
  }
}

Json kernels_json(const std::vector<KernelRow>& rows) {
  Json a = Json::array();
  for (const auto& r : rows) {
    const Kernel& k = *r.kernel;
    Json j = {{"block", r.block}, {"kernel", k.name}, {"seconds", r.seconds}, {"priced_by", r.priced_by}};
    if (k.kind == KernelKind::Gemm) j["mnk_batch"] = {k.m, k.n, k.k, k.batch};
    if (k.kind != KernelKind::Memory) j["flops"] = k.flops;
    if (k.kind == KernelKind::Memory || k.kind == KernelKind::Scan) j["bytes"] = k.bytes;
    a.push_back(std::move(j));
  }
  return a;
}

std::string rate_text(double per_s) { return per_s >= 100 ? fmt::format("{:.0f}", per_s) : fmt::format("{:.3g}", per_s); }

std::string moe_summary(const ModelSpec& m) {
  if (!m.moe) return {};
  std::int64_t moe_layers = 0;
  for (std::int64_t i = 0; i < m.layers; ++i) moe_layers += m.layer_kind(i).moe ? 1 : 0;
  const std::string shared = m.moe->shared_expert_ffn_hidden > 0 ? fmt::format(" + shared {}", m.moe->shared_expert_ffn_hidden) : "";
  const std::string which = moe_layers < m.layers ? fmt::format(", {} of {} layers", moe_layers, m.layers) : "";
  return fmt::format("{} experts{}, top {}{}, {:.2f}B active", m.moe->experts, shared, m.moe->top_k, which, active_params(m) / 1e9);
}

namespace {
// "  (ideal 0.9 % = (p-1)/(v*m+p-1) with p 4, v 5, m 64; ...)" for a pipeline schedule with a closed
// form (the schedule registry's references); "" otherwise.
std::string ideal_bubble(const Scenario& sc, const Result& r) {
  const auto& p = sc.parallel;
  const IdealBubble& bubble = schedule_def(schedule_registry(), p.schedule).bubble;
  if (p.pp <= 1 || !bubble.formula) return "";
  const double pp = static_cast<double>(p.pp), m = static_cast<double>(sc.microbatches()), v = static_cast<double>(p.vpp);
  const auto host = r.breakdown.find(kHostWaitKey);
  const bool host_bound = host != r.breakdown.end() && host->second > 0;
  return fmt::format("  (ideal {} = {:.1f} % with p {}{}, m {}; the gap: unequal stages (embedding first, output layer and "
                     "loss last{}), pipeline sends, warm-up)",
                     bubble.formula, 100 * bubble.fraction(pp, m, v), p.pp, p.vpp > 1 ? fmt::format(", v {}", p.vpp) : "", sc.microbatches(),
                     host_bound ? "; stages slowed by waiting on their host, host_wait_s" : "");
}

bool comm_phase(const std::string& key) { return key.find("comm_s") != std::string::npos || key == "fsdp_gather_s"; }

void print_time_partition(std::ostream& os, const TimePartition& t, double step_s) {
  fmt::print(os, "\n  where the time went (mean per GPU; the lines sum to the step):\n");
  double total = 0;
  auto line = [&](const std::string& name, double v, const char* note) {
    if (v <= 0) return;
    total += v;
    fmt::print(os, "    {:<22} {:>10}  {:5.1f} %{}\n", name, human_s(v), 100 * v / step_s, note);
  };
  for (const auto& [k, v] : t.compute_stream_s)
    line(k, v, k == kHostWaitKey ? "  (the GPU waiting for the host thread to issue kernels)" : comm_phase(k) ? "  (on the compute stream)" : "");
  line("comm_exposed_s", t.exposed_s, "  (waiting on the communication below)");
  line("idle_s", t.idle_s, "  (pipeline bubble, waiting on other ranks)");
  fmt::print(os, "    {:<22} {:>10}  {:5.1f} %\n", "step", human_s(total), 100 * total / step_s);
  double other = 0;
  for (const auto& [k, v] : t.other_streams_s) other += v;
  if (other <= 0) return;
  fmt::print(os, "  overlapped communication (other streams; hidden behind compute except comm_exposed_s above):\n");
  for (const auto& [k, v] : t.other_streams_s)
    if (v > 0)
      fmt::print(os, "    {:<22} {:>10}  {:5.1f} %{}\n", k, human_s(v), 100 * v / step_s,
                 k == "tp_comm_s" || k == "ep_comm_s" ? "  (overlapped with the layers' kernels: what it costs them is in forward_s, backward_s)"
                                                      : "");
}
}  // namespace

void print_summary(std::ostream& os, const Scenario& sc, const Result& r, const TimePartition& time) {
  const auto& p = sc.parallel;
  fmt::print(os, "parasim: {}\n", printable(sc.name));
  const std::string moe = sc.model.moe ? fmt::format(" ep={} etp={} (MoE: {})", p.ep, p.expert_tp(), moe_summary(sc.model)) : std::string();
  fmt::print(os, "  model {} ({:.2f}B params), {} x {} GPUs ({}), dp={} tp={} pp={} vpp={} cp={}{}, schedule {}{}{}{}\n",
             printable(sc.model.name), count_params(sc.model).total() / 1e9, sc.cluster.nodes, sc.cluster.gpus_per_node,
             printable(sc.profile.device.name), p.dp, p.tp, p.pp, p.vpp, p.cp, moe, name_of(p.schedule),
             p.zero_stage ? fmt::format(", ZeRO-{}", p.zero_stage) : "", p.fsdp ? ", FSDP " + name_of(p.fsdp->sharding) : "",
             p.activation_offload_layers > 0
                 ? fmt::format(", activations of {} of {} layers offloaded to the host", p.activation_offload_layers, sc.model.layers)
                 : "");
  fmt::print(os, "  global batch {} x seq {} = {} tokens, micro batch {}, {} microbatches per pipeline, {}, recompute {}, attention {}\n\n",
             sc.training.global_batch, sc.training.seq_len, sc.training.global_batch * sc.training.seq_len,
             sc.training.micro_batch, sc.microbatches(),
             sc.training.dtype == Dtype::Fp8 && sc.training.fp8_recipe == Fp8Recipe::Nvfp4 ? std::string("nvfp4 (block-scaled FP4 linear layers)")
             : sc.training.dtype == Dtype::Fp8 ? "fp8 (" + name_of(sc.training.fp8_recipe) + " scaling)" : name_of(sc.training.dtype),
             name_of(p.recompute),
             sc.training.flash_attention ? name_of(sc.training.attention_kernel) : std::string("unfused"));
  fmt::print(os, "  {:<22} {}\n", "step time", human_s(r.step_time_s));
  fmt::print(os, "  {:<22} {} ({} per GPU)\n", "tokens/s", rate_text(r.tokens_per_s), rate_text(r.tokens_per_s / static_cast<double>(sc.cluster.gpus())));
  fmt::print(os, "  {:<22} {:.1f}\n", "TFLOP/s per GPU", r.tflops_per_gpu);
  fmt::print(os, "  {:<22} {:.1f} %  (HFU {:.1f} %)\n", "MFU", 100 * r.mfu, 100 * r.hfu);
  fmt::print(os, "  {:<22} {:.1f} %{}\n", "bubble fraction", 100 * r.bubble_fraction, ideal_bubble(sc, r));
  fmt::print(os, "  {:<22} {:.2f} GiB of {:.2f} GiB{}\n", "peak VRAM per GPU", r.peak_mem_gib, r.capacity_gib,
             r.fits_in_memory ? "" : "  ** OUT OF MEMORY **");
  fmt::print(os, "  {:<22} {:.2f} GiB  (the caching allocator's reserve, as nvidia-smi shows it)\n\n", "reserved per GPU",
             r.reserved_gib);
  fmt::print(os, "  {:<6} {:<5} {:<28} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>8}\n", "rank", "xN", "role",
             "peak GiB", "weights", "grads", "optim", "activ", "other", "compute", "exposed", "bubble");
  for (const auto& rr : r.ranks) {
    const auto& b = rr.mem_breakdown_gib;
    const double other = b[static_cast<size_t>(MemCat::GatheredParams)] + b[static_cast<size_t>(MemCat::CommBuffers)] +
                         b[static_cast<size_t>(MemCat::Workspace)];
    fmt::print(os, "  {:<6} {:<5} {:<28} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>10} {:>10} {:>7.1f}%\n", rr.rank,
               rr.count, rr.role.substr(0, 28), rr.peak_mem_gib, b[static_cast<size_t>(MemCat::Weights)],
               b[static_cast<size_t>(MemCat::Grads)], b[static_cast<size_t>(MemCat::Optimizer)],
               b[static_cast<size_t>(MemCat::Activations)], other, human_s(rr.compute_s), human_s(rr.comm_exposed_s),
               100 * rr.bubble_fraction);
  }
  const double st = r.step_time_s > 0 ? r.step_time_s : 1;
  print_time_partition(os, time, st);
  if (!r.warnings.empty()) {
    fmt::print(os, "\n  notes:\n");
    for (const auto& w : r.warnings) fmt::print(os, "    - {}\n", w);
  }
}

Json result_json(const Result& r) {
  Json j;
  j["schema"] = "parasim.result/1";
  j["scenario"] = r.scenario;
  j["step_time_s"] = r.step_time_s;
  j["tokens_per_s"] = r.tokens_per_s;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["hfu"] = r.hfu;
  j["hfu_reported"] = r.hfu_reported;
  j["bubble_fraction"] = r.bubble_fraction;
  j["peak_mem_gib"] = r.peak_mem_gib;
  j["reserved_gib"] = r.reserved_gib;
  j["capacity_gib"] = r.capacity_gib;
  j["fits_in_memory"] = r.fits_in_memory;
  Json ranks = Json::array();
  for (const auto& rr : r.ranks) {
    Json b;
    for (int c = 0; c < kMemCats; ++c) b[memcat_name(static_cast<MemCat>(c))] = rr.mem_breakdown_gib[static_cast<size_t>(c)];
    ranks.push_back({{"rank", rr.rank}, {"count", rr.count}, {"stage", rr.stage}, {"role", rr.role},
                     {"peak_mem_gib", rr.peak_mem_gib}, {"peak_time_s", rr.peak_time_s}, {"reserved_gib", rr.reserved_gib},
                     {"mem_breakdown_gib", b},
                     {"compute_s", rr.compute_s}, {"comm_exposed_s", rr.comm_exposed_s}, {"idle_s", rr.idle_s},
                     {"bubble_fraction", rr.bubble_fraction}});
  }
  j["ranks"] = ranks;
  j["breakdown"] = r.breakdown;
  j["warnings"] = r.warnings;
  j["ops"] = r.ops;
  j["events"] = r.events;
  return j;
}

namespace {

// A JSON string literal (quotes and escapes) for names that come from the user's files.
std::string quoted(const std::string& s) { return Json(s).dump(); }

}  // namespace

// Streamed event by event: the file is never held in memory (a long step's trace runs to
// gigabytes; tools/cmd_run.cpp caps it before the run).
void write_chrome_trace(std::ostream& out, const Scenario& sc, const Program& p, const Timeline& t) {
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"parasim\",\"scenario\":" << quoted(sc.name)
      << "},\"traceEvents\":[";
  const char* sep = "\n";
  const auto event = [&](const std::string& body) {
    out << sep << body;
    sep = ",\n";
  };
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    const auto& sr = p.ranks[r];
    event(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})", r,
                      quoted(fmt::format("rank {} ({}, x{})", sr.real_rank, sr.role, sr.count))));
    for (int st = 0; st < kStreams; ++st)
      event(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"{}"}}}})", r, st,
                        stream_name(static_cast<Stream>(st))));
  }
  std::vector<std::string> labels;
  labels.reserve(p.labels.size());
  for (const auto& l : p.labels) labels.push_back(quoted(l));
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (t.end[i] <= t.start[i]) continue;
    std::string args = fmt::format(R"("phase":"{}")", phase_name(op.phase));
    if (op.microbatch >= 0) args += fmt::format(R"(,"microbatch":{})", op.microbatch);
    if (op.chunk >= 0) args += fmt::format(R"(,"chunk":{})", op.chunk);
    event(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"name":{},"cat":"{}","ts":{},"dur":{},"args":{{{}}}}})", op.rank,
                      static_cast<int>(op.stream), labels[static_cast<size_t>(op.label)], phase_name(op.phase),
                      static_cast<double>(t.start[i]) / 1e6, static_cast<double>(t.end[i] - t.start[i]) / 1e6, args));
  }
  for (size_t r = 0; r < t.memory.size(); ++r)
    for (const auto& m : t.memory[r].curve)
      event(fmt::format(R"({{"ph":"C","pid":{},"name":"memory GiB","ts":{},"args":{{"GiB":{}}}}})", r,
                        static_cast<double>(m.t) / 1e6, bytes_to_gib(static_cast<double>(m.total))));
  out << "\n]}\n";
}

// A trace takes about this many bytes per op in its file (an "X" event with its arguments, the
// memory counter samples); the whole-step program and timeline behind it take about as much in
// memory (measured on ../shared/repro/405b_mb4096.json: see docs/performance.md).
constexpr double kTraceBytesPerOp = 200;

double trace_mib(double ops) { return ops * kTraceBytesPerOp / (1024.0 * 1024.0); }

void check_timeline_size(const SimulationOutput& out, double max_mib, const char* option, const char* cap_option) {
  const double mib = trace_mib(static_cast<double>(out.result.ops));
  if (mib <= max_mib) return;
  throw ConfigError(fmt::format(
      "{}: the step has {} microbatches per pipeline and {} ops; drawing every op takes about {:.0f} MiB of trace and memory, over "
      "the cap of {:g} MiB{}. The schedule repeats once the pipeline fills: simulate fewer microbatches (global_batch){}",
      option, out.fold.microbatches, out.result.ops, mib, max_mib, *cap_option ? fmt::format(" ({})", cap_option) : "",
      *cap_option ? ", or raise the cap" : ""));
}

void dump_program(std::ostream& os, const Program& p, const Timeline& t, std::int32_t rank) {
  fmt::print(os, "{:>7} {:<8} {:<12} {:<28} {:>4} {:>3} {:>12} {:>12}  deps\n", "op", "stream", "phase", "label", "mb", "ch", "start_us", "end_us");
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    if (op.rank != rank) continue;
    std::string deps;
    for (OpId d : op.deps) deps += std::to_string(d) + " ";
    fmt::print(os, "{:>7} {:<8} {:<12} {:<28} {:>4} {:>3} {:>12.3f} {:>12.3f}  {}\n", i, stream_name(op.stream), phase_name(op.phase),
               p.labels[static_cast<size_t>(op.label)], op.microbatch, op.chunk, static_cast<double>(t.start[i]) / 1e6,
               static_cast<double>(t.end[i]) / 1e6, deps);
  }
}

}  // namespace parasim
