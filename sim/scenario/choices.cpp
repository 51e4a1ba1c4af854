#include "sim/scenario/choices.h"

#include "calibrate/profile/profile.h"
#include "models/layer_graph.h"
#include "models/model.h"

namespace parasim {

namespace {
constexpr std::uint8_t stage(int s) { return static_cast<std::uint8_t>(1u << s); }
}  // namespace

// Each description is the phrase the parser's cross-field messages use ("\"deepspeed\" describes
// <description>, but zero_stage is 0").
const ChoiceRegistry<IntraNode>& intra_node_kinds() {
  static const ChoiceRegistry<IntraNode> registry("intra-node fabric", {
    {"nvswitch", "every GPU of a node on NVLink switches at the profile's NVLink rate", "NVIDIA DGX/HGX (NVSwitch)", {IntraNode::NvSwitch}},
    {"pcie", "GPUs on PCIe switches, no NVLink", "PCIe servers (e.g. 8 x A100 PCIe)", {IntraNode::Pcie}}});
  return registry;
}

const ChoiceRegistry<InterNode>& inter_node_kinds() {
  static const ChoiceRegistry<InterNode> registry("inter-node fabric", {
    {"fat_tree", "a two-level leaf/spine fabric, each node's NICs on one leaf", "Al-Fares et al. 2008", {InterNode::FatTree}},
    {"rail_optimized", "NIC i of every node on rail switch i, rails joined by spines",
     "NVIDIA DGX SuperPOD reference architecture (rail-optimized)", {InterNode::RailOptimized}},
    {"custom", "the switches and links the scenario lists", "cluster.inter_node.switches / links", {InterNode::Custom}}});
  return registry;
}

const ChoiceRegistry<NetworkKind>& network_kinds() {
  static const ChoiceRegistry<NetworkKind> registry("network model", {
    {"analytical", "NCCL's tuner model per collective (alpha-beta with measured points where the profile has them)",
     "NCCL src/graph/tuning.cc; sim/network/alpha_beta.cpp", {NetworkKind::Analytical}},
    {"flow", "collectives as flows over the topology graph, sharing its links max-min fairly",
     "sim/network/flow_network.cpp (Boost.Graph topology)", {NetworkKind::Flow}}});
  return registry;
}

const ChoiceRegistry<Dtype>& dtypes() {
  static const ChoiceRegistry<Dtype> registry("dtype", {
    {"bf16", "bfloat16 GEMMs, activations and weights; fp32 master weights and optimizer states",
     "Megatron-LM --bf16; torch.autocast(dtype=torch.bfloat16)", {Dtype::Bf16}},
    {"fp16", "float16 GEMMs, activations and weights with loss scaling; fp32 master weights and optimizer states",
     "Megatron-LM --fp16; Micikevicius et al. 2018, 'Mixed Precision Training'", {Dtype::Fp16}},
    {"fp8", "FP8 GEMM inputs cast from bf16 activations and weights (training.fp8_recipe sets the scaling)",
     "Transformer Engine fp8_autocast; Megatron-LM --fp8-format", {Dtype::Fp8}},
    {"fp32", "fp32 throughout: no master copy, 4-byte weights, gradients and activations", "PyTorch default dtype", {Dtype::Fp32}}});
  return registry;
}

const ChoiceRegistry<Dtype>& fsdp_dtypes() {
  static const ChoiceRegistry<Dtype> registry = [] {
    ChoiceRegistry<Dtype> r("FSDP mixed-precision dtype");
    for (const auto& e : dtypes().entries())
      if (e.factory.value != Dtype::Fp8) r.add(e);
    return r;
  }();
  return registry;
}

const ChoiceRegistry<Optimizer>& optimizers() {
  static const ChoiceRegistry<Optimizer> registry("optimizer", {
    {"adam", "Adam / AdamW: momentum and variance in fp32 (8 bytes per parameter) besides the master copy",
     "Kingma and Ba 2015; Rajbhandari et al. 2020 (ZeRO), section 3: 12 bytes of optimizer states with the master copy", {Optimizer::Adam}},
    {"sgd", "SGD with momentum: the momentum in fp32 (4 bytes per parameter) besides the master copy", "torch.optim.SGD(momentum > 0)",
     {Optimizer::Sgd}}});
  return registry;
}

const ChoiceRegistry<NormImpl>& norm_impls() {
  static const ChoiceRegistry<NormImpl> registry("norm implementation", {
    {"fused", "one kernel per pass", "Transformer Engine / Apex fused LayerNorm and RMSNorm, Liger, torch.compile", {NormImpl::Fused}},
    {"two_pass", "one forward kernel; a backward of two kernels, the input gradient and a weight-gradient reduction reading x and dy again",
     "PyTorch's native LayerNorm / RMSNorm backward; Apex FusedLayerNorm", {NormImpl::TwoPass}},
    {"eager", "the Llama reference RMSNorm in eager PyTorch: upcast, pow, mean, scale, downcast and weight kernels in fp32",
     "meta-llama/llama model.py RMSNorm; torchtitan without compile", {NormImpl::Eager}}});
  return registry;
}

const ChoiceRegistry<RopeImpl>& rope_impls() {
  static const ChoiceRegistry<RopeImpl> registry("rotary embedding implementation", {
    {"fused", "one kernel per pass", "Megatron-LM --apply-rope-fusion (Transformer Engine fused RoPE)", {RopeImpl::Fused}},
    {"eager", "the Llama reference rotary embedding: an fp32 complex multiply in eager PyTorch",
     "meta-llama/llama model.py apply_rotary_emb", {RopeImpl::Eager}},
    {"unfused", "Megatron-Core's unfused RoPE: the cos and sin tables built and scaled, then a multiply, the rotate-half (a negation "
     "and a cat), a multiply, an add and a cat, each a PyTorch op; what a fused scenario runs for a YaRN-scaled model",
     "megatron/core/models/common/embeddings/rope_utils.py _apply_rotary_pos_emb_bshd (core_v0.16.0)", {RopeImpl::Unfused}}});
  return registry;
}

const ChoiceRegistry<DropoutAddImpl>& dropout_add_impls() {
  static const ChoiceRegistry<DropoutAddImpl> registry("dropout-add implementation", {
    {"fused", "one kernel reads the branch and the residual and writes the sum and the keep mask",
     "Megatron-LM bias_dropout_add_fused_train (on unless --no-bias-dropout-fusion)", {DropoutAddImpl::Fused}},
    {"eager", "nn.Dropout's kernel writes the dropped branch and the mask, then a separate add",
     "x + self.resid_dropout(b) in eager PyTorch models", {DropoutAddImpl::Eager}}});
  return registry;
}

const ChoiceRegistry<OptimizerImpl>& optimizer_impls() {
  static const ChoiceRegistry<OptimizerImpl> registry("optimizer implementation", {
    {"fused", "one multi-tensor kernel per step", "apex / Megatron FusedAdam; torch.optim.AdamW(fused=True)", {OptimizerImpl::Fused}},
    {"unfused", "one elementwise kernel per term of the update",
     "torch.optim.AdamW for-loop and foreach paths; Composer DecoupledAdamW (sim/memory/memory_model.cpp optimizer_step_bytes)",
     {OptimizerImpl::Unfused}}});
  return registry;
}

const ChoiceRegistry<Fp8Recipe>& fp8_recipes() {
  static const ChoiceRegistry<Fp8Recipe> registry("FP8 recipe", {
    {"delayed", "DelayedScaling: scales from an amax history; one cast(+transpose) pass per tensor",
     "Transformer Engine recipe.DelayedScaling", {Fp8Recipe::Delayed}},
    {"current", "per-tensor current scaling: an amax pass over the tensor, then the cast",
     "Transformer Engine Float8CurrentScaling; Megatron-Bridge \"FP8-CS\"", {Fp8Recipe::Current}},
    {"mxfp8", "MXFP8 block scaling: one E8M0 scale per 32 elements; Blackwell's block-scaled FP8 MMA",
     "Transformer Engine MXFP8BlockScaling; OCP Microscaling Formats (MX) v1.0", {Fp8Recipe::Mxfp8}},
    {"nvfp4", "NVFP4 block scaling of the linear layers' GEMMs: FP4 (E2M1) operands, one E4M3 scale per 16 elements",
     "Transformer Engine NVFP4BlockScaling; Megatron-LM --fp4-recipe nvfp4", {Fp8Recipe::Nvfp4}}});
  return registry;
}

const ChoiceRegistry<CpImpl>& cp_impls() {
  static const ChoiceRegistry<CpImpl> registry("context-parallel implementation", {
    {"ring", "cp - 1 point-to-point K/V block exchanges overlapped with the attention kernel",
     "Megatron-Core / Transformer Engine context parallelism (ring attention)", {CpImpl::Ring}},
    {"allgather", "K and V all-gathered before attention, on the critical path; their gradients reduce-scattered after its backward",
     "Llama 3 paper section 3.3.2; PyTorch context_parallel with the allgather rotate method", {CpImpl::AllGather}}});
  return registry;
}

const ChoiceRegistry<FsdpSharding>& fsdp_shardings() {
  static const ChoiceRegistry<FsdpSharding> registry("FSDP sharding strategy", {
    {"full", "parameters, gradients and optimizer states sharded over all data-parallel ranks",
     "torch.distributed.fsdp ShardingStrategy.FULL_SHARD; fully_shard", {FsdpSharding::Full}},
    {"hybrid", "full sharding inside groups of shard_group ranks, replicated across groups",
     "ShardingStrategy.HYBRID_SHARD; fully_shard over a 2-D device mesh (HSDP)", {FsdpSharding::Hybrid}},
    {"grad_op", "gradients and optimizer states sharded, parameters kept whole after the forward",
     "ShardingStrategy.SHARD_GRAD_OP (ZeRO-2)", {FsdpSharding::GradOp}}});
  return registry;
}

const ChoiceRegistry<ZeroImpl>& zero_impls() {
  static const ChoiceRegistry<ZeroImpl> registry("ZeRO implementation", {
    {"megatron", "Megatron-LM's optimizer (with ZeRO-1, its distributed optimizer)",
     "megatron/core/optimizer/distrib_optimizer.py: the fp32 gradient shards are views of the reduce buffers", {ZeroImpl::Megatron}},
    {"deepspeed", "DeepSpeed's ZeRO stage 1/2 optimizer",
     "deepspeed/runtime/zero/stage_1_and_2.py step(): this rank's 16-bit gradient partition is cast into a new fp32 tensor the "
     "Adam step reads, then freed",
     {ZeroImpl::DeepSpeed, static_cast<std::uint8_t>(stage(1) | stage(2))}},
    {"deepspeed-bf16", "DeepSpeed's BF16 optimizer (ZeRO stage 1)",
     "deepspeed/runtime/bf16_optimizer.py: gradients accumulated in fp32 buffers", {ZeroImpl::DeepSpeedBf16, stage(1)}},
    {"deepspeed-0.3", "DeepSpeed 0.3's ZeRO-3 parameter partitioning",
     "DeepSpeed 0.3 runtime/zero/partition_parameters.py: every parameter tensor all-gathered on its own after "
     "torch.cuda.synchronize(), list-form all_gather and reduce_scatter (sim/parallel/engines/deepspeed_zero3_v03.cpp)",
     {ZeroImpl::DeepSpeedV03, stage(3)}}});
  return registry;
}

const ChoiceRegistry<BackwardPrefetch>& backward_prefetches() {
  static const ChoiceRegistry<BackwardPrefetch> registry("FSDP backward prefetch", {
    {"pre", "the next unit's all-gather is issued before the current unit's gradient computation, overlapping it (FSDP2 always)",
     "torch.distributed.fsdp BackwardPrefetch.BACKWARD_PRE (PyTorch's default)", {BackwardPrefetch::Pre}},
    {"post", "the next unit's all-gather is issued after the current unit's gradient computation (FSDP1 only)",
     "torch.distributed.fsdp BackwardPrefetch.BACKWARD_POST (Composer's default)", {BackwardPrefetch::Post}}});
  return registry;
}

const ChoiceRegistry<Recompute>& recompute_modes() {
  static const ChoiceRegistry<Recompute> registry("recompute mode", {
    {"none", "every activation the backward reads is kept", "Korthikanti et al. 2022, table 2", {Recompute::None}},
    {"selective", "the modules of parallel.recompute_modules (default: the attention core) replayed in backward",
     "Korthikanti et al. 2022, section 5; Megatron-Core --recompute-granularity selective --recompute-modules", {Recompute::Selective}},
    {"full", "each recomputed layer keeps only its input and replays its forward before its backward",
     "Megatron-LM --recompute-granularity full (--recompute-method block)", {Recompute::Full}},
    {"selective_op", "matmul and attention outputs saved except every second matmul of a layer; everything else replayed",
     "torchtitan activation_checkpoint.mode selective, selective_ac_option \"op\"", {Recompute::SelectiveOp}}});
  return registry;
}

// The dispatchers differ in what crosses the wires: a copy per routed expert (NCCL's all-to-all),
// or one copy per destination rank and one per destination node (DeepEP's and HybridEP's kernels).
const ChoiceRegistry<MoeDispatcher>& moe_dispatchers() {
  static const ChoiceRegistry<MoeDispatcher> registry("MoE token dispatcher", {
    {"alltoall", "NCCL all-to-alls carrying one copy of each token per routed expert",
     "Megatron-Core moe_token_dispatcher_type \"alltoall\" (megatron/core/transformer/moe/token_dispatcher.py, "
     "MoEAlltoAllTokenDispatcher: permute by expert, then all_to_all)",
     {MoeDispatcher::AllToAll}},
    {"deepep", "DeepEP's normal kernels: a token sent once per destination rank over NVLink and once per destination node over "
     "RDMA to the same-index GPU, which forwards it over NVLink (the RDMA and NVLink legs at the profile's "
     "network.moe_dispatch_rdma and moe_dispatch_nvlink rates where it has them)",
     "github.com/deepseek-ai/DeepEP README (normal kernels, NVLink-to-RDMA forwarding); Megatron-Core moe_token_dispatcher_type "
     "\"flex\" with moe_flex_dispatcher_backend \"deepep\" (megatron/core/transformer/moe/fused_a2a.py)",
     {MoeDispatcher::DeepEp}},
    {"hybridep", "HybridEP's kernels: a token written once per destination rank in the NVLink domain, sent once per other "
     "domain over RDMA to the peer GPU of the same local rank, which forwards it over NVLink (the RDMA and NVLink legs at "
     "the profile's network.moe_dispatch_rdma and moe_dispatch_nvlink rates where it has them)",
     "github.com/deepseek-ai/DeepEP branch hybrid-ep, Hybrid-EP_Implementation.md (sections 4.2 and 8: RDMA buffers of "
     "tokens x (nodes - 1), peer-GPU RDMA then NVLink); Megatron-Core \"flex\" dispatcher, backend \"hybridep\"",
     {MoeDispatcher::HybridEp}}});
  return registry;
}

const ChoiceRegistry<LaunchImpl>& launch_impls() {
  static const ChoiceRegistry<LaunchImpl> registry("kernel launch implementation", {
    {"megatron-te",
     "Megatron-Core with Transformer Engine's modules: one cuBLAS GEMM per local expert, per-tensor FP8 quantize kernels, "
     "TE's fused router and permutation kernels",
     "Megatron-LM megatron/core/transformer/moe (TEGroupedMLP, moe_router_fusion, moe_permute_fusion); TransformerEngine "
     "pytorch/csrc/quantizer.cpp, cpp_extensions/gemm.py general_grouped_gemm, triton/permutation.py",
     {LaunchImpl::MegatronTe}},
    {"eager", "eager PyTorch modules: torch.topk router, argsort and index kernels to permute, torch._grouped_mm experts",
     "tools/scripts/torch_moe_bench.py (our H200 MoE steps); the kernels counted in "
     "calibrate/measurements/h200-sxm-141g-moe-2026-12-04/run1/train.json",
     {LaunchImpl::Eager}}});
  return registry;
}

const ChoiceRegistry<CudaGraphImpl>& cuda_graph_impls() {
  static const ChoiceRegistry<CudaGraphImpl> registry("CUDA graph implementation", {
    {"transformer_engine", "the parts of each layer in cuda_graph_scope run as CUDA graphs, one launch each (none: no graphs)",
     "Megatron-Core cuda_graph_impl \"transformer_engine\" (or \"none\" with an empty scope)", {CudaGraphImpl::TransformerEngine}},
    {"full_iteration", "the whole forward-backward step is captured as one CUDA graph: no per-kernel host cost",
     "Megatron-Core cuda_graph_impl \"full_iteration\" (Megatron-Bridge performance presets, e.g. "
     "QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_MX_V1)",
     {CudaGraphImpl::FullIteration}}});
  return registry;
}

const ChoiceRegistry<CudaGraphScope>& cuda_graph_scopes() {
  static const ChoiceRegistry<CudaGraphScope> registry("CUDA graph scope", {
    {"attn", "the attention submodule of each layer (its norm, projections, attention and output projection)",
     "Megatron-Core CudaGraphScope.attn (megatron/core/transformer/enums.py; TransformerLayer with cuda_graph_impl "
     "\"transformer_engine\")", {CudaGraphScope::Attn}},
    {"moe_router", "an MoE layer's router (its GEMM, top-k and aux-loss kernels)",
     "Megatron-Core CudaGraphScope.moe_router", {CudaGraphScope::MoeRouter}},
    {"moe_preprocess", "the token dispatcher's routing-map preprocessing before the all-to-all (needs moe_router; no kernel priced apart)",
     "Megatron-Core CudaGraphScope.moe_preprocess", {CudaGraphScope::MoePreprocess}},
    {"mamba", "a hybrid model's Mamba-2 layer (its in_proj, conv1d, SSD scan, gated norm and out_proj)",
     "Megatron-Core CudaGraphModule.mamba (megatron/core/transformer/cuda_graphs.py: a MambaLayer is graphed when the scope "
     "names mamba); Megatron-Bridge's Nemotron 3 Nano presets (set_cuda_graph_modules [\"attn\", \"mamba\", ...])",
     {CudaGraphScope::Mamba}}});
  return registry;
}

std::string name_of(IntraNode v) { return name_of(intra_node_kinds(), v); }
std::string name_of(InterNode v) { return name_of(inter_node_kinds(), v); }
std::string name_of(NetworkKind v) { return name_of(network_kinds(), v); }
std::string name_of(Dtype v) { return name_of(dtypes(), v); }
std::string name_of(Optimizer v) { return name_of(optimizers(), v); }
std::string name_of(NormImpl v) { return name_of(norm_impls(), v); }
std::string name_of(RopeImpl v) { return name_of(rope_impls(), v); }
std::string name_of(DropoutAddImpl v) { return name_of(dropout_add_impls(), v); }
std::string name_of(OptimizerImpl v) { return name_of(optimizer_impls(), v); }
std::string name_of(Fp8Recipe v) { return name_of(fp8_recipes(), v); }
std::string name_of(CpImpl v) { return name_of(cp_impls(), v); }
std::string name_of(FsdpSharding v) { return name_of(fsdp_shardings(), v); }
std::string name_of(ZeroImpl v) { return name_of(zero_impls(), v); }
std::string name_of(BackwardPrefetch v) { return name_of(backward_prefetches(), v); }
std::string name_of(Recompute v) { return name_of(recompute_modes(), v); }
std::string name_of(MoeDispatcher v) { return name_of(moe_dispatchers(), v); }
std::string name_of(LaunchImpl v) { return name_of(launch_impls(), v); }
std::string name_of(CudaGraphImpl v) { return name_of(cuda_graph_impls(), v); }
std::string name_of(CudaGraphScope v) { return name_of(cuda_graph_scopes(), v); }

namespace {
NamedChoice::Name tuner_choice() { return {"auto", "NCCL's tuner chooses per collective and size", "NCCL src/graph/tuning.cc"}; }
}  // namespace

NamedChoice nccl_algorithm_choice() {
  NamedChoice c{"nccl-algorithms", "/network/algorithm", {tuner_choice()}};
  const Registry<NcclAlgoDef>& algos = nccl_algorithms();
  for (const auto& e : algos.entries())
    if (e.factory.forcible) c.names.push_back({e.name, e.description, e.reference});
  return c;
}

NamedChoice nccl_protocol_choice() {
  NamedChoice c = describe(nccl_protocols(), "nccl-protocols", "/network/protocol");
  c.names.insert(c.names.begin(), tuner_choice());
  return c;
}

std::vector<NamedChoice> scenario_choices() {
  return {describe(intra_node_kinds(), "intra-node-kinds", "/cluster/intra_node/kind"),
          describe(inter_node_kinds(), "inter-node-kinds", "/cluster/inter_node/kind"),
          describe(network_kinds(), "network-models", "/network/model"),
          describe(activations(), "activations", "/model/activation"),
          describe(position_embeddings(), "position-embeddings", "/model/position_embedding"),
          describe(norm_kinds(), "norms", "/model/norm"),
          describe(dtypes(), "dtypes", "/training/dtype"),
          describe(attention_kernel_kinds(), "attention-kernels", "/training/attention_kernel"),
          describe(loss_impls(), "loss-impls", "/training/loss_impl"),
          describe(optimizers(), "optimizers", "/training/optimizer"),
          describe(norm_impls(), "norm-impls", "/training/norm_impl"),
          describe(rope_impls(), "rope-impls", "/training/rope_impl"),
          describe(dropout_add_impls(), "dropout-add-impls", "/training/dropout_add_impl"),
          describe(optimizer_impls(), "optimizer-impls", "/training/optimizer_impl"),
          describe(fp8_recipes(), "fp8-recipes", "/training/fp8_recipe"),
          describe(launch_impls(), "launch-impls", "/training/launch_impl"),
          describe(cuda_graph_impls(), "cuda-graph-impls", "/training/cuda_graph_impl"),
          describe_many(cuda_graph_scopes(), "cuda-graph-scopes", "/training/cuda_graph_scope"),
          describe(cp_impls(), "cp-impls", "/parallel/cp_impl"),
          describe(fsdp_shardings(), "fsdp-shardings", "/parallel/fsdp/sharding"),
          describe(fsdp_dtypes(), "fsdp-dtypes", "/parallel/fsdp/param_dtype"),
          describe(fsdp_dtypes(), "fsdp-dtypes", "/parallel/fsdp/reduce_dtype"),
          describe(zero_impls(), "zero-impls", "/parallel/zero_impl"),
          describe(backward_prefetches(), "backward-prefetch", "/parallel/fsdp/backward_prefetch"),
          describe(recompute_modes(), "recompute", "/parallel/recompute"),
          describe(moe_dispatchers(), "moe-dispatchers", "/parallel/moe_dispatcher"), nccl_algorithm_choice(), nccl_protocol_choice()};
}

}  // namespace parasim
