// The engine's speed work must not move a prediction: the GPT-3 175B / 1,024 A100 case (TP 8, PP 8,
// DP 16, global batch 1536, micro-batch 1, full recompute; scenarios/1f1b-gpt3-175b-1024xa100.json)
// gives the step time, peak memory and bubble recorded from the engine before that work began.
#include "../test_util.h"

namespace parasim {
namespace {

// Recorded with `build/tools/parasim run --json scenarios/1f1b-gpt3-175b-1024xa100.json` (Release build
// of main at bae6b68, before any engine change of issue 42), printed at full precision by the JSON
// writer: step_time_s, peak_mem_gib and bubble_fraction.
constexpr double kStepTimeS = 27.074937875764;
constexpr double kPeakMemGib = 48.646141052246094;
constexpr double kBubble = 0.0941682834484389;

TEST(RecordedStep, Gpt3On1024A100MatchesTheEngineBeforeTheSpeedWork) {
  const Scenario sc = load_scenario(test::data_dir() + "/scenarios/1f1b-gpt3-175b-1024xa100.json", test::data_dir());
  const Registries reg;
  const SimulationOutput out = simulate(sc, reg);
  EXPECT_NEAR(out.result.step_time_s, kStepTimeS, 1e-9 * kStepTimeS);
  EXPECT_NEAR(out.result.peak_mem_gib, kPeakMemGib, 1e-9 * kPeakMemGib);
  EXPECT_NEAR(out.result.bubble_fraction, kBubble, 1e-9 * kBubble);
}

}  // namespace
}  // namespace parasim
