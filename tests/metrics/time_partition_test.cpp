// "Where the time went" partitions the step: compute-stream phases + exposed communication + idle
// = the step time on every shipped example, whatever the schedule.
#include <gtest/gtest.h>

#include "../test_util.h"
#include "sim/metrics/time_partition.h"

namespace parasim {
namespace {

TEST(TimePartition, SumsToTheStepOnTheExamples) {
  const Registries reg;
  for (const char* file : {"default.json", "ddp-gpt-1.7b-8xa100.json", "fsdp-llama2-70b-64xh100.json", "zb-h1-llama3-8b-8xh100.json",
                           "gpipe-gpt-7.5b-4xa100.json", "moe-qwen3-30b-a3b-16xh100-fp8.json", "dataparallel-gpt-1.7b-4xa100.json"}) {
    SCOPED_TRACE(file);
    const Scenario sc = load_scenario(test::data_dir() + "/scenarios/" + file, test::data_dir());
    const SimulationOutput out = simulate(sc, reg, nullptr, Detail::Timeline);  // the whole step, never folded
    const TimePartition t = partition_time(out.program, out.timeline, out.result);
    double sum = t.exposed_s + t.idle_s;
    for (const auto& [phase, s] : t.compute_stream_s) sum += s;
    // Per rank, idle = step - compute - exposed (never negative), and the compute stream runs one
    // op at a time, so the weighted mean over ranks is the step time.
    EXPECT_NEAR(sum, out.result.step_time_s, 1e-9 * out.result.step_time_s);
  }
}

// With the host thread modelled (Megatron-Bridge's stack), the GPU's wait on the host is a line of
// its own, taken out of the phases whose ops waited: the lines still sum to the step. An EP 16 job whose forward dispatches sync each layer, and a
// pipeline (PP 2 x VP 12) whose last stage waits on its host most.
TEST(TimePartition, SumsToTheStepWithTheHostWaitOnItsOwnLine) {
  const Registries reg;
  for (const char* file : {"mbridge-skill-h100-qwen3_30b_a3b-bf16-16gpu-ep16-hybridep-overlap-off.json",
                           "pub-mbridge-26.02.01-dgx-h100-qwen3_30b_a3b-fp8-16gpu-tp1pp2cp1.json"}) {
    SCOPED_TRACE(file);
    const Json j = read_json_file(test::data_dir() + "/scenarios/measured/" + file);
    const SimulationOutput out = simulate(test::scenario_from(j["scenario"]), reg, nullptr, Detail::Timeline);
    const TimePartition t = partition_time(out.program, out.timeline, out.result);
    double sum = t.exposed_s + t.idle_s;
    for (const auto& [phase, s] : t.compute_stream_s) sum += s;
    EXPECT_NEAR(sum, out.result.step_time_s, 1e-9 * out.result.step_time_s);
    ASSERT_TRUE(t.compute_stream_s.count(kHostWaitKey));
    EXPECT_GT(t.compute_stream_s.at(kHostWaitKey), 0.05 * out.result.step_time_s);
  }
}

// The host's cost moves the GPU's wait on it, not the exposed communication: the EP 16 job's exposed
// all-to-all time (what sweep and plan blame) is the same with the host modelled or not, where the
// host wait before each dispatch used to count as exposed EP communication.
TEST(TimePartition, TheWaitOnTheHostIsNotExposedCommunication) {
  Json j = read_json_file(test::data_dir() + "/scenarios/measured/mbridge-skill-h100-qwen3_30b_a3b-bf16-16gpu-ep16-hybridep-overlap-off.json");
  const Result with = simulate(test::scenario_from(j["scenario"]), Registries{}).result;
  j["scenario"]["training"]["host_launch_us"] = 0;
  const Result without = simulate(test::scenario_from(j["scenario"]), Registries{}).result;
  ASSERT_GT(with.breakdown.at(kHostWaitKey), 1.0);
  EXPECT_NEAR(with.exposed.ep, without.exposed.ep, 1e-3 * without.exposed.ep);
}

}  // namespace
}  // namespace parasim
