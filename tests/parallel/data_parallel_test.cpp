// DDP and data parallelism: gradient all-reduce overlap, the busier GPU 0, gradient accumulation,
// the optimizer's passes, NIC sharing.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <map>

#include "../test_util.h"
#include "sim/memory/memory_model.h"
#include "sim/network/flow_network.h"
#include "sim/parallel/emitter.h"
#include "tools/report.h"

namespace parasim {
namespace {

double compute_time(const SimulationOutput& out, std::int32_t rank) {
  double s = 0;
  for (size_t i = 0; i < out.program.ops.size(); ++i)
    if (out.program.ops[i].rank == rank && out.program.ops[i].stream == Stream::Compute)
      s += time_to_seconds(out.program.ops[i].duration);
  return s;
}

TEST(DDP, WithFreeCommunicationStepEqualsCompute) {
  const Scenario sc = test::scenario_from(test::base_scenario());
  const auto out = test::simulate_with(sc, test::FreeNetwork{});
  EXPECT_NEAR(out.result.step_time_s, compute_time(out, 0), 1e-9);
  EXPECT_NEAR(out.result.bubble_fraction, 0.0, 1e-9);
}

TEST(DDP, BucketedAllReduceOverlapsBackward) {
  // With the real network, overlapped buckets hide most of the all-reduce: the step is shorter
  // than compute plus all communication run back to back.
  Json j = test::base_scenario();
  const Scenario overlapped = test::scenario_from(j);
  j["parallel"]["overlap_grad_reduce"] = false;
  const Scenario serial = test::scenario_from(j);
  const auto a = simulate(overlapped, Registries{}, nullptr, Detail::Timeline);
  const auto b = simulate(serial, Registries{}, nullptr, Detail::Timeline);
  EXPECT_LT(a.result.step_time_s, b.result.step_time_s);
  EXPECT_GT(a.result.breakdown.at("dp_comm_s"), 0.0);
  EXPECT_LT(a.result.ranks[0].comm_exposed_s, b.result.ranks[0].comm_exposed_s);
}

TEST(DataParallel, GpuZeroIsHeavierAndBusier) {
  Json j = test::base_scenario();
  j["model"] = "megatron-gpt-1.7b";
  j["parallel"] = {{"dp", 4}, {"schedule", "dataparallel"}};
  j["cluster"]["gpus_per_node"] = 4;
  j["training"] = {{"global_batch", 16}, {"micro_batch", 2}, {"seq_len", 1024}};
  const auto out = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  ASSERT_EQ(out.result.ranks.size(), 4u);
  for (size_t r = 1; r < 4; ++r) {
    EXPECT_GT(out.result.ranks[0].peak_mem_gib, out.result.ranks[r].peak_mem_gib + 1.0);
    EXPECT_GT(out.result.ranks[0].compute_s, out.result.ranks[r].compute_s);
  }
}

TEST(GradAccumulation, UnfusedAddsOnePassPerLayerAndMicrobatch) {
  // Without gradient-accumulation fusion each microbatch's weight gradient is added into the
  // buffer: per layer (and once for the embedding and head) read the 16-bit gradient, read and
  // write the buffer, 2 + 2 * 2 B per parameter (fp32 main grads: 2 + 2 * 4). With a free network
  // the passes sit on the critical path and lengthen the step by exactly their sum.
  Json j = test::base_scenario();  // llama2-7b, dp 8, 8 microbatches per rank, one stage
  const auto fused = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  j["training"]["grad_accumulation_fusion"] = false;
  const Scenario sc = test::scenario_from(j);
  const auto sep = test::simulate_with(sc, test::FreeNetwork{});
  const CostModel cost(sc.profile, sc.training.gemm_dtype(), kAttentionDefault, sc.cluster.gpus());
  const ParamCount pc = count_params(sc.model);
  auto passes = [](const SimulationOutput& o) {
    std::vector<double> d;
    for (const Op& op : o.program.ops)
      if (op.rank == 0 && o.program.role(op) == OpRole::GradAccumulate) d.push_back(time_to_seconds(op.duration));
    return d;
  };
  const std::vector<double> d = passes(sep);
  ASSERT_EQ(d.size(), 8u * static_cast<size_t>(sc.model.layers + 1));
  EXPECT_TRUE(passes(fused).empty());
  double sum = 0;
  for (const double x : d) sum += x;
  const double want = 8 * (static_cast<double>(sc.model.layers) * cost.memory_s(6 * pc.per_layer) + cost.memory_s(6 * (pc.embedding + pc.head)));
  EXPECT_NEAR(sum, want, 1e-9);
  EXPECT_NEAR(sep.result.step_time_s - fused.result.step_time_s, sum, 1e-6);
  j["training"]["fp32_grad_accumulation"] = true;
  const auto fp32 = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  EXPECT_NEAR(passes(fp32).front(), cost.memory_s(10 * pc.per_layer), 1e-12);
}

TEST(Optimizer, UnfusedAdamMakesOneFp32PassPerUpdateTerm) {
  // Fused Adam reads parameter, gradient and the three fp32 states and writes them back (12 * 2 +
  // 2 + 2 = 28 B per parameter in bf16); over Megatron's separate fp32 master it also casts the bf16
  // gradients into fp32 main gradients first (2 + 4 B, and the Adam pass reads 4 B of gradient) and
  // copies the master back into the bf16 weights after (reads its 4 B again): 40 B. Under FSDP the
  // sharded parameters are the fp32 copy: 28 B. The unfused step (Composer's DecoupledAdamW, PyTorch's
  // for-loop / foreach AdamW) runs eight elementwise kernels on fp32 tensors, 2 + 3 + 2 + 4 + 2 + 2
  // + 2 + 4 = 21 four-byte operands = 84 B. Each rank updates its shard under FSDP.
  Json j = test::base_scenario();  // llama2-7b, dp 8
  auto step = [](const SimulationOutput& o) {
    for (const Op& op : o.program.ops)
      if (op.rank == 0 && op.phase == Phase::Optimizer) return time_to_seconds(op.duration);
    return -1.0;
  };
  for (const bool fsdp : {false, true}) {
    if (fsdp) j["parallel"]["fsdp"] = {{"sharding", "full"}};
    j["training"]["optimizer_impl"] = "fused";
    const Scenario sc = test::scenario_from(j);
    const CostModel cost(sc.profile, sc.training.gemm_dtype(), kAttentionDefault, sc.cluster.gpus());
    const ParamCount pc = count_params(sc.model);
    const double params = pc.total() / (fsdp ? 8.0 : 1.0);
    const auto fused = test::simulate_with(sc, test::FreeNetwork{});
    EXPECT_NEAR(step(fused), cost.optimizer_s((fsdp ? 28 : 40) * params), 1e-9) << fsdp;
    j["training"]["optimizer_impl"] = "unfused";
    const auto unfused = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
    EXPECT_NEAR(step(unfused), cost.optimizer_s(84 * params), 1e-9) << fsdp;
    // The step ends with the optimizer: the difference is all of it.
    EXPECT_NEAR(unfused.result.step_time_s - fused.result.step_time_s, step(unfused) - step(fused), 1e-6) << fsdp;
  }
  j["training"]["optimizer"] = "sgd";  // buf.mul_, buf.add_(grad), param.add_(buf): 8 * 4 B
  const Scenario sgd = test::scenario_from(j);
  EXPECT_NEAR(step(test::simulate_with(sgd, test::FreeNetwork{})),
              CostModel(sgd.profile, sgd.training.gemm_dtype(), kAttentionDefault, sgd.cluster.gpus()).optimizer_s(32 * count_params(sgd.model).total() / 8.0), 1e-9);
  j["training"]["optimizer_impl"] = "foreach";
  EXPECT_EQ(test::scenario_error(j), "test.json: /training/optimizer_impl: expected one of \"fused\", \"unfused\", got \"foreach\"");
}

// DP gradient all-reduce and PP activation transfers across nodes share the NICs: in a PP x DP job
// across nodes some transfers take longer than they would alone.
TEST(Contention, DataParallelAndPipelineTrafficShareNics) {
  Json j = test::base_scenario();
  j["model"] = "llama2-13b";
  j["cluster"] = {{"gpu", "a100-sxm4-80g"}, {"nodes", 8}, {"gpus_per_node", 8}};
  j["training"] = {{"global_batch", 64}, {"micro_batch", 1}, {"seq_len", 4096}};
  j["parallel"] = {{"dp", 8}, {"tp", 2}, {"pp", 4}, {"schedule", "1f1b"}, {"bucket_mb", 40}};
  const auto out = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  std::int64_t shared = 0, stretched = 0;
  for (size_t i = 0; i < out.program.ops.size(); ++i) {
    const Op& op = out.program.ops[i];
    if (op.shared_link < 0) continue;
    ++shared;
    if (out.timeline.end[i] - out.timeline.start[i] > op.duration + 1) ++stretched;
  }
  EXPECT_GT(shared, 0);
  EXPECT_GT(stretched, 0);
}

}  // namespace
}  // namespace parasim
