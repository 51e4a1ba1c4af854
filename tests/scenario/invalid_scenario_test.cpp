// Every validator has an invalid input with the exact message it must produce.
#include <gtest/gtest.h>

#include <fstream>

#include "../test_util.h"

namespace parasim {
namespace {

struct Case {
  const char* name;
  std::function<void(Json&)> mutate;
  std::string expected;
};


TEST(InvalidScenario, EachProducesItsExactError) {
  const std::vector<Case> cases = {
      {"deepspeed optimizer without ZeRO-1/2", [](Json& j) { j["parallel"]["zero_impl"] = "deepspeed"; },
       "test.json: /parallel/zero_impl: \"deepspeed\" describes DeepSpeed's ZeRO stage 1/2 optimizer, but zero_stage is 0"},
      {"unknown zero_impl", [](Json& j) { j["parallel"]["zero_impl"] = "fairscale"; },
       "test.json: /parallel/zero_impl: expected one of \"megatron\", \"deepspeed\", \"deepspeed-bf16\", \"deepspeed-0.3\", got \"fairscale\""},
      {"DeepSpeed 0.3 ZeRO-3 without ZeRO-3", [](Json& j) {
         j["parallel"]["zero_impl"] = "deepspeed-0.3";
         j["parallel"]["zero_stage"] = 1;
       },
       "test.json: /parallel/zero_impl: \"deepspeed-0.3\" describes DeepSpeed 0.3's ZeRO-3 parameter partitioning, but zero_stage is 1"},
      {"DeepSpeed pipeline with ZeRO-2", [](Json& j) {
         j["parallel"] = {{"dp", 4}, {"pp", 2}, {"schedule", "1f1b"}, {"pipeline_impl", "deepspeed"}, {"zero_stage", 2}};
       },
       "test.json: /parallel/pipeline_impl: DeepSpeed's PipelineEngine runs ZeRO stage 0 or 1 only (deepspeed/runtime/pipe/engine.py "
       "asserts zero_optimization_stage() < 2: \"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\"), but zero_stage is 2"},
      {"negative MoE capacity factor", [](Json& j) {
         j["model"] = "qwen3-30b-a3b";
         j["training"]["moe_capacity_factor"] = -1;
       },
       "test.json: /training/moe_capacity_factor: expected a number > 0 and at most 1e6, got -1 (a capacity of 0 drops every token; leave the key out "
       "for dropless)"},
      {"misspelt key", [](Json& j) { j["parallel"]["scheudle"] = "ddp"; },
       "test.json: /parallel/scheudle: unknown key; did you mean \"schedule\"?"},
      {"unknown top-level key", [](Json& j) { j["clustr"] = 1; },
       "test.json: /clustr: unknown key; did you mean \"cluster\"?"},
      {"wrong schema", [](Json& j) { j["schema"] = "parasim.scenario/2"; },
       "test.json: /schema: expected \"parasim.scenario/1\", got \"parasim.scenario/2\""},
      {"missing training", [](Json& j) { j.erase("training"); }, "test.json: /training: missing required key"},
      {"wrong type", [](Json& j) { j["parallel"]["dp"] = "8"; },
       "test.json: /parallel/dp: expected an integer in [1, 16777216], got a string"},
      {"negative batch", [](Json& j) { j["training"]["global_batch"] = -4; },
       "test.json: /training/global_batch: expected an integer in [1, 1099511627776], got -4"},
      {"unknown schedule", [](Json& j) { j["parallel"]["schedule"] = "1f1f"; },
       "test.json: /parallel/schedule: expected one of \"dataparallel\", \"ddp\", \"naive\", \"gpipe\", \"1f1b\", \"interleaved\", \"zb-h1\", got \"1f1f\"; did you mean \"1f1b\"?"},
      {"gpu count mismatch", [](Json& j) { j["parallel"]["dp"] = 4; },
       "test.json: /parallel: dp*tp*pp*cp = 4*1*1*1 = 4 but the cluster has 1*8 = 8 GPUs"},
      {"batch not divisible", [](Json& j) { j["training"]["global_batch"] = 60; },
       "test.json: /training/global_batch: global_batch 60 is not divisible by micro_batch*dp = 1*8 = 8"},
      {"layers not divisible", [](Json& j) { j["parallel"] = {{"dp", 1}, {"pp", 8}, {"schedule", "1f1b"}}; j["model"] = "llama3.1-405b"; },
       "test.json: /parallel/pp: model layers (126) are not divisible among pp*vpp = 8 chunks; give parallel.stage_layers for an uneven split"},
      {"stage_layers wrong sum", [](Json& j) { j["parallel"] = {{"dp", 1}, {"pp", 8}, {"schedule", "1f1b"}, {"stage_layers", {4, 4, 4, 4, 4, 4, 4, 3}}}; },
       "test.json: /parallel/stage_layers: entries sum to 31 but the model has 32 layers"},
      {"stage_layers empty", [](Json& j) { j["parallel"] = {{"dp", 1}, {"pp", 8}, {"schedule", "1f1b"}, {"stage_layers", Json::array()}}; },
       "test.json: /parallel/stage_layers: expected the layers of each pipeline stage (leave stage_layers out for an even split)"},
      {"outputs.trace empty", [](Json& j) { j["outputs"] = {{"trace", ""}}; },
       "test.json: /outputs/trace: expected a file name for the step's trace (leave outputs.trace out for none)"},
      {"stage_layers wrong length", [](Json& j) { j["parallel"] = {{"dp", 2}, {"pp", 4}, {"schedule", "1f1b"}, {"stage_layers", {16, 16}}}; },
       "test.json: /parallel/stage_layers: expected 4 entries (one per pipeline stage), got 2"},
      {"layout product past int64", [](Json& j) {
         j["parallel"] = {{"dp", 1 << 24}, {"tp", 1 << 16}, {"pp", 1 << 16}, {"cp", 1 << 16}, {"schedule", "1f1b"}};
       },
       "test.json: /parallel: dp*tp*pp*cp = 16777216*65536*65536*65536 = 4722366482869645213696 but the cluster has 1*8 = 8 GPUs"},
      {"too many microbatches", [](Json& j) { j["training"]["global_batch"] = 8 * 65537; },
       "test.json: /training/global_batch: global_batch / (micro_batch * dp) = 65537 microbatches per pipeline step; parasim "
       "replays each one and simulates at most 65536 (raise micro_batch, or simulate a smaller global_batch)"},
      {"stage_layers wrong length with vpp", [](Json& j) {
         j["parallel"] = {{"dp", 2}, {"pp", 4}, {"vpp", 2}, {"schedule", "interleaved"}, {"stage_layers", {16, 16}}};
       },
       "test.json: /parallel/stage_layers: expected 4 entries (one per pipeline stage) or 8 (one per virtual stage, pp*vpp), got 2"},
      {"stage_layers per stage not divisible by vpp", [](Json& j) {
         j["parallel"] = {{"dp", 2}, {"pp", 4}, {"vpp", 2}, {"schedule", "interleaved"}, {"stage_layers", {7, 9, 8, 8}}};
       },
       "test.json: /parallel/stage_layers/0: must be divisible by vpp (2), or list 8 entries, one per virtual stage"},
      {"heads not divisible by tp", [](Json& j) { j["parallel"] = {{"dp", 1}, {"tp", 8}}; j["model"] = "megatron-gpt-1.7b"; j["training"]["global_batch"] = 8; j["model"] = Json{{"name", "odd"}, {"layers", 2}, {"hidden", 1200}, {"heads", 12}, {"vocab", 1000}}; },
       "test.json: /parallel/tp: model heads (12) must be divisible by tp (8)"},
      {"unknown model", [](Json& j) { j["model"] = "lama2-7b"; },
       "test.json: /model: unknown model \"lama2-7b\"; did you mean \"llama2-7b\"? Zoo: bloom-176b, deepseek-v2, deepseek-v2-lite, deepseek-v3, gpt-oss-120b, gpt-oss-20b, gpt3-175b, kimi-k2, llama2-13b, "
       "llama2-70b, llama2-7b, llama3-70b, llama3-8b, llama3.1-405b, llama3.1-70b, llama3.1-8b, megatron-gpt-1.7b, "
       "megatron-gpt-1008b, megatron-gpt-145.6b, megatron-gpt-18.4b, megatron-gpt-3.6b, megatron-gpt-310.1b, "
       "megatron-gpt-39.1b, megatron-gpt-529.6b, megatron-gpt-7.5b, megatron-gpt-76.1b, mixtral-8x22b, mixtral-8x7b, mpt-30b, mpt-7b, nemotron-3-nano-30b-a3b, nemotron-h-56b, nemotron-h-8b, qwen3-235b-a22b, qwen3-30b-a3b"},
      {"unknown gpu", [](Json& j) { j["cluster"]["gpu"] = "h100-sxm-80g"; },
       "test.json: /cluster/gpu: unknown GPU profile \"h100-sxm-80g\"; did you mean \"h100-sxm5-80g\"? Profiles: a100-sxm4-40g, "
       "a100-sxm4-80g, b200-sxm-180g, b300-sxm-288g, gb200-nvl72-186g, gb300-nvl72-288g, h100-sxm-96g-hbm2e-500w, h100-sxm5-80g, h200-sxm-141g, v100-sxm3-32g"},
      {"pipeline schedule without pp", [](Json& j) { j["parallel"]["schedule"] = "1f1b"; },
       "test.json: /parallel/schedule: pipeline schedule \"1f1b\" needs pp > 1; with pp = 1 use \"ddp\" or \"dataparallel\""},
      {"dp schedule with pp", [](Json& j) { j["parallel"] = {{"dp", 2}, {"pp", 4}, {"schedule", "ddp"}}; },
       "test.json: /parallel/schedule: with pp = 4 the schedule must be a pipeline schedule (naive, gpipe, 1f1b, interleaved, zb-h1), got \"ddp\""},
      {"interleaved without vpp", [](Json& j) { j["parallel"] = {{"dp", 2}, {"pp", 4}, {"schedule", "interleaved"}}; },
       "test.json: /parallel/vpp: the interleaved schedule needs vpp >= 2"},
      {"sequence parallel without tp", [](Json& j) { j["parallel"]["sequence_parallel"] = true; },
       "test.json: /parallel/sequence_parallel: sequence_parallel needs tp > 1"},
      {"sequence parallel with a sequence tp does not divide", [](Json& j) {
         j["parallel"] = {{"dp", 1}, {"tp", 8}, {"sequence_parallel", true}};
         j["training"]["seq_len"] = 1020;
       },
       "test.json: /parallel/sequence_parallel: sequence parallel splits each sequence over the tp ranks: seq_len / cp (1020) must be "
       "divisible by tp (8)"},
      {"fsdp and zero", [](Json& j) { j["parallel"]["zero_stage"] = 2; j["parallel"]["fsdp"] = {{"sharding", "full"}}; },
       "test.json: /parallel/zero_stage: set either fsdp or zero_stage, not both"},
      {"naive with microbatches", [](Json& j) { j["parallel"] = {{"dp", 2}, {"pp", 4}, {"schedule", "naive"}}; },
       "test.json: /training/micro_batch: the naive schedule does not split the batch: micro_batch must be global_batch/dp = 32 (use gpipe or 1f1b for microbatching)"},
      {"dataparallel across nodes", [](Json& j) { j["cluster"]["nodes"] = 2; j["parallel"] = {{"dp", 16}, {"schedule", "dataparallel"}}; },
       "test.json: /parallel/schedule: \"dataparallel\" (single-process torch.nn.DataParallel) runs on one node with tp = cp = 1"},
      {"bad recompute", [](Json& j) { j["parallel"]["recompute"] = "partial"; },
       "test.json: /parallel/recompute: expected one of \"none\", \"selective\", \"full\", \"selective_op\", got \"partial\""},
      {"inline model kv heads", [](Json& j) { j["model"] = Json{{"name", "x"}, {"layers", 2}, {"hidden", 1024}, {"heads", 16}, {"kv_heads", 5}, {"vocab", 1000}}; },
       "test.json: /model/kv_heads: heads (16) must be divisible by kv_heads (5)"},
      {"hybrid shard group", [](Json& j) { j["parallel"]["fsdp"] = {{"sharding", "hybrid"}, {"shard_group", 3}}; },
       "test.json: /parallel/fsdp/shard_group: hybrid sharding needs shard_group dividing dp (8), got 3"},
      {"offload with grad_op", [](Json& j) { j["parallel"]["fsdp"] = {{"sharding", "grad_op"}, {"offload", true}}; },
       "test.json: /parallel/fsdp/offload: CPU offload is modelled for \"full\" and \"hybrid\" sharding (parameters gathered per unit), not \"grad_op\""},
      {"unknown network model", [](Json& j) { j["network"] = {{"model", "packet"}}; },
       "test.json: /network/model: expected one of \"analytical\", \"flow\", got \"packet\""},
      {"unknown NCCL algorithm", [](Json& j) { j["network"] = {{"algorithm", "trees"}}; },
       "test.json: /network/algorithm: expected one of \"auto\", \"ring\", \"tree\", \"nvls\", \"hierarchical\", got \"trees\"; did you mean \"tree\"?"},
      {"unknown attention kernel", [](Json& j) { j["training"]["attention_kernel"] = "tritn"; },
       "test.json: /training/attention_kernel: expected one of \"flash\", \"flash3\", \"cudnn\", \"triton\", got \"tritn\"; "
       "did you mean \"triton\"?"},
      {"attention kernel without fused attention", [](Json& j) { j["training"]["flash_attention"] = false; j["training"]["attention_kernel"] = "triton"; },
       "test.json: /training/attention_kernel: names a fused attention kernel, but flash_attention is false (unfused attention)"},
      {"recompute_num_layers without full recompute", [](Json& j) { j["parallel"]["recompute_num_layers"] = 4; },
       "test.json: /parallel/recompute_num_layers: applies to recompute \"full\" (Megatron's block method), but recompute is \"none\""},
      {"oversubscription below 1", [](Json& j) { j["cluster"]["inter_node"] = {{"oversubscription", 0.5}}; },
       "test.json: /cluster/inter_node/oversubscription: expected a number in [1, 64], got 0.5"},
      {"a number just past its bound, printed as written", [](Json& j) { j["training"]["host_launch_us"] = 10000.0001; },
       "test.json: /training/host_launch_us: expected a number in [0, 10000], got 10000.0001"},
      {"fp8 recipe without fp8", [](Json& j) { j["training"]["fp8_recipe"] = "current"; },
       "test.json: /training/fp8_recipe: applies to dtype \"fp8\" only (dtype is \"bf16\")"},
      {"unknown fp8 recipe", [](Json& j) { j["training"]["dtype"] = "fp8"; j["training"]["fp8_recipe"] = "mx"; },
       "test.json: /training/fp8_recipe: expected one of \"delayed\", \"current\", \"mxfp8\", \"nvfp4\", got \"mx\""},
      {"mxfp8 on Hopper", [](Json& j) { j["training"]["dtype"] = "fp8"; j["training"]["fp8_recipe"] = "mxfp8"; },
       "test.json: /training/fp8_recipe: mxfp8 needs block-scaled FP8 tensor cores (Blackwell): the GPU profile \"h100-sxm5-80g\" "
       "(calibrate/profiles/h100-sxm5-80g.json) has no compute.peak_tflops.mxfp8 and compute.gemm_max_efficiency.mxfp8"},
      {"nvfp4 on Hopper", [](Json& j) { j["training"]["dtype"] = "fp8"; j["training"]["fp8_recipe"] = "nvfp4"; },
       "test.json: /training/fp8_recipe: nvfp4 needs block-scaled FP4 tensor cores (Blackwell): the GPU profile \"h100-sxm5-80g\" "
       "(calibrate/profiles/h100-sxm5-80g.json) has no compute.peak_tflops.nvfp4 and compute.gemm_max_efficiency.nvfp4"},
      {"bf16 on Volta", [](Json& j) {
         j["cluster"] = {{"gpu", "v100-sxm3-32g"}, {"nodes", 1}, {"gpus_per_node", 8}};
         j["training"]["flash_attention"] = false;
       },
       "test.json: /training/dtype: the GPU profile \"v100-sxm3-32g\" (calibrate/profiles/v100-sxm3-32g.json) has no bf16 peak "
       "(compute.peak_tflops.bf16); GPUs before Ampere have no bf16 tensor cores: use fp16"},
      {"fused attention on Volta", [](Json& j) {
         j["cluster"] = {{"gpu", "v100-sxm3-32g"}, {"nodes", 1}, {"gpus_per_node", 8}};
         j["training"]["dtype"] = "fp16";
       },
       "test.json: /training/flash_attention: the GPU profile \"v100-sxm3-32g\" (calibrate/profiles/v100-sxm3-32g.json) prices no "
       "fused attention kernel (FlashAttention needs Ampere or later): set flash_attention false for unfused attention"},
      {"fp32 without fp32 GEMM figures", [](Json& j) { j["training"]["dtype"] = "fp32"; },
       "test.json: /training/dtype: the GPU profile \"h100-sxm5-80g\" (calibrate/profiles/h100-sxm5-80g.json) has no fp32 GEMM "
       "efficiency (compute.gemm_max_efficiency.fp32)"},
      {"empty middle virtual stage", [](Json& j) {
         j["parallel"] = {{"dp", 4}, {"pp", 2}, {"vpp", 2}, {"schedule", "interleaved"}, {"stage_layers", {8, 0, 16, 8}}};
       },
       "test.json: /parallel/stage_layers/1: only the first virtual stage (embedding) and the last (output layer) may hold no "
       "transformer layer"},
      {"empty pipeline stage", [](Json& j) {
         j["parallel"] = {{"dp", 2}, {"pp", 4}, {"schedule", "1f1b"}, {"stage_layers", {0, 12, 10, 10}}};
       },
       "test.json: /parallel/stage_layers/0: a pipeline stage needs at least one layer"},
      // Issue 40: more stages than layers was told to give stage_layers, which cannot help.
      {"more pipeline stages than layers", [](Json& j) {
         j["cluster"]["nodes"] = 8;
         j["parallel"] = {{"dp", 1}, {"pp", 64}, {"schedule", "1f1b"}};
       },
       "test.json: /parallel/pp: pp 64 is more than the model's 32 layers: every pipeline stage needs at least one transformer layer"},
      {"more chunks than layers", [](Json& j) {
         j["parallel"] = {{"dp", 1}, {"pp", 8}, {"vpp", 8}, {"schedule", "interleaved"}};
       },
       "test.json: /parallel/pp: model layers (32) are not divisible among pp*vpp = 64 chunks; lower vpp"},
      {"recompute more layers than a chunk has", [](Json& j) {
         j["parallel"]["recompute"] = "full";
         j["parallel"]["recompute_num_layers"] = 1000;
       },
       "test.json: /parallel/recompute_num_layers: recomputes 1000 layers of each model chunk, but the largest chunk has 32 (model "
       "layers over pp*vpp)"},
  };
  ASSERT_GE(cases.size(), 15u);
  for (const auto& c : cases) {
    Json j = test::base_scenario();
    c.mutate(j);
    EXPECT_EQ(test::scenario_error(j), c.expected) << c.name;
  }
}

TEST(InvalidScenario, AttentionKernelTheProfileDoesNotPrice) {
  // A copy of a shipped profile without its compute.attention_kernels, named by path.
  Json prof = read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json");
  prof["compute"].erase("attention_kernels");
  const std::string path = ::testing::TempDir() + "/no-kernels.json";
  std::ofstream(path) << prof.dump();
  Json j = test::base_scenario();
  j["cluster"]["gpu"] = path;
  EXPECT_EQ(test::scenario_error(j), "(no error)");  // the default kernel needs no extra figures
  j["training"]["attention_kernel"] = "triton";
  EXPECT_EQ(test::scenario_error(j), "test.json: /training/attention_kernel: the GPU profile \"h100-sxm5-80g\" (" + path +
                             ") has no figures for attention kernel \"triton\" (compute.attention_kernels)");
  // FlashAttention-3 is Hopper-only: the A100 profiles do not price it.
  Json a = test::base_scenario();
  a["cluster"]["gpu"] = "a100-sxm4-80g";
  a["training"]["attention_kernel"] = "flash3";
  EXPECT_EQ(test::scenario_error(a), "test.json: /training/attention_kernel: the GPU profile \"a100-sxm4-80g\" ("
                             "calibrate/profiles/a100-sxm4-80g.json) has no figures for attention kernel \"flash3\" (compute.attention_kernels)");
}

TEST(InvalidScenario, ValidBaseScenarioLoads) { EXPECT_EQ(test::scenario_error(test::base_scenario()), "(no error)"); }

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST(InvalidScenario, StepPastTheSimulatorsTimeRangeIsAConfigError) {
  // A 16M-token sequence on GPT-3 175B: the step lasts longer than the 2^62 ps (~53 days) the
  // engine represents; an error naming the file, not an overflow.
  Json j = test::base_scenario();
  j["model"] = read_json_file(test::data_dir() + "/models/gpt3-175b.json");
  j["model"]["max_positions"] = 1 << 24;  // its learned position table as long as the sequence
  j["training"]["seq_len"] = 1 << 24;
  j["training"]["global_batch"] = 8;
  try {
    simulate(test::scenario_from(j), Registries{});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("test.json: /training: ", 0), 0u) << m;
    EXPECT_NE(m.find("simulator's"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace parasim
