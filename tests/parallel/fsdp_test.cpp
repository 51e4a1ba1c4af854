// PyTorch FSDP (FSDP1 and FSDP2): gathers, prefetch, copies, mixed-precision dtypes, CPU offload.
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

TEST(Fsdp, FullShardingGathersEachLayerAndShardsStates) {
  Json j = test::base_scenario();
  j["parallel"]["fsdp"] = {{"sharding", "full"}};
  const auto out = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  std::int64_t gathers = 0;
  for (const auto& op : out.program.ops) gathers += op.phase == Phase::FsdpGather;
  // 32 layers, forward and backward, 8 microbatches per rank.
  EXPECT_EQ(gathers, 32 * 2 * 8);
  EXPECT_GT(out.result.ranks[0].mem_breakdown_gib[static_cast<size_t>(MemCat::GatheredParams)], 0.0);
  const auto ddp = simulate(test::scenario_from(test::base_scenario()), Registries{}, nullptr, Detail::Timeline);
  EXPECT_LT(out.result.peak_mem_gib, ddp.result.peak_mem_gib);
}

TEST(Fsdp, BackwardPrefetchIssuesTheNextGatherBeforeThisLayersReduceScatter) {
  // FSDP's BACKWARD_PRE order on one communicator: AG(L), AG(L-1), RS(L), AG(L-2), RS(L-1), ...
  // so a layer's gather never queues behind the reduction of the layer before it, and with
  // per-layer communication shorter than per-layer compute the backward hides all but the first
  // gather of each microbatch.
  Json j = test::base_scenario();
  j["parallel"]["fsdp"] = {{"sharding", "full"}};
  const auto out = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  const Program& p = out.program;
  std::vector<std::string> seq;
  double gather = 0, reduce = 0, layer_bwd = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& o = p.ops[i];
    const OpRole l = p.role(o);
    if (o.rank != 0 || o.microbatch != 0) continue;
    if (l == OpRole::ParamAllGatherBwd || l == OpRole::GradReduceScatter) seq.push_back(l == OpRole::GradReduceScatter ? "RS" : "AG");
    if (l == OpRole::ParamAllGatherBwd) gather = time_to_seconds(o.duration);
    if (l == OpRole::GradReduceScatter) reduce = time_to_seconds(o.duration);
    if (l == OpRole::MlpBwd || l == OpRole::AttnBwd) layer_bwd += time_to_seconds(o.duration);
  }
  ASSERT_EQ(seq.size(), 64u);  // 32 layers
  EXPECT_EQ(seq[0], "AG");
  EXPECT_EQ(seq[1], "AG");
  for (size_t i = 2; i + 2 < seq.size(); i += 2) {
    EXPECT_EQ(seq[i], "RS") << i;
    EXPECT_EQ(seq[i + 1], "AG") << i;
  }
  EXPECT_EQ(seq[62], "RS");  // layer 1's, after layer 0's gather
  EXPECT_EQ(seq[63], "RS");
  ASSERT_LT(gather + reduce, layer_bwd / 32);
  // Exposed: at most the first gather of each microbatch's forward and backward, and the last
  // reduce-scatter of the step.
  EXPECT_LT(out.result.ranks[0].comm_exposed_s, 8 * 2 * gather + reduce + 1e-6);
}

