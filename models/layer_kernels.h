// Kernel builders the blocks of a layer graph share (defined in layer_graph.cpp): a GEMM, a
// memory-bound pass, a module tag, a GEMM's backward and a norm's kernels. For the files that
// build one kind of block (mamba2.cpp); not part of the models/ interface.
#pragma once
#include <cstdint>
#include <string>

#include "models/layer_graph.h"

namespace parasim::layer_kernels {

// y = x W with x [m, k], W [k, n]: 2 m n k FLOPs.
Kernel gemm(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k, bool bwd = false);
// A memory-bound kernel moving `bytes` through HBM.
Kernel mem(const std::string& name, double bytes, bool bwd = false, MemClass cls = MemClass::Stream);
// `k` as a kernel of module `m` (and step `f` of its feed-forward chain).
Kernel tagged(LayerModule m, Kernel k, FfnStep f = FfnStep::None);
// The residual add after a block over `act` bytes of [T, h] activations, with the hidden dropout's
// drop_f bytes of keep mask when the model has dropout: one fused kernel reading the branch and the
// residual and writing the sum and the mask (Megatron's bias_dropout_add), or with
// LayerShape::eager_dropout_add nn.Dropout's kernel (reads the branch, writes it and the mask:
// 2 act + drop_f) before a plain add (3 act), 2 act more than fused.
void add_residual(Block& f, const std::string& name, double act, double drop_f, const LayerShape& sh);
// The data- and weight-gradient GEMMs of forward GEMM f; the data gradient launches
// `input_grad_adds` kernels more than f (autograd adding the input gradients of GEMMs f stands for).
void add_gemm_bwd(Block& b, const Kernel& f, std::int64_t input_grad_adds = 0);
// A norm over `elems` activations of e bytes: fused, or the eager reference code's kernels
// (LayerShape::eager_norm), with a two-pass backward where the shape says so.
void add_norm(Block& b, const std::string& name, double elems, double e, const LayerShape& sh, bool bwd,
              LayerModule mod = LayerModule::None);
// add_norm for a block norm (LayerModule::BlockNorm), tagged Kernel::in_linear where Transformer
// Engine runs it inside the linear after it (input_norm_in_linear, pre_mlp_norm_in_linear,
// mamba_norm_in_linear in models/layer_graph.h).
void add_block_norm(Block& b, const std::string& name, double elems, double e, const LayerShape& sh, bool bwd, bool in_linear);

}  // namespace parasim::layer_kernels
