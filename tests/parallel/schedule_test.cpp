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
  const auto a = simulate(overlapped, Registries{});
  const auto b = simulate(serial, Registries{});
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
  const auto out = simulate(test::scenario_from(j), Registries{});
  ASSERT_EQ(out.result.ranks.size(), 4u);
  for (size_t r = 1; r < 4; ++r) {
    EXPECT_GT(out.result.ranks[0].peak_mem_gib, out.result.ranks[r].peak_mem_gib + 1.0);
    EXPECT_GT(out.result.ranks[0].compute_s, out.result.ranks[r].compute_s);
  }
}

TEST(Determinism, TwoRunsGiveByteIdenticalJson) {
  const Scenario sc = load_scenario(test::data_dir() + "/scenarios/default.json", test::data_dir());
  const std::string a = result_json(simulate(sc, Registries{}).result).dump();
  const std::string b = result_json(simulate(sc, Registries{}).result).dump();
  EXPECT_EQ(a, b);
}

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
  const auto b = simulate(hidden, Registries{});
  const auto free = test::simulate_with(exposed, test::FreeNetwork{});
  // No TP op left on the critical path; the step lies between free communication and exposed.
  EXPECT_EQ(b.result.breakdown.count("tp_comm_s") ? b.result.breakdown.at("tp_comm_s") : 0.0, 0.0);
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

TEST(Fsdp, FullShardingGathersEachLayerAndShardsStates) {
  Json j = test::base_scenario();
  j["parallel"]["fsdp"] = {{"sharding", "full"}};
  const auto out = simulate(test::scenario_from(j), Registries{});
  std::int64_t gathers = 0;
  for (const auto& op : out.program.ops) gathers += op.phase == Phase::FsdpGather;
  // 32 layers, forward and backward, 8 microbatches per rank.
  EXPECT_EQ(gathers, 32 * 2 * 8);
  EXPECT_GT(out.result.ranks[0].mem_breakdown_gib[static_cast<size_t>(MemCat::GatheredParams)], 0.0);
  const auto ddp = simulate(test::scenario_from(test::base_scenario()), Registries{});
  EXPECT_LT(out.result.peak_mem_gib, ddp.result.peak_mem_gib);
}

TEST(Fsdp, BackwardPrefetchIssuesTheNextGatherBeforeThisLayersReduceScatter) {
  // FSDP's BACKWARD_PRE order on one communicator: AG(L), AG(L-1), RS(L), AG(L-2), RS(L-1), ...
  // so a layer's gather never queues behind the reduction of the layer before it, and with
  // per-layer communication shorter than per-layer compute the backward hides all but the first
  // gather of each microbatch.
  Json j = test::base_scenario();
  j["parallel"]["fsdp"] = {{"sharding", "full"}};
  const auto out = simulate(test::scenario_from(j), Registries{});
  const Program& p = out.program;
  std::vector<std::string> seq;
  double gather = 0, reduce = 0, layer_bwd = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const Op& o = p.ops[i];
    const std::string& l = p.labels[static_cast<size_t>(o.label)];
    if (o.rank != 0 || o.microbatch != 0) continue;
    if (l == "param all-gather bwd" || l == "grad reduce-scatter") seq.push_back(l == "grad reduce-scatter" ? "RS" : "AG");
    if (l == "param all-gather bwd") gather = time_to_seconds(o.duration);
    if (l == "grad reduce-scatter") reduce = time_to_seconds(o.duration);
    if (l == "mlp bwd" || l == "attention bwd") layer_bwd += time_to_seconds(o.duration);
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
  const auto pre = simulate(test::scenario_from(j), Registries{});
  j["parallel"]["fsdp"]["backward_prefetch"] = "post";
  const Scenario sc = test::scenario_from(j);
  EXPECT_EQ(sc.resolved()["parallel"]["fsdp"]["backward_prefetch"], "post");
  const auto post = simulate(sc, Registries{});
  const Program& p = post.program;
  const auto label = [&](size_t i) { return p.labels[static_cast<size_t>(p.ops[i].label)]; };
  std::int64_t checked = 0, gather_bound = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].rank != 0 || label(i) != "param all-gather bwd") continue;
    // The previous compute op of this rank, and the next one.
    std::int64_t before = -1, after = -1;
    for (size_t b = i; b-- > 0;)
      if (p.ops[b].rank == 0 && p.ops[b].stream == Stream::Compute && label(b) != "release gathered params" &&
          label(b) != "flat gradient concat (FSDP1)") {
        before = static_cast<std::int64_t>(b);
        break;
      }
    // The layer's backward queues on the compute stream behind the previous layer's gradient
    // concat and cast (side-stream kernels that take the SMs, priced on the compute stream).
    std::int64_t queued = -1;
    for (size_t a = i + 1; a < p.ops.size(); ++a) {
      if (p.ops[a].rank != 0 || p.ops[a].stream != Stream::Compute) continue;
      if (label(a) == "flat gradient concat (FSDP1)" || label(a) == "gradient cast and pre-divide (FSDP1)") {
        queued = static_cast<std::int64_t>(a);
        continue;
      }
      after = static_cast<std::int64_t>(a);
      break;
    }
    ASSERT_GE(before, 0);
    ASSERT_GE(after, 0);
    if (label(static_cast<size_t>(before)) != "attention bwd") continue;  // the first gather of a backward
    EXPECT_GE(post.timeline.start[i], post.timeline.end[static_cast<size_t>(before)]) << i;
    EXPECT_EQ(label(static_cast<size_t>(after)), "mlp bwd");
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

