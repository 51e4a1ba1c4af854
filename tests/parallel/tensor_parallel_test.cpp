// Tensor and context parallelism: communication on the critical path, comm-GEMM overlap,
// rank order, all-gather context parallelism.
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

TEST(TensorParallel, CommunicationSitsOnTheCriticalPath) {
  Json j = test::base_scenario();
  j["parallel"] = {{"dp", 1}, {"tp", 8}};
  j["training"]["global_batch"] = 8;
  const Scenario sc = test::scenario_from(j);
  const auto real = simulate(sc, Registries{});
  const auto free = test::simulate_with(sc, test::FreeNetwork{});
  EXPECT_GT(real.result.breakdown.at("tp_comm_s"), 0.0);
  EXPECT_NEAR(real.result.step_time_s - free.result.step_time_s, real.result.breakdown.at("tp_comm_s"),
              0.05 * real.result.step_time_s);
}

TEST(TensorParallel, CommGemmOverlapHidesCommunicationUnderGemms) {
  Json j = test::base_scenario();
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"sequence_parallel", true}};
  j["training"]["global_batch"] = 8;
  const Scenario exposed = test::scenario_from(j);
  j["parallel"]["tp_comm_overlap"] = true;
  const Scenario hidden = test::scenario_from(j);
  const auto a = simulate(exposed, Registries{});
  const auto b = simulate(hidden, Registries{}, nullptr, Detail::Partition);
  const auto free = test::simulate_with(exposed, test::FreeNetwork{});
  // No TP op left on the critical path (the collectives run beside the GEMMs, as much of them as
  // without the overlap); the step lies between free communication and exposed.
  ASSERT_TRUE(b.partition.has_value());
  EXPECT_EQ(b.partition->compute_stream_s.count("tp_comm_s") ? b.partition->compute_stream_s.at("tp_comm_s") : 0.0, 0.0);
  EXPECT_NEAR(b.partition->other_streams_s.at("tp_comm_s"), a.result.breakdown.at("tp_comm_s"), 1e-6 * a.result.breakdown.at("tp_comm_s"));
  EXPECT_LT(b.result.step_time_s, a.result.step_time_s);
  EXPECT_GT(b.result.step_time_s, free.result.step_time_s);
  // With a free network the overlap costs only the GEMM slowdown: hidden >= free + 0.
  const auto free_hidden = test::simulate_with(hidden, test::FreeNetwork{});
  EXPECT_NEAR(free_hidden.result.step_time_s, free.result.step_time_s, 1e-9);
}

TEST(RankOrder, DataParallelInnermostPushesTensorParallelAcrossNodes) {
  Json j = test::base_scenario();
  j["cluster"]["nodes"] = 8;
  j["parallel"] = {{"dp", 8}, {"tp", 8}};
  j["training"]["global_batch"] = 64;
  const Scenario megatron = test::scenario_from(j);
  j["parallel"]["order"] = "dp-tp-cp-pp";
  const Scenario dp_inner = test::scenario_from(j);
  const Layout a = make_layout(megatron), b = make_layout(dp_inner);
  EXPECT_EQ(a.tp_group(CollOp::AllReduce, 1).ranks_per_node, 8);  // TP inside a node
  EXPECT_EQ(a.dp_group(CollOp::AllReduce, 1).ranks_per_node, 1);  // DP across nodes
  EXPECT_EQ(b.tp_group(CollOp::AllReduce, 1).ranks_per_node, 1);
  EXPECT_EQ(b.dp_group(CollOp::AllReduce, 1).ranks_per_node, 8);
  EXPECT_EQ(b.s_tp, 8);
  EXPECT_EQ(b.s_pp, 64);
  // TP's per-layer collectives over the NICs cost far more than DP's once-per-step sync saves.
  const auto ra = simulate(megatron, Registries{});
  const auto rb = simulate(dp_inner, Registries{});
  EXPECT_GT(rb.result.breakdown.at("tp_comm_s"), 3 * ra.result.breakdown.at("tp_comm_s"));
  EXPECT_GT(rb.result.step_time_s, ra.result.step_time_s);
  j["parallel"]["order"] = "tp-dp-pp";
  try {
    test::scenario_from(j);
    ADD_FAILURE() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "test.json: /parallel/order: expected the four dimensions tp, cp, dp, pp once each, innermost first, joined by '-' "
              "(e.g. \"tp-cp-dp-pp\"), got \"tp-dp-pp\"");
  }
}

