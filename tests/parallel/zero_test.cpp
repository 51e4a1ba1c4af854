// ZeRO (DeepSpeed and Megatron's distributed optimizer): stages 2 and 3, DeepSpeed 0.3's
// ZeRO-3, the BF16 optimizer's buffers, the allocator's reserve.
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <map>

#include "../test_util.h"
#include "sim/memory/memory_model.h"
#include "sim/network/flow_network.h"
#include "sim/parallel/emitter.h"
#include "bytes_network.h"
#include "tools/report.h"

namespace parasim {
namespace {

using test::BytesNetwork;

TEST(ZeroThree, DeepSpeed03GathersTensorByTensorAfterComputeWithACopyPerRank) {
  // DeepSpeed 0.3's ZeRO-3: one all-gather per parameter tensor (a bytes-as-time network reads
  // back each tensor's bf16 bytes), each followed by the list form's copy-back of 8 slices; with
  // full recompute the backward gathers each layer twice (the replayed forward's hooks, then the
  // backward's); one reduce-scatter per gradient tensor after an 8-slice copy-in; and, after
  // torch.cuda.synchronize(), no gather runs while compute does.
  Json j = test::base_scenario();  // llama2-7b, dp 8, 8 microbatches of 1 per rank
  j["parallel"]["zero_stage"] = 3;
  j["parallel"]["zero_impl"] = "deepspeed-0.3";
  j["parallel"]["recompute"] = "full";
  const Scenario sc = test::scenario_from(j);
  const auto out = test::simulate_with(sc, BytesNetwork{});
  const Program& p = out.program;
  const std::vector<double> tensors = layer_tensor_params(sc.model, 0);
  ASSERT_EQ(tensors.size(), 6u);  // 2 RMSNorm gains, QKV, projection, gate+up, down (no biases)
  const double copies_s = sc.profile.kernel_overhead_us.value * 1e-6 * 8;
  std::size_t gathers = 0, copy_backs = 0, reduces = 0, copy_ins = 0;
  double gathered_bytes = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& o = p.ops[i];
    const OpRole l = p.role(o);
    if (o.rank != 0 || o.microbatch != 0) continue;
    const double s = time_to_seconds(o.duration);
    if (l == OpRole::ParamAllGatherOneTensor) {
      EXPECT_NEAR(s * 1e9, 2 * tensors[gathers % tensors.size()], 1e-3) << gathers;
      gathered_bytes += s * 1e9;
      ++gathers;
    } else if (l == OpRole::AllGatherCopyBackPerRank) {
      EXPECT_GT(s, copies_s);
      ++copy_backs;
    } else if (l == OpRole::GradReduceScatterOneTensor) {
      EXPECT_NEAR(s * 1e9, 2 * tensors[reduces % tensors.size()], 1e-3) << reduces;
      ++reduces;
    } else if (l == OpRole::ReduceScatterCopyInPerRank) {
      EXPECT_GT(s, copies_s);
      ++copy_ins;
    }
  }
  const auto L = static_cast<std::size_t>(sc.model.layers);
  EXPECT_EQ(gathers, 3 * L * tensors.size());  // forward, replayed forward, backward
  EXPECT_EQ(copy_backs, gathers);
  EXPECT_EQ(reduces, L * tensors.size());
  EXPECT_EQ(copy_ins, reduces);
  EXPECT_NEAR(gathered_bytes, 3.0 * static_cast<double>(L) * 2 * count_params(sc.model).per_layer, 1.0);
  // No gather overlaps a compute op of its rank.
  std::vector<std::pair<Time, Time>> compute;
  for (size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].rank == 0 && p.ops[i].stream == Stream::Compute && out.timeline.end[i] > out.timeline.start[i])
      compute.emplace_back(out.timeline.start[i], out.timeline.end[i]);
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].rank != 0 || p.role(p.ops[i]) != OpRole::ParamAllGatherOneTensor) continue;
    for (const auto& [cs, ce] : compute)
      EXPECT_FALSE(out.timeline.start[i] < ce && cs < out.timeline.end[i]) << "gather " << i << " overlaps compute";
  }
}

TEST(ZeroImpl, DeepSpeedBf16OptimizerKeepsAnFp32BufferForEveryLocalParameter) {
  // DeepSpeed's BF16 optimizer (ZeRO-1): the 16-bit gradients stay, and an unsharded fp32
  // accumulation buffer adds 4 B per local parameter; each microbatch's gradient is added into it
  // (read 2 B, read and write 4 B: 10 B per parameter), and the step casts nothing.
  Json j = test::base_scenario();  // llama2-7b, dp 8, one stage
  j["parallel"]["zero_stage"] = 1;
  j["training"]["grad_accumulation_fusion"] = false;
  j["parallel"]["zero_impl"] = "deepspeed";
  const auto fp16 = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  j["parallel"]["zero_impl"] = "deepspeed-bf16";
  const Scenario sc = test::scenario_from(j);
  const auto bf16 = test::simulate_with(sc, test::FreeNetwork{});
  const ParamCount pc = count_params(sc.model);
  const double params = pc.total();
  const auto grads = [](const SimulationOutput& o) { return o.program.ranks[0].static_mem[static_cast<size_t>(MemCat::Grads)]; };
  EXPECT_NEAR(static_cast<double>(grads(bf16) - grads(fp16)), 4 * params, 1.0);
  const CostModel cost(sc.profile, sc.training.gemm_dtype(), kAttentionDefault, sc.cluster.gpus());
  std::size_t passes = 0;
  for (const Op& op : bf16.program.ops)
    if (op.rank == 0 && bf16.program.role(op) == OpRole::GradAccumulate &&
        std::abs(time_to_seconds(op.duration) - cost.memory_s(10 * pc.per_layer)) < 1e-12)
      ++passes;
  EXPECT_EQ(passes, static_cast<std::size_t>(sc.microbatches() * sc.model.layers));  // one per layer and microbatch
  j["parallel"]["zero_stage"] = 2;
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/zero_impl: \"deepspeed-bf16\" describes DeepSpeed's BF16 optimizer (ZeRO stage 1), but zero_stage is 2");
}

