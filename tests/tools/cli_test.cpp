// The CLI as a user meets it: exit codes, messages on stderr, JSON on stdout.
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "../test_util.h"
#include "sim/uncertainty.h"

namespace parasim {
namespace {

using test::Ran;
using test::run_cli;
using test::run_shell;
using test::write_temp;

TEST(Cli, DefaultScenarioRuns) {
  const Ran r = run_cli("run " + test::data_dir() + "/scenarios/default.json");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("step time"), std::string::npos);
  EXPECT_NE(r.out.find("peak VRAM per GPU"), std::string::npos);
}

TEST(Cli, IntervalSaysWhenThePointLiesOutside) {
  // The H100 GEMM efficiency is the best-shape MAMF, the top of its published range: the default
  // scenario's point prediction is faster than every sampled one, and the output says why.
  const Ran r = run_cli("run " + test::data_dir() + "/scenarios/default.json --interval 4");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("step time interval (p10..p90, 4 samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lies below the interval"), std::string::npos) << r.out;
}

TEST(Cli, RunStatesTheModelErrorOfTheScenariosModelClass) {
  const ModelErrorBands bands = read_model_error(test::data_dir() + "/" + kModelErrorFile);
  const ModelErrorBand& moe = bands.classes.at("moe");
  const Ran r = run_cli("run " + test::data_dir() + "/scenarios/moe-qwen3-30b-a3b-16xh100-fp8.json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(fmt::format("parasim's error on {} published runs of moe models: their steps took {:.2f}x to {:.2f}x",
                                   moe.log_ratios.size(), std::exp(moe.p10), std::exp(moe.p90))),
            std::string::npos)
      << r.out;
}

TEST(Cli, IntervalTakesTheModelErrorBandOfTheScenariosModelClass) {
  // calibrate/model_error.json holds a band per model class; a mixture-of-experts scenario gets the
  // MoE runs' band, a dense one the dense runs' band (each has at least kMinClassRuns runs).
  const ModelErrorBands bands = read_model_error(test::data_dir() + "/" + kModelErrorFile);
  for (const auto& [file, cls] : {std::pair{"scenarios/moe-qwen3-30b-a3b-16xh100-fp8.json", "moe"},
                                  std::pair{"scenarios/default.json", "dense"}}) {
    const Ran r = run_cli("run --json --interval 2 " + test::data_dir() + "/" + file);
    ASSERT_EQ(r.code, 0) << r.out;
    const Json j = Json::parse(r.out);
    EXPECT_EQ(j["model_error"]["model_class"], cls) << file;
    EXPECT_EQ(j["model_error"]["band"], cls) << file;
    const ModelErrorBand& band = bands.classes.at(cls);
    EXPECT_DOUBLE_EQ(j["model_error"]["p10"].get<double>(), band.p10) << file;
    EXPECT_DOUBLE_EQ(j["model_error"]["p90"].get<double>(), band.p90) << file;
  }
}

TEST(Cli, BadScenarioExitsTwoWithPointer) {
  const std::string path = write_temp("bad.json", R"({"schema": "parasim.scenario/1", "name": "x", "model": "llama2-7b",
    "cluster": {"gpu": "h100-sxm5-80g", "nodes": 1, "gpus_per_node": 8},
    "training": {"global_batch": 8, "seq_len": 2048}, "parallel": {"dp": 8, "schedul": "ddp"}})");
  const Ran r = run_cli("run " + path);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/parallel/schedul: unknown key; did you mean \"schedule\"?"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("terminate"), std::string::npos);
}