// A network whose every collective takes 1 ns per byte: op durations read back the bytes moved.
class BytesNetwork final : public NetworkModel {
 public:
  std::string name() const override { return "bytes"; }
  double time_s(const CollectiveSpec& c) const override { return c.bytes * 1e-9; }
  std::string algorithm(const CollectiveSpec&) const override { return "bytes"; }
};

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
    const std::string& l = p.labels[static_cast<size_t>(o.label)];
    if (o.rank != 0 || o.microbatch != 0) continue;
    const double s = time_to_seconds(o.duration);
    if (l == "param all-gather (one tensor)") {
      EXPECT_NEAR(s * 1e9, 2 * tensors[gathers % tensors.size()], 1e-3) << gathers;
      gathered_bytes += s * 1e9;
      ++gathers;
    } else if (l == "all-gather copy-back (one per rank)") {
      EXPECT_GT(s, copies_s);
      ++copy_backs;
    } else if (l == "grad reduce-scatter (one tensor)") {
      EXPECT_NEAR(s * 1e9, 2 * tensors[reduces % tensors.size()], 1e-3) << reduces;
      ++reduces;
    } else if (l == "reduce-scatter copy-in (one per rank)") {
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
    if (p.ops[i].rank != 0 || p.labels[static_cast<size_t>(p.ops[i].label)] != "param all-gather (one tensor)") continue;
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
  const CostModel cost(sc.profile, sc.training.dtype, kAttentionDefault, sc.cluster.gpus());
  std::size_t passes = 0;
  for (const Op& op : bf16.program.ops)
    if (op.rank == 0 && bf16.program.labels[static_cast<size_t>(op.label)] == "grad accumulate" &&
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
  const CostModel cost(sc.profile, sc.training.dtype, kAttentionDefault, sc.cluster.gpus());
  const ParamCount pc = count_params(sc.model);
  auto passes = [](const SimulationOutput& o) {
    std::vector<double> d;
    for (const Op& op : o.program.ops)
      if (op.rank == 0 && o.program.labels[static_cast<size_t>(op.label)] == "grad accumulate") d.push_back(time_to_seconds(op.duration));
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
    const CostModel cost(sc.profile, sc.training.dtype, kAttentionDefault, sc.cluster.gpus());
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
              CostModel(sgd.profile, sgd.training.dtype, kAttentionDefault, sgd.cluster.gpus()).optimizer_s(32 * count_params(sgd.model).total() / 8.0), 1e-9);
  j["training"]["optimizer_impl"] = "foreach";
  EXPECT_EQ(test::scenario_error(j), "test.json: /training/optimizer_impl: expected one of \"fused\", \"unfused\", got \"foreach\"");
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
  const CostModel cost(sc.profile, sc.training.dtype, kAttentionDefault, sc.cluster.gpus());
  const double layer = count_params(sc.model).per_layer;
  auto count = [](const SimulationOutput& o, const std::string& label, double want_s, Stream stream) {
    std::size_t n = 0;
    for (size_t i = 0; i < o.program.ops.size(); ++i) {
      const Op& op = o.program.ops[i];
      if (op.rank != 0 || o.program.labels[static_cast<size_t>(op.label)] != label) continue;
      EXPECT_NEAR(time_to_seconds(op.duration), want_s, 1e-9) << label;
      EXPECT_EQ(op.stream, stream) << label;
      ++n;
    }
    return n;
  };
  const auto v2 = test::simulate_with(sc, test::FreeNetwork{});
  const auto L = static_cast<std::size_t>(sc.model.layers);
  EXPECT_EQ(count(v2, "all-gather copy-out (FSDP2)", cost.memory_s(2 * 2 * layer), Stream::Compute), 8 * 2 * L);  // fwd and bwd gathers
  EXPECT_EQ(count(v2, "reduce-scatter copy-in (FSDP2)", cost.memory_s((2 + 4) * layer), Stream::Compute), 8 * L);
  EXPECT_EQ(count(v2, "flat gradient concat (FSDP1)", 0, Stream::Compute), 0u);
  j["parallel"]["fsdp"]["version"] = 1;
  const auto v1 = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  EXPECT_EQ(count(v1, "all-gather copy-out (FSDP2)", 0, Stream::Compute), 0u);
  EXPECT_EQ(count(v1, "reduce-scatter copy-in (FSDP2)", 0, Stream::Compute), 0u);
  EXPECT_EQ(count(v1, "flat gradient concat (FSDP1)", cost.memory_s(2 * 2 * layer), Stream::Compute), 8 * L);
  EXPECT_EQ(count(v1, "gradient cast and pre-divide (FSDP1)", cost.memory_s((2 + 4 + 2 * 4) * layer), Stream::Compute), 8 * L);
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
  EXPECT_EQ(count(pure, "gradient cast and pre-divide (FSDP1)", cost.memory_s(2 * 2 * layer), Stream::Compute), 8 * L);
}

TEST(Pipeline, DeepSpeedPipeBuffersKeepStageOutputsUntilTheirBackward) {
  // Megatron frees a stage output's data once it is sent; DeepSpeed's PipelineEngine keeps it in a
  // pipe buffer until that microbatch's backward. Under 1F1B stage 0 holds pp microbatches in
  // flight at its peak, so its peak grows by pp outputs of [s, b, h]; the last stage sends nothing.
  Json j = test::base_scenario();
  j["cluster"]["nodes"] = 4;
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 4}, {"schedule", "1f1b"}};
  j["training"]["global_batch"] = 16;
  const Scenario mg = test::scenario_from(j);
  const auto megatron = test::simulate_with(mg, test::FreeNetwork{});
  j["parallel"]["pipeline_impl"] = "deepspeed";
  const auto deepspeed = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  const double out_gib = static_cast<double>(mg.training.micro_batch * mg.training.seq_len * mg.model.hidden) * 2 / kGiB;
  const auto& a = megatron.result.ranks;
  const auto& b = deepspeed.result.ranks;
  ASSERT_EQ(a.size(), 4u);
  EXPECT_NEAR(b[0].peak_mem_gib - a[0].peak_mem_gib, 4 * out_gib, 1e-6);
  EXPECT_NEAR(b[3].peak_mem_gib, a[3].peak_mem_gib, 1e-9);
  EXPECT_DOUBLE_EQ(deepspeed.result.step_time_s, megatron.result.step_time_s);  // memory only
  j["parallel"]["pipeline_impl"] = "colossal";
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/pipeline_impl: expected one of \"megatron\", \"deepspeed\", got \"colossal\"");
}