// nvidia-smi's view (RankResult::reserved_gib): each memory category keeps the cached segments of
// its own high-water mark. With DeepSpeed's ZeRO-1 step the fp32 cast of the gradient partition
// lives only during the step, after the last backward freed the activations: the allocated peak
// holds one of the two, the reserve both.
TEST(AllocatorReserve, EachCategoryKeepsItsHighWaterMark) {
  Json j = test::base_scenario();  // llama2-7b, dp 8, one stage
  j["parallel"]["zero_stage"] = 1;
  j["parallel"]["zero_impl"] = "deepspeed";
  j["training"]["global_batch"] = 16;
  j["training"]["micro_batch"] = 2;
  const auto out = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  const RankMemory& rm = out.timeline.memory[0];
  Bytes sum = 0;
  for (Bytes b : rm.high_water) sum += b;
  EXPECT_DOUBLE_EQ(out.result.ranks[0].reserved_gib, bytes_to_gib(static_cast<double>(sum)));
  const Program& p = out.program;
  const auto& st = p.ranks[0].static_mem;
  const auto cat = [&](MemCat c) { return static_cast<double>(rm.high_water[static_cast<size_t>(c)]); };
  // Static categories: their static bytes plus the transient that rises on top of them.
  Bytes step_transient = 0;
  for (const Op& op : p.ops)
    if (op.rank == 0 && op.phase == Phase::Optimizer && op.at_start.cat == MemCat::Optimizer) step_transient = op.at_start.bytes;
  ASSERT_GT(step_transient, 0);
  EXPECT_EQ(cat(MemCat::Optimizer), static_cast<double>(st[static_cast<size_t>(MemCat::Optimizer)] + step_transient));
  // The activations' high-water mark is their peak during the microbatches, which the step does not overlap.
  EXPECT_GT(cat(MemCat::Activations), 0);
  EXPECT_NEAR(out.result.ranks[0].reserved_gib - out.result.ranks[0].peak_mem_gib,
              std::min(bytes_to_gib(cat(MemCat::Activations)), bytes_to_gib(static_cast<double>(step_transient))), 1e-9);
  EXPECT_GE(out.result.reserved_gib, out.result.peak_mem_gib);
}

// Gradient reduction across microbatches: ZeRO-1 (and DDP) reduce once, after the step's last
// backward; sharded gradients (ZeRO-2, FSDP grad_op) are reduce-scattered after every microbatch's
// backward (DeepSpeed's partition_gradients hooks, FSDP's post-backward hook outside no_sync), the
// same buckets each time, so the step moves m times the gradient bytes.
TEST(ZeroTwo, ReduceScattersEveryMicrobatchWhereZeroOneReducesOnce) {
  Json j = test::base_scenario();  // llama2-7b, dp 8, 64 sequences: 8 microbatches per rank
  const std::int32_t m = 8;
  auto reduces = [](const SimulationOutput& o) {
    std::map<std::int32_t, int> per_mb;
    for (const Op& op : o.program.ops)
      if (op.rank == 0 && o.program.role(op) == OpRole::GradReduceScatter) per_mb[op.microbatch]++;
    return per_mb;
  };
  j["parallel"]["zero_stage"] = 1;
  const auto z1 = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  const auto r1 = reduces(z1);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(r1.begin()->first, m - 1);  // the last microbatch's backward
  const int buckets = r1.begin()->second;
  EXPECT_GT(buckets, 0);

  j["parallel"]["zero_stage"] = 2;
  const auto z2 = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  const auto r2 = reduces(z2);
  ASSERT_EQ(r2.size(), static_cast<size_t>(m));
  for (const auto& [mb, n] : r2) EXPECT_EQ(n, buckets) << "microbatch " << mb;
  const auto rs_seconds = [](const SimulationOutput& o) {
    double sec = 0;
    for (const Op& op : o.program.ops)
      if (op.rank == 0 && o.program.role(op) == OpRole::GradReduceScatter) sec += time_to_seconds(op.duration);
    return sec;
  };
  EXPECT_NEAR(rs_seconds(z2), m * rs_seconds(z1), 1e-9 * m * rs_seconds(z1));
  EXPECT_GT(z2.result.step_time_s, z1.result.step_time_s);
  EXPECT_LT(z2.result.ranks[0].peak_mem_gib, z1.result.ranks[0].peak_mem_gib);  // the gradients sharded

  j["parallel"]["zero_stage"] = 0;
  j["parallel"]["fsdp"] = {{"sharding", "grad_op"}};
  EXPECT_EQ(reduces(simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline)).size(), static_cast<size_t>(m));
}

}  // namespace
}  // namespace parasim
