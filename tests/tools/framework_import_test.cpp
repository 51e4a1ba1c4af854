// `parasim import megatron|deepspeed|torchtitan|llm-foundry|hf-config` (tools/import/): each config
// under tests/data/frameworks, written after a framework's published example, maps to the fields
// the framework runs, names its stack, lists what it could not map, and the scenario loads and runs.
#include <gtest/gtest.h>

#include <numeric>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "../test_util.h"
#include "tools/import/framework_config.h"
#include "tools/import/framework_file.h"

namespace parasim {
namespace {

std::string text(const std::string& rel) { return test::slurp(test::test_data("frameworks/" + rel)); }

ImportOptions on(const std::string& gpu, std::int64_t nodes, const std::string& model = "") {
  ImportOptions o;
  o.gpu = gpu;
  o.nodes = nodes;
  o.model = model;
  o.data_dir = test::data_dir();
  return o;
}

TEST(FrameworkImport, MegatronArgumentFile) {
  const ImportResult r = import_megatron(split_args(text("megatron-llama3-8b.args")), on("h100-sxm5-80g", 1));
  const Scenario sc = parse_scenario(r.scenario, "megatron.json", test::data_dir());
  EXPECT_EQ(sc.stack, "megatron-core@0.8");
  // tp 2 x pp 2 on 8 GPUs leaves dp 2; 128 sequences of micro batch 1.
  EXPECT_EQ(sc.parallel.tp, 2);
  EXPECT_EQ(sc.parallel.pp, 2);
  EXPECT_EQ(sc.parallel.dp, 2);
  EXPECT_EQ(sc.parallel.schedule, Schedule::OneFOneB);
  EXPECT_TRUE(sc.parallel.sequence_parallel);
  EXPECT_EQ(sc.parallel.zero_stage, 1);
  EXPECT_TRUE(sc.parallel.overlap_grad_reduce);  // the flag overrides the stack's default (off)
  EXPECT_EQ(sc.parallel.recompute, Recompute::Selective);
  EXPECT_EQ(sc.training.global_batch, 128);
  EXPECT_EQ(sc.training.seq_len, 8192);
  EXPECT_TRUE(sc.training.fp32_grad_accumulation);  // the stack: Megatron's bf16 main_grads
  EXPECT_EQ(sc.model.layers, 32);
  EXPECT_EQ(sc.model.kv_heads, 8);
  EXPECT_EQ(sc.model.activation, Activation::SwiGlu);
  EXPECT_EQ(sc.model.norm, NormKind::RmsNorm);
  EXPECT_FALSE(sc.model.dropout);
  EXPECT_FALSE(sc.model.tied_embeddings);
  EXPECT_EQ(sc.model.vocab, 128256);  // 128256 is a multiple of 128 x tp 2: no padding
  EXPECT_EQ(r.unmapped, (std::vector<std::string>{"--manual-gc", "--no-create-attention-mask-in-dataloader"}));
  EXPECT_GT(simulate(sc, Registries{}).result.step_time_s, 0);
}

TEST(FrameworkImport, MegatronInlineArgumentsAndErrors) {
  const ImportResult r = import_megatron({"--tensor-model-parallel-size=4", "--pipeline-model-parallel-size", "2",
                                          "--num-layers-per-virtual-pipeline-stage", "4", "--no-such-option", "7"},
                                         on("h100-sxm5-80g", 2, "llama2-7b"));
  EXPECT_EQ(r.scenario["parallel"]["dp"], 2);  // 16 GPUs / (tp 4 x pp 2)
  EXPECT_EQ(r.scenario["parallel"]["vpp"], 4);  // 32 layers / (pp 2 x 4 per virtual stage)
  EXPECT_EQ(r.scenario["parallel"]["schedule"], "interleaved");
  EXPECT_EQ(r.unmapped, std::vector<std::string>{"--no-such-option"});
  EXPECT_THROW(import_megatron({"--tensor-model-parallel-size", "three"}, on("h100-sxm5-80g", 1)), ConfigError);
  EXPECT_THROW(import_megatron({"--tensor-model-parallel-size", "3"}, on("h100-sxm5-80g", 1)), ConfigError);  // 3 does not divide 8
  // Selective recompute with flash attention: Megatron-Core replays the flash kernel, the legacy
  // models (--use-legacy-models) do not.
  const std::vector<std::string> selective = {"--recompute-activations", "--use-flash-attn", "--global-batch-size", "64", "--seq-length", "4096"};
  std::vector<std::string> legacy = selective;
  legacy.push_back("--use-legacy-models");
  const Scenario mcore = parse_scenario(import_megatron(selective, on("h100-sxm5-80g", 1, "llama2-7b")).scenario, "m.json", test::data_dir());
  const Scenario old = parse_scenario(import_megatron(legacy, on("h100-sxm5-80g", 1, "llama2-7b")).scenario, "m.json", test::data_dir());
  EXPECT_TRUE(mcore.parallel.recompute_fused_attention);
  EXPECT_FALSE(old.parallel.recompute_fused_attention);
  EXPECT_EQ(old.parallel.recompute, Recompute::Selective);
}

TEST(FrameworkImport, MegatronTokenDispatcher) {
  // --moe-token-dispatcher-type flex runs the backend's kernels (Megatron-Core's default backend:
  // deepep); the backend alone, without flex, leaves the alltoall dispatcher.
  const auto disp = [](const std::vector<std::string>& args) {
    const ImportResult r = import_megatron(args, on("h100-sxm5-80g", 2, "qwen3-30b-a3b"));
    return r.scenario["parallel"].value("moe_dispatcher", std::string("(absent)"));
  };
  EXPECT_EQ(disp({"--moe-token-dispatcher-type", "flex"}), "deepep");
  EXPECT_EQ(disp({"--moe-token-dispatcher-type", "flex", "--moe-flex-dispatcher-backend", "hybridep"}), "hybridep");
  EXPECT_EQ(disp({"--moe-flex-dispatcher-backend", "hybridep"}), "(absent)");
  EXPECT_EQ(disp({"--moe-token-dispatcher-type", "alltoall"}), "(absent)");
  EXPECT_THROW(disp({"--moe-token-dispatcher-type", "allgather"}), ConfigError);
}

TEST(FrameworkImport, MegatronTokenDropping) {
  // --moe-expert-capacity-factor (negative: Megatron's "none") and padding to it; without
  // --moe-router-force-load-balancing the router is trained, which the import notes.
  const ImportResult r = import_megatron({"--moe-expert-capacity-factor", "1.25", "--moe-pad-expert-input-to-capacity"},
                                         on("h100-sxm5-80g", 2, "qwen3-30b-a3b"));
  EXPECT_EQ(r.scenario["training"]["moe_capacity_factor"], 1.25);
  EXPECT_EQ(r.scenario["training"]["moe_pad_to_capacity"], true);
  const auto noted = [](const ImportResult& x) {
    return std::any_of(x.notes.begin(), x.notes.end(), [](const std::string& n) { return n.find("moe_expert_load") != std::string::npos; });
  };
  EXPECT_TRUE(noted(r));
  // --model names the zoo model: its vocabulary is known, nothing to ask for.
  EXPECT_TRUE(std::none_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.starts_with("model.vocab"); }));
  const ImportResult forced = import_megatron({"--moe-expert-capacity-factor", "-1", "--moe-router-force-load-balancing"},
                                              on("h100-sxm5-80g", 2, "qwen3-30b-a3b"));
  EXPECT_FALSE(forced.scenario["training"].contains("moe_capacity_factor"));
  EXPECT_FALSE(noted(forced));
  EXPECT_TRUE(forced.unmapped.empty());
  const auto error = [](const std::vector<std::string>& args) {
    try {
      import_megatron(args, on("h100-sxm5-80g", 2, "qwen3-30b-a3b"));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error({"--moe-expert-capacity-factor", "lots"}).find("--moe-expert-capacity-factor"), std::string::npos);
  EXPECT_NE(error({"--moe-expert-capacity-factor", "0"}).find("keeps no token"), std::string::npos);
  EXPECT_NE(error({"--moe-pad-expert-input-to-capacity"}).find("needs --moe-expert-capacity-factor"), std::string::npos);
}

// A hybrid Mamba-2 / MoE / attention model from Megatron's own arguments (Nemotron 3 Nano, as
// Megatron-LM's modelopt config gives it): the pattern, the mixer and the shared expert map, the
// layer count is the pattern's and each expert is --ffn-hidden-size wide, as in Megatron; the model
// is the zoo's Nemotron 3 Nano (same parameter count).
TEST(FrameworkImport, MegatronHybridModel) {
  const ImportResult r = import_megatron(split_args(text("megatron-nemotron3-nano.args")), on("h100-sxm5-80g", 2));
  const Scenario sc = parse_scenario(r.scenario, "megatron.json", test::data_dir());
  const ModelSpec zoo = load_zoo_model(test::data_dir(), "nemotron-3-nano-30b-a3b", "test");
  EXPECT_EQ(sc.model.layers, 52);
  EXPECT_EQ(sc.model.hybrid_pattern, zoo.hybrid_pattern);
  EXPECT_EQ(sc.model.mamba->heads, 64);
  EXPECT_EQ(sc.model.moe->expert_ffn_hidden, 1856);
  EXPECT_EQ(sc.model.moe->shared_expert_ffn_hidden, 3712);
  EXPECT_EQ(sc.model.activation, Activation::SquaredRelu);
  EXPECT_EQ(count_params(sc.model).total(), count_params(zoo).total());
  EXPECT_EQ(sc.parallel.ep, 8);
  EXPECT_EQ(sc.training.loss_impl, LossImpl::Eager16);  // --cross-entropy-fusion-impl native
  EXPECT_EQ(sc.parallel.recompute_modules.names(), (std::vector<std::string>{"moe", "layernorm", "core_attn", "moe_act"}));
  EXPECT_EQ(sc.training.cuda_graph_scope, std::vector<CudaGraphScope>{CudaGraphScope::Mamba});
  EXPECT_TRUE(r.unmapped.size() <= 2) << r.unmapped.size();  // --moe-permute-fusion, --moe-grouped-gemm
  const auto refused = [](const std::vector<std::string>& args) {
    try {
      import_megatron(args, on("h100-sxm5-80g", 1));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(refused({"--hybrid-layer-pattern", "M-M*|M-M*"}).find("pipeline-stage boundaries"), std::string::npos);
  // Megatron's CUDA-graph options together: a scope needs an implementation, transformer_engine a
  // scope (whole-layer graphs are not modelled), local only the whole step.
  EXPECT_EQ(refused({"--cuda-graph-impl", "transformer_engine", "--cuda-graph-scope", "attn", "mlp"}),
            "--cuda-graph-scope: \"mlp\" is not modelled (attn, moe_router, moe_preprocess, mamba)");
  EXPECT_NE(refused({"--cuda-graph-impl", "transformer_engine"}).find("graphs every whole layer"), std::string::npos);
  EXPECT_EQ(refused({"--cuda-graph-impl", "full_iteration"}), "--cuda-graph-impl: \"full_iteration\" is not modelled (none, local, transformer_engine)");
  const ImportResult scope_only = import_megatron({"--cuda-graph-scope", "attn"}, on("h100-sxm5-80g", 1));
  EXPECT_FALSE(scope_only.scenario["training"].contains("cuda_graph_scope"));
  const ImportResult whole = import_megatron({"--cuda-graph-impl", "local", "--cuda-graph-scope", "full_iteration"}, on("h100-sxm5-80g", 1));
  EXPECT_EQ(whole.scenario["training"]["cuda_graph_impl"], "full_iteration");
  // Recompute modules count only with selective recompute, as in Megatron.
  const ImportResult full = import_megatron({"--recompute-granularity", "full", "--recompute-modules", "mlp"}, on("h100-sxm5-80g", 1));
  EXPECT_FALSE(full.scenario["parallel"].contains("recompute_modules"));
  EXPECT_NE(refused({"--recompute-modules", "core_attention"}).find("--recompute-modules: \"core_attention\" is not modelled"), std::string::npos);
  // Without --mamba-num-heads Megatron's mixer is 2 x hidden wide in heads of 64.
  const ImportResult d = import_megatron({"--hybrid-layer-pattern", "M*-", "--hidden-size", "1024", "--num-attention-heads", "8"},
                                         on("h100-sxm5-80g", 1));
  EXPECT_EQ(d.scenario["model"]["mamba"]["heads"], 32);
  EXPECT_EQ(d.scenario["model"]["layers"], 3);
  // `run` tells the argument file by its pattern (it has no --num-layers).
  const auto [rc, out] = test::cli_stdout("--data-dir " + test::data_dir() + " run " + test::test_data("frameworks/megatron-nemotron3-nano.args") +
                                          " --gpu h100-sxm5-80g --nodes 2");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("23 of 52 layers"), std::string::npos) << out;
}

TEST(FrameworkImport, DeepSpeedConfig) {
  const Json c = read_json_file(test::test_data("frameworks/ds_config_zero2.json"));
  ImportOptions o = on("a100-sxm4-80g", 1, "llama2-7b");
  const ImportResult r = import_deepspeed(c, "ds.json", o);
  Json j = r.scenario;
  j["training"]["seq_len"] = 4096;
  const Scenario sc = parse_scenario(j, "ds.json", test::data_dir());
  EXPECT_EQ(sc.stack, "deepspeed@0.16");
  EXPECT_EQ(sc.parallel.zero_stage, 2);
  EXPECT_EQ(sc.parallel.zero_impl, ZeroImpl::DeepSpeed);  // the stack's, for stage 2
  EXPECT_EQ(sc.training.global_batch, 64);
  EXPECT_EQ(sc.training.micro_batch, 2);
  EXPECT_DOUBLE_EQ(sc.parallel.bucket_mb, 100);  // 5e7 elements x 2 bytes
  EXPECT_FALSE(sc.training.grad_accumulation_fusion);
  EXPECT_EQ(r.unmapped, (std::vector<std::string>{"activation_checkpointing", "zero_optimization.offload_optimizer"}));
  EXPECT_THROW(import_deepspeed(c, "ds.json", on("a100-sxm4-80g", 1)), ConfigError);  // no model
}

TEST(FrameworkImport, TorchtitanJobFile) {
  const ImportResult r = import_torchtitan(text("llama3_8b.toml"), "llama3_8b.toml", on("h100-sxm5-80g", 1));
  const Scenario sc = parse_scenario(r.scenario, "titan.json", test::data_dir());
  EXPECT_EQ(sc.stack, "torchtitan@2024-12");
  EXPECT_EQ(sc.model.name, "llama3-8b");
  EXPECT_EQ(sc.parallel.dp, 8);
  ASSERT_TRUE(sc.parallel.fsdp.has_value());
  EXPECT_EQ(sc.parallel.fsdp->sharding, FsdpSharding::Full);
  EXPECT_EQ(sc.parallel.fsdp->reduce_dtype, Dtype::Fp32);  // the stack
  EXPECT_EQ(sc.parallel.recompute, Recompute::SelectiveOp);
  EXPECT_EQ(sc.training.norm_impl, NormImpl::Eager);  // compile = false: the stack's eager Llama
  EXPECT_EQ(sc.training.global_batch, 8);
  EXPECT_EQ(r.unmapped, std::vector<std::string>{});
  std::string compiled = text("llama3_8b.toml");
  compiled.replace(compiled.find("compile = false"), 15, "compile = true");
  compiled += "\n[extra]\nthing = 1\n";
  const ImportResult c = import_torchtitan(compiled, "c.toml", on("h100-sxm5-80g", 1));
  EXPECT_EQ(c.scenario["training"]["norm_impl"], "fused");
  EXPECT_EQ(c.unmapped, std::vector<std::string>{"extra.thing"});
  EXPECT_THROW(import_torchtitan("[model\n", "bad.toml", on("h100-sxm5-80g", 1)), ConfigError);
}

TEST(FrameworkImport, LlmFoundryYamlRuns) {
  const ImportResult r = import_llm_foundry(text("mpt-125m.yaml"), "mpt-125m.yaml", on("a100-sxm4-80g", 1));
  const Scenario sc = parse_scenario(r.scenario, "mpt.json", test::data_dir());
  EXPECT_EQ(sc.stack, "llm-foundry@0.0.4");
  EXPECT_EQ(sc.model.hidden, 768);
  EXPECT_EQ(sc.model.ffn_hidden, 3072);
  EXPECT_EQ(sc.model.max_positions, 2048);  // ${max_seq_len}
  EXPECT_EQ(sc.training.seq_len, 2048);
  EXPECT_EQ(sc.training.global_batch, 256);
  EXPECT_EQ(sc.training.micro_batch, 16);
  EXPECT_EQ(sc.training.attention_kernel, AttentionKernel::Triton);
  ASSERT_TRUE(sc.parallel.fsdp.has_value());
  EXPECT_EQ(sc.parallel.fsdp->version, 1);  // the stack: Composer's FSDP1
  EXPECT_EQ(sc.parallel.fsdp->backward_prefetch, BackwardPrefetch::Post);
  EXPECT_EQ(sc.training.train_metrics.size(), 2u);
  EXPECT_EQ(r.unmapped, std::vector<std::string>{"fsdp_config.use_orig_params"});
  EXPECT_GT(simulate(sc, Registries{}).result.step_time_s, 0);
}

TEST(FrameworkImport, HuggingFaceConfigIsTheZooModel) {
  const ImportResult r = import_hf_config(read_json_file(test::test_data("frameworks/llama-3-8b-config.json")), "llama-3-8b-config.json");
  const ModelSpec m = parse_model(JsonObject(r.scenario, "m.json", ""));
  const ModelSpec zoo = load_zoo_model(test::data_dir(), "llama3-8b", "test");
  EXPECT_EQ(count_params(m).total(), count_params(zoo).total());
  EXPECT_EQ(m.kv_heads, zoo.kv_heads);
  EXPECT_EQ(r.unmapped, std::vector<std::string>{"quantization_config"});
  EXPECT_THROW(import_hf_config(Json{{"model_type", "t5"}}, "t5.json"), ConfigError);
  // A YaRN rope_scaling is read (Megatron runs it unfused); Llama 3.1's rope type is not YaRN.
  Json c = read_json_file(test::test_data("frameworks/llama-3-8b-config.json"));
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 32.0}, {"original_max_position_embeddings", 4096}};
  EXPECT_TRUE(parse_model(JsonObject(import_hf_config(c, "y.json").scenario, "m.json", "")).rope_yarn);
  c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  const ImportResult l3 = import_hf_config(c, "y.json");
  EXPECT_FALSE(parse_model(JsonObject(l3.scenario, "m.json", "")).rope_yarn);
  EXPECT_EQ(l3.unmapped, std::vector<std::string>{"quantization_config"});
}