TEST(Pipeline, DeepSpeedPipelineReducesGradientsAfterTheLastBackward) {
  // DeepSpeed's PipelineEngine disables the backward-hook reduction and reduces every gradient in
  // its ReduceGrads instruction after the step's last backward: with pp > 1 and
  // pipeline_impl "deepspeed", overlap_grad_reduce defaults to false, and no gradient collective of
  // a rank starts before that rank's last backward op ends. Megatron's buckets start during it.
  Json j = test::base_scenario();  // llama2-7b on 8 GPUs
  j["parallel"] = {{"dp", 4}, {"tp", 1}, {"pp", 2}, {"schedule", "1f1b"}, {"zero_stage", 1}};
  j["training"]["global_batch"] = 32;
  auto first_reduce_vs_last_backward = [](const SimulationOutput& out, std::int32_t rank) {
    const Program& p = out.program;
    Time last_bwd = 0, first_reduce = std::numeric_limits<Time>::max();
    for (size_t i = 0; i < p.ops.size(); ++i) {
      if (p.ops[i].rank != rank) continue;
      if (p.ops[i].phase == Phase::Backward) last_bwd = std::max(last_bwd, out.timeline.end[i]);
      const std::string& l = p.labels[static_cast<size_t>(p.ops[i].label)];
      if (l == "grad reduce-scatter" || l == "grad all-reduce") first_reduce = std::min(first_reduce, out.timeline.start[i]);
    }
    return std::pair{first_reduce, last_bwd};
  };
  const Scenario mg = test::scenario_from(j);
  EXPECT_TRUE(mg.parallel.overlap_grad_reduce);
  const auto megatron = simulate(mg, Registries{});
  j["parallel"]["pipeline_impl"] = "deepspeed";
  const Scenario ds = test::scenario_from(j);
  EXPECT_FALSE(ds.parallel.overlap_grad_reduce);
  EXPECT_EQ(ds.resolved()["parallel"]["overlap_grad_reduce"], false);
  const auto deepspeed = simulate(ds, Registries{});
  for (std::int32_t r = 0; r < 2; ++r) {
    const auto [reduce_ds, bwd_ds] = first_reduce_vs_last_backward(deepspeed, r);
    EXPECT_GE(reduce_ds, bwd_ds) << "stage " << r;
    const auto [reduce_mg, bwd_mg] = first_reduce_vs_last_backward(megatron, r);
    EXPECT_LT(reduce_mg, bwd_mg) << "stage " << r;
  }
  j["parallel"]["overlap_grad_reduce"] = true;  // an explicit setting wins
  EXPECT_TRUE(test::scenario_from(j).parallel.overlap_grad_reduce);
}

TEST(Pipeline, SyncedSendsBlockTheSendingStage) {
  // Megatron's batched p2p with batch_p2p_sync: after each send the stage waits for it
  // (torch.cuda.synchronize()), so its next forward or backward starts after the send ends. With
  // p2p_sync off the next computation may start while the send is in flight. 1F1B, pp 4, over
  // nodes (tp 8 fills a node) so the sends take visible time.
  Json j = test::base_scenario();
  j["cluster"]["nodes"] = 4;
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 4}, {"schedule", "1f1b"}};
  j["training"]["global_batch"] = 16;
  auto check = [](const SimulationOutput& o, bool synced) {
    const Program& p = o.program;
    std::size_t sends = 0, overlapped = 0;
    for (size_t i = 0; i < p.ops.size(); ++i) {
      if (p.ops[i].stream != Stream::P2P) continue;
      ++sends;
      for (size_t k = i + 1; k < p.ops.size(); ++k)  // the stage's next compute op
        if (p.ops[k].rank == p.ops[i].rank && p.ops[k].stream == Stream::Compute) {
          if (o.timeline.start[k] < o.timeline.end[i]) ++overlapped;
          break;
        }
    }
    EXPECT_GT(sends, 0u);
    if (synced) {
      EXPECT_EQ(overlapped, 0u);
    }
    return overlapped;
  };
  const auto synced = simulate(test::scenario_from(j), Registries{});
  check(synced, true);
  j["parallel"]["p2p_sync"] = false;
  const auto async = simulate(test::scenario_from(j), Registries{});
  EXPECT_GT(check(async, false), 0u);  // without the sync some computation overlaps a send
  EXPECT_GT(synced.result.step_time_s, async.result.step_time_s);
}

