// Scenario: model, cluster, training, plan, calibration. Loaded and validated once (strict,
// cross-field), immutable after. Contract v1: every key is declared in scenario_keys.cpp and
// documented in docs/scenario-reference.md.
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/cost/cost_model.h"
#include "calibrate/profile/profile.h"
#include "models/model.h"
#include "models/recompute.h"
#include "sim/config/json_reader.h"
#include "sim/parallel/moe_routing.h"
#include "sim/scenario/choices.h"
#include "sim/scenario/stack.h"

namespace parasim {

// A dimension of the rank grid, as parallel.order names it ("tp", "cp", "dp", "pp").
enum class ParallelDim : std::uint8_t { Tp, Cp, Dp, Pp };
inline constexpr std::array<ParallelDim, 4> kMegatronOrder = {ParallelDim::Tp, ParallelDim::Cp, ParallelDim::Dp, ParallelDim::Pp};
const char* name_of(ParallelDim d);

// inter_node.kind = "custom": fabric switches and links listed in the scenario. Link endpoints are
// switch names or "node<i>.nic<j>"; capacities in GB/s per direction (line rate; the profile's
// inter_bus_efficiency applies as on the built-in fabrics).
struct CustomLink {
  std::string a, b;
  double gbps = 0;
  double latency_us = 0;
  std::string where;  // JSON pointer of the link, for errors
};
struct CustomFabric {
  std::vector<std::string> switches;
  std::vector<CustomLink> links;
  std::string file, pointer;  // where it was declared
};

struct ClusterSpec {
  std::string gpu;  // profile name or path
  std::int64_t nodes = 1;
  std::int64_t gpus_per_node = 8;
  IntraNode intra_kind = IntraNode::NvSwitch;
  double intra_gbps = 0;                // per direction per GPU; 0 = the profile's
  InterNode inter_kind = InterNode::FatTree;
  std::int64_t nics_per_node = 0;       // 0 = the profile's reference node
  double nic_gbps = 0;                  // per NIC per direction, GB/s; 0 = the profile's reference node
  double oversubscription = 1.0;
  std::int64_t leaf_ports = 32;         // NIC-facing ports per leaf / rail switch (a 64-port switch, half down)
  std::int64_t spines = 8;              // spine switches every leaf / rail switch connects to
  CustomFabric custom;                  // inter_kind == InterNode::Custom
  // network.algorithm / network.protocol: force NCCL's choice (NCCL_ALGO / NCCL_PROTO); none ("auto") = its tuner
  TunerOverride nccl;
  std::int64_t gpus() const { return nodes * gpus_per_node; }
};

// Microbatches per pipeline step the simulator replays at most (each op by op).
inline constexpr std::int64_t kMaxMicrobatches = 65536;

struct TrainingSpec {
  std::int64_t global_batch = 0;
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 2048;
  Dtype dtype = Dtype::Bf16;
  Optimizer optimizer = Optimizer::Adam;
  bool flash_attention = true;
  AttentionKernel attention_kernel = AttentionKernel::Flash;  // fused kernel implementation (attention_kernel_kinds())
  bool fp32_grad_accumulation = false;  // Megatron main_grads in fp32 (4 bytes per parameter)
  // Whether each microbatch's weight gradient lands in the gradient buffer inside its GEMM
  // (Megatron-LM's --gradient-accumulation-fusion, the default since 2022; Transformer Engine's
  // fuse_wgrad_accumulation) or through a separate add kernel per parameter tensor (PyTorch
  // autograd's AccumulateGrad, Megatron's LocalDDP main_grad hook before the fusion, DeepSpeed's
  // gradient hooks): false adds, per microbatch and layer, a pass reading the new 16-bit gradient
  // and reading and writing the buffer. Sharded gradients (FSDP, ZeRO-3) accumulate 1/N of that;
  // not modelled.
  bool grad_accumulation_fusion = true;
  // Megatron-Core's use_transformer_engine_op_fuser: TEGroupedMLP runs as Transformer Engine's
  // fused grouped MLP (core_v0.18+ with TE 2.14+; experts.py _fused_forward), which adds the
  // experts' fc2 bias inside its kernels instead of TEGroupedMLP._apply_bias's Python loop over the
  // local experts (models/layer_graph.cpp expert_bias_ops). Its fused kernels are priced as the
  // grouped GEMMs and activation they replace.
  bool te_op_fuser = false;
  // How the framework runs its norms and RoPE: "fused" (one kernel per pass: Transformer Engine,
  // Liger, torch.compile), "two_pass" (norms only: one forward kernel, a backward of two kernels, the
  // input gradient and a weight-gradient reduction reading x and dy again: PyTorch's native
  // LayerNorm / RMSNorm, Apex's FusedLayerNorm) or "eager" (the Llama reference code in eager
  // PyTorch: RMSNorm as upcast / pow / mean / scale / downcast / weight kernels in fp32, RoPE as an
  // fp32 complex multiply).
  NormImpl norm_impl = NormImpl::Fused;
  RopeImpl rope_impl = RopeImpl::Fused;
  // How the hidden dropout on a block's output meets the residual add (model.dropout only): "fused"
  // (one kernel reads the branch and the residual and writes the sum and the keep mask: Megatron's
  // bias_dropout_add_fused_train, on by default) or "eager" (nn.Dropout's kernel writes the dropped
  // branch and the mask, then a separate add: x + self.resid_dropout(b) in eager PyTorch models).
  DropoutAddImpl dropout_add_impl = DropoutAddImpl::Fused;
  // How the framework computes the cross-entropy loss over the logits (models/layer_graph.cpp has
  // the kernels and their bytes): "megatron" (Megatron-LM's vocab_parallel_cross_entropy on
  // output.float(): max, subtract, exp, sum and divide passes in fp32; the Megatron-LM default),
  // "eager" (PyTorch F.cross_entropy on fp32 logits: upcast, log_softmax, nll_loss; torchtitan,
  // Hugging Face), "eager16" (the same on the 16-bit logits, no upcast: NeMo AutoModel's
  // MaskedCrossEntropy with fp32_upcast false) or "fused" (one kernel over the 16-bit logits that
  // also writes their gradient: Liger-Kernel, Transformer Engine, torch.compile) or "xentropy" (FlashAttention's
  // CrossEntropyLoss on the 16-bit logits, Apex's xentropy kernels: llm-foundry's default).
  LossImpl loss_impl = LossImpl::Megatron;
  // The optimizer step's kernels: "fused" (one multi-tensor kernel: apex/Megatron FusedAdam,
  // torch fused=True) or "unfused" (one elementwise kernel per term of the update: PyTorch's
  // for-loop and foreach AdamW, Composer's DecoupledAdamW). See optimizer_step_bytes.
  OptimizerImpl optimizer_impl = OptimizerImpl::Fused;
  // Training metrics the loop evaluates on each microbatch's logits after its backward, without
  // gradients (Composer's trainer calls _eval_train_metrics after every microbatch's backward;
  // llm-foundry's ComposerMPTCausalLM passes LanguageCrossEntropy and LanguagePerplexity, and the
  // latter inherits the former's update: a second cross entropy over the same logits). Each one is
  // an eager F.cross_entropy forward under autocast over the last stage's logits (upcast,
  // log_softmax, nll_loss; models/layer_graph.cpp add_train_metrics), and the 16-bit logits stay
  // alive until it has run. Names: kTrainMetrics in models/layer_graph.h. Empty (the default): none.
  std::vector<std::string> train_metrics;
  // Multi-token prediction (DeepSeek-V3's training objective; Megatron-Core's mtp_num_layers): on
  // the last pipeline stage each MTP module embeds the tokens shifted by one more position (the
  // model's embedding, shared), normalises them and the previous hidden states, projects their
  // concatenation (2 hidden -> hidden), runs one more transformer layer of the model's last layer's
  // kind and predicts through the shared output layer with its own loss.
  std::int64_t mtp_layers = 0;
  // The host thread that launches the kernels (sim/host_launch.h): its time per framework call in
  // microseconds (0: not modelled, the GPU never waits on the host), per further kernel a call
  // launches from its own loop (host_loop_launch_us; 0: as a call), per bare PyTorch op a module
  // runs in its own Python loop (host_op_us; 0: as a call), and the parts of a layer the
  // framework runs as CUDA graphs (Megatron-Core's cuda_graph_scope with cuda_graph_impl
  // "transformer_engine": "attn", "moe_router", "moe_preprocess"), each issued by one call.
  double host_launch_us = 0;
  double host_loop_launch_us = 0;
  double host_op_us = 0;
  std::vector<CudaGraphScope> cuda_graph_scope;
  // Megatron-Core's cuda_graph_impl: "full_iteration" captures the whole forward-backward step as
  // one CUDA graph, so no kernel of it costs the host a launch (cuda_graph_scope must be empty).
  CudaGraphImpl cuda_graph_impl = CudaGraphImpl::TransformerEngine;
  // Whose modules issue the kernels: how many real launches each priced kernel stands for
  // (models/layer_graph.h Kernel::launches), and, for eager PyTorch's MoE layer, the host's wait
  // for the token counts before the experts.
  LaunchImpl launch_impl = LaunchImpl::MegatronTe;
  // Mixture-of-experts routing (sim/parallel/moe_routing.h): the busiest expert's load when
  // measured (moe_expert_load; absent: balanced by force, as the benchmarks run it), the
  // experts' capacity (moe_capacity_factor; absent: dropless) and padding to it (moe_pad_to_capacity).
  MoeRouting moe_routing;
  // Megatron-LM pads the vocabulary of its embedding and output layers to a multiple of this
  // times tp (--make-vocab-size-divisible-by, default 128 there; _vocab_size_with_padding), so
  // each tensor-parallel shard of the logits has an aligned width. 1 (the default here) keeps
  // model.vocab as given (Hugging Face, torchtitan, llm-foundry). The padded rows are real
  // parameters and real GEMM columns; Scenario::model.vocab holds the padded size once loaded.
  std::int64_t make_vocab_size_divisible_by = 1;
  // How an fp8 run scales its FP8 tensors (Transformer Engine recipes), which sets the traffic of
  // the casts in front of each FP8 GEMM (models/layer_graph.cpp, fp8_cast_bytes):
  //   "delayed": DelayedScaling, scales from an amax history; one cast(+transpose) pass per tensor.
  //   "current": per-tensor current scaling (Float8CurrentScaling, Megatron-Bridge's "FP8-CS"):
  //              an amax pass over the tensor, then the cast.
  //   "mxfp8":   MXFP8 block scaling (one E8M0 scale per 32 elements, computed inside the cast);
  //              the GEMMs run Blackwell's block-scaled FP8 MMA, priced from the profile's mxfp8
  //              figures (compute.peak_tflops.mxfp8, compute.gemm_max_efficiency.mxfp8).
  //   "nvfp4":   Transformer Engine's NVFP4BlockScaling (Megatron's --fp4-recipe nvfp4): the linear
  //              layers' forward, data-gradient and weight-gradient GEMMs take FP4 (E2M1) operands
  //              with one E4M3 scale per 16 elements and a per-tensor FP32 scale, on Blackwell's
  //              block-scaled FP4 MMA (compute.peak_tflops.nvfp4, compute.gemm_max_efficiency.nvfp4).
  //              TE passes this recipe through the same fp8_autocast as the FP8 ones, hence dtype
  //              "fp8" names the low-precision GEMM path and this field its format.
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;
  // The profile key whose figures price the GEMMs: mxfp8 / nvfp4 for the block-scaled recipes,
  // else dtype.
  std::string gemm_dtype() const {
    return dtype == Dtype::Fp8 && (fp8_recipe == Fp8Recipe::Mxfp8 || fp8_recipe == Fp8Recipe::Nvfp4) ? name_of(fp8_recipe) : name_of(dtype);
  }
  // The kernel whose profile figures price attention (unfused attention is priced as GEMMs and
  // reads none; the default kernel stands in for it).
  std::string priced_attention_kernel() const { return flash_attention ? name_of(attention_kernel) : kAttentionDefault; }
};

struct FsdpSpec {
  FsdpSharding sharding = FsdpSharding::Full;
  std::int64_t shard_group = 0;   // hybrid: ranks per shard group (0 = all dp)
  std::int64_t prefetch = 1;
  // When the backward issues the next unit's all-gather, FSDP1's BackwardPrefetch: "pre"
  // (BACKWARD_PRE: before the current unit's gradient computation, overlapping it; PyTorch's
  // default, and FSDP2's only behaviour) or "post" (BACKWARD_POST: after it, so the gather overlaps
  // only the current unit's reduce-scatter and the next unit's backward waits for it; Composer's
  // default). Forward gathers follow `prefetch` either way.
  BackwardPrefetch backward_prefetch = BackwardPrefetch::Pre;
  bool offload = false;
  // FSDP MixedPrecision: the dtype parameters are all-gathered in and the dtype gradients are
  // reduce-scattered in; none = the training dtype (bf16 for fp8 training). torchtitan reduces in
  // fp32 (mixed_precision_reduce offers only float32).
  std::optional<Dtype> param_dtype;
  std::optional<Dtype> reduce_dtype;
  // 1: FSDP1 (FullyShardedDataParallel, flat parameters: gathers land in the flat buffer the
  // parameters view, gradients reduce-scatter from the flat gradient). 2: FSDP2 (fully_shard,
  // per-parameter DTensors): after each all-gather a copy-out on the compute stream splits the
  // gathered buffer into the unsharded parameters (read + write the unit), and before each
  // reduce-scatter a copy-in concatenates the unsharded gradients into the reduce-scatter input
  // in the reduce dtype (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py).
  int version = 2;
};


struct ParallelSpec {
  std::int64_t dp = 1, tp = 1, pp = 1, vpp = 1, cp = 1;
  // How context parallelism exchanges K and V: "ring" (Megatron / Transformer Engine: cp - 1
  // point-to-point block exchanges overlapped with the attention kernel) or "allgather" (the
  // Llama 3 paper's section 3.3.2 and PyTorch's context_parallel with the allgather rotate method:
  // K and V are all-gathered before attention, on the critical path; their gradients are
  // reduce-scattered after the attention backward, and the gathered K and V stay saved for it).
  CpImpl cp_impl = CpImpl::Ring;
  bool cp_allgather() const { return cp > 1 && cp_impl == CpImpl::AllGather; }
  // Mixture of experts (Megatron-Core's expert parallelism): the experts of every MoE layer are
  // split over `ep` ranks, each expert's weights over `etp` ranks (expert tensor parallel; 1 or
  // tp, Megatron's default being tp). The ep * etp ranks of an expert group are consecutive within
  // the tp * cp * dp ranks of a pipeline stage (Megatron's expert rank order etp-ep-edp-pp), and
  // the remaining tp*cp*dp / (ep*etp) form the expert-data-parallel group over which expert
  // gradients are reduced and their optimizer states sharded.
  std::int64_t ep = 1;
  std::int64_t etp = 0;  // 0 = tp
  std::int64_t expert_tp() const { return etp > 0 ? etp : tp; }
  std::int64_t expert_dp() const { return tp * cp * dp / (ep * expert_tp()); }
  Schedule schedule = Schedule::Ddp;  // schedule_registry() in sim/parallel/schedule.h
  bool sequence_parallel = false;
  // none | selective (Megatron: the attention core) | full | selective_op (torchtitan's op-level
  // selective AC: matmul and attention outputs saved except every second matmul of a layer;
  // everything else replayed in backward): recompute_modes() in sim/scenario/choices.h.
  Recompute recompute = Recompute::None;
  // With recompute "selective": the modules Megatron-Core recomputes (--recompute-modules), each
  // dropping its saved activations and replaying its forward kernels in backward: core_attn (the
  // default: the attention core), layernorm (the two block norms' outputs), mla_up_proj (MLA's query
  // and key-value up projections with their RoPE: Q, K, V), moe_act (the experts' activation),
  // mlp (a dense layer's whole MLP), moe (an MoE layer's whole MLP block: router, dispatch,
  // experts, combine), shared_experts.
  // Parsed once at load from the names of models/recompute.h's table.
  RecomputeModules recompute_modules = {RecomputeModule::CoreAttn};
  // With core_attn recomputed: whether a fused attention kernel is replayed too (a stack field).
  // Megatron-Core checkpoints the core attention whatever runs it (transformer/attention.py
  // checkpoint_core_attention wraps _run_core_attention, TE's fused or flash kernel included):
  // true. Legacy Megatron-LM checkpointed only the unfused core (legacy/model/transformer.py
  // ParallelAttention: `if not self.use_flash_attn`): false. Either way a fused kernel stores no
  // score matrix, so the memory is the same as without the module.
  bool recompute_fused_attention = true;
  // With full recompute: how many layers of each model chunk are recomputed (Megatron's
  // --recompute-method block --recompute-num-layers N: the first N layers of the chunk; the others
  // keep their activations). -1: every layer.
  std::int64_t recompute_num_layers = -1;
  // CPU activation offloading (Megatron-Core's cpu_offloading_num_layers through Transformer
  // Engine's CPU offload context): the saved activations of the model's first N layers go to host
  // memory during forward on a copy stream (over memory.pcie_gbps: PCIe, or NVLink-C2C on Grace)
  // and come back during backward. TE spreads the N layers over the model's L: the compute stream
  // waits for layer g's copy, and frees it, at the end of layer (g + 1) x (L / N) - 1, and starts
  // reloading layer g when the backward reaches that layer again. Megatron-Core allows it with
  // pp = 1 and no recompute only (transformer_config.py). 0: off.
  std::int64_t activation_offload_layers = 0;
  std::int64_t zero_stage = 0;
  // Whose ZeRO-1/2 optimizer: "megatron" (distributed optimizer: fp32 gradient shards are views of
  // the reduce buffers) or "deepspeed" (stage_1_and_2.py: at the step, this rank's 16-bit gradient
  // partition is cast into a new fp32 tensor the Adam step reads, then freed), or, with ZeRO-3,
  // "deepspeed-0.3" (DeepSpeed 0.3's first ZeRO-3, partition_parameters.py: every parameter tensor
  // all-gathered on its own after torch.cuda.synchronize(), with the list form of all_gather, whose
  // output copies ProcessGroupNCCL makes one per rank; every gradient tensor reduce-scattered on its
  // own with the list form of reduce_scatter, whose inputs it copies into one buffer, one per rank).
  ZeroImpl zero_impl = ZeroImpl::Megatron;  // zero_impls() in sim/scenario/choices.h
  std::optional<FsdpSpec> fsdp;
  // Per pipeline stage (pp entries, each divisible by vpp) or per virtual stage (pp*vpp entries in
  // model order: chunk c of stage s is virtual stage c*pp + s); empty = even split.
  std::vector<std::int64_t> stage_layers;
  double bucket_mb = 25;                   // DDP gradient bucket size, MB (10^6 bytes)
  // Gradient buckets reduced as the backward produces them; default false for pipeline_impl
  // "deepspeed" with pp > 1 (its PipelineEngine reduces after the last backward).
  bool overlap_grad_reduce = true;
  // Rank order, innermost (consecutive ranks) first: Megatron's default keeps TP inside a node.
  std::array<ParallelDim, 4> order = kMegatronOrder;
  // Megatron/Transformer Engine comm-GEMM overlap: TP all-gather / reduce-scatter (or all-reduce)
  // hidden behind the block's GEMMs instead of sitting on the critical path.
  bool tp_comm_overlap = false;
  // Megatron-Core's MoE all-to-all overlap (moe_a2a_overlap / overlap_moe_expert_parallel_comm):
  // with interleaved pipelining, one microbatch's dispatch and combine all-to-alls run while
  // another microbatch's layer computes (1F1B pairs a forward with a backward), instead of
  // blocking the layer.
  bool ep_comm_overlap = false;
  // How tokens reach their experts' ranks (`parasim list moe-dispatchers`): NCCL all-to-alls of a
  // copy per routed expert, or DeepEP's / HybridEP's kernels sending a copy per destination rank
  // and per destination node (sim/parallel/moe_dispatch.h).
  MoeDispatcher moe_dispatcher = MoeDispatcher::AllToAll;
  // Pipeline sends block the sending stage: Megatron's batched p2p (batch_p2p_comm with
  // batch_p2p_sync, its defaults unless overlap_p2p_comm) waits on every send and receive and
  // then calls torch.cuda.synchronize(), so a stage's next forward or backward starts only after
  // its last send has completed. false: sends run beside the next computation (overlap_p2p_comm,
  // torch.distributed.pipelining).
  bool p2p_sync = true;
  // Whose pipeline engine: "megatron" frees each stage output's data once it is sent (Megatron's
  // deallocate_output_tensor; autograd keeps only its graph); "deepspeed" (DeepSpeed's
  // PipelineEngine) keeps the output in its pipe buffers until that microbatch's backward.
  PipelineImpl pipeline_impl = PipelineImpl::Megatron;  // pipeline_impls() in sim/scenario/choices.h
};

struct Scenario {
  std::string name;
  std::string file;
  std::string model_ref;  // zoo name, or "inline"
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelSpec parallel;
  Profile profile;
  SlowestGpu slowest_gpu;  // the job's slowest GPU under the profile's speed spread, for the cost model
  // E[max of ep standard normal draws], for the busiest expert-parallel rank (sim/parallel/moe_routing.h);
  // 0 without expert parallelism.
  double moe_rank_draw = 0;
  NetworkKind network = NetworkKind::Analytical;
  std::string trace_path;               // outputs.trace: write a Chrome trace here (relative to the scenario file)
  // The framework stack the scenario names ("" = none: parasim's defaults), and where each
  // stack-dependent field's value came from (sim/scenario/stack.h).
  std::string stack;
  std::vector<FieldOrigin> origins;

