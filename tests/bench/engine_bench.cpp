// Google Benchmark suites: engine throughput and whole-step simulation at scale.
#include <benchmark/benchmark.h>

#include "../test_util.h"
#include "sim/config/json_reader.h"

namespace parasim {
namespace {

// A synthetic program: `ranks` ranks, chains of ops with cross-rank dependencies.
void BM_EngineEvents(benchmark::State& state) {
  const auto ops_per_rank = static_cast<std::int32_t>(state.range(0));
  const std::int32_t ranks = 64;
  Program p;
  p.labels = {"op"};
  p.ranks.resize(ranks);
  for (std::int32_t i = 0; i < ops_per_rank; ++i)
    for (std::int32_t r = 0; r < ranks; ++r) {
      Op o;
      o.rank = r;
      o.stream = (i % 4 == 3) ? Stream::Comm : Stream::Compute;
      o.duration = 1000 + (i * 7 + r * 13) % 500;
      if (i > 0) o.deps.push_back(static_cast<OpId>((i - 1) * ranks + (r + 1) % ranks));
      p.add(std::move(o));
    }
  std::int64_t events = 0;
  for (auto _ : state) {
    const Timeline t = run_program(p, {});
    events += t.events;
    benchmark::DoNotOptimize(t.makespan);
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EngineEvents)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

Scenario big(std::int64_t nodes, const Json& parallel, const std::string& model, std::int64_t gbs, std::int64_t seq) {
  Json j = test::base_scenario();
  j["model"] = model;
  j["cluster"] = {{"gpu", "h100-sxm5-80g"}, {"nodes", nodes}, {"gpus_per_node", 8}};
  j["training"] = {{"global_batch", gbs}, {"micro_batch", 1}, {"seq_len", seq}};
  j["parallel"] = parallel;
  return test::scenario_from(j);
}

void run_scenario(benchmark::State& state, const Scenario& sc) {
  const Registries reg;
  for (auto _ : state) {
    const auto out = simulate(sc, reg);
    benchmark::DoNotOptimize(out.result.step_time_s);
    state.counters["ops"] = static_cast<double>(out.result.ops);
  }
}

void BM_Ddp1024Gpus(benchmark::State& state) {
  run_scenario(state, big(128, {{"dp", 1024}, {"schedule", "ddp"}}, "llama2-7b", 2048, 4096));
}
BENCHMARK(BM_Ddp1024Gpus)->Unit(benchmark::kMillisecond);

// 16,384 GPUs: Llama 3.1 405B with the plan of the Llama 3 paper's Table 4 at 8k sequences (TP 8, PP 16 in
// one-layer interleaved chunks, the first and last empty but for the embedding and the loss, DP 128, ZeRO-2),
// 16 microbatches per pipeline (scenarios/llama3.1-405b-16k-h100.json).
void BM_Llama405b16kGpus(benchmark::State& state) {
  std::vector<int> layers(128, 1);
  layers.front() = 0;
  layers.back() = 0;
  run_scenario(state, big(2048, {{"dp", 128}, {"tp", 8}, {"pp", 16}, {"vpp", 8}, {"schedule", "interleaved"}, {"sequence_parallel", true},
                                 {"zero_stage", 2}, {"p2p_sync", false}, {"order", "tp-cp-pp-dp"}, {"stage_layers", layers}},
                          "llama3.1-405b", 2048, 8192));
}
BENCHMARK(BM_Llama405b16kGpus)->Unit(benchmark::kMillisecond);

// GPT-3 175B on 1,024 A100 (TP 8, PP 8, DP 16, global batch 1536, micro-batch 1, full recompute:
// scenarios/1f1b-gpt3-175b-1024xa100.json), the case issue 42 asks to evaluate in <= 1 ms.
Json gpt3_1024() { return read_json_file(test::data_dir() + "/scenarios/1f1b-gpt3-175b-1024xa100.json"); }

void BM_Gpt3_175b1024A100(benchmark::State& state) { run_scenario(state, test::scenario_from(gpt3_1024())); }
BENCHMARK(BM_Gpt3_175b1024A100)->Unit(benchmark::kMillisecond);

// The same job with `arg` microbatches per pipeline (global batch 16 x arg): the cost per
// evaluation must grow no worse than linearly.
void BM_Gpt3Microbatches(benchmark::State& state) {
  Json j = gpt3_1024();
  j["training"]["global_batch"] = 16 * state.range(0);
  run_scenario(state, test::scenario_from(j));
}
BENCHMARK(BM_Gpt3Microbatches)->Arg(24)->Arg(48)->Arg(96)->Arg(192)->Arg(384)->Unit(benchmark::kMillisecond);

// The same job over `arg` pipeline stages (TP 8, DP 16, 96 microbatches per pipeline, 128 x arg GPUs).
void BM_Gpt3Stages(benchmark::State& state) {
  Json j = gpt3_1024();
  j["parallel"]["pp"] = state.range(0);
  j["cluster"]["nodes"] = 16 * state.range(0);
  run_scenario(state, test::scenario_from(j));
}
BENCHMARK(BM_Gpt3Stages)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace parasim

#include "sim/network/flow_model.h"

namespace parasim {
namespace {

// Max-min rate recomputation with N concurrent flows over a two-level fabric of 4096 links:
// each flow crosses 4 links chosen deterministically.
void BM_MaxMinRecompute(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  const std::int32_t links = 4096;
  std::vector<std::vector<std::int32_t>> paths(n);
  std::uint64_t x = 12345;
  for (auto& p : paths)
    for (int h = 0; h < 4; ++h) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      p.push_back(static_cast<std::int32_t>((x >> 33) % links));
    }
  std::vector<const std::vector<std::int32_t>*> ptrs;
  for (const auto& p : paths) ptrs.push_back(&p);
  const std::vector<double> cap(links, 50e9);
  for (auto _ : state) benchmark::DoNotOptimize(maxmin_rates(ptrs, cap));
  state.counters["flows"] = static_cast<double>(n);
}
BENCHMARK(BM_MaxMinRecompute)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace parasim
