// The names a scenario's keys take: the cluster's fabrics and network model, the training's
// precision and the frameworks' kernels, the parallel layout's choices between implementations (whose
// ZeRO optimizer, FSDP's sharding and backward prefetch, recompute, the MoE dispatcher): one
// registry per key, each name with a description and a reference, parsed once at load into the
// key's enum (sim/core/choice.h). The parser's choice list and its "did you mean", the JSON Schema's
// enums and the reference's types (`parasim docs`) and `parasim list` all read these registries
// (with the schedules', sim/parallel/schedule.h, the model's, models/model.h, the loss's,
// models/layer_graph.h, and the profile's attention kernels and NCCL names: named_choices in
// sim/simulation.h gathers them).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/choice.h"

namespace parasim {

// parallel.zero_impl: whose ZeRO optimizer runs.
enum class ZeroImpl : std::uint8_t { Megatron, DeepSpeed, DeepSpeedBf16, DeepSpeedV03 };
// parallel.pipeline_impl: whose pipeline engine runs (its names: sim/parallel/pipeline_engine.h).
enum class PipelineImpl : std::uint8_t { Megatron, DeepSpeed };
// parallel.fsdp.backward_prefetch: when FSDP1 issues the next unit's all-gather in backward.
enum class BackwardPrefetch : std::uint8_t { Pre, Post };
// parallel.recompute: which activations the backward recomputes.
enum class Recompute : std::uint8_t { None, Selective, Full, SelectiveOp };
// cluster.intra_node.kind, cluster.inter_node.kind and network.model.
enum class IntraNode : std::uint8_t { NvSwitch, Pcie };
enum class InterNode : std::uint8_t { FatTree, RailOptimized, Custom };
enum class NetworkKind : std::uint8_t { Analytical, Flow };
// training.dtype: the GEMMs' precision (activations and weights 16-bit but for fp32; fp8 casts the
// GEMM inputs). Its names are also the profiles' keys (compute.peak_tflops.<dtype>).
enum class Dtype : std::uint8_t { Bf16, Fp16, Fp8, Fp32 };
// training.optimizer
enum class Optimizer : std::uint8_t { Adam, Sgd };
// training.norm_impl, rope_impl, dropout_add_impl, optimizer_impl: the frameworks' kernels for
// norms, rotary embeddings, dropout-add and the optimizer step (sim/scenario/scenario.h).
enum class NormImpl : std::uint8_t { Fused, TwoPass, Eager };
enum class RopeImpl : std::uint8_t { Fused, Eager, Unfused };
enum class DropoutAddImpl : std::uint8_t { Fused, Eager };
enum class OptimizerImpl : std::uint8_t { Fused, Unfused };
// training.fp8_recipe: Transformer Engine's scaling recipe with dtype fp8. The block-scaled ones'
// names are also the profiles' keys of their GEMM rates.
enum class Fp8Recipe : std::uint8_t { Delayed, Current, Mxfp8, Nvfp4 };
// parallel.cp_impl: how context parallelism exchanges K and V.
enum class CpImpl : std::uint8_t { Ring, AllGather };
// parallel.fsdp.sharding: PyTorch FSDP's ShardingStrategy.
enum class FsdpSharding : std::uint8_t { Full, Hybrid, GradOp };
// parallel.schedule: how a step's forward and backward passes are ordered. Its registry, with each
// schedule's lowering and properties, is sim/parallel/schedule.h's (schedule_registry()).
enum class Schedule : std::uint8_t { DataParallel, Ddp, Naive, Gpipe, OneFOneB, Interleaved, ZbH1 };
// The schedule a scenario without parallel.schedule runs: DDP's with pp = 1, else 1F1B.
inline Schedule default_schedule(std::int64_t pp) { return pp > 1 ? Schedule::OneFOneB : Schedule::Ddp; }
std::string name_of(Schedule v);  // sim/parallel/registry.cpp
// parallel.moe_dispatcher: how a mixture-of-experts layer's tokens reach their experts' ranks
// (traffic per rank pair: sim/parallel/moe_dispatch.h).
enum class MoeDispatcher : std::uint8_t { AllToAll, DeepEp, HybridEp };
// training.launch_impl: which framework's modules issue the kernels, for the number of real kernel
// launches behind each priced kernel (models/layer_graph.h Kernel::launches; the host thread of
// sim/host_launch.h): Megatron-Core with Transformer Engine's modules, or eager PyTorch modules.
enum class LaunchImpl : std::uint8_t { MegatronTe, Eager };
// training.cuda_graph_impl: Megatron-Core's cuda_graph_impl. TransformerEngine: the parts of each
// layer named by cuda_graph_scope are CUDA graphs (none with an empty scope); FullIteration: the
// whole forward-backward step is one graph, so the host issues no kernel of it one by one.
enum class CudaGraphImpl : std::uint8_t { TransformerEngine, FullIteration };
// training.cuda_graph_scope: the parts of each layer Megatron-Core captures as CUDA graphs with
// cuda_graph_impl "transformer_engine" (the layer modules of each: sim/host_launch.cpp graphed_modules).
enum class CudaGraphScope : std::uint8_t { Attn, MoeRouter, MoePreprocess, Mamba };

const ChoiceRegistry<IntraNode>& intra_node_kinds();
const ChoiceRegistry<InterNode>& inter_node_kinds();
const ChoiceRegistry<NetworkKind>& network_kinds();
const ChoiceRegistry<Dtype>& dtypes();
const ChoiceRegistry<Dtype>& fsdp_dtypes();  // the dtypes FSDP's MixedPrecision gathers and reduces in (no fp8)
const ChoiceRegistry<Optimizer>& optimizers();
const ChoiceRegistry<NormImpl>& norm_impls();
const ChoiceRegistry<RopeImpl>& rope_impls();
const ChoiceRegistry<DropoutAddImpl>& dropout_add_impls();
const ChoiceRegistry<OptimizerImpl>& optimizer_impls();
const ChoiceRegistry<Fp8Recipe>& fp8_recipes();
const ChoiceRegistry<CpImpl>& cp_impls();
const ChoiceRegistry<FsdpSharding>& fsdp_shardings();
const ChoiceRegistry<ZeroImpl>& zero_impls();
const ChoiceRegistry<BackwardPrefetch>& backward_prefetches();
const ChoiceRegistry<Recompute>& recompute_modes();
const ChoiceRegistry<MoeDispatcher>& moe_dispatchers();
const ChoiceRegistry<LaunchImpl>& launch_impls();
const ChoiceRegistry<CudaGraphImpl>& cuda_graph_impls();
const ChoiceRegistry<CudaGraphScope>& cuda_graph_scopes();

std::string name_of(IntraNode v);
std::string name_of(InterNode v);
std::string name_of(NetworkKind v);
std::string name_of(Dtype v);
std::string name_of(Optimizer v);
std::string name_of(NormImpl v);
std::string name_of(RopeImpl v);
std::string name_of(DropoutAddImpl v);
std::string name_of(OptimizerImpl v);
std::string name_of(Fp8Recipe v);
std::string name_of(CpImpl v);
std::string name_of(FsdpSharding v);
std::string name_of(ZeroImpl v);
std::string name_of(BackwardPrefetch v);
std::string name_of(Recompute v);
std::string name_of(MoeDispatcher v);
std::string name_of(LaunchImpl v);
std::string name_of(CudaGraphImpl v);
std::string name_of(CudaGraphScope v);

// This file's registries and the NCCL ones (calibrate/profile/profile.h), described.
std::vector<NamedChoice> scenario_choices();
// What network.algorithm / network.protocol take: "auto" (NCCL's tuner) or a name a run may force.
NamedChoice nccl_algorithm_choice();
NamedChoice nccl_protocol_choice();

}  // namespace parasim
