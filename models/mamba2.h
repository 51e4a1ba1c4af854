// The kernels of a hybrid model's Mamba-2 layer (ModelSpec::mamba, LayerType::Mamba) on one
// tensor-parallel rank for one microbatch, as Megatron-Core's MambaLayer runs them
// (megatron/core/ssm/mamba_layer.py, mamba_mixer.py) with mamba_ssm's fused training path
// (mamba_split_conv1d_scan_combined, mamba_ssm/ops/triton/ssd_combined.py).
#pragma once
#include <vector>

#include "models/layer_graph.h"

namespace parasim {

// FLOPs and HBM bytes of the SSD chunked scan over one microbatch on one rank.
struct SsdCost {
  double flops = 0;        // executed: the chunk matmuls and the state passing
  double model_flops = 0;  // as Megatron counts a Mamba layer's scan for MFU
  double bytes = 0;
};
// Forward and backward of the scan for micro_batch sequences of seq_len tokens with the mixer's
// heads and groups split over tp ranks (see mamba2.cpp for the kernels counted).
SsdCost ssd_scan_forward(const MambaSpec& s, std::int64_t micro_batch, std::int64_t seq_len, std::int64_t tp, double e);
SsdCost ssd_scan_backward(const MambaSpec& s, std::int64_t micro_batch, std::int64_t seq_len, std::int64_t tp, double e);

// Fills g.attn_fwd and g.attn_bwd (the layer's one block; g.attn_tp_comm keeps its tensor-parallel
// collectives: in_proj is column-parallel, out_proj row-parallel) with the Mamba-2 layer's kernels:
// pre-norm, in_proj, conv1d, SSD scan, gated RMSNorm, out_proj, residual; and their backward.
// drop_f / drop_b: the residual's dropout bytes forward and backward. Appends in_proj and out_proj
// to `linears`, the GEMMs an FP8 recipe runs in FP8.
void add_mamba2_block(LayerGraph& g, const ModelSpec& m, const LayerShape& sh, double drop_f, double drop_b,
                      std::vector<Kernel>& linears);

}  // namespace parasim