TEST(Fsdp, MixedPrecisionDtypesSetTheGatherAndReduceBytes) {
  // torchtitan: parameters gathered in bf16, gradients reduce-scattered in fp32 (2x the bytes);
  // 2023 Composer DEFAULT: parameters gathered in fp32.
  Json j = test::base_scenario();
  j["parallel"]["fsdp"] = {{"sharding", "full"}};
  auto bytes_of = [](const Json& s, const std::string& label) {
    const auto out = test::simulate_with(test::scenario_from(s), BytesNetwork{});
    for (size_t i = 0; i < out.program.ops.size(); ++i)
      if (out.program.labels[static_cast<size_t>(out.program.ops[i].label)] == label) return time_to_seconds(out.program.ops[i].duration) * 1e9;
    return 0.0;
  };
  const double ag = bytes_of(j, "param all-gather fwd"), rs = bytes_of(j, "grad reduce-scatter");
  const Scenario base = test::scenario_from(j);
  EXPECT_EQ(base.fsdp_param_dtype(), "bf16");
  EXPECT_EQ(base.fsdp_reduce_dtype(), "bf16");
  EXPECT_EQ(base.resolved()["parallel"]["fsdp"]["reduce_dtype"], "bf16");
  j["parallel"]["fsdp"]["reduce_dtype"] = "fp32";
  EXPECT_NEAR(bytes_of(j, "grad reduce-scatter") / rs, 2.0, 1e-6);
  EXPECT_NEAR(bytes_of(j, "param all-gather fwd") / ag, 1.0, 1e-6);
  j["parallel"]["fsdp"]["param_dtype"] = "fp32";
  EXPECT_NEAR(bytes_of(j, "param all-gather fwd") / ag, 2.0, 1e-6);
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
  const auto a = simulate(on_gpu, Registries{});
  const auto b = simulate(off, Registries{});
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
    const std::string& l = b.program.labels[static_cast<size_t>(o.label)];
    h2d += l == "param shard H2D (offload)";
    d2h += l == "grad shard D2H (offload)";
    ag += l.rfind("param all-gather", 0) == 0;
    rs += l == "grad reduce-scatter";
    if (l == "optimizer step (CPU)") opt = time_to_seconds(o.duration);
  }
  EXPECT_EQ(h2d, ag);
  EXPECT_EQ(d2h, rs);
  // CPU Adam: 28 bytes per parameter of the shard over this GPU's share of the node's DRAM.
  const double shard = count_params(off.model).total() / 8;
  const double bps = off.profile.host_memory_gbps.value * 1e9 * off.profile.host_optimizer_efficiency.value / 8;
  EXPECT_NEAR(opt, 28 * shard / bps, 1e-9 * opt + 1e-12);
  EXPECT_GT(b.result.step_time_s, a.result.step_time_s + 0.9 * opt);
}

TEST(Recompute, FullRecomputeTradesTimeForMemory) {
  Json j = test::base_scenario();
  const auto none = simulate(test::scenario_from(j), Registries{});
  j["parallel"]["recompute"] = "full";
  const auto full = simulate(test::scenario_from(j), Registries{});
  EXPECT_LT(full.result.peak_mem_gib, none.result.peak_mem_gib);
  EXPECT_GT(full.result.step_time_s, none.result.step_time_s);
  // Reported hardware FLOPs count the replayed forward, MFU does not (Megatron's convention): the
  // step runs forward + backward (3 forward's worth) plus one more forward, 4/3 of the model FLOPs.
  EXPECT_NEAR(full.result.hfu_reported / full.result.mfu, 4.0 / 3.0, 0.02);
  // Executed FLOPs: the replay adds the same share of the executed count.
  EXPECT_NEAR(full.result.hfu / none.result.hfu * full.result.step_time_s / none.result.step_time_s, 4.0 / 3.0, 0.02);
}

TEST(AttentionKernels, StepChangesByTheAttentionKernelsTimeOnly) {
  // Free communication, DDP: the step is pure compute, so switching the attention kernel moves it
  // by exactly (layers x microbatches) x sum over attention kernels of
  // flops / (peak x efficiency x s / (s + causal overhead) x sustained clock ratio).
  Json j = test::base_scenario();
  const Scenario flash = test::scenario_from(j);
  const double base = test::simulate_with(flash, test::FreeNetwork{}).result.step_time_s;
  const LayerGraph g = build_layer_graph(flash.model, layer_shape(flash));
  const double peak = flash.profile.peak_flops("bf16");
  const double per_mb_layers = static_cast<double>(flash.model.layers) * static_cast<double>(flash.microbatches());
  for (const std::string kernel : {"triton", "flash3"}) {
    j["training"]["attention_kernel"] = kernel;
    const Scenario sc = test::scenario_from(j);
    // Causal attention over the whole sequence (cp = 1) at efficiency x s / (s + causal overhead).
    const auto seconds = [&](const Profile::AttentionKernel& a, const Kernel& k) {
      EXPECT_EQ(k.cp, 1);
      const double e = k.backward ? a.bwd_efficiency.value : a.fwd_efficiency.value;
      const double c = k.backward ? a.bwd_causal_overhead.value : a.fwd_causal_overhead.value;
      const double s = static_cast<double>(k.seq);
      return slowest_gpu_pace(sc.profile, sc.cluster.gpus()) * k.flops / (peak * sc.profile.sustained_clock_ratio.value * e * s / (s + c));
    };
    double delta = 0;
    for (const Block* b : {&g.attn_fwd, &g.attn_bwd})
      for (const auto& k : b->kernels)
        if (k.kind == KernelKind::Attention)
          delta += seconds(sc.profile.attention_kernel(kernel), k) - seconds(sc.profile.attention, k);
    const double step = test::simulate_with(sc, test::FreeNetwork{}).result.step_time_s;
    EXPECT_NEAR(step - base, per_mb_layers * delta, 1e-9 * base) << kernel;
  }
}