// Megatron's per-layer options as parasim's placements: --moe-layer-freq as a Python list (DeepSeek-V3's
// "([0]*3+[1]*58)": three dense layers first) or every other layer; --window-size (left, 0) with
// --window-attn-skip-freq as GPT-OSS runs them (a 128-key window, every 2nd layer full), YaRN RoPE
// and the expert all-to-all overlap; a placement parasim cannot express is refused by option.
TEST(FrameworkImport, MegatronLayerPlacementsAreRead) {
  const std::vector<std::string> base = {"--num-layers", "61", "--hidden-size", "1024", "--num-attention-heads", "8", "--seq-length", "1024",
                                         "--micro-batch-size", "1", "--global-batch-size", "64", "--bf16", "--swiglu", "--vocab-size", "32000",
                                         "--num-experts", "8", "--moe-router-topk", "2", "--expert-model-parallel-size", "8"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return import_megatron(a, on("h100-sxm5-80g", 1));
  };
  const auto model = [](const ImportResult& r) { return parse_model(JsonObject(r.scenario["model"], "m.json", "/model")); };
  const ModelSpec ds = model(with({"--moe-layer-freq", "([0]*3+[1]*58)"}));
  for (std::int64_t i = 0; i < 61; ++i) EXPECT_EQ(ds.layer_kind(i).moe, i >= 3) << i;
  const ModelSpec odd = model(with({"--moe-layer-freq", "[0,1]*30+[0]"}));
  for (std::int64_t i = 0; i < 61; ++i) EXPECT_EQ(odd.layer_kind(i).moe, i % 2 == 1) << i;
  EXPECT_THROW(with({"--moe-layer-freq", "2"}), ConfigError);  // layers 0, 2, 4, ...: not every n-th after dense ones
  EXPECT_THROW(with({"--moe-layer-freq", "[1,0]"}), ConfigError);  // 2 entries for 61 layers
  EXPECT_FALSE(model(with({"--moe-layer-freq", "[0]*61", "--expert-model-parallel-size", "1"})).moe.has_value());
  const ImportResult oss = with({"--window-size", "(127,0)", "--window-attn-skip-freq", "2", "--position-embedding-type", "yarn",
                                 "--overlap-moe-expert-parallel-comm"});
  const ModelSpec w = model(oss);
  EXPECT_EQ(w.sliding_window, 128);
  EXPECT_EQ(w.full_attention_interval, 2);
  EXPECT_TRUE(w.rope_yarn);
  EXPECT_EQ(oss.scenario["parallel"]["ep_comm_overlap"], true);
  // Grouped sums (moe_freq_type's own example form), and what Megatron refuses or reads otherwise.
  const ModelSpec grouped = model(with({"--moe-layer-freq", "([0]*1+[1])*30+[0]"}));
  for (std::int64_t i = 0; i < 61; ++i) EXPECT_EQ(grouped.layer_kind(i).moe, i % 2 == 1) << i;
  for (const char* bad : {"0", "-2", "[2,1]*30+[1]", "[0]*60+", "([0]*61"}) EXPECT_THROW(with({"--moe-layer-freq", bad}), ConfigError) << bad;
  EXPECT_THROW(with({"--window-size", "(9223372036854775807,0)"}), ConfigError);
  EXPECT_THROW(with({"--window-size", "(127,8)"}), ConfigError);  // not causal
  EXPECT_THROW(with({"--window-size", "(127,0)", "--window-attn-skip-freq", "[1,0,1]"}), ConfigError);
}