// Context parallelism by all-gather (the Llama 3 paper's section 3.3.2, PyTorch context_parallel's
// allgather rotate method) against Megatron's ring: the K/V all-gather sits on the critical path
// before each attention forward, the K/V-gradient reduce-scatter after each attention backward,
// each priced as the collective over the cp group of cp x the local K and V; the gathered K and V
// stay saved, so a layer keeps 2 x e x (seq - seq / cp) x b x kv_dim / tp bytes more.
TEST(ContextParallel, AllGatherExposesTheGatherAndKeepsTheGatheredKv) {
  Json j = test::base_scenario();  // llama2-7b: 32 heads of 128, multi-head attention
  j["cluster"]["nodes"] = 2;
  j["parallel"] = {{"dp", 2}, {"tp", 1}, {"pp", 1}, {"cp", 8}, {"schedule", "ddp"}};
  j["training"] = {{"global_batch", 4}, {"micro_batch", 1}, {"seq_len", 16384}};
  const Scenario ring_sc = test::scenario_from(j);
  EXPECT_EQ(ring_sc.parallel.cp_impl, CpImpl::Ring);
  j["parallel"]["cp_impl"] = "allgather";
  const Scenario ag_sc = test::scenario_from(j);
  EXPECT_EQ(ag_sc.resolved()["parallel"]["cp_impl"], "allgather");
  const auto ring = simulate(ring_sc, Registries{});
  const auto ag = simulate(ag_sc, Registries{});

  // The collectives' price: cp x the local K and V of one layer.
  const LayerShape sh = layer_shape(ag_sc);
  const double kv_local = 2.0 * static_cast<double>(16384 / 8) * static_cast<double>(ag_sc.model.kv_dim()) * 2.0;
  const auto net = make_network(ag_sc.network, ag_sc.profile, ag_sc.cluster);
  const Layout l = make_layout(ag_sc);
  const double gather_s = net->time_s(l.cp_group(CollOp::AllGather, 8 * kv_local));
  const double scatter_s = net->time_s(l.cp_group(CollOp::ReduceScatter, 8 * kv_local));
  ASSERT_GT(gather_s, 0.0);

  const Program& p = ag.program;
  int gathers = 0, scatters = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& o = p.ops[i];
    if (o.rank != 0) continue;
    const OpRole name = p.role(o);
    if (name == OpRole::CpKvAllGather || name == OpRole::CpDkvReduceScatter) {
      EXPECT_EQ(o.stream, Stream::Compute);
      const bool gather = name == OpRole::CpKvAllGather;
      EXPECT_NEAR(time_to_seconds(o.duration), gather ? gather_s : scatter_s, 1e-9);
      (gather ? gathers : scatters)++;
      if (gather)  // the next op of the rank's compute stream is the attention, after the gather
        for (size_t k = i + 1; k < p.ops.size(); ++k)
          if (p.ops[k].rank == 0 && p.ops[k].stream == Stream::Compute) {
            EXPECT_EQ(p.role(p.ops[k]), OpRole::AttnFwd);
            EXPECT_GE(ag.timeline.start[k], ag.timeline.end[i]);
            break;
          }
    }
    EXPECT_NE(name, OpRole::CpKvRingFwd);  // no ring exchange with the all-gather implementation
    EXPECT_NE(name, OpRole::CpKvRingBwd);
  }
  const std::int64_t layer_passes = ag_sc.model.layers * ag_sc.training.global_batch / (2 * ag_sc.training.micro_batch);
  EXPECT_EQ(gathers, layer_passes);  // one per layer and microbatch
  EXPECT_EQ(scatters, layer_passes);
  // On the critical path: the step with the network exceeds the one with free communication by at
  // least every gather and reduce-scatter. (Whether it beats the ring depends on the shapes: at this
  // short local sequence the ring's cp - 1 exchanges per pass outlast the attention that hides them.)
  const auto ag_free = test::simulate_with(ag_sc, test::FreeNetwork{});
  EXPECT_GE(ag.result.step_time_s - ag_free.result.step_time_s, static_cast<double>(layer_passes) * (gather_s + scatter_s) - 1e-6);

  // Memory: the gathered K and V instead of the local ones, per layer.
  LayerShape ring_sh = sh;
  ring_sh.cp_allgather = false;
  EXPECT_TRUE(sh.cp_allgather);
  const double extra = activation_bytes(ag_sc.model, sh, Recompute::None).layer_stored - activation_bytes(ag_sc.model, ring_sh, Recompute::None).layer_stored;
  EXPECT_NEAR(extra, 7.0 * kv_local, 1e-6 * kv_local);
  EXPECT_GT(ag.result.ranks[0].peak_mem_gib, ring.result.ranks[0].peak_mem_gib);

  // Full recompute replays the gather before the layer's forward replay (the program op by op: a
  // timeline's, whose layers are not fused).
  j["parallel"]["recompute"] = "full";
  const auto ag_full = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  j["parallel"]["cp_impl"] = "ring";
  const auto ring_full = simulate(test::scenario_from(j), Registries{}, nullptr, Detail::Timeline);
  const auto replay = [](const SimulationOutput& o) {
    double s = 0;
    for (const Op& op : o.program.ops)
      if (op.rank == 0 && o.program.role(op) == OpRole::RecomputeFwd) s += time_to_seconds(op.duration);
    return s;
  };
  EXPECT_NEAR(replay(ag_full) - replay(ring_full), static_cast<double>(layer_passes) * gather_s, 1e-6);

  j["parallel"]["cp_impl"] = "ulysses";
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/cp_impl: expected one of \"ring\", \"allgather\", got \"ulysses\"");
}

}  // namespace
}  // namespace parasim