TEST(Recompute, BlockMethodRecomputesTheFirstNLayersOfEachChunk) {
  // Megatron's --recompute-method block --recompute-num-layers N: N layers of each chunk replay
  // their forward; the rest keep their activations. With free communication the step grows
  // linearly in N from "none" to "full", and the peak falls by N x (kept - checkpointed) bytes.
  Json j = test::base_scenario();
  j["parallel"]["recompute"] = "none";
  const auto none = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  j["parallel"]["recompute"] = "full";
  const Scenario full_sc = test::scenario_from(j);
  const auto full = test::simulate_with(full_sc, test::FreeNetwork{});
  const double layers = static_cast<double>(full_sc.model.layers);
  const LayerShape sh = layer_shape(full_sc);
  const double kept = activation_bytes(full_sc.model, sh, "none").layer_stored;
  const double ckpt = activation_bytes(full_sc.model, sh, "full").layer_stored;
  for (std::int64_t n : {0, 8, 16}) {
    j["parallel"]["recompute_num_layers"] = n;
    const auto part = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
    const double frac = static_cast<double>(n) / layers;
    EXPECT_NEAR(part.result.step_time_s, none.result.step_time_s + frac * (full.result.step_time_s - none.result.step_time_s),
                1e-9 * full.result.step_time_s) << n;
    EXPECT_NEAR(part.result.peak_mem_gib, none.result.peak_mem_gib - static_cast<double>(n) * (kept - ckpt) / kGiB, 1e-3) << n;
  }
  j["parallel"]["recompute_num_layers"] = 32;  // every layer: the same as plain full recompute
  const auto all = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  EXPECT_DOUBLE_EQ(all.result.step_time_s, full.result.step_time_s);
  EXPECT_DOUBLE_EQ(all.result.peak_mem_gib, full.result.peak_mem_gib);
}

TEST(Recompute, OpLevelSacReplaysEveryOtherMatmulAndTheElementwiseOps) {
  // torchtitan's op-level selective AC on Llama 2 7B (SwiGLU, MHA): per layer the replay is wk
  // (a third of the fused QKV GEMM), wo, w3 (half of the fused gate/up GEMM) and every elementwise
  // kernel; the step grows by exactly that, and the stored activations are the layer input,
  // q, v, the attention output and log-sum-exp, w1's and w2's outputs.
  Json j = test::base_scenario();
  const Scenario none_sc = test::scenario_from(j);
  const double base = test::simulate_with(none_sc, test::FreeNetwork{}).result.step_time_s;
  j["parallel"]["recompute"] = "selective_op";
  const Scenario sac = test::scenario_from(j);
  const auto out = test::simulate_with(sac, test::FreeNetwork{});
  const LayerGraph g = build_layer_graph(sac.model, layer_shape(sac));
  const CostModel cost(sac.profile, sac.training.dtype, kAttentionDefault, sac.cluster.gpus());
  double replay = 0;
  for (const Block* b : {&g.attn_fwd, &g.mlp_fwd})
    for (const auto& k : b->kernels) {
      if (k.kind == KernelKind::Memory) replay += kernel_seconds(cost, k);
      if (k.name == "qkv") replay += cost.gemm_s(k.m, k.n, k.k) / 3;  // h = kv: wk is a third
      if (k.name == "attn_out") replay += cost.gemm_s(k.m, k.n, k.k);
      if (k.name == "mlp_gate_up") replay += cost.gemm_s(k.m, k.n, k.k) / 2;
    }
  const double per_step = static_cast<double>(sac.model.layers) * static_cast<double>(sac.microbatches());
  EXPECT_NEAR(out.result.step_time_s - base, per_step * replay, 1e-9 * base);
  // Stored bytes per layer (t = 1, no dropout): x, q, attention out, v, w2 out (sbh each, bf16)
  // plus w1 out (sbf) and the fp32 log-sum-exp per head and query.
  const LayerShape sh = layer_shape(sac);
  const double sbh = static_cast<double>(sh.seq_len) * static_cast<double>(sh.micro_batch) * static_cast<double>(sac.model.hidden);
  const double sbf = sbh / static_cast<double>(sac.model.hidden) * static_cast<double>(sac.model.ffn_hidden);
  const double lse = 4.0 * static_cast<double>(sac.model.heads) * static_cast<double>(sh.seq_len) * static_cast<double>(sh.micro_batch);
  EXPECT_DOUBLE_EQ(activation_bytes(sac.model, sh, "selective_op").layer_stored, 2 * (5 * sbh + sbf) + lse);
  // Between no recompute and full recompute in memory, and in time.
  j["parallel"]["recompute"] = "full";
  const auto full = test::simulate_with(test::scenario_from(j), test::FreeNetwork{});
  const auto none = test::simulate_with(none_sc, test::FreeNetwork{});
  EXPECT_LT(out.result.peak_mem_gib, none.result.peak_mem_gib);
  EXPECT_GT(out.result.peak_mem_gib, full.result.peak_mem_gib);
  EXPECT_LT(out.result.step_time_s, full.result.step_time_s);
  EXPECT_GT(out.result.hfu_reported, out.result.mfu);  // the replayed matmuls count as hardware FLOPs
}