TEST(Fsdp, BackwardPostPrefetchGathersAfterTheCurrentUnitsGradient) {
  // FSDP1's BACKWARD_POST issues the next unit's all-gather after the current unit's gradient
  // computation: in each microbatch's backward, every gather after the first starts when the
  // layer before it has finished its backward, and that layer's backward starts only when its
  // gather is done (the gather overlaps no compute of its own pass). BACKWARD_PRE hides them.
  Json j = test::base_scenario();
  j["parallel"]["fsdp"] = {{"sharding", "full"}, {"version", 1}};
  const auto pre = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  j["parallel"]["fsdp"]["backward_prefetch"] = "post";
  const Scenario sc = test::scenario_from(j);
  EXPECT_EQ(sc.resolved()["parallel"]["fsdp"]["backward_prefetch"], "post");
  const auto post = simulate(sc, Registries{}, nullptr, Detail::Timeline);
  const Program& p = post.program;
  const auto label = [&](size_t i) { return p.role(p.ops[i]); };
  std::int64_t checked = 0, gather_bound = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].rank != 0 || label(i) != OpRole::ParamAllGatherBwd) continue;
    // The previous compute op of this rank, and the next one.
    std::int64_t before = -1, after = -1;
    for (size_t b = i; b-- > 0;)
      if (p.ops[b].rank == 0 && p.ops[b].stream == Stream::Compute && label(b) != OpRole::ReleaseGatheredParams &&
          label(b) != OpRole::FlatGradConcat) {
        before = static_cast<std::int64_t>(b);
        break;
      }
    // The layer's backward queues on the compute stream behind the previous layer's gradient
    // concat and cast (side-stream kernels that take the SMs, priced on the compute stream).
    std::int64_t queued = -1;
    for (size_t a = i + 1; a < p.ops.size(); ++a) {
      if (p.ops[a].rank != 0 || p.ops[a].stream != Stream::Compute) continue;
      if (label(a) == OpRole::FlatGradConcat || label(a) == OpRole::GradCastPreDivide) {
        queued = static_cast<std::int64_t>(a);
        continue;
      }
      after = static_cast<std::int64_t>(a);
      break;
    }
    ASSERT_GE(before, 0);
    ASSERT_GE(after, 0);
    if (label(static_cast<size_t>(before)) != OpRole::AttnBwd) continue;  // the first gather of a backward
    EXPECT_GE(post.timeline.start[i], post.timeline.end[static_cast<size_t>(before)]) << i;
    EXPECT_EQ(label(static_cast<size_t>(after)), OpRole::MlpBwd);
    const Time ready = std::max(post.timeline.end[i], queued >= 0 ? post.timeline.end[static_cast<size_t>(queued)] : Time{0});
    EXPECT_EQ(post.timeline.start[static_cast<size_t>(after)], ready) << i;
    if (queued >= 0) gather_bound += post.timeline.end[i] >= post.timeline.end[static_cast<size_t>(queued)];
    ++checked;
  }
  EXPECT_EQ(checked, 8 * 31);  // 8 microbatches, 32 layers
  EXPECT_EQ(gather_bound, checked);  // here every gather outlasts the casts it runs beside
  EXPECT_GT(post.result.step_time_s, pre.result.step_time_s);
  EXPECT_GT(post.result.ranks[0].comm_exposed_s, pre.result.ranks[0].comm_exposed_s);
  // FSDP2 has no BACKWARD_POST.
  j["parallel"]["fsdp"]["version"] = 2;
  EXPECT_NE(test::scenario_error(j).find("/parallel/fsdp/backward_prefetch: \"post\" is FSDP1's"), std::string::npos)
      << test::scenario_error(j);
}

