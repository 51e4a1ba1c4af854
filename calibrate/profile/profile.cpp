#include "calibrate/profile/profile.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "sim/core/registry.h"

namespace parasim {

namespace {

const std::vector<std::string> kHow = {"measured", "imported", "datasheet", "published", "fitted", "assumed"};

Figure figure(const JsonObject& parent, const std::string& key, double min, double max,
              const std::vector<std::string>& also_allowed = {}) {
  const JsonObject o = parent.object(key);
  Figure f;
  f.value = o.number("value", min, max);
  f.how = o.choice("how", kHow);
  f.source = o.str("source");
  if (f.source.find_first_not_of(" \t\n\r") == std::string::npos) o.fail("source", "every figure needs a source");
  f.low = f.high = f.value;
  if (o.has("range")) {
    const auto r = o.raw("range");
    if (!r.is_array() || r.size() != 2 || !r[0].is_number() || !r[1].is_number())
      o.fail("range", "expected [low, high]");
    f.low = r[0].get<double>();
    f.high = r[1].get<double>();
    if (!(f.low >= min && f.low <= f.value && f.value <= f.high && f.high <= max))
      o.fail("range", "expected low <= value <= high within the figure's valid range");
    f.range_source = o.str("range_source");
  } else if (o.has("range_source")) {
    o.fail("range_source", "names the source of a range, but the figure has no \"range\": [low, high]");
  }
  o.finish(also_allowed);
  return f;
}


// network.moe_dispatch_rdma / moe_dispatch_nvlink: {dispatcher: [{<key>, efficiency: figure}, ...]}
// for the dispatchers that run their own kernels (NCCL's all-to-all is priced by the NCCL model),
// `key` ("nodes" or "ranks") ascending.
Profile::DispatchTable parse_dispatch_table(const JsonObject& o, const char* key) {
  Profile::DispatchTable out;
  if (o.has("alltoall"))
    o.fail("alltoall", "NCCL's all-to-all takes no table here (the NCCL model prices it); the dispatchers with their own kernels: deepep, hybridep");
  for (const auto& e : moe_dispatchers().entries()) {
    if (e.factory.value == MoeDispatcher::AllToAll) continue;
    const Json* pts = o.raw_opt(e.name);
    if (!pts) continue;
    if (!pts->is_array() || pts->empty()) o.fail(e.name, std::string("expected a non-empty array of {") + key + ", efficiency}");
    auto& list = out[e.factory.value];
    for (size_t i = 0; i < pts->size(); ++i) {
      const JsonObject g((*pts)[i], o.file(), o.path(e.name) + "/" + std::to_string(i));
      Profile::DispatchPoint pt;
      pt.at = g.integer(key, 2, 1 << 20);
      if (!list.empty() && pt.at <= list.back().at) g.fail(key, std::string("expected ") + key + " in ascending order, each once");
      pt.efficiency = figure(g, "efficiency", 0.01, 1.0);
      g.finish();
      list.push_back(pt);
    }
  }
  o.finish();
  return out;
}

NcclTuning parse_nccl(const JsonObject& n) {
  NcclTuning t;
  const Registry<NcclAlgoDef> algos = nccl_algorithms();
  const Registry<NcclProtoDef> protos = nccl_protocols();
  t.present = true;
  t.how = n.choice("how", kHow);
  t.source = n.str("source");
  if (t.source.empty()) n.fail("source", "the NCCL cost tables need a source");
  // Four tables, each {ring|tree: {ll|ll128|simple: number}}.
  auto table = [&](const std::string& key, double max, auto setter) {
    const JsonObject tab = n.object(key);
    for (const NcclAlgo a : {NcclAlgo::Ring, NcclAlgo::Tree}) {
      const JsonObject row = tab.object(nccl_algo_name(a));
      for (const auto& proto : protos.entries()) setter(t.cost[a][proto.factory.value], row.number(proto.name, 0, max));
      row.finish();
    }
    tab.finish();
  };
  table("base_latency_us", 1e4, [](NcclProtoCost& c, double v) { c.base_us = v; });
  table("nvlink_step_us", 1e4, [](NcclProtoCost& c, double v) { c.nvlink_step_us = v; });
  table("net_step_us", 1e4, [](NcclProtoCost& c, double v) { c.net_step_us = v; });
  table("bw_fraction", 1.0, [](NcclProtoCost& c, double v) { c.bw_fraction = v; });
  for (const auto& [a, row] : t.cost)
    for (const auto& [p, c] : row)
      if (c.bw_fraction <= 0)
        n.fail("bw_fraction", std::string("expected a fraction > 0 for ") + nccl_algo_name(a) + "/" + nccl_proto_name(p));
  if (auto f = n.object_opt("multinode_nvlink_step_factor")) {
    for (const auto& proto : protos.entries())
      t.multinode_nvlink_step_factor[proto.factory.value] = f->number(proto.name, 0.1, 100, 1.0);
    f->finish();
  }
  if (auto nv = n.object_opt("nvls")) {
    t.nvls_algbw_gbps = figure(*nv, "algbw_gbps", 0.1, 1e5);
    t.nvls_min_ranks = figure(*nv, "min_ranks", 2, 1024);
    nv->finish();
  }
  if (const Json* rules = n.raw_opt("rules")) {
    if (!rules->is_array()) n.fail("rules", "expected an array of {op, min_nodes, max_nodes, min_bytes, max_bytes, algorithm, protocol}");
    for (size_t i = 0; i < rules->size(); ++i) {
      const JsonObject r((*rules)[i], n.file(), n.path("rules") + "/" + std::to_string(i));
      NcclRule rule;
      rule.op = r.choice("op", {"any", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"}, "any");
      rule.min_nodes = r.integer("min_nodes", 1, 1LL << 40, 1);
      rule.max_nodes = r.integer("max_nodes", 1, 1LL << 40, 1LL << 40);
      rule.min_bytes = r.number("min_bytes", 0, 1e18, 0);
      rule.max_bytes = r.number("max_bytes", 0, 1e300, 1e300);
      rule.algo = algos.find(r.choice("algorithm", algos.names()))->factory.value;
      rule.proto = protos.find(r.choice("protocol", protos.names(), "simple"))->factory.value;
      r.finish();
      t.rules.push_back(rule);
    }
  }
  n.finish();
  return t;
}

}  // namespace

double Profile::AttentionKernel::padded_head_dim(double head_dim) const {
  for (const std::int64_t w : head_dims)
    if (head_dim <= static_cast<double>(w)) return static_cast<double>(w);
  return head_dim;
}

const Registry<NcclAlgoDef>& nccl_algorithms() {
  static const Registry<NcclAlgoDef> registry("NCCL algorithm", {
    {"ring", "a ring through the group's ranks, one per channel", "NCCL src/device/all_reduce.h runRing; NCCL_ALGO=Ring", {NcclAlgo::Ring}},
    {"tree", "all-reduce as a reduce up and a broadcast down a double binary tree across nodes, a chain inside each",
     "Sanders et al. 2009 (two-tree broadcast); NCCL 2.4 trees; NCCL_ALGO=Tree", {NcclAlgo::Tree}},
    {"nvls", "all-reduce reduced and multicast inside the NVLink switches (NVLink SHARP)", "NCCL 2.17 NVLS; NCCL_ALGO=NVLS",
     {NcclAlgo::Nvls}},
    {"hierarchical", "a two-level collective: inside each node, then across nodes, then inside again (a framework's own schedule, never NCCL's choice)",
     "e.g. Horovod hierarchical all-reduce; priced as its three phases", {NcclAlgo::Hierarchical}},
    {"direct", "all-to-all as one send and receive per peer", "NCCL ncclAllToAll (grouped ncclSend/ncclRecv)", {NcclAlgo::Direct, false}},
    {"p2p", "a point-to-point send/receive", "NCCL ncclSend / ncclRecv", {NcclAlgo::P2p, false}}});
  return registry;
}

const Registry<NcclProtoDef>& nccl_protocols() {
  static const Registry<NcclProtoDef> registry("NCCL protocol", {
    {"ll", "low latency: 8-byte stores with an inline flag, half the bandwidth", "NCCL src/device/prims_ll.h; NCCL_PROTO=LL", {NcclProto::LL}},
    {"ll128", "low latency over 128-byte lines with one flag word each", "NCCL src/device/prims_ll128.h; NCCL_PROTO=LL128", {NcclProto::LL128}},
    {"simple", "bulk copies with a fence per step: full bandwidth, the highest latency", "NCCL src/device/prims_simple.h; NCCL_PROTO=Simple",
     {NcclProto::Simple}}});
  return registry;
}

const ChoiceRegistry<AttentionKernel>& attention_kernel_kinds() {
  static const ChoiceRegistry<AttentionKernel> registry("attention kernel", {
    {"flash", "FlashAttention-2 class, priced by the profile's attention_fwd/bwd_efficiency",
     "Dao 2023, FlashAttention-2; PyTorch SDPA flash backend, flash-attn 2.x", {AttentionKernel::Flash}},
    {"flash3", "FlashAttention-3 (Hopper: warp-specialised, asynchronous TMA and WGMMA)",
     "Shah et al. 2024, FlashAttention-3; flash-attn 3 (hopper/)", {AttentionKernel::Flash3}},
    {"cudnn", "cuDNN's fused attention (Transformer Engine's NVTE_FUSED_ATTN backend)",
     "cuDNN Graph API SDPA; Transformer Engine fused attention", {AttentionKernel::Cudnn}},
    {"triton", "a Triton fused-attention kernel", "Triton's fused attention (e.g. torch.compile / FlexAttention)",
     {AttentionKernel::Triton}}});
  return registry;
}

std::string name_of(AttentionKernel v) { return name_of(attention_kernel_kinds(), v); }

TunerOverride nccl_override(const std::string& algorithm, const std::string& protocol, const std::string& where) {
  TunerOverride o;
  if (algorithm != "auto") {
    const auto& e = nccl_algorithms().get(algorithm, where + "algorithm");
    if (!e.factory.forcible) throw ConfigError(where + "algorithm: \"" + algorithm + "\" is NCCL's send/receive path, which a run cannot force");
    o.algorithm = e.factory.value;
  }
  if (protocol != "auto") o.protocol = nccl_protocols().get(protocol, where + "protocol").factory.value;
  return o;
}

std::string override_name(const std::optional<NcclAlgo>& a) { return a ? nccl_algo_name(*a) : "auto"; }
std::string override_name(const std::optional<NcclProto>& p) { return p ? nccl_proto_name(*p) : "auto"; }

// Display names on the pricing paths: the registries, built once.
const char* nccl_algo_name(NcclAlgo a) {
  const Registry<NcclAlgoDef>& r = nccl_algorithms();
  for (const auto& e : r.entries())
    if (e.factory.value == a) return e.name.c_str();
  return "?";
}

const char* nccl_proto_name(NcclProto p) {
  const Registry<NcclProtoDef>& r = nccl_protocols();
  for (const auto& e : r.entries())
    if (e.factory.value == p) return e.name.c_str();
  return "?";
}

std::pair<size_t, size_t> Profile::dispatch_bracket(const std::vector<DispatchPoint>& pts, std::int64_t at) {
  if (at <= pts.front().at) return {0, 0};
  for (size_t i = 1; i < pts.size(); ++i)
    if (at <= pts[i].at) return at == pts[i].at ? std::pair{i, i} : std::pair{i - 1, i};
  return {pts.size() - 1, pts.size() - 1};
}

double Profile::dispatch_efficiency(const DispatchTable& t, MoeDispatcher d, std::int64_t at) {
  const auto it = t.find(d);
  if (it == t.end()) return 0;
  const std::vector<DispatchPoint>& pts = it->second;
  const auto [i, j] = dispatch_bracket(pts, at);
  if (i == j) return pts[i].efficiency.value;
  const double x0 = std::log2(static_cast<double>(pts[i].at)), x1 = std::log2(static_cast<double>(pts[j].at));
  const double f = (std::log2(static_cast<double>(at)) - x0) / (x1 - x0);
  return pts[i].efficiency.value + f * (pts[j].efficiency.value - pts[i].efficiency.value);
}

std::string Profile::dispatch_rdma_figure_name(MoeDispatcher d, std::int64_t nodes) {
  return "moe_dispatch_rdma." + name_of(d) + "." + std::to_string(nodes) + "_nodes";
}

std::string Profile::dispatch_nvlink_figure_name(MoeDispatcher d, std::int64_t ranks) {
  return "moe_dispatch_nvlink." + name_of(d) + "." + std::to_string(ranks) + "_ranks";
}

double Profile::peak_flops(const std::string& dtype) const {
  auto it = peak_tflops.find(dtype);
  if (it == peak_tflops.end()) throw ProfileError(file + ": /compute/peak_tflops: no peak for dtype \"" + dtype + "\"");
  return it->second.value * 1e12;
}

double Profile::gemm_efficiency(const std::string& dtype) const {
  auto it = gemm_max_efficiency.find(dtype);
  if (it == gemm_max_efficiency.end())
    throw ProfileError(file + ": /compute/gemm_max_efficiency: no efficiency for dtype \"" + dtype + "\"");
  return it->second.value;
}

const Profile::AttentionKernel& Profile::attention_kernel(const std::string& kernel) const {
  if (kernel == kAttentionDefault) {
    if (!has_fused_attention)
      throw ProfileError(file + ": /compute/attention_fwd_efficiency: profile \"" + name +
                         "\" prices no fused attention kernel (no FlashAttention runs on this GPU)");
    return attention;
  }
  const auto it = attention_kernels.find(kernel);
  if (it == attention_kernels.end())
    throw ProfileError(file + ": /compute/attention_kernels/" + kernel + ": profile \"" + name +
                       "\" has no figures for attention kernel \"" + kernel + "\"");
  return it->second;
}

std::pair<const Figure*, const Figure*> Profile::attention_efficiency(const std::string& kernel) const {
  const AttentionKernel& a = attention_kernel(kernel);
  return {&a.fwd_efficiency, &a.bwd_efficiency};
}

std::pair<Figure*, Figure*> Profile::attention_efficiency(const std::string& kernel) {
  const auto [f, b] = std::as_const(*this).attention_efficiency(kernel);
  return {const_cast<Figure*>(f), const_cast<Figure*>(b)};
}

namespace {

void parse_device(const JsonObject& d, Profile& p) {
  p.device.name = d.str("name");
  p.device.sms = d.integer("sms", 1, 100000);
  p.device.memory_bytes = d.number("memory_bytes", 1, 1e15);
  if (p.device.memory_bytes < 1073741824.0) d.fail("memory_bytes", "expected at least 1 GiB (1073741824 bytes): no GPU that trains a model has less");
  p.device.how = d.choice("how", {"measured", "imported", "datasheet"});
  p.device.date = d.str("date", "");
  p.device.driver = d.str("driver", "");
  p.device.cuda = d.str("cuda", "");
  p.device.nccl = d.str("nccl", "");
  p.device.cublas = d.str("cublas", "");
  p.device.source = d.str("source");
  d.finish({"cudnn", "clocks_mhz", "command"});
}

// Peak rates and the best-shape GEMM efficiency per data type.
void parse_gemm_rates(const JsonObject& c, Profile& p) {
  const JsonObject peaks = c.object("peak_tflops");
  for (const auto& dt : kGemmDtypes)
    if (peaks.has(dt)) p.peak_tflops[dt] = figure(peaks, dt, 1e-3, 1e6);
  peaks.finish();
  const JsonObject effs = c.object("gemm_max_efficiency");
  for (const auto& dt : kGemmDtypes) {
    if (!effs.has(dt)) continue;
    p.gemm_max_efficiency[dt] = figure(effs, dt, 0.01, 1.0, {"shape_mnk"});
    const JsonObject e = effs.object(dt);
    if (e.has("shape_mnk")) {
      const Json& s = e.raw("shape_mnk");
      if (!s.is_array() || s.size() != 3 || !s[0].is_number_integer() || !s[1].is_number_integer() ||
          !s[2].is_number_integer() || s[0].get<std::int64_t>() < 1 || s[1].get<std::int64_t>() < 1 || s[2].get<std::int64_t>() < 1)
        e.fail("shape_mnk", "expected [m, n, k]: the GEMM shape the best-shape efficiency was measured at, positive integers");
      p.gemm_best_shape[dt] = {s[0].get<std::int64_t>(), s[1].get<std::int64_t>(), s[2].get<std::int64_t>()};
    }
  }
  effs.finish();
}

// The GEMM kernel model's figures: fixed time, epilogue rate, tile, unaligned-shape ratio.
void parse_gemm_kernel(const JsonObject& c, Profile& p) {
  p.gemm_fixed_us = figure(c, "gemm_fixed_us", 0, 1e4);
  p.gemm_epilogue_gbps = figure(c, "gemm_epilogue_gbps", 1, 1e6);
  p.gemm_tile_m = figure(c, "gemm_tile_m", 1, 4096);
  p.gemm_tile_n = figure(c, "gemm_tile_n", 1, 4096);
  p.gemm_unaligned_ratio = figure(c, "gemm_unaligned_ratio", 0.05, 1.0);
  p.has_attention_gemm_unaligned_ratio = c.has("attention_gemm_unaligned_ratio");
  if (p.has_attention_gemm_unaligned_ratio) {
    p.attention_gemm_unaligned_ratio = figure(c, "attention_gemm_unaligned_ratio", 0.01, 1.0);
  } else {
    p.attention_gemm_unaligned_ratio = p.gemm_unaligned_ratio;
    p.attention_gemm_unaligned_ratio.low = p.attention_gemm_unaligned_ratio.high = p.gemm_unaligned_ratio.value;
    p.attention_gemm_unaligned_ratio.source =
        "not in the profile: compute.gemm_unaligned_ratio (" + p.gemm_unaligned_ratio.source + ")";
  }
}

// The default fused attention kernel's figures and those of the other kernels it lists.
void parse_attention(const JsonObject& c, Profile& p) {
  // One kernel's figures, named prefix + fwd_efficiency, ... (prefix "attention_" for the default).
  const auto attention_figures = [&](const JsonObject& o, const std::string& prefix) {
    Profile::AttentionKernel a;
    for (const auto& f : Profile::kAttentionFigures) a.*f.member = figure(o, prefix + f.name, f.min, f.max);
    if (auto hd = o.object_opt(prefix + "head_dims")) {
      a.head_dims = hd->int_list("values", 1, 4096);
      if (a.head_dims.empty() || !std::is_sorted(a.head_dims.begin(), a.head_dims.end()) ||
          std::adjacent_find(a.head_dims.begin(), a.head_dims.end()) != a.head_dims.end())
        hd->fail("values", "expected the kernel's head widths, ascending and distinct");
      a.head_dims_source = hd->str("source");
      if (a.head_dims_source.empty()) hd->fail("source", "expected where the head widths come from");
      hd->finish();
    }
    return a;
  };
  p.has_fused_attention = false;
  for (const auto& f : Profile::kAttentionFigures)
    p.has_fused_attention = p.has_fused_attention || c.has(std::string("attention_") + f.name);
  if (p.has_fused_attention) p.attention = attention_figures(c, "attention_");
  if (auto ak = c.object_opt("attention_kernels")) {
    if (ak->has(kAttentionDefault))
      ak->fail(kAttentionDefault, std::string("the default kernel is priced by compute.attention_fwd_efficiency and ") +
                                      "compute.attention_bwd_efficiency, not listed here");
    for (const auto& name : attention_kernel_kinds().names()) {
      if (name == kAttentionDefault || !ak->has(name)) continue;
      const JsonObject k = ak->object(name);
      p.attention_kernels[name] = attention_figures(k, "");
      k.finish({"note"});
    }
    ak->finish();
  }
}

// Overheads, overlap, clock and the spread between GPUs.
void parse_compute_rest(const JsonObject& c, Profile& p) {
  p.kernel_overhead_us = figure(c, "kernel_overhead_us", 0, 1e4);
  p.overlap_compute_slowdown = figure(c, "overlap_compute_slowdown", 0, 10);
  if (c.has("tp_overlap")) {
    const JsonObject t = c.object("tp_overlap");
    p.has_tp_overlap = true;
    p.tp_overlap.comm_sms = figure(t, "comm_sms", 0, static_cast<double>(p.device.sms - 1));
    p.tp_overlap.exposed_fwd = figure(t, "exposed_fwd", 0, 1);
    p.tp_overlap.exposed_bwd = figure(t, "exposed_bwd", 0, 1);
    t.finish();
  }
  if (c.has("sustained_clock_ratio")) {
    p.sustained_clock_ratio = figure(c, "sustained_clock_ratio", 0.3, 1.0);
  } else {
    p.sustained_clock_ratio.value = p.sustained_clock_ratio.low = p.sustained_clock_ratio.high = 1.0;
    p.sustained_clock_ratio.how = "assumed";
    p.sustained_clock_ratio.source = "not in the profile: compute-bound kernels run at their benchmarked (burst) rate";
  }
  if (c.has("gpu_speed_spread")) {
    p.gpu_speed_spread = figure(c, "gpu_speed_spread", 0.0, 0.5);
  } else {
    p.gpu_speed_spread.how = "assumed";
    p.gpu_speed_spread.source = "not in the profile: every GPU of a job runs at the profile's speed";
  }
}

void parse_gemm_points(const JsonObject& c, Profile& p, const std::string& file) {
  if (const Json* pts = c.raw_opt("gemm_points")) {
    if (!pts->is_array()) c.fail("gemm_points", "expected an array");
    for (size_t i = 0; i < pts->size(); ++i) {
      const JsonObject g((*pts)[i], file, c.path("gemm_points") + "/" + std::to_string(i));
      GemmPoint gp;
      gp.m = g.integer("m", 1, 1LL << 40);
      gp.n = g.integer("n", 1, 1LL << 40);
      gp.k = g.integer("k", 1, 1LL << 40);
      gp.dtype = g.choice("dtype", kGemmDtypes);
      gp.time_s = g.number("time_s", 1e-12, 1e6);
      gp.source = g.str("source");
      g.finish({"algo", "p10_s", "p90_s", "tflops"});
      p.gemm_points.push_back(gp);
    }
  }
}

void parse_memory(const JsonObject& m, Profile& p) {
  p.hbm_gbps = figure(m, "hbm_gbps", 1, 1e6);
  p.hbm_efficiency = figure(m, "hbm_efficiency", 0.01, 1.0);
  const auto classes = m.object_opt("kernel_class_ratio");
  for (const auto& f : Profile::kKernelClassFigures) {
    Figure& r = p.kernel_class_ratio.*f.member;
    if (classes) {
      r = figure(*classes, f.name, 0.05, 2.0);
    } else {
      r.value = r.low = r.high = 1.0;
      r.how = "assumed";
      r.source = "not in the profile: every memory-bound kernel at the streaming rate";
    }
  }
  if (classes) classes->finish();
  p.runtime_reserved_gib = figure(m, "runtime_reserved_gib", 0, 1e4);
  p.pcie_gbps = figure(m, "pcie_gbps", 0.1, 1e4);
  if (m.has("host_memory_gbps") || m.has("host_optimizer_efficiency")) {
    p.has_host = true;
    p.host_memory_gbps = figure(m, "host_memory_gbps", 0.1, 1e5);
    p.host_optimizer_efficiency = figure(m, "host_optimizer_efficiency", 0.001, 1.0);
  }
  m.finish();
}

void parse_collective_points(const JsonObject& n, Profile& p, const std::string& file) {
  if (const Json* pts = n.raw_opt("collective_points")) {
    if (!pts->is_array()) n.fail("collective_points", "expected an array");
    for (size_t i = 0; i < pts->size(); ++i) {
      const JsonObject g((*pts)[i], file, n.path("collective_points") + "/" + std::to_string(i));
      CollectivePoint cp;
      cp.op = g.choice("op", {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"});
      cp.ranks = g.integer("ranks", 1, 1 << 24);
      cp.nodes = g.integer("nodes", 1, 1 << 24, 1);
      cp.bytes = g.number("bytes", 1, kMaxPointBytes);
      cp.time_s = g.number("time_s", kMinPointTimeS, kMaxPointTimeS);
      cp.algo = g.str("algo", "");
      cp.source = g.str("source");
      g.finish({"busbw_gbps", "algbw_gbps", "p10_s", "p90_s"});
      p.collective_points.push_back(cp);
    }
  }
}

void parse_network(const JsonObject& n, Profile& p, const std::string& file) {
  p.nvlink_gbps = figure(n, "nvlink_gbps", 0.1, 1e5);
  p.intra_bus_efficiency = figure(n, "intra_bus_efficiency", 0.01, 1.0);
  p.intra_alpha_us = figure(n, "intra_alpha_us", 0, 1e5);
  p.inter_bus_efficiency = figure(n, "inter_bus_efficiency", 0.01, 1.0);
  p.inter_alpha_us = figure(n, "inter_alpha_us", 0, 1e5);
  p.node_nics = figure(n, "node_nics", 1, 1024);
  p.node_nic_gbps = figure(n, "node_nic_gbps", 0.1, 1e5);
  parse_collective_points(n, p, file);
  if (auto md = n.object_opt("moe_dispatch_rdma")) p.moe_dispatch_rdma = parse_dispatch_table(*md, "nodes");
  if (auto md = n.object_opt("moe_dispatch_nvlink")) p.moe_dispatch_nvlink = parse_dispatch_table(*md, "ranks");
  if (auto nc = n.object_opt("nccl")) p.nccl = parse_nccl(*nc);
  n.finish();
}

}  // namespace

Profile parse_profile(const Json& j, const std::string& file) {
  const JsonObject root(j, file, "");
  if (root.str("schema") != "parasim.profile/1") root.fail("schema", "expected \"parasim.profile/1\"");
  Profile p;
  p.file = file;
  p.name = root.str("name");
  parse_device(root.object("device"), p);
  {
    const JsonObject c = root.object("compute");
    parse_gemm_rates(c, p);
    parse_gemm_kernel(c, p);
    parse_attention(c, p);
    parse_compute_rest(c, p);
    parse_gemm_points(c, p, file);
    c.finish();
  }
  parse_memory(root.object("memory"), p);
  parse_network(root.object("network"), p, file);
  root.finish({"description", "notes"});
  return p;
}

std::vector<std::string> profile_names(const std::string& data_dir) { return json_stems(data_dir + "/calibrate/profiles"); }

std::string profile_path(const std::string& data_dir, const std::string& name_or_path, const std::string& where) {
  const bool is_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json") || name_or_path == "-";
  if (is_path) return name_or_path;
  const std::string dir = data_dir + "/calibrate/profiles";
  const std::string path = dir + "/" + name_or_path + ".json";
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return path;
  if (!std::filesystem::is_directory(dir, ec))
    throw ConfigError(where + ": unknown GPU profile \"" + name_or_path + "\": the profile directory " + dir +
                      " does not exist (set --data-dir or PARASIM_DATA_DIR to the parasim tree, or give a profile's path)");
  const auto names = profile_names(data_dir);
  std::string msg = where + ": unknown GPU profile \"" + name_or_path + "\"";
  const std::string close = closest_name(name_or_path, names);
  if (!close.empty()) msg += "; did you mean \"" + close + "\"?";
  msg += " Profiles: ";
  for (size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : "") + names[i];
  throw ConfigError(msg);
}

Profile load_profile(const std::string& data_dir, const std::string& name_or_path, const std::string& where) {
  const std::string path = profile_path(data_dir, name_or_path, where);
  const bool is_path = path == name_or_path;
  const std::string shown = is_path ? input_name(path) : "calibrate/profiles/" + name_or_path + ".json";
  Json j;
  try {
    j = read_json_file(path);
  } catch (const ConfigError& e) {
    // A file that cannot be read or parsed: say which input named it (a scenario's /cluster/gpu, an option).
    const bool no_extension = is_path && !path.ends_with(".json") && path != "-" && std::string(e.what()).ends_with("cannot open file");
    throw ProfileError(where + ": the GPU profile " + e.what() +
                       (no_extension ? " (a profile path names its .json file; a shipped profile is named without it: parasim list profiles)" : ""));
  }
  try {
    return parse_profile(j, shown);
  } catch (const ProfileError&) {
    throw;
  } catch (const ConfigError& e) {
    throw ProfileError(e.what());
  }
}

}  // namespace parasim
