#include "sim/cost/kernels.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace parasim {

double class_ratio(const Profile& p, MemClass c) {
  switch (c) {
    case MemClass::Stream: return 1.0;
    case MemClass::Norm: return p.kernel_class_ratio.norm.value;
    case MemClass::Activation: return p.kernel_class_ratio.activation.value;
    case MemClass::Reduction: return p.kernel_class_ratio.reduction.value;
    case MemClass::Cast: return p.kernel_class_ratio.cast.value;
  }
  return 1.0;
}

namespace {
// An MoE expert GEMM as the busiest expert-parallel rank runs it (Kernel::scale: its rows over the
// shape's): the shape's time plus the marginal time of the extra rows, from the shape with its token
// dimension doubled (fewer rows: halved), so neither the GEMM's fixed cost nor a tile boundary at
// the exact row count scales with the excess. Tokens are the rows of the forward and input-gradient
// GEMMs and the reduction of the weight gradient.
double expert_gemm_seconds(const CostModel& c, const Kernel& k, bool* measured) {
  const bool wgrad = k.grad == GemmGrad::Weight;
  const std::int64_t tokens = wgrad ? k.k : k.m;
  const auto at = [&](std::int64_t t, bool* m) {
    return wgrad ? c.expert_gemm_s(k.m, k.n, t, k.batch, m, k.sixteen_bit) : c.expert_gemm_s(t, k.n, k.k, k.batch, m, k.sixteen_bit);
  };
  const double t = at(tokens, measured);  // how the shape itself is priced is what --kernels reports
  if (k.scale == 1) return t;
  if (k.scale > 1) return t + (k.scale - 1) * std::max(0.0, at(2 * tokens, nullptr) - t);
  return t - (1 - k.scale) * 2 * std::max(0.0, t - at(std::max<std::int64_t>(1, tokens / 2), nullptr));
}

// A GEMM kernel: unfused attention's batched GEMMs carry their head dim, an FP8 recipe's 16-bit
// GEMMs their flag, an MoE layer's expert GEMMs their module (CostModel::expert_gemm_s); the rest are
// plain GEMMs.
double gemm_seconds(const CostModel& c, const Kernel& k, bool* measured = nullptr) {
  if (k.head_dim > 0) return c.attention_gemm_s(k.m, k.n, k.k, k.batch, k.head_dim, measured);
  if (k.module == LayerModule::Experts) return expert_gemm_seconds(c, k, measured);
  return k.sixteen_bit ? c.gemm16_s(k.m, k.n, k.k, k.batch, measured) : c.gemm_s(k.m, k.n, k.k, k.batch, measured);
}
}  // namespace

double kernel_seconds(const CostModel& c, const Kernel& k) {
  switch (k.kind) {
    case KernelKind::Gemm: return gemm_seconds(c, k);
    case KernelKind::Attention: return c.attention_s(k.flops, k.backward, static_cast<double>(k.seq), k.cp, static_cast<double>(k.head_dim));
    case KernelKind::Memory: return c.memory_s(k.bytes, class_ratio(c.profile(), k.mem_class), k.launches);
    case KernelKind::Scan: return c.scan_s(k.flops, k.bytes);
  }
  return 0;
}

std::vector<KernelRow> kernel_rows(const LayerGraph& g, const CostModel& c) {
  std::vector<KernelRow> rows;
  struct Named {
    const char* name;
    const Block* block;
    bool layer;
  };
  const Named blocks[] = {{"embedding fwd", &g.embed_fwd, false}, {"attention fwd", &g.attn_fwd, true}, {"mlp fwd", &g.mlp_fwd, true},
                          {"head fwd", &g.head_fwd, false},       {"head bwd", &g.head_bwd, false},    {"mlp bwd", &g.mlp_bwd, true},
                          {"attention bwd", &g.attn_bwd, true},   {"embedding bwd", &g.embed_bwd, false},
                          {"mtp fwd", &g.mtp_fwd, false},         {"mtp bwd", &g.mtp_bwd, false},      {"train metrics", &g.metrics, false}};
  for (const auto& [name, b, layer] : blocks)
    for (const auto& k : b->kernels) {
      KernelRow r;
      r.block = name;
      r.layer = layer;
      r.kernel = &k;
      switch (k.kind) {
        case KernelKind::Gemm: {
          bool measured = false;
          r.seconds = gemm_seconds(c, k, &measured);
          r.priced_by = measured ? "GEMM points" : "GEMM kernel model";
          if (k.scale != 1) r.priced_by += fmt::format(", the busiest rank's {:.4f}x rows", k.scale);
          break;
        }
        case KernelKind::Attention:
          r.seconds = kernel_seconds(c, k);
          r.priced_by = "attention efficiency";
          break;
        case KernelKind::Memory:
          r.seconds = kernel_seconds(c, k);
          r.priced_by = "HBM bandwidth";
          if (k.launches > 1) r.priced_by += fmt::format(", {} kernels' overheads", k.launches);
          break;
        case KernelKind::Scan:
          r.seconds = kernel_seconds(c, k);
          r.priced_by = "scan roofline (GEMM rate, HBM)";
          break;
      }
      rows.push_back(std::move(r));
    }
  return rows;
}

std::string kind_label(const ModelSpec& m, const LayerKind& k) {
  std::string out;
  if (k.type == LayerType::Mamba) return "Mamba-2";
  if (k.type == LayerType::Attention) out = "attention";
  if (k.type == LayerType::Mlp) return k.moe ? "MoE" : "MLP";
  if (m.moe && (m.moe->first_dense_layers > 0 || m.moe->interval > 1)) out = k.moe ? "MoE" : "dense MLP";
  if (m.sliding_window > 0 && m.full_attention_interval > 0)
    out += (out.empty() ? "" : ", ") + (k.windowed ? "window " + std::to_string(m.sliding_window) : std::string("full attention"));
  return out;
}

std::vector<KernelRow> kernel_rows(const ModelGraph& g, const ModelSpec& m, const CostModel& c) {
  if (g.kinds.size() == 1) return kernel_rows(g.kinds.front(), c);
  std::vector<KernelRow> out;
  const std::vector<LayerKind> kinds = m.kinds();
  for (size_t i = 0; i < g.kinds.size(); ++i) {
    const bool ends = i == 0;
    for (KernelRow& r : kernel_rows(g.kinds[i], c)) {
      if (!r.layer && !ends) continue;
      // A Mamba-2 layer's mixer fills the attention blocks: named for what it is.
      if (r.layer && kinds[i].type == LayerType::Mamba && r.block.rfind("attention", 0) == 0) r.block = "mamba" + r.block.substr(9);
      if (r.layer) r.block += " [" + kind_label(m, kinds[i]) + "]";
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace parasim
