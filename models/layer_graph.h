// A model plus training config becomes a LayerGraph: the kernels of one transformer layer (and of
// the embedding and output layers) for one microbatch on one tensor-parallel rank, with their
// shapes, FLOPs and bytes. GEMM shapes follow Megatron's column/row-parallel split.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/model.h"
#include "sim/scenario/choices.h"

namespace parasim {

// Scan: a kernel whose time is the later of its FLOPs at the GEMM rate and its bytes at the HBM
// rate (the Mamba-2 SSD chunked scan; CostModel::scan_s).
enum class KernelKind : std::uint8_t { Gemm, Attention, Memory, Scan };

// What a memory-bound kernel does, for its achieved bandwidth: streaming elementwise passes
// (copies, adds, residuals, the loss's row passes), norms (forward, input and weight gradients),
// activations (GELU, SwiGLU), column reductions (bias gradients) and dtype casts. Each class runs
// at its own fraction of the streaming rate (memory.kernel_class_ratio in the profile).
enum class MemClass : std::uint8_t { Stream, Norm, Activation, Reduction, Cast };

// Cross-entropy implementations (see add_loss in layer_graph.cpp for their kernels).
enum class LossImpl : std::uint8_t { Megatron, Eager, Eager16, Fused, Xentropy };

// The names a scenario gives them (training.loss_impl), parsed once into the enum.
const ChoiceRegistry<LossImpl>& loss_impls();
std::string name_of(LossImpl v);

// Training metrics a scenario can name (training.train_metrics), each priced as one cross entropy
// over the logits without gradients (add_train_metrics in layer_graph.cpp): Composer's
// LanguageCrossEntropy ("cross_entropy") and LanguagePerplexity ("perplexity"), whose update is
// its parent's.
inline constexpr const char* kTrainMetrics[] = {"cross_entropy", "perplexity"};
std::vector<std::string> train_metric_names();

// The module of a transformer layer a kernel belongs to (Megatron-Core's submodule where it has
// one). Behaviour that depends on what a kernel is (selective recompute, op-level SAC) reads this
// tag, never the display name, so renaming a kernel cannot silently change what is replayed.
enum class LayerModule : std::uint8_t {
  None,           // embedding, output layer, loss, metrics, MTP, residual adds, dropout
  BlockNorm,      // the block norms (input_layernorm, pre_mlp_layernorm)
  QkvProj,        // the fused query-key-value projection (linear_qkv)
  MlaProj,        // MLA's query projection or latent down projections with their latent norms
  MlaUpProj,      // MLA's query and key-value up projections (linear_q_up_proj, linear_kv_up_proj)
  QkNorm,         // per-head query and key norms
  Rope,           // rotary embedding of the queries and keys
  MlaQkConcat,    // MLA's assembly of the queries and keys from their rotary and non-rotary parts
  CoreAttn,       // unfused attention core: score and context GEMMs, softmax
  FusedAttn,      // fused (flash) attention kernel
  AttnOut,        // the attention output projection (linear_proj)
  Mlp,            // a dense layer's MLP
  Router,         // an MoE layer's router GEMM and its softmax / top-k
  TokenDispatch,  // an MoE layer's token permute and unpermute
  Experts,        // the routed experts
  SharedExperts,  // the shared experts and the add of their output
  MambaProj,      // a Mamba-2 mixer's in_proj and out_proj
  MambaMixer,     // a Mamba-2 mixer's conv1d, SSD scan and gated norm
};

// A kernel's step in a feed-forward chain (dense MLP, experts, shared experts): fc1, the
// activation, fc2.
enum class FfnStep : std::uint8_t { None, Up, Activation, Down };

// Which gradient a backward GEMM computes: the input's (dgrad) or the weight's (wgrad).
enum class GemmGrad : std::uint8_t { None, Input, Weight };

struct Kernel {
  std::string name;  // display label only (the --kernels table); select by the tags below
  KernelKind kind = KernelKind::Memory;
  std::int64_t m = 0, n = 0, k = 0;  // GEMM shape (M x K) * (K x N), batched `batch` times
  std::int64_t batch = 1;
  double flops = 0;        // executed FLOPs (causal attention counts half the score matrix)
  double model_flops = 0;  // FLOPs as Megatron counts them for MFU (full score matrix)
  double bytes = 0;        // HBM traffic for memory-bound kernels
  bool backward = false;
  bool sixteen_bit = false;  // a GEMM an FP8 recipe keeps in 16-bit (the output layer)
  MemClass mem_class = MemClass::Stream;  // memory-bound kernels: what kind of pass
  // Fused attention: the sequence length, the context-parallel ranks it is split over, the head dim.
  // Unfused attention's batched GEMMs carry the head dim too (0 on every other GEMM).
  std::int64_t seq = 0, cp = 1, head_dim = 0;
  LayerModule module = LayerModule::None;
  FfnStep ffn = FfnStep::None;
  GemmGrad grad = GemmGrad::None;
  // The real kernels the framework launches for this priced kernel (the host thread issues each:
  // sim/host_launch.h; on the GPU a memory-bound one pays the profile's per-kernel overhead for
  // each: CostModel::memory_s), set where the kernel is built from LayerShape::eager_launches and
  // the FP8 recipe; the sources are named there (models/layer_graph.cpp).
  std::int64_t launches = 1;
  // The framework issues those launches as bare PyTorch ops from a Python loop of its own module
  // (each a torch function call with its autograd record, one kernel each), not as one call of a
  // Megatron-Core or Transformer Engine module: the host prices each at training.host_op_us.
  bool python_ops = false;
  // The host waits for the GPU to finish the kernels before this one before it issues it (a
  // synchronising copy inside the framework's code: sim/host_launch.h block_sync).
  bool host_sync = false;
  // A block norm that Transformer Engine runs inside the following linear's module (LayerNormLinear:
  // Megatron-Core's TE layer spec builds input_layernorm and a dense MLP's pre_mlp_layernorm as
  // IdentityOp), so no module of its own: selective recompute of "layernorm" does not replay it.
  bool in_linear = false;
  // An MoE layer's expert GEMMs are shaped as the mean expert's (padded: the capacity); the busiest
  // expert-parallel rank's rows over that shape (sim/parallel/moe_routing.h) scale their time
  // (sim/cost/kernels.cpp). Executed FLOPs are the mean rank's, model FLOPs every routed copy once.
  double scale = 1;
};

struct Block {
  std::vector<Kernel> kernels;
  double model_flops() const;
  double flops() const;  // executed (what HFU counts)
};

struct LayerShape {
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  bool cp_allgather = false;  // context parallel all-gathers K and V (saves them gathered: cp x the local K, V)
  // Mixture of experts: expert-parallel ranks and expert tensor parallel (1 or tp).
  std::int64_t ep = 1;
  std::int64_t etp = 1;
  // Tokens an MoE layer routes on this rank: the microbatch's tokens / cp, or with whole experts
  // (etp 1) under tensor parallelism only this rank's sequence-parallel share of them.
  std::int64_t moe_tokens() const {
    const std::int64_t t = micro_batch * (seq_len / cp);
    return etp == 1 && tp > 1 ? t / tp : t;
  }
  // Routed token copies a rank permutes and sends, over moe_tokens() x top_k, and those the busiest
  // expert-parallel rank's experts compute and receive, over the balanced mean: routing, capacity
  // and padding (sim/parallel/moe_routing.h MoeLoad).
  double moe_sent = 1;
  double moe_busiest = 1;
  // Experts padded to capacity (TrainingSpec::moe_routing): the dispatcher's sizes are static.
  bool moe_padded = false;
  // Megatron-Core's all-to-all dispatcher (parallel.moe_dispatcher "alltoall") sorts the received
  // chunks by local expert (sort_chunks_by_idxs); the flex dispatcher (DeepEP, HybridEP) does not.
  bool moe_sorts_chunks = true;
  bool sequence_parallel = false;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 2048;
  double dtype_bytes = 2;     // activations and weights (bf16/fp16)
  bool flash_attention = true;
  // FP8 linear layers (Transformer Engine recipe): each GEMM input is quantized in forward and each
  // output gradient in backward, both through HBM, at fp8_cast_bytes per element (fp8_cast_bytes()).
  bool fp8_gemms = false;
  double fp8_cast_bytes = 4;
  // Bytes per element of the FP8 / FP4 copy a linear layer saves of its input for the weight
  // gradient (fp8_saved_input_bytes()).
  double fp8_saved_input_bytes = 1;
  // Eager-PyTorch RMSNorm and RoPE as in the Llama reference code: each elementwise step its own
  // kernel through HBM (see layer_graph.cpp for the kernels and their bytes).
  bool eager_norm = false;
  // The RoPE kernels (RopeImpl; rope_impl() resolves "fused" to "unfused" for a model whose tables
  // are scaled).
  RopeImpl rope = RopeImpl::Fused;
  // The hidden dropout and the residual add as two kernels (TrainingSpec::dropout_add_impl "eager").
  bool eager_dropout_add = false;
  // Norms whose backward is two kernels, the input gradient and a weight-gradient reduction that
  // reads the input and the output gradient again (PyTorch's native LayerNorm / RMSNorm, Apex's
  // FusedLayerNorm), instead of one kernel doing both (Transformer Engine, Liger).
  bool two_pass_norm = false;
  LossImpl loss = LossImpl::Megatron;
  // Training metrics evaluated on each microbatch's logits after its backward (TrainingSpec::train_metrics).
  std::int64_t train_metrics = 0;
  // Multi-token prediction modules after the last layer (TrainingSpec::mtp_layers).
  std::int64_t mtp_layers = 0;
  // Kernel launches (Kernel::launches): eager PyTorch modules (TrainingSpec::launch_impl "eager")
  // rather than Megatron-Core with Transformer Engine's; the launches of one FP8 quantization of a
  // tensor (fp8_quantize_launches()), and whether a grouped GEMM's per-expert inputs are quantized
  // by one fused kernel (fp8_grouped_quantize_fused()) or one quantization per expert.
  bool eager_launches = false;
  // TEGroupedMLP's forward in Python around Transformer Engine's GroupedLinear (Megatron-Core, not
  // eager PyTorch's modules or TE's fused grouped MLP, TrainingSpec::te_op_fuser): the experts' fc2
  // biases added expert by expert (expert_bias_ops) and a clamped activation's clamps
  // (act_clamp, expert_clamp_apart) run as PyTorch ops of their own.
  bool moe_python_glue = true;
  // Megatron-Core's Transformer Engine layer spec fuses the block norm before linear_qkv (not MLA's)
  // and before a dense MLP's linear_fc1 into those linears (Kernel::in_linear).
  bool norm_in_linear = false;
  std::int64_t fp8_quantize_launches = 1;
  bool fp8_grouped_quantize_fused = true;
};

// Whether Transformer Engine runs a block's norm inside the linear after it (LayerNormLinear):
// Megatron-Core's TE layer specs build input_layernorm as an IdentityOp before linear_qkv, except
// MLA's, whose latent projections read a norm module of its own; pre_mlp_layernorm as one before a
// dense MLP's linear_fc1, not before an MoE block's router (TENorm); and a Mamba-2 layer's norm
// inside its mixer's in_proj (mamba_layer_specs.py: TELayerNormColumnParallelLinear). The one rule
// the layer graph tags its norms by (Kernel::in_linear) and the activation memory model keeps their
// outputs by, since selective recompute's "layernorm" replays (and frees) only a norm that is a
// module of its own.
inline bool input_norm_in_linear(const ModelSpec& m, const LayerShape& sh) { return sh.norm_in_linear && !m.mla; }
inline bool pre_mlp_norm_in_linear(const ModelSpec& m, const LayerShape& sh) { return sh.norm_in_linear && !m.moe; }
inline bool mamba_norm_in_linear(const LayerShape& sh) { return sh.norm_in_linear; }

// HBM bytes per element of quantizing one 16-bit GEMM operand to FP8 with its transpose (the
// weight gradient GEMM reads the transposed copy), by Transformer Engine scaling recipe:
//   delayed: one fused cast_transpose pass: read 2 B, write the FP8 copy and its transpose 1 + 1 B.
//   current: per-tensor current scaling first reduces the tensor's amax (a read of 2 B), then casts.
//   mxfp8:   the cast computes each 32-element block's E8M0 scale in-register; it writes a
//            row-wise and a column-wise FP8 copy (1 + 1 B) and one 1-byte scale per 32 elements
//            of each (2 / 32 B).
//   nvfp4:   the per-tensor FP32 scale needs the tensor's amax first (a read of 2 B; the
//            column-wise copy's amax is taken after its Hadamard transform in the same pass), then
//            the cast reads the 16-bit tensor again (2 B) and writes the row-wise and the column-wise
//            FP4 copies, each 0.5 B plus one E4M3 scale per 16 elements (Transformer Engine's
//            NVFP4BlockScaling builds both from the high-precision input; the column-wise copy of
//            inputs and gradients, which the weight gradient reads, goes through the 16x16 random
//            Hadamard transform in-register, gradients with stochastic rounding).
double fp8_cast_bytes(Fp8Recipe recipe);
// Bytes per element of the low-precision copy of its input a linear layer saves for the weight
// gradient: 1 for FP8, MXFP8 adds a 1-byte scale per 32 elements, NVFP4 0.5 B and one 1-byte
// scale per 16 elements.
double fp8_saved_input_bytes(Fp8Recipe recipe);

// Whether the routed experts' clamped activation (ModelSpec::activation_clamp, GPT-OSS) runs
// Megatron-Core's clamps as PyTorch ops apart from its fused kernel (LayerShape::moe_python_glue):
// the layer graph's rule (act_clamp), which the memory model reads for the clamped copy it keeps.
bool expert_clamp_apart(const ModelSpec& m, const LayerShape& sh);
// Kernels Transformer Engine launches to quantize one 16-bit tensor (with its transpose) to FP8:
//   delayed: one cast_transpose kernel (the amax is reduced inside it, the scale from history).
//   current: four (TransformerEngine pytorch/csrc/quantizer.cpp Float8CurrentScalingQuantizer::
//            quantize_impl, common/recipe/current_scaling.cu): zero_amax_kernel and the amax
//            reduction (nvte_compute_amax), compute_scale_from_amax_kernel, then the cast.
//   mxfp8:   one (the cast computes each block's scale in-register).
//   nvfp4:   not counted from the code: one.
std::int64_t fp8_quantize_launches(Fp8Recipe recipe);
// Whether GroupedLinear quantizes its experts' inputs in one kernel (TransformerEngine
// pytorch/csrc/extensions/cast.cpp split_quantize): delayed scaling through the fused
// nvte_multi_cast_transpose (multi_tensor_quantize_impl: "only have fused kernel for FP8 delayed
// scaling"), NVFP4 through its fused split quantize; current scaling and MXFP8 quantize each
// expert's split with its own quantizer.
bool fp8_grouped_quantize_fused(Fp8Recipe recipe);

struct LayerGraph {
  LayerShape shape;
  Block attn_fwd, attn_bwd, mlp_fwd, mlp_bwd;  // one transformer layer (a Mamba-2 mixer in attn_*)
  Block embed_fwd, embed_bwd;                  // first stage
  Block head_fwd, head_bwd;                    // last stage: final norm, logits, loss
  Block metrics;                               // last stage, after each microbatch's backward: the training metrics
  // Multi-token prediction (shape.mtp_layers > 0), one module's own kernels: the shifted tokens'
  // embedding, the two input norms and the 2h -> h projection. Its transformer layer is the last
  // layer's kind's blocks and its prediction the head blocks.
  Block mtp_fwd, mtp_bwd;
  double mtp_stored_bytes = 0;  // what one module's own kernels keep for backward: both norm inputs, eh_proj's input
  double tokens = 0;                           // tokens per microbatch on this rank (b*s/cp)
  // Bytes of one TP all-reduce of the layer's activations (b*s/cp*h*dtype); with sequence
  // parallel the same volume moves as all-gather + reduce-scatter.
  double tp_message_bytes = 0;
  // Bytes sent between pipeline stages per microbatch, each direction.
  double p2p_bytes = 0;
  // Ring attention (context parallel): K/V bytes exchanged per step per layer in forward.
  double cp_kv_bytes = 0;
  // Mixture of experts: bytes each rank moves in one all-to-all of the token dispatcher (routed
  // token copies, tokens x top_k x hidden, times the busiest rank's load: LayerShape::moe_busiest;
  // the combine moves the same back), and whether the MLP
  // block keeps the tensor-parallel collectives of a dense MLP (experts split over etp = tp ranks)
  // or runs on this rank's sequence-parallel tokens without them (etp = 1).
  double ep_message_bytes = 0;
  bool mlp_tp_comm = true;
  // A hybrid model's MLP layer has no attention block, hence none of its tensor-parallel
  // collectives (a Mamba-2 layer's mixer stands in the attention block, with them).
  bool attn_tp_comm = true;
};

// The graph of a uniform model (every layer alike; ModelSpec::uniform()), or of one kind of layer.
LayerGraph build_layer_graph(const ModelSpec& model, const LayerShape& shape);

// A model's layer graphs: one per kind of layer it has (ModelSpec::kinds(): dense or MoE MLP,
// full or sliding-window attention, a hybrid model's Mamba-2, attention and MLP layers), each built
// from ModelSpec::of_kind, and each layer's kind. A hybrid layer fills one block pair: a Mamba-2
// layer and an attention layer the attention blocks, an MLP layer the MLP blocks.
// Everything outside the transformer layers (embedding, output layer, pipeline and TP message
// sizes) is the same in every kind's graph.
struct ModelGraph {
  std::vector<LayerGraph> kinds;
  std::vector<std::int32_t> kind_of;  // per layer, an index into kinds
  const LayerGraph& layer(std::int64_t i) const { return kinds[static_cast<size_t>(kind_of[static_cast<size_t>(i)])]; }
};
ModelGraph build_model_graph(const ModelSpec& model, const LayerShape& shape);

// One microbatch's forward FLOPs through the whole model (embedding, every layer, the output layer
// and any multi-token-prediction modules), in two conventions: `model`, Megatron-LM's MFU
// convention (a fused attention kernel's full score matrix, Narayanan et al. SC'21), and `causal`,
// each fused attention kernel at what its causal or sliding-window mask computes, as
// Megatron-Bridge's flop_utils.py counts the core attention. Backward is twice the forward in
// both, so causal / model converts a step's model TFLOP/s from one to the other.
struct ForwardFlops {
  double model = 0, causal = 0;
};
ForwardFlops forward_flops(const ModelGraph& g);

}  // namespace parasim