  // The microbatches of the step a lowered program belongs to: the steady-state fold and the
  // planner's bound lower fewer (sim/steady_state.h set_microbatches) and keep the step's count
  // here for what is a per-step quantity (ep_comm_overlap's unpaired passes); 0: the scenario's own.
  std::int64_t step_microbatches_kept = 0;

  std::int64_t microbatches() const { return training.global_batch / (training.micro_batch * parallel.dp); }
  std::int64_t step_microbatches() const { return step_microbatches_kept > 0 ? step_microbatches_kept : microbatches(); }
  // Layers on each pipeline stage (length pp).
  std::vector<std::int64_t> layers_per_stage() const;  // summed over the stage's chunks
  std::int64_t layers_in_chunk(std::int64_t stage, std::int64_t chunk) const;
  // The model's index of the first layer of a stage's chunk: virtual stage chunk * pp + stage holds
  // the layers after those of the virtual stages before it (Megatron's interleaved assignment).
  std::int64_t first_layer_in_chunk(std::int64_t stage, std::int64_t chunk) const;
  double dtype_bytes() const;
  // FSDP mixed precision after defaults, and the bytes per element an FSDP / ZeRO-3 all-gather of
  // parameters and reduce-scatter of gradients move.
  Dtype fsdp_param_dtype() const;
  Dtype fsdp_reduce_dtype() const;
  double fsdp_param_bytes() const;
  double fsdp_reduce_bytes() const;
  // The scenario after defaults, as JSON (for --dump-resolved and for measured runs).
  Json resolved() const;
};

// Zoo models and GPU profiles already loaded, by the name a scenario gives them: a planner's many
// scenarios of one job read and parse those files once. Read only (threads share it).
struct LoadedData {
  std::map<std::string, ModelSpec> models;
  std::map<std::string, Profile> profiles;
  std::map<std::int64_t, double> expected_max_draws;  // expected_max_standard_normal by count (GPUs, expert-parallel ranks)
};

// Parses and validates; every error names the file and JSON pointer. A model or profile named in
// `loaded` is taken from there instead of data_dir.
Scenario parse_scenario(const Json& j, const std::string& file, const std::string& data_dir, const LoadedData* loaded = nullptr);
Scenario load_scenario(const std::string& path, const std::string& data_dir);

}  // namespace parasim