TEST(Fsdp, GradientAndParameterCopiesOfFsdp1AndFsdp2) {
  // FSDP2: after each unit's all-gather a compute-stream copy-out reads and writes the unit's
  // bf16 parameters; before each reduce-scatter a copy-in reads the bf16 gradients and writes the
  // reduce-scatter input (fp32 here: 2 + 4 B per parameter). FSDP1: autograd concatenates the
  // split views' gradients into the flat gradient on the compute stream (2 + 2 B), and the
  // post-backward stream casts it to fp32 and pre-divides it (2 + 4, then 4 + 4 B). The
  // side-stream kernels take the SMs like the compute stream's, so all of them are priced there.
  Json j = test::base_scenario();  // llama2-7b, dp 8, 8 microbatches
  j["parallel"]["fsdp"] = {{"sharding", "full"}, {"reduce_dtype", "fp32"}};
  const Scenario sc = test::scenario_from(j);
  EXPECT_EQ(sc.parallel.fsdp->version, 2);
  EXPECT_EQ(sc.resolved()["parallel"]["fsdp"]["version"], 2);
  const CostModel cost(sc.profile, sc.training.gemm_dtype(), kAttentionDefault, sc.cluster.gpus());
  const double layer = count_params(sc.model).per_layer;
  auto count = [](const SimulationOutput& o, OpRole role, double want_s, Stream stream) {
    std::size_t n = 0;
    for (size_t i = 0; i < o.program.ops.size(); ++i) {
      const Op& op = o.program.ops[i];
      if (op.rank != 0 || o.program.role(op) != role) continue;
      EXPECT_NEAR(time_to_seconds(op.duration), want_s, 1e-9) << o.program.labels[static_cast<size_t>(op.label)];
      EXPECT_EQ(op.stream, stream) << o.program.labels[static_cast<size_t>(op.label)];
      ++n;
    }
    return n;
  };
  const auto v2 = test::simulate_with(sc, test::FreeNetwork{});
  const auto L = static_cast<std::size_t>(sc.model.layers);
  EXPECT_EQ(count(v2, OpRole::AllGatherCopyOut, cost.memory_s(2 * 2 * layer), Stream::Compute), 8 * 2 * L);  // fwd and bwd gathers
  EXPECT_EQ(count(v2, OpRole::ReduceScatterCopyIn, cost.memory_s((2 + 4) * layer), Stream::Compute), 8 * L);
  EXPECT_EQ(count(v2, OpRole::FlatGradConcat, 0, Stream::Compute), 0u);
  j["parallel"]["fsdp"]["version"] = 1;
  const auto v1 = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  EXPECT_EQ(count(v1, OpRole::AllGatherCopyOut, 0, Stream::Compute), 0u);
  EXPECT_EQ(count(v1, OpRole::ReduceScatterCopyIn, 0, Stream::Compute), 0u);
  EXPECT_EQ(count(v1, OpRole::FlatGradConcat, cost.memory_s(2 * 2 * layer), Stream::Compute), 8 * L);
  EXPECT_EQ(count(v1, OpRole::GradCastPreDivide, cost.memory_s((2 + 4 + 2 * 4) * layer), Stream::Compute), 8 * L);
  // With free communication every copy sits on the compute stream's critical path: per layer and
  // microbatch FSDP2's two copy-outs and its copy-in against FSDP1's concat and cast.
  const double net = 8 * static_cast<double>(L) *
                     (2 * cost.memory_s(4 * layer) + cost.memory_s(6 * layer) - cost.memory_s(4 * layer) - cost.memory_s(14 * layer));
  const double extra = v2.result.step_time_s - v1.result.step_time_s;
  EXPECT_NEAR(extra, net, 1e-12 * 8 * static_cast<double>(L) * 5);  // each op's time rounds to 1 ps
  EXPECT_DOUBLE_EQ(v2.result.ranks[0].comm_exposed_s, 0.0);  // copies are not communication
  // PURE (reduce in bf16): no cast, the pre-divide reads and writes 2 B.
  j["parallel"]["fsdp"]["reduce_dtype"] = "bf16";
  const auto pure = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  EXPECT_EQ(count(pure, OpRole::GradCastPreDivide, cost.memory_s(2 * 2 * layer), Stream::Compute), 8 * L);
}