// GPT-OSS 120B's released config is the zoo model: its layer_types (a window of 128, then full
// attention, alternating) become full_attention_interval 2, its experts_per_token the top k, its
// swiglu_limit the activation's clamp.
TEST(FrameworkImport, HuggingFaceGptOssConfigIsTheZooModel) {
  const ImportResult r = import_hf_config(read_json_file(test::test_data("frameworks/gpt-oss-120b-config.json")), "config.json");
  const ModelSpec m = parse_model(JsonObject(r.scenario, "m.json", ""));
  const ModelSpec zoo = load_zoo_model(test::data_dir(), "gpt-oss-120b", "test");
  EXPECT_EQ(count_params(m).total(), count_params(zoo).total());
  EXPECT_EQ(m.sliding_window, 128);
  EXPECT_EQ(m.full_attention_interval, 2);
  EXPECT_TRUE(m.rope_yarn);
  EXPECT_EQ(m.activation_clamp, zoo.activation_clamp);
  EXPECT_EQ(m.activation_clamp, 7.0);
  EXPECT_TRUE(r.unmapped.empty()) << r.unmapped.front();
  // Without experts nothing is clamped apart (parasim prices the clamp in the routed experts only):
  // the limit is read and not kept, so the imported model still loads.
  Json dense = read_json_file(test::test_data("frameworks/gpt-oss-120b-config.json"));
  dense["num_local_experts"] = 0;
  EXPECT_EQ(parse_model(JsonObject(import_hf_config(dense, "config.json").scenario, "m.json", "")).activation_clamp, 0.0);
  for (std::int64_t i = 0; i < m.layers; ++i) EXPECT_EQ(m.layer_kind(i).windowed, zoo.layer_kind(i).windowed) << i;
}