// Llama 3.1 405B on H100 nodes, a 16-sequence batch of 8k: the uneven-pipeline tests' base.
Json llama405b_h100(int nodes) {
  Json j = test::base_scenario();
  j["model"] = "llama3.1-405b";
  j["cluster"] = {{"gpu", "h100-sxm5-80g"}, {"nodes", nodes}, {"gpus_per_node", 8}};
  j["training"] = {{"global_batch", 16}, {"micro_batch", 1}, {"seq_len", 8192}};
  return j;
}

TEST(UnevenPipeline, StageLayersSetPerStageWork) {
  Json j = llama405b_h100(16);
  std::vector<int> layers(16, 8);
  layers.front() = 7;
  layers.back() = 7;
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 16}, {"schedule", "1f1b"}, {"stage_layers", layers}, {"sequence_parallel", true}};
  const auto out = simulate(test::scenario_from(j), Registries{});
  ASSERT_EQ(out.result.ranks.size(), 16u);
  // Stage 1 (8 layers) computes more than stage 0 (7 layers + embedding).
  EXPECT_GT(out.result.ranks[1].compute_s, out.result.ranks[0].compute_s);
}

TEST(UnevenPipeline, InterleavedChunksCanBeUnevenPerVirtualStage) {
  // Llama 3 405B's layout: 126 layers, interleaved, the first and last virtual stages one layer
  // short (Megatron-Core's --decoder-first/last-pipeline-num-layers with VPP).
  Json j = llama405b_h100(8);
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 8}, {"vpp", 2}, {"schedule", "interleaved"}, {"sequence_parallel", true}};
  const test::FreeNetwork free;
  auto run = [&](const Json& layers) {
    Json k = j;
    if (!layers.is_null()) k["parallel"]["stage_layers"] = layers;
    return test::simulate_with(test::scenario_from(k), free);
  };
  // 128 layers so that the even split exists: per stage (pp entries), per virtual stage
  // (pp*vpp entries) and no list give the same step, bit for bit.
  j["model"] = {{"name", "405b-128"}, {"layers", 128}, {"hidden", 16384}, {"heads", 128}, {"kv_heads", 8}, {"ffn_hidden", 53248},
                {"vocab", 128256}, {"activation", "swiglu"}, {"position_embedding", "rope"}, {"norm", "rmsnorm"}, {"bias", false},
                {"dropout", false}};
  const auto even = run(Json());
  const auto per_stage = run(Json(std::vector<int>(8, 16)));
  const auto per_chunk = run(Json(std::vector<int>(16, 8)));
  EXPECT_EQ(even.result.step_time_s, per_stage.result.step_time_s);
  EXPECT_EQ(even.result.step_time_s, per_chunk.result.step_time_s);
  EXPECT_EQ(even.result.peak_mem_gib, per_chunk.result.peak_mem_gib);
  // Move one layer from the first virtual stage (chunk 0 of stage 0) to chunk 1 of stage 0
  // (virtual stage 8): stage 0 does the same work, in a different order; and one layer from the
  // last virtual stage (chunk 1 of stage 7) to stage 3's chunk 1: stage 7 computes one layer less.
  std::vector<int> moved(16, 8);
  moved[0] = 7;
  moved[8] = 9;
  moved[15] = 7;
  moved[11] = 9;
  const auto uneven = run(Json(moved));
  const auto& r0 = uneven.result.ranks;
  const auto& e0 = even.result.ranks;
  EXPECT_NEAR(r0[0].compute_s / e0[0].compute_s, 1.0, 1e-9);
  EXPECT_LT(r0[7].compute_s, e0[7].compute_s);
  EXPECT_GT(r0[3].compute_s, e0[3].compute_s);
  // One layer's forward and backward moved from stage 7 to stage 3 (both stages without the
  // embedding or the output layer's work in the moved layer): equal and opposite changes.
  EXPECT_NEAR(e0[7].compute_s - r0[7].compute_s, r0[3].compute_s - e0[3].compute_s, 1e-9 * e0[3].compute_s);
}

TEST(UnevenPipeline, EmbeddingAndLossTakeALayersSlot) {
  // Megatron's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split with
  // one slot per virtual stage: the first virtual stage holds only the embedding and the last only
  // the output layer and loss (126 + 2 slots over pp 8 x vpp 16 = 128 virtual stages).
  Json j = llama405b_h100(8);
  std::vector<int> layers(128, 1);
  layers.front() = 0;
  layers.back() = 0;
  j["parallel"] = {{"dp", 1}, {"tp", 8}, {"pp", 8}, {"vpp", 16}, {"schedule", "interleaved"}, {"sequence_parallel", true},
                   {"stage_layers", layers}};
  const test::FreeNetwork free;
  const Scenario sc = test::scenario_from(j);
  EXPECT_EQ(sc.layers_per_stage(), (std::vector<std::int64_t>{15, 16, 16, 16, 16, 16, 16, 15}));
  const auto out = test::simulate_with(sc, free);
  const auto& r = out.result.ranks;
  ASSERT_EQ(r.size(), 8u);
  // Stage 0 runs 15 layers and the embedding, stage 7 15 layers and the output layer with its loss
  // (three GEMMs of a quarter of a layer's size each at tp 8, plus the loss), stage 1 16 layers.
  EXPECT_LT(r[0].compute_s, r[7].compute_s);
  EXPECT_LT(r[7].compute_s, r[1].compute_s);
  EXPECT_GT(out.result.step_time_s, 0);
  EXPECT_GT(out.result.bubble_fraction, 0);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

// Examples double as tests: every shipped scenario loads, simulates, and reports sane figures.
TEST(Examples, EveryScenarioRuns) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::data_dir() + "/scenarios")) {
    if (e.path().extension() != ".json") continue;
    ++n;
    const Scenario sc = load_scenario(e.path().string(), test::data_dir());
    const auto out = simulate(sc, Registries{});
    EXPECT_GT(out.result.step_time_s, 0) << e.path();
    EXPECT_GT(out.result.mfu, 0.05) << e.path();
    EXPECT_LT(out.result.mfu, out.result.hfu_reported + 1e-12) << e.path();
    // Executed FLOPs never beat the profile's sustained ceiling (issue 40, item 2).
    EXPECT_LE(out.result.hfu, sc.profile.sustained_clock_ratio.value) << e.path();
    EXPECT_TRUE(out.result.fits_in_memory) << e.path() << " peak " << out.result.peak_mem_gib;
  }
  EXPECT_GE(n, 8);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