TEST(Cli, NotJsonExitsTwo) {
  const Ran r = run_cli("run " + write_temp("garbage.json", "{not json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("not valid JSON"), std::string::npos);
}

// A measured run of another version is refused at its schema by run and report, not read as a scenario (whose first
// unknown key would be named instead).
TEST(Cli, MeasuredRunOfAnotherVersionIsRefusedAtItsSchema) {
  Json j = read_json_file(test::data_dir() + "/scenarios/measured/mbridge-skill-h100-qwen3_30b_a3b-bf16-16gpu-ep16-hybridep-overlap-on.json");
  j["schema"] = "parasim.measured/9";
  const std::string file = write_temp("measured_v9.json", j.dump());
  const std::filesystem::path html = std::filesystem::temp_directory_path() / "measured_v9_report.html";
  std::filesystem::remove(html);
  for (const std::string& cmd : {std::string("run "), "report -o " + html.string() + " "}) {
    const Ran r = run_cli(cmd + file);
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_NE(r.out.find("/schema: expected \"parasim.measured/1\""), std::string::npos) << cmd << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(html));  // no partial report
}

TEST(Cli, JsonOutputFollowsContract) {
  const Ran r = run_cli("run --json " + test::data_dir() + "/scenarios/default.json");
  ASSERT_EQ(r.code, 0);
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["schema"], "parasim.result/1");
  for (const char* k : {"scenario", "step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "bubble_fraction", "peak_mem_gib",
                        "fits_in_memory", "ranks", "breakdown", "warnings"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k : {"rank", "peak_mem_gib", "mem_breakdown_gib", "compute_s", "comm_exposed_s", "idle_s"})
    EXPECT_TRUE(j["ranks"][0].contains(k)) << k;
}

TEST(Cli, RunOnAMeasuredRunShowsItsMeasurementBesideThePrediction) {
  // `run` on a parasim.measured/1 file simulates its scenario and prints each measured figure with
  // the prediction and the error, the same numbers `check` compares (here an H200 step of our own).
  const std::string file = test::data_dir() + "/scenarios/measured/own-h200-sxm-141g-2026-11-30-mpt-1b.json";
  const Ran text = run_cli("run " + file);
  EXPECT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("measured (parasim device measurement"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("tokens_per_s_per_gpu"), std::string::npos) << text.out;
  const Ran js = run_cli("run --json " + file);
  ASSERT_EQ(js.code, 0) << js.out;
  const Json j = Json::parse(js.out);
  const Ran chk = run_cli("check --json " + file);
  const Json c = Json::parse(chk.out);
  ASSERT_EQ(j["measured"]["figures"].size(), c["runs"][0]["comparisons"].size());
  for (size_t i = 0; i < j["measured"]["figures"].size(); ++i) {
    const Json& f = j["measured"]["figures"][i];
    const Json& g = c["runs"][0]["comparisons"][i];
    EXPECT_EQ(f["figure"], g["figure"]);
    EXPECT_DOUBLE_EQ(f["predicted"].get<double>(), g["predicted"].get<double>());
    EXPECT_DOUBLE_EQ(f["error"].get<double>(), g["error"].get<double>());
  }
  EXPECT_DOUBLE_EQ(j["step_time_s"].get<double>(), j["measured"]["figures"][0]["predicted"].get<double>());
  // A measured run whose scenario is broken names the measured file and the path inside it.
  const Ran bad = run_cli("run " + write_temp("bad-measured.json", R"({"schema": "parasim.measured/1", "id": "x", "scenario": 3,
    "measured": {"step_time_s": 1.0}})"));
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("bad-measured.json: /scenario: expected an inline scenario object or a path to one"), std::string::npos)
      << bad.out;
}

TEST(Cli, KernelTableAddsUpToTheSimulatedComputeTime) {
  // One GPU, no communication, no recompute: the simulated forward time of a step is the
  // embedding, every layer's attention and MLP blocks and the output layer, once per microbatch,
  // exactly the rows `run --kernels` lists; the same for backward.
  const std::string path = write_temp("one_gpu.json", R"({"schema": "parasim.scenario/1", "name": "one", "model": "llama3-8b",
    "cluster": {"gpu": "a100-sxm4-80g", "nodes": 1, "gpus_per_node": 1},
    "training": {"global_batch": 4, "micro_batch": 2, "seq_len": 1024},
    "parallel": {"dp": 1, "schedule": "ddp", "recompute": "none"}})");
  const Ran r = run_cli("run --json --kernels " + path);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  ASSERT_TRUE(j.contains("kernels"));
  double fwd = 0, bwd = 0;
  const double layers = 32, microbatches = 2;
  for (const auto& k : j["kernels"]) {
    const std::string b = k["block"];
    const double per_step = k["seconds"].get<double>() * microbatches *
                            (b.rfind("attention", 0) == 0 || b.rfind("mlp", 0) == 0 ? layers : 1.0);
    (b.find("fwd") != std::string::npos ? fwd : bwd) += per_step;
    EXPECT_GT(k["seconds"].get<double>(), 0) << k.dump();
    EXPECT_FALSE(k["priced_by"].get<std::string>().empty());
  }
  EXPECT_NEAR(fwd / j["breakdown"]["forward_s"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(bwd / j["breakdown"]["backward_s"].get<double>(), 1.0, 1e-9);
  const Ran text = run_cli("run --kernels " + path);
  EXPECT_NE(text.out.find("attention fwd  qkv"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("one layer, forward + backward:"), std::string::npos) << text.out;
}

TEST(Cli, TraceIsChromeTraceFormat) {
  const std::string trace = ::testing::TempDir() + "t.trace.json";
  std::remove(trace.c_str());
  ASSERT_EQ(run_cli("run --trace " + trace + " " + test::data_dir() + "/scenarios/default.json").code, 0);
  const Json j = read_json_file(trace);
  ASSERT_TRUE(j.contains("traceEvents"));
  bool span = false, counter = false;
  for (const auto& e : j["traceEvents"]) {
    span = span || e["ph"] == "X";
    counter = counter || e["ph"] == "C";
  }
  EXPECT_TRUE(span);
  EXPECT_TRUE(counter);
}

// A step that does not fold is drawn op by op as well: its summary ran each layer's ops fused and
// kept no memory curve, so the trace and the program dump come from the whole step run again.
TEST(Cli, AnUnfoldedStepIsDrawnOpByOp) {
  const std::string path = test::data_dir() + "/scenarios/ddp-gpt-1.7b-8xa100.json";
  const std::string trace = ::testing::TempDir() + "unfolded.trace.json";
  std::remove(trace.c_str());
  ASSERT_EQ(run_cli("run --trace " + trace + " " + path).code, 0);
  int attention = 0, mlp = 0;
  bool counter = false;
  const Json j = read_json_file(trace);
  for (const auto& e : j["traceEvents"]) {
    attention += e.value("name", "") == "attention fwd";
    mlp += e.value("name", "") == "mlp fwd";
    counter = counter || e["ph"] == "C";
  }
  EXPECT_GT(mlp, 0);
  EXPECT_EQ(mlp, attention);  // each layer's forward drawn as its blocks
  EXPECT_TRUE(counter);       // and the memory curve
  const Ran dump = run_cli("run --dump-program 0 " + path);
  EXPECT_NE(dump.out.find("mlp fwd"), std::string::npos) << dump.out;
}

// --dump-program prints a rank's op table, not a Result: with --json the JSON would be missing
// from standard output while the exit status said success.
TEST(Cli, DumpProgramAndJsonAreRefusedTogether) {
  const Ran r = run_cli("run --json --dump-program 0 " + test::data_dir() + "/scenarios/default.json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--dump-program prints a rank's op table"), std::string::npos) << r.out;
  const Ran k = run_cli("run --kernels --dump-program 0 " + test::data_dir() + "/scenarios/default.json");
  EXPECT_EQ(k.code, 2) << k.out;
  EXPECT_NE(k.out.find("--kernels would be ignored"), std::string::npos) << k.out;
}

// A step folded onto its steady state (sim/steady_state.h) is simulated whole for its trace, and
// refused before it runs where the trace would pass --trace-max-mib (../shared/repro/405b_mb65536.json:
// 17.9 GB of memory for a 4,096-microbatch trace before; bad_alloc at 65,536).
TEST(Cli, TraceOfAFoldedStepHasEveryMicrobatchOrIsRefused) {
  Json j = test::base_scenario();
  j["model"] = {{"name", "small"}, {"layers", 2}, {"hidden", 1024}, {"heads", 8}, {"vocab", 32000}};
  j["training"]["global_batch"] = 8 * 64;  // 64 microbatches per GPU, folded at 8, 16 and 24
  const std::string path = write_temp("folded.json", j.dump());
  const std::string trace = ::testing::TempDir() + "folded.trace.json";
  std::remove(trace.c_str());
  ASSERT_EQ(run_cli("run --trace " + trace + " " + path).code, 0);
  int last = -1;
  const Json events = read_json_file(trace)["traceEvents"];
  for (const auto& e : events)
    if (e["ph"] == "X" && e["args"].contains("microbatch")) last = std::max(last, e["args"]["microbatch"].get<int>());
  EXPECT_EQ(last, 63);
  // 405b_mb4096.json: 5.7 M ops, a 0.93 GiB trace that took 17.9 GB of memory to write; 65,536
  // microbatches: 91 M ops. Both refused in well under a second, before the whole step is built.
  for (const char* repro : {"repro/405b_mb4096.json", "repro/405b_mb65536.json"}) {
    const std::string big = ::testing::TempDir() + "big.trace.json";
    std::remove(big.c_str());
    const Ran r = run_cli("run --trace " + big + " " + test::test_data(repro));
    EXPECT_EQ(r.code, 2) << repro;
    EXPECT_NE(r.out.find("over the cap of 1024 MiB (--trace-max-mib)"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(big)) << repro;
  }
}

TEST(Cli, ScenarioOutputsTraceIsWrittenBesideTheScenario) {
  Json j = read_json_file(test::data_dir() + "/scenarios/ddp-gpt-1.7b-8xa100.json");
  j["outputs"] = {{"trace", "from-scenario.trace.json"}};
  const std::string path = write_temp("with-trace.json", j.dump());
  const std::string trace = ::testing::TempDir() + "from-scenario.trace.json";
  std::remove(trace.c_str());
  ASSERT_EQ(run_cli("run " + path).code, 0);
  EXPECT_TRUE(read_json_file(trace).contains("traceEvents"));
}

TEST(Cli, ListAndVersionAndHelp) {
  const Ran s = run_cli("list schedules");
  EXPECT_EQ(s.code, 0);
  for (const char* n : {"dataparallel", "ddp", "naive", "gpipe", "1f1b", "interleaved", "zb-h1"})
    EXPECT_NE(s.out.find(n), std::string::npos) << n;
  EXPECT_EQ(run_cli("list models").code, 0);
  const Ran g = run_cli("list gpus");
  EXPECT_EQ(g.code, 0);
  // Each profile's dense peaks, the low-precision ones where the GPU has them (GB300: FP4 15 PFLOP/s).
  EXPECT_NE(g.out.find("gb300-nvl72-288g"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("bf16   2500 TFLOP/s  fp8 5000  mxfp8 5000  nvfp4 15000"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("bf16    989 TFLOP/s  fp8 1979  (datasheet)"), std::string::npos) << g.out;
  EXPECT_NE(run_cli("--version").out.find("parasim"), std::string::npos);
  EXPECT_EQ(run_cli("run --help").code, 0);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST(Cli, ImportNcclTestsWritesProfileAndRefusesToOverwrite) {
  const std::string out = ::testing::TempDir() + "imported-h100.json";
  std::remove(out.c_str());
  const std::string cmd = "import nccl-tests " + test::test_data("nccl-tests/all_reduce_8gpu.txt") + " --gpu h100-sxm5-80g -o " + out;
  const Ran a = run_cli(cmd);
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_NE(a.out.find("added 6 all_reduce points"), std::string::npos) << a.out;
  const Profile p = load_profile(test::data_dir(), out, "test");
  EXPECT_EQ(p.name, "imported-h100");
  const Ran b = run_cli(cmd);
  EXPECT_EQ(b.code, 2);
  EXPECT_NE(b.out.find("exists; refusing to overwrite"), std::string::npos);
  const Ran c = run_cli("collective --gpu " + out + " --ranks 8 --bytes 1GiB");
  EXPECT_EQ(c.code, 0);
  EXPECT_NE(c.out.find("3894 us"), std::string::npos) << c.out;
}

TEST(Cli, ImportGemmTableReproducesTheShippedFitsAndNamesBadRows) {
  // The B200 profile's fixed time and epilogue rate came from this table: importing it onto the
  // shipped profile writes the same figures, and the fitted profile still loads.
  const std::string out = ::testing::TempDir() + "b200-fitted.json";
  std::remove(out.c_str());
  const std::string cmd = "import gemm-table " + test::test_data("xla_sm100_matmul.json") + " --gpu b200-sxm-180g -o " + out;
  const Ran a = run_cli(cmd);
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_NE(a.out.find("fit over 95 rows, mean error 6.0 %"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("total time -11.5 %"), std::string::npos) << a.out;
  const Profile fitted = load_profile(test::data_dir(), out, "test");
  const Profile shipped = load_profile(test::data_dir(), "b200-sxm-180g", "test");
  EXPECT_NEAR(fitted.gemm_fixed_us.value, shipped.gemm_fixed_us.value, 1e-9);
  EXPECT_NEAR(fitted.gemm_epilogue_gbps.value, shipped.gemm_epilogue_gbps.value, 1e-9);
  EXPECT_EQ(fitted.gemm_fixed_us.how, "fitted");
  EXPECT_NE(fitted.gemm_fixed_us.source.find("OpenXLA GPU cost model"), std::string::npos) << fitted.gemm_fixed_us.source;
  EXPECT_EQ(run_cli(cmd).code, 2);  // refuses to overwrite
  // Bad tables: file, JSON pointer and what was expected.
  const Json good = read_json_file(test::test_data("xla_sm100_matmul.json"));
  auto error_of = [&](const Json& t) {
    const std::string path = write_temp("table.json", t.dump());
    const Ran r = run_cli("import gemm-table " + path + " --gpu b200-sxm-180g -o " + ::testing::TempDir() + "x.json --force");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(r.out.rfind("error: " + path + ": ", 0), 0u) << r.out;  // names the file
    return r.out.substr(r.out.find("table.json: ") + 12);
  };
  Json t = good;
  t["rows"][3][4] = -1;
  EXPECT_EQ(error_of(t), "/rows/3/4: expected a positive finite number\n");
  t = good;
  t["rows"][0][1] = 2048.5;
  EXPECT_EQ(error_of(t), "/rows/0/1: expected a whole GEMM dimension up to 1e9\n");
  t = good;
  t["columns"] = Json::array({"b", "m", "n", "k", "time_s"});
  EXPECT_EQ(error_of(t), "/columns: expected [\"b\", \"m\", \"n\", \"k\", \"flops_per_s\"]\n");
  t = good;
  t["dtype"] = "int4";
  EXPECT_NE(error_of(t).find("int4"), std::string::npos);
  t = good;
  t["rows"] = Json::array({good["rows"][0], good["rows"][1]});
  EXPECT_NE(error_of(t).find("does not fit these 2 rows"), std::string::npos);
}

TEST(Cli, TopologyAndCollectiveCommands) {
  const Ran t = run_cli("topology --dump-routes " + test::data_dir() + "/scenarios/default.json");
  EXPECT_EQ(t.code, 0);
  EXPECT_NE(t.out.find("64 GPUs"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("gpu 0 -> gpu 63"), std::string::npos);
  EXPECT_EQ(run_cli("topology --dot " + test::data_dir() + "/scenarios/default.json").out.rfind("digraph", 0), 0u);
  const Ran c = run_cli("collective --gpu a100-sxm4-80g --op all_gather --ranks 16 --bytes 256MB --network flow");
  EXPECT_EQ(c.code, 0) << c.out;
  EXPECT_NE(c.out.find("busbw"), std::string::npos);
  EXPECT_EQ(run_cli("collective --gpu a100-sxm4-80g --bytes 12XB").code, 2);
  // Nothing to move: no bandwidth figure, not "nan".
  const Ran z = run_cli("collective --gpu h100-sxm5-80g --op send_recv --ranks 2 --bytes 0");
  EXPECT_EQ(z.code, 0) << z.out;
  EXPECT_NE(z.out.find("algbw   n/a"), std::string::npos) << z.out;
  EXPECT_EQ(z.out.find("nan"), std::string::npos) << z.out;
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST(Cli, ProfileShowAndDiff) {
  const Ran s = run_cli("profile show a100-sxm4-80g");
  EXPECT_EQ(s.code, 0);
  EXPECT_NE(s.out.find("[published]"), std::string::npos);
  EXPECT_NE(s.out.find("[datasheet]"), std::string::npos);
  const Ran d = run_cli("profile diff a100-sxm4-80g a100-sxm4-40g");
  EXPECT_EQ(d.code, 0);
  EXPECT_NE(d.out.find("hbm_gbps"), std::string::npos);
  EXPECT_NE(d.out.find("-23.7%"), std::string::npos) << d.out;  // 1555 vs 2039 GB/s
  // The epilogue rate follows the HBM bandwidth (assumed from the H100 fit's ratio).
  EXPECT_NE(d.out.find("gemm_epilogue_gbps"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("2 figures differ"), std::string::npos) << d.out;
  EXPECT_EQ(run_cli("profile show a100-sxm4-8g").code, 2);
  // Figures only one side has are listed too (FlashAttention-3 is priced for Hopper only).
  const Ran h = run_cli("profile diff a100-sxm4-80g h100-sxm5-80g");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("attention_kernels.flash3.fwd_efficiency"), std::string::npos) << h.out;
  EXPECT_NE(run_cli("profile show a100-sxm4-80g").out.find("attention_kernels.triton.bwd_efficiency"), std::string::npos);
}

}  // namespace
}  // namespace parasim

// The hostile-user trial of issue 40: inputs read once from pipes, outputs whole or absent, user
// strings echoed safely. The reproducers are in tests/data/repro.
namespace parasim {
namespace {

Ran bash_script(const std::string& script) {
  // One file per call and process: ctest runs the tests of this file in parallel processes.
  static int calls = 0;
  const std::string path = write_temp("script-" + std::to_string(::getpid()) + "-" + std::to_string(++calls) + ".sh", "parasim() { '" + std::string(PARASIM_BINARY) + "' \"$@\"; }\n" + script + "\n");
  return run_shell("bash " + path);
}

TEST(Cli, ScenarioIsReadOnceFromPipesStdinAndFifos) {
  const std::string f = test::data_dir() + "/scenarios/ddp-gpt-1.7b-8xa100.json";
  const Ran file = run_cli("run --json " + f);
  ASSERT_EQ(file.code, 0) << file.out;
  const double step = Json::parse(file.out)["step_time_s"].get<double>();
  const std::string fifo = ::testing::TempDir() + "scenario.fifo";
  std::remove(fifo.c_str());
  for (const std::string& how : {"parasim run --json - < '" + f + "'", "parasim run --json <(cat '" + f + "')",
                                 "mkfifo '" + fifo + "'; cat '" + f + "' > '" + fifo + "' & parasim run --json '" + fifo + "'"}) {
    const Ran r = bash_script(how);
    ASSERT_EQ(r.code, 0) << how << "\n" << r.out;
    EXPECT_EQ(Json::parse(r.out)["step_time_s"].get<double>(), step) << how;
  }
}

TEST(Cli, FullDiskLeavesNoTraceAndExitsTwo) {
  // RLIMIT_FSIZE stands in for a full disk: writes past 1 KiB fail with EFBIG (SIGXFSZ ignored).
  const std::string dir = ::testing::TempDir() + "full_disk";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string f = test::data_dir() + "/scenarios/ddp-gpt-1.7b-8xa100.json";
  Ran r = bash_script("trap '' XFSZ; ulimit -f 1; parasim run '" + f + "' --trace '" + dir + "/t.json'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--trace " + dir + "/t.json: write failed (File too large); nothing was written"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // neither the trace nor its temporary file
  // An existing trace survives a failed overwrite.
  std::ofstream(dir + "/t.json") << "old";
  r = bash_script("trap '' XFSZ; ulimit -f 1; parasim run '" + f + "' --trace '" + dir + "/t.json' --force");
  EXPECT_EQ(r.code, 2) << r.out;
  std::ifstream in(dir + "/t.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "old");
  // The same for stdout: the JSON cut short is an error, not exit 0.
  r = bash_script("trap '' XFSZ; ulimit -f 1; parasim run --json '" + f + "' > '" + dir + "/out.json'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("standard output: write failed"), std::string::npos) << r.out;
}

TEST(Cli, ProfilePathInAScenarioIsRelativeToTheScenarioFile) {
  // cluster.gpu as a path resolves against the scenario's folder, as a measured run's scenario
  // path does; the command runs from another working directory.
  const std::string dir = ::testing::TempDir() + "rel_profile";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/profiles");
  std::filesystem::copy_file(test::data_dir() + "/calibrate/profiles/a100-sxm4-80g.json", dir + "/profiles/mine.json");
  Json j = read_json_file(test::data_dir() + "/scenarios/ddp-gpt-1.7b-8xa100.json");
  j["cluster"]["gpu"] = "profiles/mine.json";
  std::ofstream(dir + "/s.json") << j.dump();
  const Ran r = bash_script("cd / && parasim run '" + dir + "/s.json'");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(Cli, AMissingProfileFileIsToldFromTheKeyThatNamedIt) {
  // A profile path that does not open names the scenario and /cluster/gpu, and that a path names
  // its .json file; an endless source is refused, not read into memory.
  const std::string dir = ::testing::TempDir() + "missing_profile";
  std::filesystem::create_directories(dir);
  Json j = read_json_file(test::data_dir() + "/scenarios/ddp-gpt-1.7b-8xa100.json");
  j["cluster"]["gpu"] = "./my_gpu";
  std::ofstream(dir + "/s.json") << j.dump();
  Ran r = run_cli("run '" + dir + "/s.json'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("s.json: /cluster/gpu: the GPU profile"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("names its .json file"), std::string::npos) << r.out;
  r = run_cli("profile show /dev/zero");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("larger than 256 MiB"), std::string::npos) << r.out;
}

TEST(Cli, InvalidUtf8FromTheCommandLineIsAnInputError) {
  // JSON output cannot carry it: exit 2 with a message, not an internal error.
  const Ran r = run_cli(std::string("sweep ") + test::data_dir() + "/scenarios/fsdp-llama3-8b-8xh100.json --vary \"$(printf '/name=\\377\\376')\" --json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("not valid UTF-8"), std::string::npos) << r.out;
}

TEST(Cli, TheDispatchersCrossNodeRateIsStated) {
  // HybridEP across two H100 nodes: the profile's published point; DeepEP across A100 nodes: no
  // point, so NCCL's rate, and the run says which.
  Json j = read_json_file(test::data_dir() + "/scenarios/moe-qwen3-30b-a3b-16xh100-fp8.json");
  j["parallel"]["moe_dispatcher"] = "hybridep";
  Ran r = run_cli("run " + test::write_temp("hy.json", j.dump()));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("MoE dispatcher hybridep across 2 nodes: its cross-node tokens move at 0.539 of the NIC line rate"), std::string::npos)
      << r.out;
  j["cluster"]["gpu"] = "a100-sxm4-80g";
  j["training"]["dtype"] = "bf16";
  j["training"].erase("fp8_recipe");
  j["training"].erase("attention_kernel");
  j["parallel"]["moe_dispatcher"] = "deepep";
  r = run_cli("run " + test::write_temp("de.json", j.dump()));
  EXPECT_NE(r.out.find("has no rate for its kernels (network.moe_dispatch_rdma), so its cross-node tokens move at NCCL's"), std::string::npos)
      << r.out;
}

TEST(Cli, UserStringsCannotCutMessagesOrDriveTheTerminal) {
  // raw_escaped_nul_in_gpu.json: "h100-sxm5-80g\u0000junk" no longer ends the message at the NUL.
  Ran r = run_cli("run " + test::test_data("repro/raw_escaped_nul_in_gpu.json"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown GPU profile \"h100-sxm5-80g\\u0000junk\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Profiles: "), std::string::npos) << r.out;
  // name_ansi.json: escape sequences and a bidi override in the name are shown escaped.
  r = run_cli("run " + test::test_data("repro/name_ansi.json"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find("\xe2\x80\xae"), std::string::npos);
  EXPECT_NE(r.out.find("parasim: evil\\u001b[2J\\u001b[31mRED\\u202eabc"), std::string::npos) << r.out;
}

TEST(Cli, ComponentFiguresAreJudgedOnlyWithTheirOwnTolerance) {
  // comp_compute_5x.json: component compute time 1.0 s measured, ~0.19 s predicted (-80 %); it was
  // printed "pass" under the default tolerance it was never judged against.
  const std::string f = test::test_data("repro/comp_compute_5x.json");
  Ran r = run_cli("check " + f);
  EXPECT_EQ(r.code, 0) << r.out;
  const auto line = r.out.substr(r.out.find("component.compute_s"));
  EXPECT_EQ(line.substr(0, line.find('\n')).find("pass"), std::string::npos) << r.out;
  EXPECT_NE(line.find("not judged"), std::string::npos) << r.out;
  r = run_cli("check " + f + " --tolerance-for component.compute_s=0.5");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL"), std::string::npos) << r.out;
}

// The default scenario with one change, written to a temporary file.
std::string default_with(const std::string& name, const std::function<void(Json&)>& change) {
  Json j = read_json_file(test::data_dir() + "/scenarios/default.json");
  change(j);
  return write_temp(name, j.dump());
}

TEST(Cli, FailOnOomExitsOneWhenARankDoesNotFit) {
  // Four sequences of 8,192 tokens per microbatch: Llama 3 70B's activations no longer fit in 80 GB.
  const std::string oom = default_with("oom.json", [](Json& j) { j["training"]["micro_batch"] = 4; });
  const Ran plain = run_cli("run " + oom);
  EXPECT_EQ(plain.code, 0) << plain.out;
  EXPECT_NE(plain.out.find("OUT OF MEMORY"), std::string::npos) << plain.out;
  EXPECT_EQ(run_cli("run --fail-on-oom " + oom).code, 1);
  EXPECT_EQ(run_cli("run --fail-on-oom " + test::data_dir() + "/scenarios/default.json").code, 0);
}

TEST(Cli, LayoutWarnings) {
  // Micro batch 2 peaks at about 75.6 of 79.6 GiB: it fits, with 5 % headroom.
  const Ran tight = run_cli("run " + default_with("tight.json", [](Json& j) { j["training"]["micro_batch"] = 2; }));
  EXPECT_EQ(tight.code, 0) << tight.out;
  EXPECT_NE(tight.out.find("tight fit"), std::string::npos) << tight.out;
  // TP 8 over nodes of 4 GPUs.
  const Ran span = run_cli("run " + default_with("span.json", [](Json& j) {
                         j["cluster"]["nodes"] = 16;
                         j["cluster"]["gpus_per_node"] = 4;
                       }));
  EXPECT_EQ(span.code, 0) << span.out;
  EXPECT_NE(span.out.find("tensor parallelism spans nodes"), std::string::npos) << span.out;
  const Ran ok = run_cli("run " + test::data_dir() + "/scenarios/default.json");
  EXPECT_EQ(ok.out.find("tight fit"), std::string::npos);
  EXPECT_EQ(ok.out.find("spans nodes"), std::string::npos);
}

TEST(Cli, SummaryStatesTheIdealBubbleAndATimePartition) {
  const Ran r = run_cli("run " + test::data_dir() + "/scenarios/default.json");
  // Interleaved, p 4, v 5, m 64: (p-1)/(v*m+p-1) = 3/323 = 0.9 %.
  EXPECT_NE(r.out.find("ideal (p-1)/(v*m+p-1) = 0.9 %"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("100.0 %"), std::string::npos) << r.out;  // the step line of the partition
  EXPECT_NE(r.out.find("overlapped communication"), std::string::npos) << r.out;
}

TEST(Cli, ALongFoldedStepIsPartitionedFromItsFoldPoints) {
  // 4,096 microbatches of Llama 3.1 405B (4.9 M ops) are folded onto the steady state; where the time
  // went is folded with it (each line on the line through the three points), not simulated whole.
  const Ran r = run_cli("run " + test::test_data("repro/405b_mb4096.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("the lines sum to the step"), std::string::npos) << r.out;
}

TEST(Cli, AShortFoldedStepIsPartitioned) {
  // Qwen3 30B-A3B's 64 microbatches fold (three points from its fill cost 9): the summary
  // partitions the step.
  const Ran r = run_cli("run " + test::data_dir() + "/scenarios/moe-qwen3-30b-a3b-16xh100-fp8.json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("the lines sum to the step"), std::string::npos) << r.out;
}

TEST(Cli, CollectiveJsonIsTheTerminalAnswer) {
  const Ran j = run_cli("collective --gpu h100-sxm5-80g --op all_gather --ranks 16 --bytes 256MiB --json");
  ASSERT_EQ(j.code, 0) << j.out;
  const Json a = Json::parse(j.out);
  EXPECT_EQ(a["schema"], "parasim.collective/1");
  EXPECT_EQ(a["nodes"], 2);
  EXPECT_DOUBLE_EQ(a["bytes"].get<double>(), 256.0 * 1024 * 1024);
  // algbw is bytes over time, as the terminal prints it.
  EXPECT_NEAR(a["algbw_gbps"].get<double>(), a["bytes"].get<double>() / a["time_s"].get<double>() / 1e9, 1e-9);
  const Ran t = run_cli("collective --gpu h100-sxm5-80g --op all_gather --ranks 16 --bytes 256MiB");
  EXPECT_NE(t.out.find(fmt::format("algbw   {:.2f} GB/s", a["algbw_gbps"].get<double>())), std::string::npos) << t.out;
}

TEST(Cli, MissingDataDirectoryNamesThePath) {
  const Ran r = run_cli("--data-dir /nonexistent-parasim list gpus");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/nonexistent-parasim (--data-dir)"), std::string::npos) << r.out;
}

// profile derive writes through the commands' one output path (tools/output_file.h): a directory is
// refused, not renamed over; a file beside the target is left as it was; flags that would be
// ignored (--source without --set, a key set twice, a hexadecimal value, an empty --name) are refused.
TEST(Cli, ProfileDeriveRefusesWhatItCannotWriteOrWouldIgnore) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "derive_cli";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "taken");
  { std::ofstream(dir / "new.json.tmp") << "mine"; }
  const std::string base = "profile derive h100-sxm5-80g -o ";
  const Ran into_dir = run_cli(base + (dir / "taken").string() + " --force");
  EXPECT_EQ(into_dir.code, 2) << into_dir.out;
  EXPECT_NE(into_dir.out.find("is a directory"), std::string::npos) << into_dir.out;
  for (const auto& [bad, says] : std::initializer_list<std::pair<std::string, std::string>>{
           {" --set memory.hbm_gbps=0x10 --source s", "the value is not a decimal number"},
           {" --source s", "no --set was given"},
           {" --set memory.hbm_gbps=4000 --set /memory/hbm_gbps/value=5000 --source s", "is given twice"},
           {" --name ''", "--name is empty"},
           {" --set device.memory_bytes=85899345920.5 --source s", "is a count; expected a whole number"},
           {" --set device.memory_bytes=1000 --source s", "expected at least 1 GiB"}}) {
    const Ran r = run_cli(base + (dir / "bad.json").string() + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.out;
    EXPECT_NE(r.out.find(says), std::string::npos) << bad << "\n" << r.out;
    EXPECT_FALSE(std::filesystem::exists(dir / "bad.json")) << bad;
  }
  const Ran ok = run_cli(base + (dir / "new.json").string() + " --set memory.hbm_gbps=4000 --source s");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "new.json"));
  std::ifstream mine(dir / "new.json.tmp");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(mine), {}), "mine");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 3u);  // taken/, new.json.tmp, new.json: no temporary file left behind
}

}  // namespace
}  // namespace parasim