// Every key read is typed and bounded: a wrong type or value is the file's error naming the key
// (exit 2), never a library exception or a silent truncation; null reads as unset, as Hugging
// Face writes it.
TEST(FrameworkImport, HuggingFaceConfigKeysAreTyped) {
  const Json base = read_json_file(test::test_data("frameworks/llama-3-8b-config.json"));
  const auto error_of = [&](const char* key, const Json& v) {
    Json c = base;
    c[key] = v;
    try {
      import_hf_config(c, "c.json");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("num_key_value_heads", "8").find("c.json: /num_key_value_heads: expected an integer"), std::string::npos);
  EXPECT_NE(error_of("num_experts", 127.9).find("/num_experts"), std::string::npos);
  EXPECT_NE(error_of("num_experts", 4294967424.0).find("/num_experts"), std::string::npos);
  EXPECT_NE(error_of("tie_word_embeddings", "false").find("/tie_word_embeddings: expected true or false"), std::string::npos);
  EXPECT_NE(error_of("hidden_act", 1).find("/hidden_act"), std::string::npos);
  Json c = base;
  c["num_key_value_heads"] = nullptr;
  EXPECT_EQ(parse_model(JsonObject(import_hf_config(c, "c.json").scenario, "m.json", "")).kv_heads, 32);
}

// Qwen MoE's layer placement: decoder_sparse_step n puts experts in every n-th layer (the n-th,
// 2n-th, ...), mlp_only_layers 0..k-1 makes the first k dense; a pattern parasim cannot place,
// and Qwen's windows from max_window_layers on, are refused by key.
TEST(FrameworkImport, HuggingFaceMoeLayersAndWindowsArePlaced) {
  Json c = read_json_file(test::test_data("frameworks/llama-3-8b-config.json"));
  c["model_type"] = "qwen3_moe";
  c["num_experts"] = 8;
  c["num_experts_per_tok"] = 2;
  c["moe_intermediate_size"] = 1024;
  const auto model = [](const Json& j) { return parse_model(JsonObject(import_hf_config(j, "c.json").scenario, "m.json", "")); };
  c["decoder_sparse_step"] = 2;
  const ModelSpec every2 = model(c);
  for (std::int64_t i = 0; i < every2.layers; ++i) EXPECT_EQ(every2.layer_kind(i).moe, (i + 1) % 2 == 0) << i;
  c["decoder_sparse_step"] = 1;
  c["mlp_only_layers"] = {0, 1};
  const ModelSpec first2 = model(c);
  for (std::int64_t i = 0; i < first2.layers; ++i) EXPECT_EQ(first2.layer_kind(i).moe, i >= 2) << i;
  c["mlp_only_layers"] = {1};
  EXPECT_THROW(model(c), ConfigError);
  c.erase("mlp_only_layers");
  c["use_sliding_window"] = true;
  c["sliding_window"] = 4096;
  c["max_window_layers"] = 28;
  EXPECT_THROW(model(c), ConfigError);
  c["max_window_layers"] = 0;
  EXPECT_EQ(model(c).sliding_window, 4096);
  c["use_sliding_window"] = false;
  EXPECT_EQ(model(c).sliding_window, 0);
  // Qwen's config class defaults (sliding_window 4096, max_window_layers 28): 28 full layers of 32.
  c["use_sliding_window"] = true;
  c.erase("sliding_window");
  c.erase("max_window_layers");
  EXPECT_THROW(model(c), ConfigError);
  c["num_hidden_layers"] = 24;  // max_window_layers 28 >= 24: no layer is windowed
  EXPECT_EQ(model(c).sliding_window, 0);
  c["num_hidden_layers"] = 32;
  c["use_sliding_window"] = false;
  c["mlp_only_layers"] = std::vector<int>(32);
  std::iota(c["mlp_only_layers"].begin(), c["mlp_only_layers"].end(), 0);
  EXPECT_FALSE(model(c).moe.has_value());  // every layer dense
  // Llama's attention ignores a stray sliding_window.
  Json llama = read_json_file(test::test_data("frameworks/llama-3-8b-config.json"));
  llama["sliding_window"] = 4096;
  EXPECT_EQ(model(llama).sliding_window, 0);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

// `parasim run FILE` on a framework's config: the framework told from the file where that is
// unambiguous, and the prediction that of the scenario `parasim import` writes from it.
TEST(FrameworkImport, TheFrameworkIsToldFromTheFile) {
  EXPECT_EQ(framework_of("job.toml", text("llama3_8b.toml")), "torchtitan");
  EXPECT_EQ(framework_of("mpt.yaml", text("mpt-125m.yaml")), "llm-foundry");
  EXPECT_EQ(framework_of("ds.json", text("ds_config_zero2.json")), "deepspeed");
  EXPECT_EQ(framework_of("run.args", text("megatron-llama3-8b.args")), "megatron");
  EXPECT_EQ(framework_of("x", "--tensor-model-parallel-size=2 --num-layers 4"), "megatron");
  // Not frameworks' training configs: a scenario, a Hugging Face model, a note that names an option.
  EXPECT_EQ(framework_of("default.json", text("../../../scenarios/default.json")), "");
  EXPECT_EQ(framework_of("config.json", text("llama-3-8b-config.json")), "");
  EXPECT_TRUE(is_hf_model_config(text("llama-3-8b-config.json")));
  EXPECT_EQ(framework_of("notes.txt", "see --num-layersX"), "");
  EXPECT_THROW(import_framework("torchtitn", "x.toml", "", on("h100-sxm5-80g", 1)), ConfigError);
}

TEST(FrameworkImport, RunReadsAFrameworkConfigAsImportDoes) {
  for (const auto& [file, extra] : std::initializer_list<std::pair<const char*, const char*>>{
           {"llama3_8b.toml", ""}, {"mpt-125m.yaml", ""}, {"megatron-llama3-8b.args", " --nodes 2"},
           {"ds_config_zero2.json", " --model llama3-8b --seq-len 4096"}}) {
    SCOPED_TRACE(file);
    const std::string path = test::test_data(std::string("frameworks/") + file);
    const std::string gpu = std::string(" --gpu h100-sxm5-80g") + extra;
    const auto direct = test::cli_stdout("run --json " + path + gpu);
    ASSERT_EQ(direct.first, 0) << direct.second;
    const std::string fw = framework_of(path, text(file));
    const Json a = Json::parse(direct.second);
    const auto via = test::cli_stdout("import " + fw + " " + path + gpu);
    ASSERT_EQ(via.first, 0) << via.second;
    const Scenario sc = parse_scenario(Json::parse(via.second), "imported.json", test::data_dir());
    EXPECT_DOUBLE_EQ(a.at("step_time_s").get<double>(), simulate(sc, Registries{}).result.step_time_s);
  }
  // No GPU: the same refusal as import's, exit 2.
  EXPECT_EQ(test::cli_stdout("run " + test::test_data("frameworks/mpt-125m.yaml")).first, 2);
}

}  // namespace
}  // namespace parasim
