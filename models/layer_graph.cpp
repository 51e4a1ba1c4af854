#include "models/layer_graph.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "models/layer_kernels.h"
#include "models/mamba2.h"

namespace parasim {

double Block::model_flops() const {
  double f = 0;
  for (const auto& k : kernels) f += k.model_flops;
  return f;
}

double Block::flops() const {
  double f = 0;
  for (const auto& k : kernels) f += k.flops;
  return f;
}

ForwardFlops forward_flops(const ModelGraph& g) {
  const auto layers = static_cast<std::int64_t>(g.kind_of.size());
  ForwardFlops f;
  auto add = [&](const Block& b, double times) {
    for (const auto& k : b.kernels) {
      f.model += times * k.model_flops;
      f.causal += times * (k.kind == KernelKind::Attention ? k.flops : k.model_flops);
    }
  };
  const LayerGraph& first = g.layer(0);
  const LayerGraph& last = g.layer(layers - 1);
  const auto mtp = static_cast<double>(first.shape.mtp_layers);
  add(first.embed_fwd, 1);
  for (std::int64_t i = 0; i < layers; ++i) {
    add(g.layer(i).attn_fwd, 1);
    add(g.layer(i).mlp_fwd, 1);
  }
  add(first.head_fwd, 1 + mtp);  // each MTP module: its own kernels, one more last-kind layer, the head
  add(first.mtp_fwd, mtp);
  add(last.attn_fwd, mtp);
  add(last.mlp_fwd, mtp);
  return f;
}

namespace layer_kernels {

Kernel gemm(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k, bool bwd) {
  Kernel g{name, KernelKind::Gemm, m, n, k, 1, 0, 0, 0, bwd};
  g.flops = g.model_flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return g;
}
Kernel mem(const std::string& name, double bytes, bool bwd, MemClass cls) {
  Kernel g{name, KernelKind::Memory, 0, 0, 0, 1, 0, 0, bytes, bwd};
  g.mem_class = cls;
  return g;
}
Kernel tagged(LayerModule m, Kernel k, FfnStep f) {
  k.module = m;
  k.ffn = f;
  return k;
}
void add_residual(Block& f, const std::string& name, double act, double drop_f, const LayerShape& sh) {
  const bool eager = sh.eager_dropout_add && drop_f > 0;
  if (eager) f.kernels.push_back(mem(name + ".dropout", 2 * act + drop_f));
  f.kernels.push_back(mem(name, 3 * act + (eager ? 0.0 : drop_f)));
}

}  // namespace layer_kernels

namespace {

using layer_kernels::gemm;
using layer_kernels::mem;
using layer_kernels::tagged;
// A step named "upcast" or "downcast" is a dtype conversion (MemClass::Cast); others stream.
MemClass cast_class(const std::string& step) {
  return step == "upcast" || step == "downcast" ? MemClass::Cast : MemClass::Stream;
}

// FP8 quantization traffic of one linear layer y = x W (Transformer Engine's delayed-scaling recipe:
// cast_transpose kernels): forward reads the bf16 input (2 B/element) and writes its FP8 copy and
// the FP8 transpose the weight gradient needs (1 + 1 B); backward does the same for the output
// gradient. Fusions of the cast into a preceding norm or activation are not credited.
// The cast belongs to its GEMM's module.
Kernel fp8_cast(const Kernel& gemm, const std::string& suffix, std::int64_t rows, std::int64_t cols, bool bwd, double bytes_per_element) {
  Kernel c{gemm.name + suffix, KernelKind::Memory, 0, 0, 0, 1, 0, 0,
           bytes_per_element * static_cast<double>(rows) * static_cast<double>(cols), bwd};
  c.module = gemm.module;
  return c;
}

// Bias gradient of a linear layer: a reduction over the tokens that reads the output gradient
// [rows, cols] once (PyTorch's addmm backward sums the gradient to the bias shape; Megatron-LM's
// linear layers run grad_output.sum(dim=0)). Transformer Engine folds it into a GEMM epilogue or
// its cast kernels; that fusion is not credited.
Kernel bias_grad(const Kernel& linear, double rows, double cols, double elem_bytes) {
  Kernel g{linear.name + ".bias_grad", KernelKind::Memory, 0, 0, 0, 1, 0, 0, rows * cols * elem_bytes, true};
  g.mem_class = MemClass::Reduction;
  g.module = linear.module;
  g.ffn = linear.ffn;
  return g;
}

// Hidden dropout on the residual branch (Megatron fuses bias, dropout and the residual add):
// forward also writes the 1-byte keep mask; backward is its own elementwise pass, reading the
// gradient and the mask and writing the masked gradient.
constexpr double kDropoutMaskBytes = 1;

// Forward GEMM y = x W with x [M,K], W [K,N] -> backward dgrad [M,N]x[N,K] and wgrad [K,M]x[M,N].
// The gradient GEMMs run in the forward GEMM's precision (sixteen_bit carries over).
// A batched (grouped) GEMM's gradients are batched the same way.
}  // namespace

void layer_kernels::add_gemm_bwd(Block& b, const Kernel& f, std::int64_t input_grad_adds) {
  Kernel dgrad = gemm(f.name + ".dgrad", f.m, f.k, f.n, true), wgrad = gemm(f.name + ".wgrad", f.k, f.n, f.m, true);
  // The forward's executed and model FLOPs over its shape's (1 for a GEMM as shaped; an MoE
  // expert GEMM's rows dropped, padded or counted once per routed copy): its gradients' the same.
  const double shape = 2.0 * static_cast<double>(f.m) * static_cast<double>(f.n) * static_cast<double>(f.k) * static_cast<double>(f.batch);
  const double executed = shape > 0 ? f.flops / shape : 1.0, model = shape > 0 ? f.model_flops / shape : 1.0;
  dgrad.grad = GemmGrad::Input;
  wgrad.grad = GemmGrad::Weight;
  dgrad.launches = f.launches + input_grad_adds;
  wgrad.launches = f.launches;
  for (Kernel k : {dgrad, wgrad}) {
    k.module = f.module;
    k.ffn = f.ffn;
    k.sixteen_bit = f.sixteen_bit;
    k.batch = f.batch;
    k.scale = f.scale;
    k.flops *= static_cast<double>(f.batch) * executed;
    k.model_flops *= static_cast<double>(f.batch) * model;
    b.kernels.push_back(std::move(k));
  }
}

namespace {

using layer_kernels::add_gemm_bwd;

// One GEMM per expert, run as a grouped GEMM (Transformer Engine's GroupedLinear, Megatron-Core's
// grouped GEMM): `batch` experts each multiplying m x k by k x n, priced as one batched GEMM.
Kernel grouped_gemm(const std::string& name, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k) {
  Kernel g = gemm(name, m, n, k);
  g.batch = batch;
  g.flops = g.model_flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
  return g;
}

// RMSNorm over `elems` activations of `e` bytes. Fused (Apex, Transformer Engine, Liger,
// torch.compile): one kernel, forward reads x and writes y, backward reads x and dy and writes dx.
// Eager (the Llama reference code, `self._norm(x.float()).type_as(x) * self.weight` with
// _norm(x) = x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)): every step is a kernel through HBM,
// in fp32 between the casts. Bytes read + written per element: forward upcast e+4, pow 8, mean 4,
// scale (x * rsqrt) 8, downcast 4+e, weight multiply 2e; backward by autograd's formulas for the
// same ops: weight multiply 2e, weight gradient (product, then the sum over tokens) 4e, gradient
// upcast e+4, scale's input gradient 8, the rsqrt path's product and row sum 16, mean backward 4,
// pow backward 12, the two paths summed 12, downcast 4+e.
void add_norm_kernels(Block& b, const std::string& name, double elems, double e, const LayerShape& sh, bool bwd) {
  if (!sh.eager_norm) {
    b.kernels.push_back(mem(bwd ? name + ".bwd" : name, (bwd ? 3 : 2) * elems * e, bwd, MemClass::Norm));
    // Two-pass backward: the weight (and bias) gradient is a reduction over the tokens in its own
    // kernel, reading x and dy again: PyTorch's layer_norm_backward_cuda launches
    // layer_norm_grad_input_kernel and GammaBetaBackwardCUDAKernel (both seen per norm on an H200,
    // calibrate/measurements/h200-sxm-141g-2026-11-30); Apex's HostLayerNormGradient runs
    // cuComputePartGradGammaBeta before cuComputeGradInput, each reading dout and the input.
    if (bwd && sh.two_pass_norm) b.kernels.push_back(mem(name + ".bwd.weight_grad", 2 * elems * e, bwd, MemClass::Norm));
    return;
  }
  const std::vector<std::pair<const char*, double>> fwd_steps = {
      {"upcast", e + 4}, {"pow", 8}, {"mean", 4}, {"scale", 8}, {"downcast", 4 + e}, {"weight", 2 * e}};
  const std::vector<std::pair<const char*, double>> bwd_steps = {
      {"weight", 2 * e}, {"weight_grad", 4 * e}, {"downcast", e + 4}, {"scale", 8}, {"rsqrt_path", 16},
      {"mean", 4},       {"pow", 12},           {"sum_paths", 12},    {"upcast", 4 + e}};
  for (const auto& [step, bytes] : bwd ? bwd_steps : fwd_steps)
    b.kernels.push_back(mem(name + (bwd ? ".bwd." : ".") + step, bytes * elems, bwd, cast_class(step)));
}
}  // namespace

// The norm's kernels, each tagged with module `mod`.
void layer_kernels::add_norm(Block& b, const std::string& name, double elems, double e, const LayerShape& sh, bool bwd,
                             LayerModule mod) {
  const size_t first = b.kernels.size();
  add_norm_kernels(b, name, elems, e, sh, bwd);
  for (size_t i = first; i < b.kernels.size(); ++i) b.kernels[i].module = mod;
}

void layer_kernels::add_block_norm(Block& b, const std::string& name, double elems, double e, const LayerShape& sh, bool bwd,
                                   bool in_linear) {
  const size_t first = b.kernels.size();
  layer_kernels::add_norm(b, name, elems, e, sh, bwd, LayerModule::BlockNorm);
  for (size_t i = first; i < b.kernels.size(); ++i) b.kernels[i].in_linear = in_linear;
}

namespace {

using layer_kernels::add_block_norm;
using layer_kernels::add_norm;

// `k` standing for `launches` kernels launched (Kernel::launches).
Kernel launched(Kernel k, std::int64_t launches) {
  k.launches = launches;
  return k;
}

// Megatron-Core's unfused RoPE (rope_utils.py _apply_rotary_pos_emb_bshd), each step a PyTorch op from
// its Python function (Kernel::python_ops). Forward: the [s, d] fp32 tables, cos and sin each taken,
// scaled by YaRN's attention factor and cast to 16 bits (6 ops, 44 bytes per table element); then
// t * cos (2 e per element), the rotate-half's negation of one half (e) and cat (2 e), a multiply by
// sin (2 e), the add (3 e) and the cat with the empty non-rotary part (2 e): 6 ops, 12 e. Backward
// (autograd): the gradient times cos and times sin (2 e each), the negation's (e), the split's cat
// (2 e) and the two paths' sum (3 e), and the empty non-rotary slice's SliceBackward, a zero-filled
// gradient (e) added in (3 e): 7 ops, 14 e.
void add_unfused_rope(Block& b, const std::string& name, double elems, double table_elems, double e, bool bwd) {
  auto op = [](Kernel k, std::int64_t ops) {
    k.launches = ops;
    k.python_ops = true;
    return tagged(LayerModule::Rope, k);
  };
  if (bwd) {
    b.kernels.push_back(op(mem(name, 14 * elems * e, true), 7));
    return;
  }
  b.kernels.push_back(op(mem(name + ".tables", 44 * table_elems), 6));
  b.kernels.push_back(op(mem(name, 12 * elems * e), 6));
}

// RoPE on `elems` query or key elements, its tables `table_elems` wide ([s, d] positions x rotary
// dims). Fused: one kernel reading and writing them. Eager (the Llama reference apply_rotary_emb:
// view_as_complex(x.float()) * freqs_cis, view_as_real, type_as(x)): upcast e+4, complex multiply 8
// (the [s, d/2] complex table is negligible), downcast 4+e bytes per element, in forward and again
// in backward (the gradient times the conjugate). Unfused: add_unfused_rope.
void add_rope(Block& b, const std::string& tensor, double elems, double table_elems, double e, RopeImpl impl, bool bwd) {
  const std::string name = std::string("rope.") + tensor + (bwd ? ".bwd" : "");
  if (impl == RopeImpl::Fused) {
    b.kernels.push_back(tagged(LayerModule::Rope, mem(name, 2 * elems * e, bwd)));
    return;
  }
  if (impl == RopeImpl::Unfused) {
    add_unfused_rope(b, name, elems, table_elems, e, bwd);
    return;
  }
  for (const auto& [step, bytes] : {std::pair<const char*, double>{"upcast", e + 4}, {"complex_mul", 8}, {"downcast", 4 + e}})
    b.kernels.push_back(tagged(LayerModule::Rope, mem(name + "." + step, bytes * elems, bwd, cast_class(step))));
}

// Cross entropy over `elems` logits (tokens x local vocabulary) held in `e`-byte elements; bytes
// read + written per element, each step a kernel through HBM:
//  Megatron: Megatron-LM's GPT model calls vocab_parallel_cross_entropy(output.float(), labels)
//   (megatron/model/gpt_model.py, fp16_lm_cross_entropy off by default), whose forward
//   (megatron/mpu/cross_entropy.py) runs in fp32: upcast e+4, max 4, subtract in place 8, exp in
//   place 8, sum 4, divide in place 8 (the softmax it saves); backward multiplies the saved softmax
//   by the output gradient in place 8, then the upcast's backward casts it down 4+e.
//  Eager: PyTorch F.cross_entropy(logits.float(), labels) = log_softmax + nll_loss: upcast e+4;
//   log_softmax's row kernel (aten SoftMax.cu, rows too long for shared memory) reads the row for
//   the max, again for the sum of exponentials, and a third time to write the output: 16.
//   Backward: nll_loss_backward zero-fills the fp32 gradient 4 (the scatter of -1s is per token);
//   log_softmax_backward reads the gradient for its row sum, then the gradient and the output
//   again to write the input gradient: 16; the downcast 4+e.
//  Eager16: the same F.cross_entropy on the 16-bit logits, without the upcast (NeMo AutoModel's
//   MaskedCrossEntropy with fp32_upcast false): log_softmax's three reads and one write of 16-bit
//   elements (it accumulates in fp32 registers), 4e; backward the zero-filled 16-bit gradient e and
//   log_softmax_backward's 4e.
//  Fused (Liger-Kernel, Transformer Engine's cross entropy, torch.compile): one pass over the 16-bit
//   logits for the online max and sum, a second that writes the gradient in their place: 3e;
//   backward scales that gradient by the output gradient in place: 2e.
//  Xentropy (flash_attn.losses.cross_entropy.CrossEntropyLoss v1.x, the Apex-derived kernels of
//   flash-attention's csrc/xentropy, on the 16-bit logits): the forward kernel reads each row once
//   for its max and once for the sum of exponentials and writes one fp32 loss and log-sum-exp per
//   row: 2e; the backward kernel reads the saved logits and writes a new 16-bit gradient: 2e.
// With fp32 activations (e = 4) the casts are no-ops and are not listed.
// One priced kernel of the loss: its name, bytes per logit, and the kernels launched for it
// (Kernel::launches).
struct Step {
  const char* name;
  double bytes;
  std::int64_t launches = 1;
};
using Steps = std::vector<Step>;
// F.cross_entropy's nll_loss is a kernel of its own in forward (nll_loss_forward_reduce_cuda_kernel_2d)
// and in backward after the zero fill (nll_loss_backward_reduce_cuda_kernel_2d): priced with no
// bytes of their own (one element per row) beside log_softmax's forward and the zero fill,
// launched all the same.
constexpr std::int64_t kWithNllLoss = 2;
// Eager F.cross_entropy's forward over fp32 logits (log_softmax's three row passes, 16 B per
// element; nll_loss reads one element per row); the upcast from e-byte logits is added by the caller.
const Steps kEagerCrossEntropyFwd = {{"log_softmax", 16, kWithNllLoss}};

void add_loss(Block& fwd, Block& bwd, double elems, double e, LossImpl impl) {
  const bool cast = e != 4.0;
  Steps f, b;
  switch (impl) {
    case LossImpl::Megatron:
      f = {{"max", 4}, {"sub_max", 8}, {"exp", 8}, {"sum", 4}, {"div", 8}};
      b = {{"mul_grad", 8}};
      break;
    case LossImpl::Eager:
      f = kEagerCrossEntropyFwd;
      b = {{"zero_fill", 4, kWithNllLoss}, {"log_softmax", 16}};
      break;
    case LossImpl::Eager16:
      f = {{"log_softmax", 4 * e, kWithNllLoss}};
      b = {{"zero_fill", e, kWithNllLoss}, {"log_softmax", 4 * e}};
      break;
    case LossImpl::Fused:
      fwd.kernels.push_back(mem("cross_entropy", 3 * e * elems));
      bwd.kernels.push_back(mem("cross_entropy.bwd", 2 * e * elems, true));
      return;
    case LossImpl::Xentropy:
      fwd.kernels.push_back(mem("cross_entropy", 2 * e * elems));
      bwd.kernels.push_back(mem("cross_entropy.bwd", 2 * e * elems, true));
      return;
  }
  if (cast && impl != LossImpl::Eager16) {
    f.insert(f.begin(), {"upcast", e + 4});
    b.push_back({"downcast", 4 + e});
  }
  for (const Step& k : f)
    fwd.kernels.push_back(launched(mem(std::string("cross_entropy.") + k.name, k.bytes * elems, false, cast_class(k.name)), k.launches));
  for (const Step& k : b)
    bwd.kernels.push_back(launched(mem(std::string("cross_entropy.bwd.") + k.name, k.bytes * elems, true, cast_class(k.name)), k.launches));
}

// Training metrics over `elems` e-byte logits, after the microbatch's backward and without
// gradients. Composer's trainer (composer/trainer/trainer.py _train_microbatch) calls
// _eval_train_metrics after every microbatch's backward, inside the precision context (autocast);
// Composer's LanguageCrossEntropy.update (composer/metrics/nlp.py) runs
// torch.nn.CrossEntropyLoss(reduction='sum') over the model's output logits, and autocast runs
// log_softmax in fp32: each metric is the eager cross entropy's forward with its upcast (e + 4
// and 16 B per logit). LanguagePerplexity subclasses LanguageCrossEntropy without overriding
// update, so it runs the same cross entropy again.
void add_train_metrics(Block& b, double elems, double e, std::int64_t n) {
  Steps f = kEagerCrossEntropyFwd;
  if (e != 4.0) f.insert(f.begin(), {"upcast", e + 4});
  for (std::int64_t i = 0; i < n; ++i)
    for (const Step& k : f)
      b.kernels.push_back(launched(mem(std::string("train_metric.") + k.name, k.bytes * elems, false, cast_class(k.name)), k.launches));
}

// The two-GEMM feed-forward chain a dense MLP and the experts share: up (fc1, gate and up fused for
// SwiGLU), the activation over its output (ffb bytes per pass: GeLU and squared ReLU read and write, 2; SwiGLU reads
// gate and up and writes, 3; backward 3 and 5), down (fc2). Backward: down's bias gradient (over
// down_rows tokens) and GEMMs, the activation's backward, up's bias gradient (over up_rows) and GEMMs.
// act_launches: the kernels the activation stands for (Kernel::launches); clamp: the activation's
// inputs clamped apart before it (act_clamp), forward and backward, or none.
void add_ffn_fwd(Block& f, const Kernel& up, const Kernel& down, const std::string& act, bool glu, double ffb,
                 std::int64_t act_launches = 1, const std::pair<Kernel, Kernel>* clamp = nullptr) {
  f.kernels.push_back(up);
  if (clamp) f.kernels.push_back(clamp->first);
  f.kernels.push_back(launched(tagged(up.module, mem(act, (glu ? 3 : 2) * ffb, false, MemClass::Activation), FfnStep::Activation), act_launches));
  f.kernels.back().host_sync = clamp != nullptr;  // the clamp's offset copied to the device first (act_clamp)
  f.kernels.push_back(down);
}
// down_bias: down's bias gradient is a kernel of its own (false: the caller prices it).
void add_ffn_bwd(Block& b, const Kernel& up, const Kernel& down, const std::string& act, bool glu, double ffb, bool bias,
                 double down_rows, double up_rows, double h, double e, std::int64_t act_launches = 1, bool down_bias = true,
                 const std::pair<Kernel, Kernel>* clamp = nullptr) {
  if (bias && down_bias) b.kernels.push_back(bias_grad(down, down_rows, h, e));
  add_gemm_bwd(b, down);
  b.kernels.push_back(
      launched(tagged(up.module, mem(act + ".bwd", (glu ? 5 : 3) * ffb, true, MemClass::Activation), FfnStep::Activation), act_launches));
  if (clamp) b.kernels.push_back(clamp->second);
  if (bias) b.kernels.push_back(bias_grad(up, up_rows, static_cast<double>(up.n), e));
  add_gemm_bwd(b, up);
}

// The experts' biases under Megatron-Core's TEGroupedMLP (GPT-OSS): fc1's is added in
// Transformer Engine's grouped GEMM, but fc2 returns its biases (skip_bias_add) and
// TEGroupedMLP._apply_bias adds them in a Python loop over the local experts, each expert's
// rows plus its bias times their routing weights (a multiply and an add), then one torch.cat
// (megatron/core/transformer/moe/experts.py, core_v0.15.0 on; from core_v0.18.0 the
// use_transformer_engine_op_fuser path skips it: LayerShape::moe_python_glue). Its backward is
// autograd's: per expert the multiply's two gradients, each summed to its operand's shape (4),
// and the two splits' gradients concatenated (the expert outputs' and the routing weights', 2);
// Megatron's DDP hook then adds each of the 2 x local experts bias gradients into its main_grad
// (one add_ each, megatron/core/distributed/distributed_data_parallel.py
// _make_backward_post_hook). Bytes, in passes over the rows x hidden output (16-bit routing
// weights; fp32 ones would promote the products): forward the product written, the add's two
// reads and write, the cat's read and write (6); backward the two products written from the
// gradient and their sums reading them, and the outputs' gradient concatenated (8).
Kernel expert_bias_ops(const Kernel& fc2, double rows, double h, double e, std::int64_t local_experts, bool backward) {
  const double passes = backward ? 8 : 6;
  const std::string name = fc2.name + (backward ? ".bias.bwd" : ".bias");
  Kernel k = launched(tagged(LayerModule::Experts, mem(name, passes * rows * h * e, backward)),
                      backward ? 6 * local_experts + 2 : 2 * local_experts + 1);
  k.python_ops = true;
  return k;
}

// GPT-OSS's clamped gated activation (ModelSpec::activation_clamp; Megatron's quick_gelu with
// glu_linear_offset 1) in the routed experts, where it runs apart (expert_clamp_apart):
// weighted_bias_quick_geglu_impl (megatron/core/fusions/fused_bias_geglu.py, core_v0.15.0 to
// core_v0.19.0, called by TEGroupedMLP, moe/experts.py) clamps the gate and the linear halves of
// fc1's output and concatenates them before its fused kernel, and makes its linear offset a device
// tensor (torch.tensor of a Python float: a blocking host-to-device copy, which PyTorch makes with
// at::cuda::memcpy_and_sync, a cudaMemcpyAsync then cudaStreamSynchronize, aten/src/ATen/native/
// cuda/Copy.cu copy_kernel_cuda; PyTorch's sync debug mode flags it, pytorch/pytorch issues #120996
// and #190217, open in 2026: the host waits there for the GPU to finish fc1 and the clamps before
// it issues the fused kernel, Kernel::host_sync; autograd's backward makes no copy, a moe_act
// replay makes it again). Bytes, in passes over one half
// (rows x ffn width; 16-bit values, 1-byte masks): forward two clamps each reading and writing its
// half and the cat reading and writing both (8; 4 launches with the copy). Backward is autograd's
// clamp_backward (PyTorch FunctionsManual.cpp): the gate's where(x <= max, grad, 0) after its
// comparison (1.5 + 2.5), the linear half's where((x >= min).logical_and_(x <= max), grad, 0) (two
// comparisons and the and, 1.5 each, + 2.5), each with its one-element zero, then the chunk's
// gradient concatenating the two (4): 15 passes, 9 launches. Tagged as the activation, so moe_act
// recompute replays the forward.
std::pair<Kernel, Kernel> act_clamp(const Kernel& fc1, double half_bytes) {
  auto kernel = [&](bool backward) {
    Kernel k = launched(tagged(fc1.module, mem(fc1.name + (backward ? ".clamp.bwd" : ".clamp"), (backward ? 15 : 8) * half_bytes, backward,
                                               MemClass::Activation),
                               FfnStep::Activation),
                        backward ? 9 : 4);
    k.python_ops = true;
    return k;
  };
  return {kernel(false), kernel(true)};
}

// Real kernels behind an MoE layer's priced kernels (Kernel::launches), per microbatch.
// Megatron-Core with Transformer Engine (moe_router_fusion, moe_permute_fusion, TEGroupedMLP; the
// all-to-all dispatcher): the router's TE fused top-k (fused_topk_with_score_function), aux-loss
// scores and aux loss, each with its backward (megatron/core/transformer/moe/router.py
// TopKRouter.routing, moe_utils.py); permute = make_row_id_map's three Triton passes and the
// permute kernel, unpermute one kernel, one each backward (TransformerEngine
// pytorch/triton/permutation.py); with expert parallelism over several local experts the
// all-to-all dispatcher also sorts the received chunks by expert after the dispatch and back before
// the combine (sort_chunks_by_idxs: make_chunk_sort_map and sort_chunks_by_map, one backward each;
// MoEAlltoAllTokenDispatcher only, not the flex dispatcher of DeepEP and HybridEP);
// GroupedLinear issues one cuBLAS GEMM per local expert on Hopper (TransformerEngine
// cpp_extensions/gemm.py general_grouped_gemm), and bias_swiglu one kernel each way.
// Not counted: the routing bookkeeping around them (tokens-per-expert sums, their all-gather and
// device-to-host copy, the aux loss's scaling), one launch or none each.
// Eager PyTorch (tools/scripts/torch_moe_bench.py MoE.forward, grouped experts and index_add
// unpermute; the kernels per layer in calibrate/measurements/h200-sxm-141g-moe-2026-12-04/run1/
// train.json kernels[]): router = fp32 cast, softmax, topk (gatherTopK and bitonicSortKVInPlace),
// the aux loss's zeros, ones, scatter_add_, divide, mean, two multiplies and a sum (12); its
// backward = the aux loss's three elementwise gradients, softmax backward, topk's zero fill and
// scatter, the two score gradients added, the cast back and the router input's gradient added (9);
// permute = a stable argsort (cub radix sort: histogram, exclusive sum, five onesweep passes and
// the index arange, 8), idx // k, bincount (histogram, min, max and the copy of its max to the
// host), counts.tolist(), the padded-offset tensor's copy to the GPU, arange, two index gathers,
// an add, the zero-filled padded buffer, index_select and index_copy (22); its backward an
// index_select and index_add into zeros (3); unpermute = index_select, the routing weights' gather
// and cast, the weighting multiply, zeros and index_add (6); its backward = index_select, the
// multiply's two gradients and the weights' row sum, the cast back, the gather's index_put
// (zeros, a radix sort of 8, the accumulate kernel), index_add into zeros (17); each
// torch._grouped_mm two kernels (prepare_grouped_gemm_data and the CUTLASS grouped GEMM), and
// before the first the offsets' cumsum, int cast and the group sizes' copy (3); silu and multiply
// forward (2), backward the two products, silu's backward and the gate/up concatenation (4).
struct MoeLaunches {
  std::int64_t router = 3, router_bwd = 3, permute = 4, permute_bwd = 1, unpermute = 1, unpermute_bwd = 1;
  std::int64_t expert_gemm = 1, expert_offsets = 0, activation = 1, activation_bwd = 1;
};
MoeLaunches moe_launches(const LayerShape& sh, std::int64_t local_experts) {
  if (sh.eager_launches)
    return {.router = 12, .router_bwd = 9, .permute = 22, .permute_bwd = 3, .unpermute = 6, .unpermute_bwd = 17,
            .expert_gemm = 2, .expert_offsets = 3, .activation = 2, .activation_bwd = 4};
  MoeLaunches l;
  l.expert_gemm = local_experts;
  if (sh.ep > 1 && local_experts > 1 && sh.moe_sorts_chunks) {
    l.permute += 2;
    l.unpermute += 2;
    l.permute_bwd += 1;
    l.unpermute_bwd += 1;
  }
  return l;
}

// The routed experts' fc1 (gate and up fused for SwiGLU) and fc2 as grouped GEMMs of the local
// experts, shaped as the mean expert's `per_expert` rows (padded: exactly its capacity), each one
// cuBLAS GEMM per `launches`; the busiest rank (every rank waits for it at the combine) scales their
// time by its rows over the shape's. Executed FLOPs are the mean rank's kept copies (what capacity
// keeps or pads); model FLOPs count every routed copy once (T_r k), whatever is padded or dropped.
std::pair<Kernel, Kernel> routed_expert_gemms(const ModelSpec& m, const LayerShape& sh, std::int64_t per_expert, double shape_rows,
                                              std::int64_t launches) {
  const bool glu = m.activation == Activation::SwiGlu;
  const std::int64_t ff = m.moe->expert_ffn_hidden / sh.etp, local_experts = m.moe->experts / sh.ep;
  Kernel fc1 = tagged(LayerModule::Experts, grouped_gemm(glu ? "experts.gate_up" : "experts.up", local_experts, per_expert, (glu ? 2 : 1) * ff, m.hidden),
                      FfnStep::Up);
  Kernel fc2 = tagged(LayerModule::Experts, grouped_gemm("experts.down", local_experts, per_expert, m.hidden, ff), FfnStep::Down);
  const double copies = static_cast<double>(sh.moe_tokens()) * static_cast<double>(m.moe->top_k);
  const double nominal = copies * static_cast<double>(sh.ep) / static_cast<double>(m.moe->experts) / static_cast<double>(per_expert);
  for (Kernel* fc : {&fc1, &fc2}) {
    fc->launches = launches;
    fc->scale = sh.moe_busiest / shape_rows;
    fc->flops *= sh.moe_sent / shape_rows;
    fc->model_flops *= nominal;
  }
  return {fc1, fc2};
}

// Shared experts: one dense MLP (all shared experts fused, width split like the experts over etp)
// on the same T_r tokens beside the routed ones, its output added to theirs; width 0: none.
struct SharedMlp {
  std::int64_t width = 0;
  Kernel up, down;
  double ffb = 0;  // bytes of one pass over its intermediate activations
  std::string act;
};
SharedMlp shared_experts(const ModelSpec& m, const LayerShape& sh, std::int64_t T_r) {
  const bool glu = m.activation == Activation::SwiGlu;
  SharedMlp x;
  x.width = m.moe->shared_expert_ffn_hidden / sh.etp;
  x.up = tagged(LayerModule::SharedExperts, gemm(glu ? "shared_experts.gate_up" : "shared_experts.up", T_r, (glu ? 2 : 1) * x.width, m.hidden),
                FfnStep::Up);
  x.down = tagged(LayerModule::SharedExperts, gemm("shared_experts.down", T_r, m.hidden, x.width), FfnStep::Down);
  x.ffb = static_cast<double>(T_r) * static_cast<double>(x.width) * sh.dtype_bytes;
  x.act = "shared_experts." + name_of(m.activation);
  return x;
}

// The quantities of one layer on one rank that every block uses.
struct LayerDims {
  double e = 0;   // bytes per element
  std::int64_t T = 0;  // tokens on this rank
  double Td = 0, hd = 0;
  double sp_div = 1;   // norms, residuals and dropout run on T/t tokens with sequence parallel
  double act = 0;      // one [T, h] activation on this rank, bytes
  double act_elems = 0;
  double drop_f = 0, drop_b = 0;  // hidden dropout's bytes forward and backward
};

LayerDims layer_dims(const ModelSpec& m, const LayerShape& sh) {
  LayerDims d;
  d.e = sh.dtype_bytes;
  d.T = sh.micro_batch * (sh.seq_len / sh.cp);
  d.Td = static_cast<double>(d.T);
  d.hd = static_cast<double>(m.hidden);
  d.sp_div = sh.sequence_parallel ? static_cast<double>(sh.tp) : 1.0;
  d.act = d.Td * d.hd * d.e / d.sp_div;
  d.act_elems = d.act / d.e;
  d.drop_f = m.dropout ? kDropoutMaskBytes * d.act_elems : 0.0;
  d.drop_b = m.dropout ? 2 * d.act + kDropoutMaskBytes * d.act_elems : 0.0;
  return d;
}

// The MLP block of a mixture-of-experts layer on one rank, as Megatron-Core runs it with the
// all-to-all token dispatcher. The rank routes T_r tokens: its microbatch's T
// (the experts split over etp = tp ranks, which all see the tokens of their tensor-parallel group,
// like a dense MLP), or T / tp (etp = 1: the experts whole, the layer on its sequence-parallel
// share). Forward, bytes per element of e bytes:
//   norm2, then the router: a [T_r, h] x [h, E] GEMM (16-bit under FP8 recipes) and its softmax
//   and top-k over the E logits (read the logits, write and re-read their fp32 scores: e + 8 B
//   per logit); permute gathers each token's k copies into expert order (read + write T_r k h, k
//   times sh.moe_sent when capacity drops or pads them);
//   all-to-all dispatch to the experts' ranks; the local E/ep experts' fc1 and fc2 as grouped GEMMs
//   of T_r k ep / E tokens each (times sh.moe_busiest: the busiest rank's, routing and capacity as
//   sim/parallel/moe_routing.h sets them), the activation between them; all-to-all combine back;
//   unpermute sums each token's k weighted copies (read T_r k h, write T_r h); the residual add.
// Backward mirrors it: unpermute's backward reads the output gradient and the saved expert outputs
// (for the routing weights' gradient) and writes the k gradient copies (1 + 2k per T_r h); the
// two all-to-alls again; the grouped GEMMs' data and weight gradients; permute's backward sums
// the k copies back (k + 1 per T_r h); the router's softmax backward (8 + e per logit) and GEMMs.
// Returns the GEMMs an FP8 recipe runs in FP8 (the experts', the shared experts').
std::vector<Kernel> add_moe_mlp(LayerGraph& g, const ModelSpec& m, const LayerShape& sh, const LayerDims& d) {
  const double e = d.e, act_elems = d.act_elems, act = d.act, drop_f = d.drop_f, drop_b = d.drop_b;
  const bool glu = m.activation == Activation::SwiGlu;
  const std::int64_t h = m.hidden, E = m.moe->experts, k = m.moe->top_k;
  const std::int64_t T_r = sh.moe_tokens();
  const bool sp_tokens = T_r < sh.micro_batch * (sh.seq_len / sh.cp);
  const std::int64_t ff = m.moe->expert_ffn_hidden / sh.etp;
  const std::int64_t local_experts = E / sh.ep;
  const double Tr = static_cast<double>(T_r), hd = static_cast<double>(h), Ed = static_cast<double>(E), kd = static_cast<double>(k);
  const double copies = Tr * kd * sh.moe_sent;  // routed token copies leaving (and returning to) this rank
  // The experts' GEMMs are shaped as the mean expert's (padded: exactly its capacity); the busiest
  // rank (every rank waits for it at the combine) scales their time by its rows over the shape's,
  // and what it receives in each all-to-all is priced as every rank's.
  const double shape_rows = sh.moe_padded ? sh.moe_sent : 1.0;
  const auto per_expert = std::max<std::int64_t>(1, std::llround(Tr * kd * shape_rows * static_cast<double>(sh.ep) / Ed));
  const double busiest = sh.moe_busiest / shape_rows;
  g.ep_message_bytes = sh.ep > 1 ? Tr * kd * sh.moe_busiest * hd * e : 0.0;
  g.mlp_tp_comm = !sp_tokens;

  Block& mf = g.mlp_fwd;
  add_block_norm(mf, "norm2", act_elems, e, sh, false, pre_mlp_norm_in_linear(m, sh));
  Kernel router = tagged(LayerModule::Router, gemm("router", T_r, E, h));
  router.sixteen_bit = true;
  mf.kernels.push_back(router);
  const MoeLaunches ml = moe_launches(sh, local_experts);
  mf.kernels.push_back(launched(tagged(LayerModule::Router, mem("router.softmax_topk", (e + 8) * Tr * Ed)), ml.router));
  mf.kernels.push_back(launched(tagged(LayerModule::TokenDispatch, mem("moe.permute", 2 * copies * hd * e)), ml.permute));
  auto [fc1, fc2] = routed_expert_gemms(m, sh, per_expert, shape_rows, ml.expert_gemm);
  const double rows = static_cast<double>(per_expert * local_experts) * busiest;
  const double ffb = rows * static_cast<double>(ff) * e;
  const std::string act_name = "experts." + name_of(m.activation);
  const std::pair<Kernel, Kernel> clamp_ops = act_clamp(fc1, ffb);
  const auto* clamp = expert_clamp_apart(m, sh) ? &clamp_ops : nullptr;
  // The forward's fc1 also launches the expert offsets' kernels (its backward GEMMs do not).
  add_ffn_fwd(mf, launched(fc1, ml.expert_gemm + ml.expert_offsets), fc2, act_name, glu, ffb, ml.activation, clamp);
  const bool bias_loop = m.bias && sh.moe_python_glue;
  if (bias_loop) mf.kernels.push_back(expert_bias_ops(fc2, rows, hd, e, local_experts, false));
  mf.kernels.push_back(launched(tagged(LayerModule::TokenDispatch, mem("moe.unpermute", (copies + Tr) * hd * e)), ml.unpermute));
  const SharedMlp sx = shared_experts(m, sh, T_r);
  if (sx.width > 0) {
    add_ffn_fwd(mf, sx.up, sx.down, sx.act, glu, sx.ffb);
    mf.kernels.push_back(tagged(LayerModule::SharedExperts, mem("shared_experts.add", 3 * Tr * hd * e)));
  }
  layer_kernels::add_residual(mf, "residual2", act, drop_f, sh);

  Block& mb = g.mlp_bwd;
  mb.kernels.push_back(mem("residual2.bwd", 3 * act, true));
  if (m.dropout) mb.kernels.push_back(mem("dropout2.bwd", drop_b, true));
  mb.kernels.push_back(launched(tagged(LayerModule::TokenDispatch, mem("moe.unpermute.bwd", (Tr + 2 * copies) * hd * e, true)), ml.unpermute_bwd));
  if (bias_loop) mb.kernels.push_back(expert_bias_ops(fc2, rows, hd, e, local_experts, true));
  add_ffn_bwd(mb, fc1, fc2, act_name, glu, ffb, m.bias, rows, rows, hd, e, ml.activation_bwd, !bias_loop, clamp);
  if (sx.width > 0) add_ffn_bwd(mb, sx.up, sx.down, sx.act, glu, sx.ffb, m.bias, Tr, Tr, hd, e);
  mb.kernels.push_back(launched(tagged(LayerModule::TokenDispatch, mem("moe.permute.bwd", (copies + Tr) * hd * e, true)), ml.permute_bwd));
  mb.kernels.push_back(launched(tagged(LayerModule::Router, mem("router.softmax_topk.bwd", (e + 8) * Tr * Ed, true)), ml.router_bwd));
  add_gemm_bwd(mb, router);
  add_block_norm(mb, "norm2", act_elems, e, sh, true, pre_mlp_norm_in_linear(m, sh));
  std::vector<Kernel> fp8_linears = {fc1, fc2};
  if (sx.width > 0) fp8_linears.insert(fp8_linears.end(), {sx.up, sx.down});
  return fp8_linears;
}

}  // namespace

double fp8_cast_bytes(Fp8Recipe recipe) {
  switch (recipe) {
    case Fp8Recipe::Current: return 2 + 2 + 1 + 1;
    case Fp8Recipe::Mxfp8: return 2 + 1 + 1 + 2.0 / 32;
    case Fp8Recipe::Nvfp4: return 2 + 2 + 2 * (0.5 + 1.0 / 16);
    case Fp8Recipe::Delayed: break;
  }
  return 2 + 1 + 1;  // delayed
}

std::int64_t fp8_quantize_launches(Fp8Recipe recipe) { return recipe == Fp8Recipe::Current ? 4 : 1; }

bool fp8_grouped_quantize_fused(Fp8Recipe recipe) { return recipe == Fp8Recipe::Delayed || recipe == Fp8Recipe::Nvfp4; }

bool expert_clamp_apart(const ModelSpec& m, const LayerShape& sh) {
  return m.activation_clamp > 0 && m.activation == Activation::SwiGlu && sh.moe_python_glue;
}

double fp8_saved_input_bytes(Fp8Recipe recipe) {
  if (recipe == Fp8Recipe::Mxfp8) return 1 + 1.0 / 32;
  if (recipe == Fp8Recipe::Nvfp4) return 0.5 + 1.0 / 16;
  return 1;
}

namespace {

// A projection before the attention core, in forward order; with MLA a low-rank latent's down
// projection is followed by its RMSNorm (norm: name and elements), whose backward runs before
// the projection's.
struct Proj {
  Kernel gemm;
  std::string norm;
  double norm_elems = 0;
};

std::vector<Proj> attention_projections(const ModelSpec& m, const LayerShape& sh, std::int64_t T) {
  const std::int64_t t = sh.tp, h = m.hidden;
  std::vector<Proj> in_proj;
  if (!m.mla) {
    in_proj.push_back({tagged(LayerModule::QkvProj, gemm("qkv", T, (m.q_dim() + 2 * m.kv_dim()) / t, h)), "", 0});
    // Eager modules (torch_moe_bench.py Block): separate q and kv nn.Linear GEMMs.
    if (sh.eager_launches) in_proj.back().gemm.launches = 2;
    return in_proj;
  }
  // Multi-head latent attention (Megatron-Core's MLASelfAttention): the down projections are
  // replicated across tensor-parallel ranks, the up projections split by heads.
  const MlaSpec& a = *m.mla;
  const std::int64_t hl = m.heads / t;
  const double Td = static_cast<double>(T);
  if (a.q_lora_rank > 0) {
    in_proj.push_back({tagged(LayerModule::MlaProj, gemm("q_down", T, a.q_lora_rank, h)), "q_latent_norm", Td * static_cast<double>(a.q_lora_rank)});
    in_proj.push_back({tagged(LayerModule::MlaUpProj, gemm("q_up", T, hl * m.qk_head_dim(), a.q_lora_rank)), "", 0});
  } else {
    in_proj.push_back({tagged(LayerModule::MlaProj, gemm("q_proj", T, hl * m.qk_head_dim(), h)), "", 0});
  }
  in_proj.push_back({tagged(LayerModule::MlaProj, gemm("kv_down", T, a.kv_lora_rank + a.qk_rope_head_dim, h)), "kv_latent_norm",
                     Td * static_cast<double>(a.kv_lora_rank)});
  in_proj.push_back({tagged(LayerModule::MlaUpProj, gemm("kv_up", T, hl * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank)), "", 0});
  return in_proj;
}

// The fused attention core: scores over the full (gathered) sequence, Q local, K/V for all s
// positions; in a windowed layer each query sees the last sliding_window positions only.
Kernel attention_core(const ModelSpec& m, const LayerShape& sh) {
  const double heads_local = static_cast<double>(m.heads / sh.tp);
  const double dqk = static_cast<double>(m.qk_head_dim()), dv = static_cast<double>(m.v_head_dim());
  const double sq = static_cast<double>(sh.seq_len / sh.cp), b = static_cast<double>(sh.micro_batch);
  const bool windowed = m.sliding_window > 0 && m.sliding_window < sh.seq_len;
  const double w = windowed ? static_cast<double>(m.sliding_window) : static_cast<double>(sh.seq_len);
  Kernel attn{"attention", KernelKind::Attention, 0, 0, 0, 1, 0, 0, 0, false};
  attn.module = LayerModule::FusedAttn;
  // QK^T over dqk and PV over dv, counted over the full score matrix (Megatron's MFU convention;
  // in a windowed layer the s x w band's bounding rectangle); executed: causal computes about half
  // of it, a causal window of w computes w s - w (w - 1) / 2 of its s w entries.
  attn.model_flops = 2.0 * b * heads_local * sq * w * (dqk + dv);
  attn.flops = attn.model_flops * (windowed ? 1.0 - (w - 1.0) / (2.0 * sq) : 0.5);
  // The kernel is priced as the causal attention whose queries see as many keys on average (its
  // fixed cost per query the same): twice the window's mean keys per query, 2 w - w (w - 1) / s,
  // s at w = s. Checked against cuDNN's published banded-window timings (tests/data).
  attn.seq = windowed ? std::llround(2.0 * w * (1.0 - (w - 1.0) / (2.0 * sq))) : sh.seq_len;
  attn.cp = sh.cp;
  attn.head_dim = std::max(m.qk_head_dim(), m.v_head_dim());
  return attn;
}

// Unfused attention core: two batched GEMMs over the full score matrix (a window only masks it),
// softmax/mask/dropout through HBM.
void add_unfused_attention(Block& af, const ModelSpec& m, const LayerShape& sh) {
  const double heads_local = static_cast<double>(m.heads / sh.tp);
  const double sq = static_cast<double>(sh.seq_len / sh.cp), s_kv = static_cast<double>(sh.seq_len), b = static_cast<double>(sh.micro_batch);
  const double score_flops = 2.0 * b * heads_local * sq * s_kv * static_cast<double>(m.qk_head_dim());  // QK^T (PV: dv for dqk)
  Kernel qk = tagged(LayerModule::CoreAttn, gemm("scores", static_cast<std::int64_t>(sq), static_cast<std::int64_t>(s_kv), m.qk_head_dim()));
  qk.batch = sh.micro_batch * (m.heads / sh.tp);
  qk.head_dim = m.qk_head_dim();
  qk.flops = qk.model_flops = score_flops;
  Kernel pv = tagged(LayerModule::CoreAttn, gemm("context", static_cast<std::int64_t>(sq), m.v_head_dim(), static_cast<std::int64_t>(s_kv)));
  pv.batch = qk.batch;
  pv.head_dim = m.v_head_dim();
  pv.flops = pv.model_flops = score_flops * static_cast<double>(m.v_head_dim()) / static_cast<double>(m.qk_head_dim());
  af.kernels.push_back(qk);
  af.kernels.push_back(tagged(LayerModule::CoreAttn, mem("softmax", 3 * 2 * b * heads_local * sq * s_kv * sh.dtype_bytes)));
  af.kernels.push_back(pv);
}

// The unfused core's backward: each batched GEMM C[m,n] = A[m,k] B[k,n] has two backward GEMMs,
// dA = dC B^T [m,k] over n and dB = A^T dC [k,n] over m, each with the forward's FLOPs. Scores
// S = Q K^T give dQ and dK; the context O = P V gives dP and dV.
void add_unfused_attention_bwd(Block& ab, const Block& af, const ModelSpec& m, const LayerShape& sh) {
  for (const auto& k : af.kernels)
    if (k.module == LayerModule::CoreAttn && k.kind == KernelKind::Gemm) {
      Kernel da = k, db = k;
      da.name += ".bwd_a";
      db.name += ".bwd_b";
      da.backward = db.backward = true;
      da.n = k.k;
      da.k = k.n;
      db.m = k.k;
      db.k = k.m;
      ab.kernels.push_back(da);
      ab.kernels.push_back(db);
    }
  const double heads_local = static_cast<double>(m.heads / sh.tp);
  const double sq = static_cast<double>(sh.seq_len / sh.cp), s_kv = static_cast<double>(sh.seq_len), b = static_cast<double>(sh.micro_batch);
  ab.kernels.push_back(tagged(LayerModule::CoreAttn, mem("softmax.bwd", 3 * 2 * b * heads_local * sq * s_kv * sh.dtype_bytes, true)));
}

// The elements the QK-norm, RoPE and MLA's query-key assembly work on, per rank.
struct QkElems {
  double q = 0, k = 0;                       // queries (and with MLA keys); keys
  double rope_q = 0, rope_k = 0, rope_table = 0;  // RoPE on them, or with MLA on their rotary parts
};

QkElems qk_elems(const ModelSpec& m, const LayerShape& sh, double Td) {
  const double heads_local = static_cast<double>(m.heads / sh.tp);
  QkElems x;
  x.q = Td * heads_local * static_cast<double>(m.qk_head_dim());
  x.k = m.mla ? x.q : Td * static_cast<double>(m.kv_dim()) / static_cast<double>(sh.tp);
  // With MLA the rotary key is shared by the heads.
  x.rope_q = m.mla ? Td * heads_local * static_cast<double>(m.mla->qk_rope_head_dim) : x.q;
  x.rope_k = m.mla ? Td * static_cast<double>(m.mla->qk_rope_head_dim) : x.k;
  x.rope_table = static_cast<double>(sh.seq_len / sh.cp) * static_cast<double>(m.mla ? m.mla->qk_rope_head_dim : m.qk_head_dim());
  return x;
}

// The attention block forward: input norm, projections, QK-norm, RoPE, the core, the output
// projection and the residual. Returns the output projection.
Kernel add_attention_fwd(Block& af, const ModelSpec& m, const LayerShape& sh, const LayerDims& d, const QkElems& x,
                         const std::vector<Proj>& in_proj, const Kernel& attn) {
  const double e = d.e;
  add_block_norm(af, "norm1", d.act_elems, e, sh, false, input_norm_in_linear(m, sh));
  for (const Proj& pr : in_proj) {
    af.kernels.push_back(pr.gemm);
    if (!pr.norm.empty()) add_norm(af, pr.norm, pr.norm_elems, e, sh, false, pr.gemm.module);
  }
  // QK-norm: an RMSNorm over each head's query and key (one fused kernel each, like the block norms).
  if (m.qk_norm) {
    add_norm(af, "q_norm", x.q, e, sh, false, LayerModule::QkNorm);
    add_norm(af, "k_norm", x.k, e, sh, false, LayerModule::QkNorm);
  }
  if (m.position_embedding == PositionEmbedding::Rope) {
    add_rope(af, "q", x.rope_q, x.rope_table, e, sh.rope, false);
    add_rope(af, "k", x.rope_k, x.rope_table, e, sh.rope, false);
  }
  // MLA: the queries and keys are assembled from their non-rotary and rotary parts (the shared
  // rotary key broadcast to every head), each read and written once.
  if (m.mla) af.kernels.push_back(tagged(LayerModule::MlaQkConcat, mem("mla.qk_concat", 2 * (x.q + x.k) * e)));
  if (sh.flash_attention) af.kernels.push_back(attn);
  else add_unfused_attention(af, m, sh);
  const Kernel proj = tagged(LayerModule::AttnOut, gemm("attn_out", d.T, m.hidden, m.attn_out_dim() / sh.tp));
  // Eager: the attention output's transpose(1, 2).reshape is a copy kernel before the GEMM (its
  // gradients, built from the returned `proj` in add_attention_bwd, are one GEMM each).
  af.kernels.push_back(sh.eager_launches ? launched(proj, 2) : proj);
  layer_kernels::add_residual(af, "residual1", d.act, d.drop_f, sh);
  return proj;
}

// The fused core's backward: recomputes QK^T, five matmuls against two in forward. PyTorch's
// FlashAttention-2 backward (SDPA): flash_bwd_dot_do_o, flash_bwd_dq_dk_dv and
// flash_bwd_convert_dq, one each per layer in the H200 step's profile.
Kernel attention_core_bwd(const Kernel& attn, const LayerShape& sh) {
  Kernel ba = attn;
  ba.name = "attention.bwd";
  ba.backward = true;
  ba.model_flops = 2 * attn.model_flops;
  ba.flops = 2.5 * attn.flops;
  if (sh.eager_launches) ba.launches = 3;
  return ba;
}

void add_attention_bwd(Block& ab, const Block& af, const ModelSpec& m, const LayerShape& sh, const LayerDims& d, const QkElems& x,
                       const std::vector<Proj>& in_proj, const Kernel& attn, const Kernel& proj) {
  const double e = d.e;
  ab.kernels.push_back(mem("residual1.bwd", 3 * d.act, true));
  if (m.dropout) ab.kernels.push_back(mem("dropout1.bwd", d.drop_b, true));
  // Row-parallel bias: added after the TP reduction, over T/t tokens with sequence parallel.
  if (m.bias) ab.kernels.push_back(bias_grad(proj, d.Td / d.sp_div, d.hd, e));
  add_gemm_bwd(ab, proj);
  if (sh.flash_attention) ab.kernels.push_back(attention_core_bwd(attn, sh));
  else add_unfused_attention_bwd(ab, af, m, sh);
  if (m.mla) ab.kernels.push_back(tagged(LayerModule::MlaQkConcat, mem("mla.qk_concat.bwd", 2 * (x.q + x.k) * e, true)));
  if (m.position_embedding == PositionEmbedding::Rope) {
    add_rope(ab, "q", x.rope_q, x.rope_table, e, sh.rope, true);
    add_rope(ab, "k", x.rope_k, x.rope_table, e, sh.rope, true);
  }
  if (m.qk_norm) {
    add_norm(ab, "q_norm", x.q, e, sh, true, LayerModule::QkNorm);
    add_norm(ab, "k_norm", x.k, e, sh, true, LayerModule::QkNorm);
  }
  for (auto it = in_proj.rbegin(); it != in_proj.rend(); ++it) {
    if (!it->norm.empty()) add_norm(ab, it->norm, it->norm_elems, e, sh, true, it->gemm.module);
    if (m.bias) ab.kernels.push_back(bias_grad(it->gemm, d.Td, static_cast<double>(it->gemm.n), e));
    // Eager q and kv Linears (one priced GEMM launched twice): autograd adds their two input gradients.
    add_gemm_bwd(ab, it->gemm, sh.eager_launches && it->gemm.launches > 1 ? 1 : 0);
  }
  add_block_norm(ab, "norm1", d.act_elems, e, sh, true, input_norm_in_linear(m, sh));
}

// A dense MLP block; returns its up and down GEMMs (what an FP8 recipe runs in FP8).
std::vector<Kernel> add_dense_mlp(LayerGraph& g, const ModelSpec& m, const LayerShape& sh, const LayerDims& d) {
  const bool glu = m.activation == Activation::SwiGlu;
  const std::int64_t f_local = m.ffn_hidden / sh.tp;
  Block& mf = g.mlp_fwd;
  add_block_norm(mf, "norm2", d.act_elems, d.e, sh, false, pre_mlp_norm_in_linear(m, sh));
  const Kernel up = tagged(LayerModule::Mlp, gemm(glu ? "mlp_gate_up" : "mlp_up", d.T, (glu ? 2 : 1) * f_local, m.hidden), FfnStep::Up);
  const Kernel down = tagged(LayerModule::Mlp, gemm("mlp_down", d.T, m.hidden, f_local), FfnStep::Down);
  const double ffb = d.Td * static_cast<double>(f_local) * d.e;
  add_ffn_fwd(mf, up, down, name_of(m.activation), glu, ffb);
  layer_kernels::add_residual(mf, "residual2", d.act, d.drop_f, sh);

  Block& mb = g.mlp_bwd;
  mb.kernels.push_back(mem("residual2.bwd", 3 * d.act, true));
  if (m.dropout) mb.kernels.push_back(mem("dropout2.bwd", d.drop_b, true));
  // Row-parallel down bias: added after the TP reduction, over T/t tokens with sequence parallel.
  add_ffn_bwd(mb, up, down, name_of(m.activation), glu, ffb, m.bias, d.Td / d.sp_div, d.Td, d.hd, d.e);
  add_block_norm(mb, "norm2", d.act_elems, d.e, sh, true, pre_mlp_norm_in_linear(m, sh));
  return {up, down};
}

// The embedding (first stage) and the output layer with its loss (last stage).
void add_embedding_and_head(LayerGraph& g, const ModelSpec& m, const LayerShape& sh, const LayerDims& d) {
  g.embed_fwd.kernels.push_back(mem("embedding", 2 * d.Td * d.hd * d.e / d.sp_div));
  g.embed_bwd.kernels.push_back(mem("embedding.bwd", 3 * d.Td * d.hd * d.e / d.sp_div, true));
  const std::int64_t v_local = m.vocab / sh.tp;
  const double logits = d.Td * static_cast<double>(v_local);  // logit elements on this rank
  add_norm(g.head_fwd, "final_norm", d.act_elems, d.e, sh, false);
  Kernel lg = gemm("logits", d.T, v_local, m.hidden);
  lg.sixteen_bit = true;  // FP8 recipes convert the transformer layers' linears only
  g.head_fwd.kernels.push_back(lg);
  add_loss(g.head_fwd, g.head_bwd, logits, d.e, sh.loss);
  add_train_metrics(g.metrics, logits, d.e, sh.train_metrics);
  add_gemm_bwd(g.head_bwd, lg);
  add_norm(g.head_bwd, "final_norm", d.act_elems, d.e, sh, true);
}

// Multi-token prediction modules' own kernels (sh.mtp_layers > 0); returns their eh_proj GEMM.
Kernel add_mtp(LayerGraph& g, const ModelSpec& m, const LayerShape& sh, const LayerDims& d) {
  const double e = d.e;
  g.mtp_fwd.kernels.push_back(mem("mtp.embedding", 2 * d.Td * d.hd * e / d.sp_div));
  add_norm(g.mtp_fwd, "mtp.enorm", d.act_elems, e, sh, false);
  add_norm(g.mtp_fwd, "mtp.hnorm", d.act_elems, e, sh, false);
  g.mtp_fwd.kernels.push_back(mem("mtp.concat", 2 * 2 * d.act));
  const Kernel eh = gemm("mtp.eh_proj", d.T, m.hidden / sh.tp, 2 * m.hidden);
  g.mtp_fwd.kernels.push_back(eh);
  add_gemm_bwd(g.mtp_bwd, eh);
  g.mtp_bwd.kernels.push_back(mem("mtp.concat.bwd", 2 * 2 * d.act, true));
  add_norm(g.mtp_bwd, "mtp.hnorm", d.act_elems, e, sh, true);
  add_norm(g.mtp_bwd, "mtp.enorm", d.act_elems, e, sh, true);
  g.mtp_bwd.kernels.push_back(mem("mtp.embedding.bwd", 3 * d.Td * d.hd * e / d.sp_div, true));
  const double li = sh.fp8_gemms ? sh.fp8_saved_input_bytes : e;
  g.mtp_stored_bytes = (2 * e + 2 * li) * d.Td * d.hd / d.sp_div;
  return eh;
}

// The FP8 casts of the linears an FP8 recipe runs in FP8 (an MoE layer's experts too, not its
// router; a Mamba-2 mixer's in_proj and out_proj, not its scan); the output layer stays in 16-bit.
// A grouped expert GEMM quantizes each expert's rows apart unless the recipe has a fused kernel.
void add_fp8_casts(const LayerShape& sh, const std::vector<std::tuple<Block*, Block*, Kernel>>& linears) {
  for (const auto& [fwd, bwd, k] : linears) {
    const std::int64_t rows = k.m * k.batch;
    const std::int64_t n = sh.fp8_quantize_launches * (sh.fp8_grouped_quantize_fused ? 1 : k.batch);
    // (The busiest MoE rank's rows: k.scale.)
    fwd->kernels.push_back(launched(fp8_cast(k, ".fp8_cast", rows, k.k, false, sh.fp8_cast_bytes * k.scale), n));     // input x [M, K]
    bwd->kernels.push_back(launched(fp8_cast(k, ".fp8_cast.bwd", rows, k.n, true, sh.fp8_cast_bytes * k.scale), n));  // grad y [M, N]
  }
}

}  // namespace

LayerGraph build_layer_graph(const ModelSpec& m, const LayerShape& sh) {
  LayerGraph g;
  g.shape = sh;
  const LayerDims d = layer_dims(m, sh);
  g.tokens = d.Td;
  g.tp_message_bytes = d.Td * d.hd * d.e;
  g.p2p_bytes = d.Td * d.hd * d.e / d.sp_div;
  // Keys and values (MLA: every head's, qk and v wide).
  const double kv_width = m.mla ? static_cast<double>(m.heads * (m.qk_head_dim() + m.v_head_dim())) : 2.0 * static_cast<double>(m.kv_dim());
  g.cp_kv_bytes = sh.cp > 1 ? d.Td * kv_width / static_cast<double>(sh.tp) * d.e : 0.0;

  const std::vector<Proj> in_proj = attention_projections(m, sh, d.T);
  const Kernel attn = attention_core(m, sh);
  const QkElems x = qk_elems(m, sh, d.Td);
  const Kernel proj = add_attention_fwd(g.attn_fwd, m, sh, d, x, in_proj, attn);
  add_attention_bwd(g.attn_bwd, g.attn_fwd, m, sh, d, x, in_proj, attn, proj);
  // The MLP block: dense, or the experts of a mixture-of-experts layer.
  // The forward GEMMs an FP8 recipe runs in FP8.
  std::vector<Kernel> fp8_linears = m.moe ? add_moe_mlp(g, m, sh, d) : add_dense_mlp(g, m, sh, d);
  add_embedding_and_head(g, m, sh, d);
  const Kernel eh = sh.mtp_layers > 0 ? add_mtp(g, m, sh, d) : Kernel{"", KernelKind::Gemm};
  std::vector<Kernel> attn_linears;  // the attention block's GEMMs an FP8 recipe runs in FP8
  for (const Proj& pr : in_proj) attn_linears.push_back(pr.gemm);
  attn_linears.push_back(proj);
  // A hybrid model's layer keeps its own block only: a Mamba-2 layer's mixer replaces the attention
  // block, an MLP layer has no attention block, a Mamba-2 or attention layer no MLP block.
  const LayerKind kind = m.layer_kind(0);
  if (!kind.has_attention()) {
    g.attn_fwd = {};
    g.attn_bwd = {};
    attn_linears.clear();
    g.cp_kv_bytes = 0;
    g.attn_tp_comm = kind.type == LayerType::Mamba;
    if (kind.type == LayerType::Mamba) add_mamba2_block(g, m, sh, d.drop_f, d.drop_b, attn_linears);
  }
  if (!kind.has_mlp()) {
    g.mlp_fwd = {};
    g.mlp_bwd = {};
    fp8_linears.clear();
    g.mlp_tp_comm = false;
  }
  if (!sh.fp8_gemms) return g;
  std::vector<std::tuple<Block*, Block*, Kernel>> linears;
  for (const Kernel& k : attn_linears) linears.emplace_back(&g.attn_fwd, &g.attn_bwd, k);
  for (const Kernel& k : fp8_linears) linears.emplace_back(&g.mlp_fwd, &g.mlp_bwd, k);
  if (sh.mtp_layers > 0) linears.emplace_back(&g.mtp_fwd, &g.mtp_bwd, eh);
  add_fp8_casts(sh, linears);
  return g;
}

ModelGraph build_model_graph(const ModelSpec& model, const LayerShape& shape) {
  ModelGraph mg;
  for (const LayerKind& k : model.kinds()) mg.kinds.push_back(build_layer_graph(model.of_kind(k), shape));
  mg.kind_of = model.kind_of_layers();
  return mg;
}

const ChoiceRegistry<LossImpl>& loss_impls() {
  static const ChoiceRegistry<LossImpl> registry("loss implementation", {
    {"megatron", "max, subtract, exp, sum and divide passes over the fp32 logits",
     "Megatron-LM vocab_parallel_cross_entropy on output.float() (the Megatron-LM default)", {LossImpl::Megatron}},
    {"eager", "F.cross_entropy on fp32 logits: upcast, log_softmax, nll_loss",
     "PyTorch F.cross_entropy after .float() (torchtitan, Hugging Face)", {LossImpl::Eager}},
    {"eager16", "F.cross_entropy on the 16-bit logits, no upcast",
     "NeMo AutoModel MaskedCrossEntropy with fp32_upcast false", {LossImpl::Eager16}},
    {"fused", "one kernel over the 16-bit logits that also writes their gradient",
     "Liger-Kernel fused linear cross entropy, Transformer Engine, torch.compile", {LossImpl::Fused}},
    {"xentropy", "FlashAttention's CrossEntropyLoss on the 16-bit logits (Apex's xentropy kernels)",
     "flash_attn.losses.cross_entropy; llm-foundry's default", {LossImpl::Xentropy}}});
  return registry;
}

std::string name_of(LossImpl v) { return name_of(loss_impls(), v); }

std::vector<std::string> train_metric_names() { return {std::begin(kTrainMetrics), std::end(kTrainMetrics)}; }

}  // namespace parasim
