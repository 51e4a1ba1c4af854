#include "models/mamba2.h"

#include "models/layer_kernels.h"

namespace parasim {

namespace {

using layer_kernels::add_block_norm;
using layer_kernels::add_gemm_bwd;
using layer_kernels::gemm;
using layer_kernels::mem;
using layer_kernels::tagged;

// The scan's dimensions on one rank: L tokens per sequence in C chunks, H heads of P channels, G
// groups with states of N (Megatron's nheads_local_tp, ngroups_local_tp), b sequences. The chunks
// hold `chunk` tokens but the last, which holds the rest (mamba_ssm's kernels mask each chunk at
// min(chunk_size, seqlen - chunk start)): QQ is the sum over chunks of their tokens squared, the size
// of the within-chunk products; a sequence shorter than a chunk is one chunk of its tokens.
struct ScanDims {
  double L, C, QQ, H, P, G, N, b;
};
ScanDims scan_dims(const MambaSpec& s, std::int64_t micro_batch, std::int64_t seq_len, std::int64_t tp) {
  const std::int64_t full = seq_len / s.chunk, rest = seq_len - full * s.chunk;
  const double qq = static_cast<double>(full) * static_cast<double>(s.chunk) * static_cast<double>(s.chunk) +
                    static_cast<double>(rest) * static_cast<double>(rest);
  return {static_cast<double>(seq_len),    static_cast<double>(full + (rest > 0 ? 1 : 0)), qq,
          static_cast<double>(s.heads / tp), static_cast<double>(s.head_dim),              static_cast<double>(s.groups / tp),
          static_cast<double>(s.state),    static_cast<double>(micro_batch)};
}

// Megatron-LM's model-FLOPs count of a Mamba layer's scan, forward: 7 x tokens x d_inner x d_state
// (megatron/training/training.py, mamba_layer_flops), on this rank's d_inner / tp.
double megatron_scan_flops(const ScanDims& d) { return 7.0 * d.b * d.L * d.H * d.P * d.N; }

// The forward's chunk matmuls (Dao & Gu 2024, section 7, the SSD algorithm; the Triton kernels of
// mamba_ssm's _mamba_chunk_scan_combined_fwd), per chunk: C^T B within the chunk, one Q x Q x N
// product per group (_bmm_chunk_fwd); each head's chunk state B^T x, N x Q x P (_chunk_state_fwd);
// each head's output, the state's contribution C h, Q x N x P, and the intra-chunk (C^T B) x,
// Q x Q x P (_chunk_scan_fwd; the causal mask inside a chunk is not credited).
double scan_matmul_flops(const ScanDims& d) {
  return 2.0 * d.b * (d.G * d.QQ * d.N + 2.0 * d.H * d.L * d.P * d.N + d.H * d.QQ * d.P);
}
}  // namespace

// Forward bytes, kernel by kernel (_mamba_chunk_scan_combined_fwd; dt, x, B, C, z in e bytes, the
// per-token dt and its cumulative decay dA in fp32, chunk states written in fp32 by _chunk_state_fwd
// and in e bytes by _state_passing_fwd, C^T B in fp32):
//   _chunk_cumsum_fwd    read dt (e), write dt and dA (4 + 4) per token and head
//   _chunk_state_fwd     read B (e per token and group state), x (e per token channel), dt and dA
//                        (8 per token and head); write the chunk states (4 per state element)
//   _state_passing_fwd   read them (4), write the passed states (e); their FLOPs: one multiply-add
//                        per state element and chunk
//   _bmm_chunk_fwd       read C and B (2e), write C^T B (4 per chunk entry, G Q^2 per chunk)
//   _chunk_scan_fwd      read C^T B (4), x (e), dt and dA (8), C (e), the states (e), z (e); write
//                        the gated output and the ungated one the backward keeps (2e)
SsdCost ssd_scan_forward(const MambaSpec& s, std::int64_t micro_batch, std::int64_t seq_len, std::int64_t tp, double e) {
  const ScanDims d = scan_dims(s, micro_batch, seq_len, tp);
  const double tok_head = d.L * d.H, tok_group = d.L * d.G * d.N, tok_chan = d.L * d.H * d.P;
  const double states = d.C * d.H * d.P * d.N, cb = d.G * d.QQ;
  SsdCost c;
  c.flops = scan_matmul_flops(d) + 2.0 * d.b * states;
  c.model_flops = megatron_scan_flops(d);
  c.bytes = d.b * (tok_head * (e + 24) + tok_group * 4 * e + tok_chan * 5 * e + states * (8 + 2 * e) + cb * 8);
  return c;
}

// Backward (_mamba_chunk_scan_combined_bwd): it first recomputes dA, the chunk states, their passing
// and C^T B as in forward (L H (e + 16) + L G N 3e + L H P e + states (8 + e) + C^T B 4 bytes, and
// the C^T B and chunk-state matmuls), then, bytes per element as in forward:
//   gating by z      read the output gradient, the ungated output and z, write dz and the
//                    ungated output's gradient: 5e per token channel
//   _chunk_scan_bwd_dstates  read C, the output gradient, dA; write the state gradients (4)
//   _state_passing_bwd       read them and the states, write them again (4 + e + 4)
//   _chunk_scan_chunk_state_bwd_dx  read x, C^T B, the output gradient, dt and dA, B and the state
//                    gradients, write dx and ddt (3e per channel, 12 per token and head)
//   _chunk_scan_bwd_dC, _chunk_state_bwd_db  read the output gradient or x, the states or their
//                    gradients, dt and dA; write dC, dB
//   _chunk_scan_bwd_dcb and _bmm_chunk_bwd  read x and the output gradient, write the gradient of
//                    C^T B (4), read it with C and B, write their gradients
//   ddA and the cumsum's backward  read x and the output gradient, dt and dA; write ddt
// in all L H P 16e, L G N 12e, states 28 + 3e, C^T B 20, L H (60 + e) bytes. Every forward matmul
// has two gradient matmuls of its size: twice the forward's matmul FLOPs, plus the recompute.
SsdCost ssd_scan_backward(const MambaSpec& s, std::int64_t micro_batch, std::int64_t seq_len, std::int64_t tp, double e) {
  const ScanDims d = scan_dims(s, micro_batch, seq_len, tp);
  const double tok_head = d.L * d.H, tok_group = d.L * d.G * d.N, tok_chan = d.L * d.H * d.P;
  const double states = d.C * d.H * d.P * d.N, cb = d.G * d.QQ;
  const double recompute = 2.0 * d.b * (d.G * d.QQ * d.N + d.H * d.L * d.P * d.N);
  SsdCost c;
  c.flops = 2.0 * scan_matmul_flops(d) + recompute + 2.0 * d.b * states;
  c.model_flops = 2.0 * megatron_scan_flops(d);
  c.bytes = d.b * (tok_head * (60 + e) + tok_group * 12 * e + tok_chan * 16 * e + states * (28 + 3 * e) + cb * 20);
  return c;
}

namespace {
Kernel scan_kernel(const std::string& name, const SsdCost& c, bool bwd) {
  Kernel k = tagged(LayerModule::MambaMixer, mem(name, c.bytes, bwd));
  k.kind = KernelKind::Scan;
  k.flops = c.flops;
  k.model_flops = c.model_flops;
  return k;
}
}  // namespace

// Per rank, T tokens (micro_batch x seq_len; context parallelism is refused for Mamba-2 layers),
// heads and groups split by tp (mamba_mixer.py: nheads_local_tp, ngroups_local_tp), di = d_inner / tp:
//   norm1      the layer's pre-norm (MambaLayer.norm), like a transformer block's
//   in_proj    column-parallel GEMM, T x (2 di + 2 G N + H) x hidden
//   conv1d     causal_conv1d_fwd over x, B, C (di + 2 G N channels, conv_kernel taps): read and write
//              e bytes per element; backward recomputes it, then reads the input and the gradient
//              and writes the input gradient (5e)
//   ssd_scan   the chunked scan (ssd_scan_forward / ssd_scan_backward)
//   norm       the gated RMSNorm over di (Megatron's ExtendedRMSNorm after the fused kernel):
//              read and write (2e), backward 3e
//   out_proj   row-parallel GEMM, T x hidden x di
//   residual1  the bias-dropout-add, as a transformer block's
// With micro_batch > 1 mamba_mixer.py's rearranges of the in_proj output (l b d -> b l d) and of
// the scan's output back copy them (read and write e), and again in backward; with one sequence
// they are views.
void add_mamba2_block(LayerGraph& g, const ModelSpec& m, const LayerShape& sh, double drop_f, double drop_b,
                      std::vector<Kernel>& linears) {
  const MambaSpec& s = *m.mamba;
  const double e = sh.dtype_bytes, t = static_cast<double>(sh.tp);
  const std::int64_t T = sh.micro_batch * (sh.seq_len / sh.cp);
  const double Td = static_cast<double>(T), hd = static_cast<double>(m.hidden);
  const double act_elems = Td * hd / (sh.sequence_parallel ? t : 1.0), act = act_elems * e;
  const std::int64_t in_w = s.in_proj_width() / sh.tp, di = s.d_inner() / sh.tp;
  const double conv = static_cast<double>(s.conv_dim() / sh.tp), did = static_cast<double>(di), in_wd = static_cast<double>(in_w);
  const bool copies = sh.micro_batch > 1;
  const Kernel in_proj = tagged(LayerModule::MambaProj, gemm("mamba.in_proj", T, in_w, m.hidden));
  const Kernel out_proj = tagged(LayerModule::MambaProj, gemm("mamba.out_proj", T, m.hidden, di));
  Kernel conv_f = tagged(LayerModule::MambaMixer, mem("mamba.conv1d", 2 * e * Td * conv));
  conv_f.flops = 2.0 * static_cast<double>(s.conv_kernel) * Td * conv;
  Kernel conv_b = tagged(LayerModule::MambaMixer, mem("mamba.conv1d.bwd", 5 * e * Td * conv, true));
  conv_b.flops = 3 * conv_f.flops;  // the recompute, then the input and the weight gradients

  Block& f = g.attn_fwd;
  add_block_norm(f, "norm1", act_elems, e, sh, false, mamba_norm_in_linear(sh));
  f.kernels.push_back(in_proj);
  if (copies) f.kernels.push_back(tagged(LayerModule::MambaMixer, mem("mamba.in_proj.rearrange", 2 * e * Td * in_wd)));
  f.kernels.push_back(conv_f);
  f.kernels.push_back(scan_kernel("mamba.ssd_scan", ssd_scan_forward(s, sh.micro_batch, sh.seq_len, sh.tp, e), false));
  if (copies) f.kernels.push_back(tagged(LayerModule::MambaMixer, mem("mamba.out.rearrange", 2 * e * Td * did)));
  f.kernels.push_back(tagged(LayerModule::MambaMixer, mem("mamba.norm", 2 * e * Td * did, false, MemClass::Norm)));
  f.kernels.push_back(out_proj);
  layer_kernels::add_residual(f, "residual1", act, drop_f, sh);

  Block& b = g.attn_bwd;
  b.kernels.push_back(mem("residual1.bwd", 3 * act, true));
  if (m.dropout) b.kernels.push_back(mem("dropout1.bwd", drop_b, true));
  add_gemm_bwd(b, out_proj);
  b.kernels.push_back(tagged(LayerModule::MambaMixer, mem("mamba.norm.bwd", 3 * e * Td * did, true, MemClass::Norm)));
  if (copies) b.kernels.push_back(tagged(LayerModule::MambaMixer, mem("mamba.out.rearrange.bwd", 2 * e * Td * did, true)));
  b.kernels.push_back(scan_kernel("mamba.ssd_scan.bwd", ssd_scan_backward(s, sh.micro_batch, sh.seq_len, sh.tp, e), true));
  b.kernels.push_back(conv_b);
  if (copies) b.kernels.push_back(tagged(LayerModule::MambaMixer, mem("mamba.in_proj.rearrange.bwd", 2 * e * Td * in_wd, true)));
  add_gemm_bwd(b, in_proj);
  add_block_norm(b, "norm1", act_elems, e, sh, true, mamba_norm_in_linear(sh));
  linears.push_back(in_proj);
  linears.push_back(out_proj);
}

}  // namespace parasim
