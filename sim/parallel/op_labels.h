// The display labels of the ops other code finds by kind, each with its OpRole (sim/core/program.h):
// the lowering emits these constants, and the host launch model and the tests select ops by the
// role, never by the text.
#pragma once
#include "sim/core/program.h"

namespace parasim {

struct RoleLabel {
  const char* text;
  OpRole role;
};

namespace op_label {
inline constexpr RoleLabel kEmbeddingFwd{"embedding", OpRole::EmbeddingFwd};
inline constexpr RoleLabel kEmbeddingBwd{"embedding bwd", OpRole::EmbeddingBwd};
inline constexpr RoleLabel kAttnFwd{"attention fwd", OpRole::AttnFwd};
inline constexpr RoleLabel kAttnBwd{"attention bwd", OpRole::AttnBwd};
// A hybrid model's Mamba-2 layer: its mixer fills the attention blocks (LayerGraph), in their role.
inline constexpr RoleLabel kMambaFwd{"mamba fwd", OpRole::AttnFwd};
inline constexpr RoleLabel kMambaBwd{"mamba bwd", OpRole::AttnBwd};
inline constexpr RoleLabel kMlpFwd{"mlp fwd", OpRole::MlpFwd};
inline constexpr RoleLabel kMlpBwd{"mlp bwd", OpRole::MlpBwd};
inline constexpr RoleLabel kHeadFwd{"head fwd", OpRole::HeadFwd};
inline constexpr RoleLabel kHeadBwd{"head bwd", OpRole::HeadBwd};
inline constexpr RoleLabel kRecomputeFwd{"recompute fwd", OpRole::RecomputeFwd};
inline constexpr RoleLabel kRecomputeSelective{"recompute (selective)", OpRole::RecomputeSelective};
inline constexpr RoleLabel kMtpFwd{"mtp fwd", OpRole::MtpFwd};
inline constexpr RoleLabel kMtpBwd{"mtp bwd", OpRole::MtpBwd};
inline constexpr RoleLabel kMtpAttnFwd{"mtp attention fwd", OpRole::MtpAttnFwd};
inline constexpr RoleLabel kMtpAttnBwd{"mtp attention bwd", OpRole::MtpAttnBwd};
inline constexpr RoleLabel kMtpMlpFwd{"mtp mlp fwd", OpRole::MtpMlpFwd};
inline constexpr RoleLabel kMtpMlpBwd{"mtp mlp bwd", OpRole::MtpMlpBwd};
inline constexpr RoleLabel kMtpHeadFwd{"mtp head fwd", OpRole::MtpHeadFwd};
inline constexpr RoleLabel kMtpHeadBwd{"mtp head bwd", OpRole::MtpHeadBwd};
inline constexpr RoleLabel kTpCommFwd{"tp comm fwd", OpRole::TpCommFwd};
inline constexpr RoleLabel kTpCommBwd{"tp comm bwd", OpRole::TpCommBwd};
inline constexpr RoleLabel kEpAllToAllFwd{"ep all-to-all fwd", OpRole::EpAllToAllFwd};
inline constexpr RoleLabel kTrainMetrics{"train metrics", OpRole::TrainMetrics};
inline constexpr RoleLabel kGradAllReduce{"grad all-reduce", OpRole::GradAllReduce};
inline constexpr RoleLabel kGradReduceScatter{"grad reduce-scatter", OpRole::GradReduceScatter};
inline constexpr RoleLabel kGradAccumulate{"grad accumulate", OpRole::GradAccumulate};
inline constexpr RoleLabel kParamAllGatherFwd{"param all-gather fwd", OpRole::ParamAllGatherFwd};
inline constexpr RoleLabel kParamAllGatherBwd{"param all-gather bwd", OpRole::ParamAllGatherBwd};
inline constexpr RoleLabel kParamAllGatherOneTensor{"param all-gather (one tensor)", OpRole::ParamAllGatherOneTensor};
inline constexpr RoleLabel kReleaseGatheredParams{"release gathered params", OpRole::ReleaseGatheredParams};
inline constexpr RoleLabel kFlatGradConcat{"flat gradient concat (FSDP1)", OpRole::FlatGradConcat};
inline constexpr RoleLabel kGradCastPreDivide{"gradient cast and pre-divide (FSDP1)", OpRole::GradCastPreDivide};
inline constexpr RoleLabel kAllGatherCopyOut{"all-gather copy-out (FSDP2)", OpRole::AllGatherCopyOut};
inline constexpr RoleLabel kReduceScatterCopyIn{"reduce-scatter copy-in (FSDP2)", OpRole::ReduceScatterCopyIn};
inline constexpr RoleLabel kAllGatherCopyBackPerRank{"all-gather copy-back (one per rank)", OpRole::AllGatherCopyBackPerRank};
inline constexpr RoleLabel kReduceScatterCopyInPerRank{"reduce-scatter copy-in (one per rank)", OpRole::ReduceScatterCopyInPerRank};
inline constexpr RoleLabel kGradReduceScatterOneTensor{"grad reduce-scatter (one tensor)", OpRole::GradReduceScatterOneTensor};
inline constexpr RoleLabel kCpKvAllGather{"cp kv all-gather", OpRole::CpKvAllGather};
inline constexpr RoleLabel kCpDkvReduceScatter{"cp dkv reduce-scatter", OpRole::CpDkvReduceScatter};
inline constexpr RoleLabel kParamShardH2D{"param shard H2D (offload)", OpRole::ParamShardH2D};
inline constexpr RoleLabel kGradShardD2H{"grad shard D2H (offload)", OpRole::GradShardD2H};
inline constexpr RoleLabel kOptimizerStepCpu{"optimizer step (CPU)", OpRole::OptimizerStepCpu};
inline constexpr RoleLabel kCpKvRingFwd{"cp kv ring", OpRole::CpKvRingFwd};
inline constexpr RoleLabel kCpKvRingBwd{"cp kv ring bwd", OpRole::CpKvRingBwd};
inline constexpr RoleLabel kExpertGradAllReduce{"expert grad all-reduce", OpRole::ExpertGradAllReduce};
inline constexpr RoleLabel kExpertGradReduceScatter{"expert grad reduce-scatter", OpRole::ExpertGradReduceScatter};
inline constexpr RoleLabel kExpertParamAllGatherFwd{"expert param all-gather fwd", OpRole::ExpertParamAllGatherFwd};
inline constexpr RoleLabel kExpertParamAllGatherBwd{"expert param all-gather bwd", OpRole::ExpertParamAllGatherBwd};
}  // namespace op_label

}  // namespace parasim