// DP gradient all-reduce and PP activation transfers across nodes share the NICs: in a PP x DP job
// across nodes some transfers take longer than they would alone.
TEST(Contention, DataParallelAndPipelineTrafficShareNics) {
  Json j = test::base_scenario();
  j["model"] = "llama2-13b";
  j["cluster"] = {{"gpu", "a100-sxm4-80g"}, {"nodes", 8}, {"gpus_per_node", 8}};
  j["training"] = {{"global_batch", 64}, {"micro_batch", 1}, {"seq_len", 4096}};
  j["parallel"] = {{"dp", 8}, {"tp", 2}, {"pp", 4}, {"schedule", "1f1b"}, {"bucket_mb", 40}};
  const auto out = simulate(test::scenario_from(j), Registries{});
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

// Interleaved 1F1B with data parallelism: each stage all-reduces the gradients of its parameters
// once per step, its chunks' layers and, with the chunk that holds them, the embedding (first
// virtual stage) and the output layer (last): 2 bytes per parameter, whatever the number of chunks.
TEST(Schedule, InterleavedStagesReduceEachGradientOnce) {
  Json j = test::base_scenario();
  j["model"] = "llama3-8b";
  j["training"] = {{"global_batch", 16}, {"micro_batch", 1}, {"seq_len", 2048}};
  for (const int vpp : {1, 2, 4}) {
    j["parallel"] = {{"dp", 4}, {"tp", 1}, {"pp", 2}, {"vpp", vpp}, {"schedule", vpp > 1 ? "interleaved" : "1f1b"}, {"zero_stage", 0}};
    const Scenario sc = test::scenario_from(j);
    const SimulationOutput out = test::simulate_with(sc, BytesNetwork{});
    std::vector<double> reduced(2, 0.0);
    for (const Op& o : out.program.ops)
      if (out.program.labels[static_cast<size_t>(o.label)] == "grad all-reduce")
        reduced[static_cast<size_t>(o.rank)] += time_to_seconds(o.duration) * 1e9;
    const ParamCount pc = count_params(sc.model);
    EXPECT_NEAR(reduced[0], 2 * (16 * pc.per_layer + pc.embedding), 64.0) << "vpp " << vpp;
    EXPECT_NEAR(reduced[1], 2 * (16 * pc.per_layer + pc.head), 64.0) << "vpp " << vpp;
  }
}

// BigScience's head-count pair on A100 80GB (train/tr11-176B-ml/chronicles-prequel.md, 2022-02-26,
// Megatron-DeepSpeed with unfused attention): hidden 13824, 78 layers, dp 8 x tp 4 x pp 12, micro
// batch 2, measured 147.41 s per step with 128 heads (head dim 108: 216 bytes, off 16) and 103.51 s
// with 64 (head dim 216, aligned), 1.424x. The A100's attention_gemm_unaligned_ratio is fitted to
// another pair of the same document (hidden 14400 against 13824, 2022-02-20), so this one is held
// out: the predicted ratio is within 5 % of the measured one, where the general unaligned ratio
// (an H100 large-GEMM measurement) gives under 1.1x. Only the batched attention GEMMs change:
// with flash attention the two head counts cost within 5 % of each other.
TEST(UnalignedHeads, BloomHeadCountPairIsPredictedOutOfSample) {
  const std::string file = test::data_dir() + "/scenarios/measured/pub-bloom-prequel-0226-h13824l78a128-dp8tp4pp12mbs2gbs2048.json";
  const Json measured = read_json_file(file);
  const auto step = [&](std::int64_t heads, bool general_ratio, bool flash) {
    Json j = measured["scenario"];
    j["model"]["heads"] = j["model"]["kv_heads"] = heads;
    if (flash) j["training"]["flash_attention"] = true;
    Scenario sc = parse_scenario(j, file, test::data_dir());
    if (general_ratio) sc.profile.attention_gemm_unaligned_ratio = sc.profile.gemm_unaligned_ratio;
    static const Registries reg;
    return simulate(sc, reg).result.step_time_s;
  };
  const double measured_ratio = 147.41 / 103.51;
  EXPECT_EQ(measured["measured"]["step_time_s"].get<double>(), 147.41);
  EXPECT_NEAR(step(128, false, false) / step(64, false, false) / measured_ratio, 1.0, 0.05);
  EXPECT_LT(step(128, true, false) / step(64, true, false), 1.1);
  EXPECT_NEAR(step(128, false, true) / step(64, false, true), 1.0, 0.05);
}

// The slowest GPU paces a synchronous step: with free communication a data-parallel step is its
// kernels' time, so it grows by exactly slowest_gpu_pace, which grows with the job's GPU count.
TEST(SlowestGpu, StepGrowsByThePaceOfTheJobsSlowestGpu) {
  Json j = test::base_scenario();  // llama2-7b, dp 8 on one H100 node
  const Scenario sc = test::scenario_from(j);
  Scenario alike = sc;
  alike.profile.gpu_speed_spread.value = 0;
  const double paced = test::simulate_with(sc, test::FreeNetwork{}).result.step_time_s;
  const double plain = test::simulate_with(alike, test::FreeNetwork{}).result.step_time_s;
  EXPECT_GT(sc.profile.gpu_speed_spread.value, 0);
  EXPECT_NEAR(paced / plain, slowest_gpu_pace(sc.profile, 8), 1e-6);
  j["cluster"]["nodes"] = 8;
  j["parallel"]["dp"] = 64;
  j["training"]["global_batch"] = 512;  // the same 8 microbatches per GPU
  const Scenario big = test::scenario_from(j);
  const double paced64 = test::simulate_with(big, test::FreeNetwork{}).result.step_time_s;
  EXPECT_NEAR(paced64 / plain, slowest_gpu_pace(sc.profile, 64), 1e-6);
  EXPECT_GT(paced64, paced);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

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
  EXPECT_EQ(ring_sc.parallel.cp_impl, "ring");
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
    const std::string& name = p.labels[static_cast<size_t>(o.label)];
    if (name == "cp kv all-gather" || name == "cp dkv reduce-scatter") {
      EXPECT_EQ(o.stream, Stream::Compute);
      const bool gather = name == "cp kv all-gather";
      EXPECT_NEAR(time_to_seconds(o.duration), gather ? gather_s : scatter_s, 1e-9);
      (gather ? gathers : scatters)++;
      if (gather)  // the next op of the rank's compute stream is the attention, after the gather
        for (size_t k = i + 1; k < p.ops.size(); ++k)
          if (p.ops[k].rank == 0 && p.ops[k].stream == Stream::Compute) {
            EXPECT_EQ(p.labels[static_cast<size_t>(p.ops[k].label)], "attention fwd");
            EXPECT_GE(ag.timeline.start[k], ag.timeline.end[i]);
            break;
          }
    }
    EXPECT_NE(name, "cp kv ring");
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
  const double extra = activation_bytes(ag_sc.model, sh, "none").layer_stored - activation_bytes(ag_sc.model, ring_sh, "none").layer_stored;
  EXPECT_NEAR(extra, 7.0 * kv_local, 1e-6 * kv_local);
  EXPECT_GT(ag.result.ranks[0].peak_mem_gib, ring.result.ranks[0].peak_mem_gib);

  // Full recompute replays the gather before the layer's forward replay.
  j["parallel"]["recompute"] = "full";
  const auto ag_full = simulate(test::scenario_from(j), Registries{});
  j["parallel"]["cp_impl"] = "ring";
  const auto ring_full = simulate(test::scenario_from(j), Registries{});
  const auto replay = [](const SimulationOutput& o) {
    double s = 0;
    for (const Op& op : o.program.ops)
      if (op.rank == 0 && o.program.labels[static_cast<size_t>(op.label)] == "recompute fwd") s += time_to_seconds(op.duration);
    return s;
  };
  EXPECT_NEAR(replay(ag_full) - replay(ring_full), static_cast<double>(layer_passes) * gather_s, 1e-6);

  j["parallel"]["cp_impl"] = "ulysses";
  EXPECT_EQ(test::scenario_error(j), "test.json: /parallel/cp_impl: expected one of \"ring\", \"allgather\", got \"ulysses\"");
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

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
      if (op.rank == 0 && o.program.labels[static_cast<size_t>(op.label)] == "grad reduce-scatter") per_mb[op.microbatch]++;
    return per_mb;
  };
  j["parallel"]["zero_stage"] = 1;
  const auto z1 = simulate(test::scenario_from(j), Registries{});
  const auto r1 = reduces(z1);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(r1.begin()->first, m - 1);  // the last microbatch's backward
  const int buckets = r1.begin()->second;
  EXPECT_GT(buckets, 0);

  j["parallel"]["zero_stage"] = 2;
  const auto z2 = simulate(test::scenario_from(j), Registries{});
  const auto r2 = reduces(z2);
  ASSERT_EQ(r2.size(), static_cast<size_t>(m));
  for (const auto& [mb, n] : r2) EXPECT_EQ(n, buckets) << "microbatch " << mb;
  const auto rs_seconds = [](const SimulationOutput& o) {
    double sec = 0;
    for (const Op& op : o.program.ops)
      if (op.rank == 0 && o.program.labels[static_cast<size_t>(op.label)] == "grad reduce-scatter") sec += time_to_seconds(op.duration);
    return sec;
  };
  EXPECT_NEAR(rs_seconds(z2), m * rs_seconds(z1), 1e-9 * m * rs_seconds(z1));
  EXPECT_GT(z2.result.step_time_s, z1.result.step_time_s);
  EXPECT_LT(z2.result.ranks[0].peak_mem_gib, z1.result.ranks[0].peak_mem_gib);  // the gradients sharded

  j["parallel"]["zero_stage"] = 0;
  j["parallel"]["fsdp"] = {{"sharding", "grad_op"}};
  EXPECT_EQ(reduces(simulate(test::scenario_from(j), Registries{})).size(), static_cast<size_t>(m));
}

}  // namespace
}  // namespace parasim
