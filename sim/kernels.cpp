#include "sim/kernels.h"

#include <utility>

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

double kernel_seconds(const CostModel& c, const Kernel& k) {
  switch (k.kind) {
    case KernelKind::Gemm: return k.sixteen_bit ? c.gemm16_s(k.m, k.n, k.k, k.batch) : c.gemm_s(k.m, k.n, k.k, k.batch);
    case KernelKind::Attention: return c.attention_s(k.flops, k.backward, static_cast<double>(k.seq), k.cp, static_cast<double>(k.head_dim));
    case KernelKind::Memory: return c.memory_s(k.bytes, class_ratio(c.profile(), k.mem_class));
  }
  return 0;
}

std::vector<KernelRow> kernel_rows(const LayerGraph& g, const CostModel& c) {
  std::vector<KernelRow> rows;
  const std::pair<const char*, const Block*> blocks[] = {
      {"embedding fwd", &g.embed_fwd}, {"attention fwd", &g.attn_fwd}, {"mlp fwd", &g.mlp_fwd},
      {"head fwd", &g.head_fwd},       {"head bwd", &g.head_bwd},      {"mlp bwd", &g.mlp_bwd},
      {"attention bwd", &g.attn_bwd},  {"embedding bwd", &g.embed_bwd}};
  for (const auto& [name, b] : blocks)
    for (const auto& k : b->kernels) {
      KernelRow r;
      r.block = name;
      r.kernel = &k;
      switch (k.kind) {
        case KernelKind::Gemm: {
          bool measured = false;
          r.seconds = k.sixteen_bit ? c.gemm16_s(k.m, k.n, k.k, k.batch, &measured) : c.gemm_s(k.m, k.n, k.k, k.batch, &measured);
          r.priced_by = measured ? "GEMM points" : "GEMM kernel model";
          break;
        }
        case KernelKind::Attention:
          r.seconds = kernel_seconds(c, k);
          r.priced_by = "attention efficiency";
          break;
        case KernelKind::Memory:
          r.seconds = kernel_seconds(c, k);
          r.priced_by = "HBM bandwidth";
          break;
      }
      rows.push_back(std::move(r));
    }
  return rows;
}

}  // namespace parasim
