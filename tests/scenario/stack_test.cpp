// Stacks (stacks/*.json, sim/scenario/stack.h): every shipped value is one the parser accepts and
// lands in the resolved scenario; precedence defaults < stack < scenario; conditions; errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "../test_util.h"

namespace parasim {
namespace {

// A scenario (llama2-7b: RMSNorm, RoPE) whose layout meets a setting's condition.
Json scenario_meeting(const StackCondition& c, const std::string& field) {
  Json j = test::base_scenario();
  if (!c.gpu.empty()) {
    const auto names = profile_names(test::data_dir());
    const auto it = std::find_if(names.begin(), names.end(), [&](const std::string& n) { return n.starts_with(c.gpu.front()); });
    EXPECT_NE(it, names.end()) << "no GPU profile named " << c.gpu.front() << "*";
    if (it != names.end()) j["cluster"]["gpu"] = *it;
  }
  if (!c.dtype.empty()) j["training"]["dtype"] = c.dtype.front();
  if ((c.pipeline && *c.pipeline) || (c.interleaved && *c.interleaved)) {
    j["parallel"].update({{"dp", 4}, {"pp", 2}, {"schedule", "1f1b"}});
    if (c.interleaved && *c.interleaved) j["parallel"].update({{"vpp", 2}, {"schedule", "interleaved"}});
  }
  if (!c.zero_stage.empty()) j["parallel"]["zero_stage"] = c.zero_stage.back();
  if ((c.fsdp && *c.fsdp) || field.starts_with("parallel.fsdp.")) j["parallel"]["fsdp"] = {{"sharding", "full"}};
  return j;
}

TEST(Stacks, EveryValueParsesAndReachesTheResolvedScenario) {
  const auto names = stack_names(test::data_dir());
  ASSERT_GE(names.size(), 9u);
  for (const auto& name : names) {
    const Stack st = load_stack(test::data_dir(), name, "test");
    EXPECT_EQ(st.name, name);
    for (const auto& set : st.settings) {
      Json j = scenario_meeting(set.when, set.field);
      j["stack"] = name;
      const Scenario sc = test::scenario_from(j);
      const Json r = sc.resolved();
      const Json* v = field_value(r, set.field);
      ASSERT_NE(v, nullptr) << name << " " << set.field;
      // The first setting of the field whose condition holds wins.
      const auto origin = std::find_if(sc.origins.begin(), sc.origins.end(), [&](const FieldOrigin& o) { return o.field == set.field; });
      ASSERT_NE(origin, sc.origins.end());
      EXPECT_EQ(origin->from, "stack") << name << " " << set.field;
      if (origin->source == set.source) {
        EXPECT_EQ(*v, set.value) << name << " " << set.field;
      }
    }
  }
}

TEST(Stacks, TheScenarioOverridesTheStackWhichOverridesTheDefaults) {
  Json j = test::base_scenario();
  j["parallel"]["fsdp"] = {{"sharding", "full"}};
  j["stack"] = "torchtitan@2024-12";
  j["training"]["loss_impl"] = "fused";
  const Scenario sc = test::scenario_from(j);
  EXPECT_EQ(sc.training.loss_impl, LossImpl::Fused);       // the scenario's own
  EXPECT_EQ(sc.training.norm_impl, NormImpl::Eager);       // the stack's (RMSNorm model)
  EXPECT_EQ(sc.parallel.fsdp->reduce_dtype, Dtype::Fp32);
  EXPECT_EQ(sc.training.make_vocab_size_divisible_by, 1);  // the stack does not set it: the default
  const Json o = sc.resolved()["_origins"];
  EXPECT_EQ(o["training.loss_impl"], "scenario");
  EXPECT_TRUE(o["training.norm_impl"].get<std::string>().starts_with("stack torchtitan@2024-12 ("));
  EXPECT_EQ(o["training.make_vocab_size_divisible_by"], "default");
  // The resolved scenario loads again to the same values.
  EXPECT_EQ(test::scenario_from(sc.resolved()).resolved()["training"], sc.resolved()["training"]);
}

// A default the scenario sets against its stack (host_launch_us 0, no CUDA graphs) survives the
// resolved scenario: loaded again, the stack does not fill it back in.
TEST(Stacks, TheResolvedScenarioKeepsDefaultsSetAgainstTheStack) {
  Json j = read_json_file(test::data_dir() + "/scenarios/measured/pub-mbridge-26.04-dgx-h100-gpt_oss_120b-bf16-64gpu-tp1pp4cp1.json")["scenario"];
  j["training"]["host_launch_us"] = 0;
  j["training"]["host_op_us"] = 0;
  const Scenario sc = test::scenario_from(j);
  ASSERT_EQ(sc.training.host_launch_us, 0.0);
  const Scenario again = test::scenario_from(sc.resolved());
  EXPECT_EQ(again.training.host_launch_us, 0.0);
  EXPECT_EQ(again.training.host_op_us, 0.0);
  EXPECT_GT(again.training.host_loop_launch_us, 0.0);  // the stack's, carried over
  EXPECT_EQ(again.resolved()["training"], sc.resolved()["training"]);
}

TEST(Stacks, AValueWhoseConditionFailsKeepsTheDefaultAndSaysWhy) {
  Json j = test::base_scenario();  // no FSDP, pp = 1, bf16 on H100
  j["stack"] = "llm-foundry@0.0.4";
  const Scenario sc = test::scenario_from(j);
  EXPECT_FALSE(sc.parallel.fsdp.has_value());  // a stack never switches FSDP on
  const Json o = sc.resolved()["_origins"];
  EXPECT_NE(o["parallel.fsdp.version"].get<std::string>().find("only where the scenario has parallel.fsdp"), std::string::npos);
  j["stack"] = "megatron-bridge@26.04";
  const Scenario mb = test::scenario_from(j);
  EXPECT_EQ(mb.training.fp8_recipe, Fp8Recipe::Delayed);  // "current" applies to fp8 only
  EXPECT_NE(mb.resolved()["_origins"]["training.fp8_recipe"].get<std::string>().find("dtype fp8"), std::string::npos);
  EXPECT_EQ(mb.training.attention_kernel, AttentionKernel::Cudnn);  // on H100
  j["cluster"]["gpu"] = "a100-sxm4-80g";
  EXPECT_EQ(test::scenario_from(j).training.attention_kernel, AttentionKernel::Flash);  // Transformer Engine on Ampere
}

TEST(Stacks, AProfileGivenByPathMeetsItsFamilysConditions) {
  // The GPU conditions match the loaded profile's name, not the text of cluster.gpu: a copy of the
  // H100 profile under another file name runs the H100 settings (cuDNN attention), and predicts
  // the same step as the shipped profile by name.
  Json j = test::base_scenario();
  j["stack"] = "megatron-bridge@26.04";
  const std::string copy = test::write_temp("my-gpu.json", test::slurp(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json"));
  const Scenario by_name = test::scenario_from(j);
  j["cluster"]["gpu"] = copy;
  const Scenario by_path = test::scenario_from(j);
  EXPECT_EQ(by_path.training.attention_kernel, AttentionKernel::Cudnn);
  EXPECT_EQ(simulate(by_path, Registries{}).result.step_time_s, simulate(by_name, Registries{}).result.step_time_s);
}

TEST(Stacks, UnknownNamesAndBadFilesAreConfigErrors) {
  Json j = test::base_scenario();
  j["stack"] = "torchtitan@2024-11";
  const std::string err = test::scenario_error(j);
  EXPECT_NE(err.find("test.json: /stack: unknown stack \"torchtitan@2024-11\""), std::string::npos) << err;
  EXPECT_NE(err.find("did you mean \"torchtitan@2024-12\""), std::string::npos) << err;
  const Json bad = {{"schema", "parasim.stack/1"}, {"name", "x@1"}, {"framework", "x"}, {"release", "1"}, {"description", "d"},
                    {"source", "s"}, {"settings", {{{"field", "training.seq_len"}, {"value", 1}, {"source", "s"}}}}};
  try {
    parse_stack(bad, "x@1.json");
    ADD_FAILURE() << "a plan field accepted in a stack";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/settings/0/field"), std::string::npos) << e.what();
  }
  // A stack value the scenario's layout rejects: the error names what the stack supplied.
  j = test::base_scenario();
  j["stack"] = "megatron-deepspeed@2022-02";
  j["parallel"].update({{"dp", 4}, {"pp", 2}, {"schedule", "1f1b"}, {"fsdp", {{"sharding", "full"}}}});
  const std::string ds = test::scenario_error(j);
  EXPECT_NE(ds.find("/parallel/pipeline_impl"), std::string::npos) << ds;
  EXPECT_NE(ds.find("stack \"megatron-deepspeed@2022-02\" supplied"), std::string::npos) << ds;
  // An error about a field the scenario sets itself names no stack field.
  j = test::base_scenario();
  j["stack"] = "megatron-bridge@26.04";
  j["training"]["global_batch"] = 7;
  const std::string own = test::scenario_error(j);
  EXPECT_NE(own.find("/training/global_batch"), std::string::npos) << own;
  EXPECT_EQ(own.find("supplied"), std::string::npos) << own;
}

TEST(Stacks, WithoutAStackTheNotesNameTheDefaultedChoices) {
  const Scenario sc = test::scenario_from(test::base_scenario());
  const SimulationOutput out = simulate(sc, Registries{});
  const auto& w = out.result.warnings;
  const auto note = std::find_if(w.begin(), w.end(), [](const std::string& s) { return s.starts_with("no stack named"); });
  ASSERT_NE(note, w.end());
  EXPECT_NE(note->find("loss_impl"), std::string::npos);
  Json j = test::base_scenario();
  j["stack"] = "megatron-core@0.8";
  const SimulationOutput named = simulate(test::scenario_from(j), Registries{});
  EXPECT_TRUE(std::none_of(named.result.warnings.begin(), named.result.warnings.end(),
                           [](const std::string& s) { return s.starts_with("no stack named"); }));
}

}  // namespace
}  // namespace parasim
