#include "sim/memory/memory_model.h"

#include <algorithm>

namespace parasim {

ActivationBytes activation_bytes(const ModelSpec& m, const LayerShape& sh, Recompute recompute,
                                 const RecomputeModules& modules) {
  const bool selective = recompute == Recompute::Selective;
  auto recomputes = [&](RecomputeModule module) { return selective && modules.has(module); };
  const double e = sh.dtype_bytes;
  const double t = static_cast<double>(sh.tp);
  const double s = static_cast<double>(sh.seq_len / sh.cp);  // local sequence
  const double b = static_cast<double>(sh.micro_batch);
  const double h = static_cast<double>(m.hidden);
  const double kv = static_cast<double>(m.kv_dim());
  const double f = static_cast<double>(m.moe ? m.moe->expert_ffn_hidden * m.moe->top_k : m.ffn_hidden);
  const double a = static_cast<double>(m.heads);
  const double sbh = s * b * h;
  // Korthikanti et al. 2022 §4.1, per layer, elements x 2 bytes in the paper:
  //  replicated under TP (not under SP): two norm inputs (4sbh), QKV input (2sbh), MLP input
  //  (2sbh), two dropout masks (1 byte each: 2sbh total) -> 10sbh with dropout.
  const double mask = m.dropout ? 1.0 : 0.0;  // bytes per element of a dropout mask
  //  Eager RMSNorm (the Llama reference code) keeps, instead of its input, the fp32 copy of it
  //  (pow and the scale save it) and its pre-weight output (the weight multiply saves it): 4 bytes
  //  more per element per norm.
  const double eager_norm = sh.eager_norm ? 4.0 : 0.0;
  //  With FP8 linear layers (Transformer Engine) each linear layer saves its input as the FP8 copy
  //  its weight-gradient GEMM reads (1 byte, plus one scale byte per 32 elements under MXFP8)
  //  instead of the 16-bit tensor: the QKV, attention-projection, fc1 and fc2 inputs.
  const double li = sh.fp8_gemms ? sh.fp8_saved_input_bytes : e;
  //  Each block (attention or Mamba-2 mixer; MLP or experts) has one norm before it: its input (e)
  //  and dropout mask stay; its output, the next linear's input, stays unless recomputed: a
  //  recomputed norm (layernorm) keeps no output, but one Transformer Engine runs inside that linear
  //  (LayerNormLinear) is no module of its own and is not recomputed (input_norm_in_linear,
  //  pre_mlp_norm_in_linear, mamba_norm_in_linear: the layer graph's rule).
  auto block_norm = [&](bool in_linear) {
    const double output = recomputes(RecomputeModule::Layernorm) && !in_linear ? 0.0 : li;
    return (e + output + mask + eager_norm) * sbh;
  };
  const LayerKind kind = m.layer_kind(0);
  double replicated = 0;
  if (kind.type == LayerType::Mamba) replicated += block_norm(mamba_norm_in_linear(sh));
  if (kind.has_attention()) replicated += block_norm(input_norm_in_linear(m, sh));
  if (kind.has_mlp()) replicated += block_norm(pre_mlp_norm_in_linear(m, sh));
  //  split by t: Q (e*sbh), K and V (e*sb*kv each), attention-projection input (li*sbh);
  //  MLP: GeLU input and fc2 input (e + li per sbf), SwiGLU gate+up output and fc2 input (2e + li).
  //  With head_dim set, Q and the attention-projection input are heads x head_dim wide, not h.
  const double sbq = s * b * static_cast<double>(m.q_dim());
  //  All-gather context parallelism saves the gathered K and V (every CP rank's sequence), not the
  //  local ones, for the attention backward.
  const double kv_seq = sh.cp_allgather ? static_cast<double>(sh.seq_len) : s;
  double attn_split = (e + li) * sbq + 2 * e * kv_seq * b * kv;
  //  Multi-head latent attention: Q and K heads x (qk_nope + qk_rope) wide, V and the projection
  //  input heads x v_head_dim (e each, li for the projection input); the latents are kept
  //  replicated: each latent norm's input (e) and its up projection's input (li) per latent
  //  element, q_lora_rank and kv_lora_rank per token.
  double mla_latents = 0;
  if (m.mla) {
    const double sbv = s * b * static_cast<double>(m.attn_out_dim());
    const double gathered = kv_seq / s;  // all-gather CP keeps every rank's K and V
    attn_split = (recomputes(RecomputeModule::MlaUpProj) ? 0.0 : e * sbq + gathered * (e * sbq + e * sbv)) + li * sbv;
    mla_latents = (e + li) * s * b * static_cast<double>(m.mla->q_lora_rank + m.mla->kv_lora_rank);
  }
  double mlp_split = recomputes(RecomputeModule::Mlp) ? 0.0 : ((m.activation == Activation::SwiGlu ? 2.0 : 1.0) * e + li) * s * b * f;
  //  Mixture of experts (the kernels of add_moe_mlp in models/layer_graph.cpp), on this rank's
  //  routed tokens T_r (all of the TP group's with etp = tp, the sequence-parallel share with
  //  etp = 1): the router's fp32 scores (4 E per token) for its softmax backward, and per routed
  //  copy (top_k per token) the permuted fc1 input (li h), the fc1 output (e f, 2 e f with SwiGLU),
  //  the fc2 input (li f) and the fc2 output unpermute's backward reads (e h), f the expert FFN
  //  width on this rank. Already per rank: not divided by t below.
  double moe = 0;
  if (m.moe) {
    const double tr = static_cast<double>(sh.moe_tokens());
    const double fe = static_cast<double>(m.moe->expert_ffn_hidden / sh.etp);
    const double k = static_cast<double>(m.moe->top_k);
    //  moe_act: the activation's output, fc2's input, is replayed; moe: the whole block. A clamped
    //  activation run apart (expert_clamp_apart) also keeps the clamped copy of fc1's output that its
    //  fused kernel reads (2 e f), unless moe_act replays it.
    const double expert_clamp = expert_clamp_apart(m, sh) ? 2.0 * e * fe : 0.0;
    const double fc2_in = recomputes(RecomputeModule::MoeAct) ? 0.0 : li * fe + expert_clamp;
    //  The copies a rank keeps per layer are the mean rank's (sh.moe_sent: what capacity keeps or
    //  pads); the busiest rank changes from layer to layer, so its excess averages out in memory.
    moe = tr * (4.0 * static_cast<double>(m.moe->experts) +
                k * sh.moe_sent * (li * h + (m.activation == Activation::SwiGlu ? 2.0 : 1.0) * e * fe + fc2_in + e * h));
    //  Shared experts: their fc1 output and fc2 input on the same T_r tokens (fc1 reads the MLP
    //  input already kept), S the shared width on this rank.
    const double fs = static_cast<double>(m.moe->shared_expert_ffn_hidden / sh.etp);
    if (!recomputes(RecomputeModule::SharedExperts)) moe += tr * ((m.activation == Activation::SwiGlu ? 2.0 : 1.0) * e + li) * fs;
    if (recomputes(RecomputeModule::Moe)) moe = 0;
    mlp_split = 0;
  }
  //  attention matrix: softmax output (e), dropout mask (1), dropout output (e) per score;
  //  a fused (flash) kernel stores only the fp32 log-sum-exp per query row.
  const double s_kv = static_cast<double>(sh.seq_len);
  double scores = sh.flash_attention ? 4.0 * a * s * b : (m.dropout ? 2 * e + 1 : e) * a * s * s_kv * b;
  if (recomputes(RecomputeModule::CoreAttn) && !sh.flash_attention) scores = 0;  // the attention core is recomputed
  if (!kind.has_attention()) attn_split = scores = 0;
  if (!kind.has_mlp()) mlp_split = 0;
  //  Mamba-2 layer (mamba_ssm's MambaSplitConv1dScanCombinedFn saves its input, the in_proj output
  //  z x B C dt, e per element, and the scan's ungated output, e per d_inner channel; it recomputes
  //  the conv and the chunk states in backward; Megatron's gated norm after it keeps its input, e,
  //  and out_proj its input, li): e (in_proj width + 2 d_inner) + li d_inner per token, split by t.
  const double mamba = kind.type == LayerType::Mamba
                           ? s * b * (e * static_cast<double>(m.mamba->in_proj_width() + 2 * m.mamba->d_inner()) +
                                      li * static_cast<double>(m.mamba->d_inner()))
                           : 0.0;
  const double sp = sh.sequence_parallel ? t : 1.0;
  ActivationBytes out;
  const double full = replicated / sp + (attn_split + mlp_split + scores + mamba) / t + moe + mla_latents;
  out.layer_working = full;
  out.layer_stored = recompute == Recompute::Full ? e * sbh / sp : full;
  if (recompute == Recompute::SelectiveOp) {
    // torchtitan's op-level SAC keeps the layer input and the outputs of the saved ops: matmuls
    // 1, 3, 5, 7 in call order (wq, wv, w1, w2 with SwiGLU; wq, wv, w1 without) and the fused
    // attention (its output and fp32 log-sum-exp); the 2nd, 4th, 6th matmul (wk, wo, w3 / w2) and
    // every elementwise op are replayed.
    const bool glu = m.activation == Activation::SwiGlu;
    const double lse = sh.flash_attention ? 4.0 * a * s * b : 0.0;
    out.layer_stored = e * sbh / sp                                             // layer input
                       + (2 * e * sbh + e * s * b * kv + e * s * b * f + lse) / t  // q, attention out, v, w1 out
                       + (glu ? e * sbh / sp : 0.0);                              // w2 out (SwiGLU: the 7th matmul)
  }
  out.embed = mask * sbh / sp;
  const double v_local = static_cast<double>((m.vocab + sh.tp - 1) / sh.tp);
  // Final-norm input and the loss's saved logits: the fp32 softmax (Megatron) or log-softmax (eager
  // PyTorch), or the 16-bit logits a fused kernel writes its gradient over or the xentropy
  // kernel reads again in backward.
  const double per_logit = sh.loss == LossImpl::Fused || sh.loss == LossImpl::Xentropy || sh.loss == LossImpl::Eager16 ? e : 4.0;
  out.head = (e + eager_norm) * sbh / sp + per_logit * s * b * v_local;
  if (sh.train_metrics > 0) {
    // The metrics read the model's e-byte output logits (Composer keeps them in state.outputs):
    // already the loss's saved tensor when it saves 16-bit logits, another tensor beside its fp32
    // copy otherwise.
    out.metrics_kept = e * s * b * v_local;
    if (per_logit != e) out.head += out.metrics_kept;
    out.metrics_working = (e == 4.0 ? 4.0 : 8.0) * s * b * v_local;
  }
  // The loss's backward (the kernels of add_loss in models/layer_graph.cpp) allocates beside the
  // saved logits: eager PyTorch's nll_loss_backward an fp32 gradient (zeros, then the scatter) and
  // log_softmax_backward a new fp32 input gradient while both are alive (8 bytes per logit; the
  // downcast's 4 + e after them is smaller); Megatron's kernel works in place on its saved softmax
  // and only the downcast to the 16-bit gradient is new (e); a fused kernel writes over the logits;
  // the xentropy backward writes a new 16-bit gradient beside them (e; FlashAttention's
  // CrossEntropyLoss with its default inplace_backward=False); eager PyTorch on the 16-bit logits
  // the same two gradients as eager's, 16-bit (2e).
  const double working_per_logit = sh.loss == LossImpl::Eager                 ? 8.0
                                   : sh.loss == LossImpl::Eager16             ? 2 * e
                                   : sh.loss == LossImpl::Xentropy             ? e
                                   : sh.loss == LossImpl::Megatron && e != 4.0 ? e
                                                                               : 0.0;
  out.head_working = working_per_logit * s * b * v_local;
  return out;
}

StateBytesPerParam state_bytes(Dtype dtype, Optimizer optimizer, bool fp32_grads) {
  StateBytesPerParam b;
  const bool full_fp32 = dtype == Dtype::Fp32;
  b.weights = full_fp32 ? 4 : 2;
  b.grads = (full_fp32 || fp32_grads) ? 4 : 2;
  // Adam: fp32 master copy (mixed precision only), momentum and variance, 4 bytes each.
  // SGD with momentum: master copy and momentum.
  const double master = full_fp32 ? 0 : 4;
  b.optimizer = master + (optimizer == Optimizer::Adam ? 8.0 : 4.0);
  return b;
}

double optimizer_step_bytes(const StateBytesPerParam& b, Optimizer optimizer, OptimizerImpl impl, bool master_copy, bool cast_grads) {
  if (impl == OptimizerImpl::Fused) {
    // Megatron-LM's Float16OptimizerWithFloat16Params.step (megatron/optimizer/optimizer.py):
    // _copy_model_grads_to_main_grads (main_param.grad = main_grad.float(): read 2, write 4, and the
    // Adam pass reads 4 instead of 2), Apex's FusedAdam over the fp32 main parameters, then
    // _copy_main_params_to_model_params (multi_tensor_scale: read the master's 4 again, write 2).
    const bool cast = cast_grads && b.grads < 4;
    return b.optimizer * 2 + (cast ? 4.0 : b.grads) + b.weights + (cast ? b.grads + 4.0 : 0.0) + (master_copy ? 4.0 : 0.0);
  }
  constexpr double f = 4;  // fp32 parameter, gradient and states
  if (optimizer == Optimizer::Adam) {
    // Composer's DecoupledAdamW.adamw (weight decay 0 in the MPT recipes): exp_avg.mul_(beta1) 2f;
    // .add_(grad) 3f; exp_avg_sq.mul_(beta2) 2f; .addcmul_(grad, grad) 4f; sqrt() 2f;
    // / sqrt(bias_correction2) 2f; .add_(eps) 2f; param.addcdiv_(exp_avg, denom) 4f = 21f.
    // torch.optim.AdamW's foreach path (_multi_tensor_adamw) with weight decay: params mul_ 2f;
    // exp_avg lerp_ 3f; then the same six passes = 21f as well.
    return 21 * f;
  }
  // SGD with momentum: buf.mul_(momentum) 2f; buf.add_(grad) 3f; param.add_(buf) 3f.
  return 8 * f;
}

Sharding sharding_for(std::int64_t zero_stage, std::optional<FsdpSharding> fsdp, std::int64_t dp, std::int64_t shard_group) {
  Sharding s;
  s.nd = dp;
  std::int64_t stage = zero_stage;
  if (fsdp == FsdpSharding::Full) stage = 3;
  if (fsdp == FsdpSharding::GradOp) stage = 2;
  if (fsdp == FsdpSharding::Hybrid) {
    stage = 3;
    s.nd = shard_group > 0 ? shard_group : dp;
  }
  s.optimizer = stage >= 1;
  s.grads = stage >= 2;
  s.weights = stage >= 3;
  return s;
}

ModelStates model_states(double params, const StateBytesPerParam& b, const Sharding& s) {
  const double nd = static_cast<double>(s.nd);
  ModelStates m;
  m.weights = b.weights * params / (s.weights ? nd : 1.0);
  m.grads = b.grads * params / (s.grads ? nd : 1.0);
  m.optimizer = b.optimizer * params / (s.optimizer ? nd : 1.0);
  return m;
}

}  // namespace parasim
