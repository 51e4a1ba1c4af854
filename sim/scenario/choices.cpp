#include "sim/scenario/choices.h"

#include "calibrate/profile/profile.h"

namespace parasim {

namespace {
constexpr std::uint8_t stage(int s) { return static_cast<std::uint8_t>(1u << s); }
}  // namespace

// Each description is the phrase the parser's cross-field messages use ("\"deepspeed\" describes
// <description>, but zero_stage is 0").
ChoiceRegistry<ZeroImpl> zero_impls() {
  ChoiceRegistry<ZeroImpl> r("ZeRO implementation");
  r.add({"megatron", "Megatron-LM's optimizer (with ZeRO-1, its distributed optimizer)",
         "megatron/core/optimizer/distrib_optimizer.py: the fp32 gradient shards are views of the reduce buffers", {ZeroImpl::Megatron}});
  r.add({"deepspeed", "DeepSpeed's ZeRO stage 1/2 optimizer",
         "deepspeed/runtime/zero/stage_1_and_2.py step(): this rank's 16-bit gradient partition is cast into a new fp32 tensor the "
         "Adam step reads, then freed",
         {ZeroImpl::DeepSpeed, static_cast<std::uint8_t>(stage(1) | stage(2))}});
  r.add({"deepspeed-bf16", "DeepSpeed's BF16 optimizer (ZeRO stage 1)",
         "deepspeed/runtime/bf16_optimizer.py: gradients accumulated in fp32 buffers", {ZeroImpl::DeepSpeedBf16, stage(1)}});
  r.add({"deepspeed-0.3", "DeepSpeed 0.3's ZeRO-3 parameter partitioning",
         "DeepSpeed 0.3 runtime/zero/partition_parameters.py: every parameter tensor all-gathered on its own after "
         "torch.cuda.synchronize(), list-form all_gather and reduce_scatter (sim/parallel/engines/deepspeed_zero3_v03.cpp)",
         {ZeroImpl::DeepSpeedV03, stage(3)}});
  return r;
}

ChoiceRegistry<BackwardPrefetch> backward_prefetches() {
  ChoiceRegistry<BackwardPrefetch> r("FSDP backward prefetch");
  r.add({"pre", "the next unit's all-gather is issued before the current unit's gradient computation, overlapping it (FSDP2 always)",
         "torch.distributed.fsdp BackwardPrefetch.BACKWARD_PRE (PyTorch's default)", {BackwardPrefetch::Pre}});
  r.add({"post", "the next unit's all-gather is issued after the current unit's gradient computation (FSDP1 only)",
         "torch.distributed.fsdp BackwardPrefetch.BACKWARD_POST (Composer's default)", {BackwardPrefetch::Post}});
  return r;
}

ChoiceRegistry<Recompute> recompute_modes() {
  ChoiceRegistry<Recompute> r("recompute mode");
  r.add({"none", "every activation the backward reads is kept", "Korthikanti et al. 2022, table 2", {Recompute::None}});
  r.add({"selective", "the modules of parallel.recompute_modules (default: the attention core) replayed in backward",
         "Korthikanti et al. 2022, section 5; Megatron-Core --recompute-granularity selective --recompute-modules", {Recompute::Selective}});
  r.add({"full", "each recomputed layer keeps only its input and replays its forward before its backward",
         "Megatron-LM --recompute-granularity full (--recompute-method block)", {Recompute::Full}});
  r.add({"selective_op", "matmul and attention outputs saved except every second matmul of a layer; everything else replayed",
         "torchtitan activation_checkpoint.mode selective, selective_ac_option \"op\"", {Recompute::SelectiveOp}});
  return r;
}

// The dispatchers differ in what crosses the wires: a copy per routed expert (NCCL's all-to-all),
// or one copy per destination rank and one per destination node (DeepEP's and HybridEP's kernels).
ChoiceRegistry<MoeDispatcher> moe_dispatchers() {
  ChoiceRegistry<MoeDispatcher> r("MoE token dispatcher");
  r.add({"alltoall", "NCCL all-to-alls carrying one copy of each token per routed expert",
         "Megatron-Core moe_token_dispatcher_type \"alltoall\" (megatron/core/transformer/moe/token_dispatcher.py, "
         "MoEAlltoAllTokenDispatcher: permute by expert, then all_to_all)",
         {MoeDispatcher::AllToAll}});
  r.add({"deepep", "DeepEP's normal kernels: a token sent once per destination rank over NVLink and once per destination node over "
                   "RDMA to the same-index GPU, which forwards it over NVLink",
         "github.com/deepseek-ai/DeepEP README (normal kernels, NVLink-to-RDMA forwarding); Megatron-Core moe_token_dispatcher_type "
         "\"flex\" with moe_flex_dispatcher_backend \"deepep\" (megatron/core/transformer/moe/fused_a2a.py)",
         {MoeDispatcher::DeepEp}});
  r.add({"hybridep", "HybridEP's kernels: a token written once per destination rank in the NVLink domain, sent once per other "
                     "domain over RDMA to the peer GPU of the same local rank, which forwards it over NVLink",
         "github.com/deepseek-ai/DeepEP branch hybrid-ep, Hybrid-EP_Implementation.md (sections 4.2 and 8: RDMA buffers of "
         "tokens x (nodes - 1), peer-GPU RDMA then NVLink); Megatron-Core \"flex\" dispatcher, backend \"hybridep\"",
         {MoeDispatcher::HybridEp}});
  return r;
}

std::string name_of(ZeroImpl v) { return name_of(zero_impls(), v); }
std::string name_of(BackwardPrefetch v) { return name_of(backward_prefetches(), v); }
std::string name_of(Recompute v) { return name_of(recompute_modes(), v); }
std::string name_of(MoeDispatcher v) { return name_of(moe_dispatchers(), v); }

std::vector<std::string> NamedChoice::name_list() const {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(n.name);
  return out;
}

namespace {
NamedChoice::Name tuner_choice() { return {"auto", "NCCL's tuner chooses per collective and size", "NCCL src/graph/tuning.cc"}; }
}  // namespace

NamedChoice nccl_algorithm_choice() {
  NamedChoice c{"nccl-algorithms", "/network/algorithm", {tuner_choice()}};
  const Registry<NcclAlgoDef> algos = nccl_algorithms();
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
  return {describe(zero_impls(), "zero-impls", "/parallel/zero_impl"),
          describe(backward_prefetches(), "backward-prefetch", "/parallel/fsdp/backward_prefetch"),
          describe(recompute_modes(), "recompute", "/parallel/recompute"),
          describe(moe_dispatchers(), "moe-dispatchers", "/parallel/moe_dispatcher"), nccl_algorithm_choice(), nccl_protocol_choice()};
}

}  // namespace parasim