TEST(Fsdp, MixedPrecisionDtypesSetTheGatherAndReduceBytes) {
  // torchtitan: parameters gathered in bf16, gradients reduce-scattered in fp32 (2x the bytes);
  // 2023 Composer DEFAULT: parameters gathered in fp32.
  Json j = test::base_scenario();
  j["parallel"]["fsdp"] = {{"sharding", "full"}};
  auto bytes_of = [](const Json& s, OpRole role) {
    const auto out = test::simulate_with(test::scenario_from(s), BytesNetwork{});
    for (size_t i = 0; i < out.program.ops.size(); ++i)
      if (out.program.role(out.program.ops[i]) == role) return time_to_seconds(out.program.ops[i].duration) * 1e9;
    return 0.0;
  };
  const double ag = bytes_of(j, OpRole::ParamAllGatherFwd), rs = bytes_of(j, OpRole::GradReduceScatter);
  const Scenario base = test::scenario_from(j);
  EXPECT_EQ(base.fsdp_param_dtype(), Dtype::Bf16);
  EXPECT_EQ(base.fsdp_reduce_dtype(), Dtype::Bf16);
  EXPECT_EQ(base.resolved()["parallel"]["fsdp"]["reduce_dtype"], "bf16");
  j["parallel"]["fsdp"]["reduce_dtype"] = "fp32";
  EXPECT_NEAR(bytes_of(j, OpRole::GradReduceScatter) / rs, 2.0, 1e-6);
  EXPECT_NEAR(bytes_of(j, OpRole::ParamAllGatherFwd) / ag, 1.0, 1e-6);
  j["parallel"]["fsdp"]["param_dtype"] = "fp32";
  EXPECT_NEAR(bytes_of(j, OpRole::ParamAllGatherFwd) / ag, 2.0, 1e-6);
  EXPECT_EQ(test::scenario_from(j).resolved()["parallel"]["fsdp"]["param_dtype"], "fp32");
  j["parallel"]["fsdp"]["param_dtype"] = "fp8";
  EXPECT_NE(test::scenario_error(j).find("test.json: /parallel/fsdp/param_dtype"), std::string::npos) << test::scenario_error(j);
}

TEST(Fsdp, CpuOffloadMovesStatesToTheHostAndPaysPcieAndCpuOptimizer) {
  Json j = test::base_scenario();
  j["parallel"]["fsdp"] = {{"sharding", "full"}};
  const Scenario on_gpu = test::scenario_from(j);
  j["parallel"]["fsdp"]["offload"] = true;
  const Scenario off = test::scenario_from(j);
  const auto a = simulate(on_gpu, Registries{}, nullptr, Detail::Timeline);
  const auto b = simulate(off, Registries{}, nullptr, Detail::Timeline);
  // No sharded weights, gradients or optimizer states stay on the GPU.
  const auto& r = b.program.ranks[0];
  EXPECT_EQ(r.static_mem[static_cast<size_t>(MemCat::Weights)], 0);
  EXPECT_EQ(r.static_mem[static_cast<size_t>(MemCat::Grads)], 0);
  EXPECT_EQ(r.static_mem[static_cast<size_t>(MemCat::Optimizer)], 0);
  EXPECT_LT(b.result.peak_mem_gib, a.result.peak_mem_gib);
  // One H2D shard copy per gathered unit, one D2H per reduced gradient shard.
  std::int64_t h2d = 0, d2h = 0, ag = 0, rs = 0;
  double opt = 0;
  for (const auto& o : b.program.ops) {
    const OpRole l = b.program.role(o);
    h2d += l == OpRole::ParamShardH2D;
    d2h += l == OpRole::GradShardD2H;
    ag += l == OpRole::ParamAllGatherFwd || l == OpRole::ParamAllGatherBwd;
    rs += l == OpRole::GradReduceScatter;
    if (l == OpRole::OptimizerStepCpu) opt = time_to_seconds(o.duration);
  }
  EXPECT_EQ(h2d, ag);
  EXPECT_EQ(d2h, rs);
  // CPU Adam: 28 bytes per parameter of the shard over this GPU's share of the node's DRAM.
  const double shard = count_params(off.model).total() / 8;
  const double bps = off.profile.host_memory_gbps.value * 1e9 * off.profile.host_optimizer_efficiency.value / 8;
  EXPECT_NEAR(opt, 28 * shard / bps, 1e-9 * opt + 1e-12);
  EXPECT_GT(b.result.step_time_s, a.result.step_time_s + 0.9 * opt);
}

}  // namespace
}  // namespace parasim
