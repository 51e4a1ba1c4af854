// `parasim check` and `parasim validate` on hand-made measured runs: pass, fail, missing
// figures, bad files, exit codes.
#include <gtest/gtest.h>

#include <cmath>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "../test_util.h"
#include "sim/uncertainty.h"
#include "tools/validation.h"

namespace parasim {
namespace {

using test::Ran;
using test::run_cli;

const std::string kScenario = "scenarios/ddp-gpt-1.7b-8xa100.json";

// A measured run whose step time is `factor` times what parasim predicts today.
std::string measured_relative_to_prediction(const std::string& name, double factor) {
  const Scenario sc = load_scenario(test::data_dir() + "/" + kScenario, test::data_dir());
  const double predicted = simulate(sc, Registries{}).result.step_time_s;
  Json j = {{"schema", "parasim.measured/1"}, {"id", name}, {"scenario", read_json_file(test::data_dir() + "/" + kScenario)},
            {"measured", {{"step_time_s", predicted * factor}}}, {"source", {{"title", "test"}}}};
  const std::string path = ::testing::TempDir() + name + ".json";
  std::ofstream(path) << j.dump();
  return path;
}

TEST(Check, PassWithinToleranceFailOutside) {
  // Measured 5 % slower than predicted: error (pred - meas)/meas = 1/1.05 - 1 = -4.76 %.
  const std::string path = measured_relative_to_prediction("slower5", 1.05);
  const MeasuredRun run = load_measured(path, test::data_dir());
  const RunCheck c = check_run(run, Registries{}, Tolerances{});
  ASSERT_EQ(c.comparisons.size(), 1u);
  EXPECT_NEAR(c.comparisons[0].error, 1 / 1.05 - 1, 1e-9);
  EXPECT_NEAR(c.comparisons[0].throughput_error, 0.05, 1e-9);  // parasim says 5 % faster
  EXPECT_TRUE(c.pass);
  Tolerances tight;
  tight.default_tolerance = 0.01;
  EXPECT_FALSE(check_run(run, Registries{}, tight).pass);

  EXPECT_EQ(run_cli("check " + path).code, 0);
  const Ran r = run_cli("check --tolerance 0.01 " + path);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("FAIL"), std::string::npos);
  EXPECT_NE(r.out.find("0 passed, 1 failed"), std::string::npos);
  EXPECT_NE(r.out.find("a step time predicted short (negative) is the same optimistic error as a rate predicted high"), std::string::npos);
  EXPECT_EQ(run_cli("check --tolerance 0.2 --tolerance-for step_time_s=0.01 " + path).code, 1);
}

TEST(Check, AStepTimeAndARateThatContradictEachOtherAreRefused) {
  // 8 A100 x rate x step must be global batch x sequence: a rate implying a step 10 % off is bad input
  // (exit 2, the JSON path named); within rounding it loads.
  Json j = {{"schema", "parasim.measured/1"}, {"id", "both"}, {"scenario", read_json_file(test::data_dir() + "/" + kScenario)},
            {"source", {{"title", "test"}}}};
  const Scenario sc = load_scenario(test::data_dir() + "/" + kScenario, test::data_dir());
  const double tokens = static_cast<double>(sc.training.global_batch) * static_cast<double>(sc.training.seq_len);
  const double step = 2.0, rate = tokens / (step * static_cast<double>(sc.cluster.gpus()));
  j["measured"] = {{"step_time_s", step}, {"tokens_per_s_per_gpu", rate * 1.01}};
  const std::string ok = ::testing::TempDir() + "both-ok.json", bad = ::testing::TempDir() + "both-bad.json";
  std::ofstream(ok) << j.dump();
  EXPECT_NO_THROW(load_measured(ok, test::data_dir()));
  // Symmetric: a rate 11 % high is as contradictory as one 11 % low.
  for (const double f : {1.11, 1 / 1.11}) {
    j["measured"]["tokens_per_s_per_gpu"] = rate * f;
    std::ofstream(bad) << j.dump();
    EXPECT_THROW(load_measured(bad, test::data_dir()), ConfigError) << f;
  }
  j["measured"]["tokens_per_s_per_gpu"] = rate * 1.2;
  std::ofstream(bad) << j.dump();
  const Ran r = run_cli("check " + bad);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/measured/tokens_per_s_per_gpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("disagree by more than 10 %"), std::string::npos) << r.out;
}

TEST(Check, JsonOutputHasSignedAndAbsoluteError) {
  const Ran r = run_cli("check --json " + measured_relative_to_prediction("slower20", 1.2));
  ASSERT_EQ(r.code, 1);  // 1/1.2 - 1 = -16.7 % is outside 10 %
  const Json j = Json::parse(r.out);
  const auto& c = j["runs"][0]["comparisons"][0];
  EXPECT_NEAR(c["error"].get<double>(), 1 / 1.2 - 1, 1e-9);
  EXPECT_NEAR(c["abs_error"].get<double>(), 1 - 1 / 1.2, 1e-9);
  EXPECT_FALSE(c["pass"].get<bool>());
}

TEST(Check, BadFilesExitTwoWithClearErrors) {
  const std::string d = test::test_data("measured/");
  Ran r = run_cli("check " + d + "no_figures.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/measured: no measured figure"), std::string::npos) << r.out;
  r = run_cli("check " + d + "bad_flops.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/measured/tflops_per_gpu/flops: expected one of \"model\", \"model_causal\", \"hardware\""), std::string::npos) << r.out;
  r = run_cli("check " + d + "not_json.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("not valid JSON"), std::string::npos) << r.out;
  r = run_cli("check " + d + "missing.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("cannot open file"), std::string::npos) << r.out;
}

TEST(Check, AMissingScenarioFileIsToldFromTheMeasuredRun) {
  // "scenario" may name a file beside the measured run; when it cannot be read the error names the
  // measured file and its /scenario, then what went wrong with the file it tried (fuzz mutants found
  // the bare message, and an uncaught read failure for an empty name, which is the run's directory).
  for (const auto& [file, scenario, why] : {std::tuple{"names_missing_scenario.json", "no-such-scenario.json",
                                                       "no-such-scenario.json: cannot open file"},
                                            std::tuple{"names_a_directory.json", "", "is a directory, expected a JSON file"}}) {
    const std::string path = ::testing::TempDir() + file;
    std::ofstream(path) << Json{{"schema", "parasim.measured/1"}, {"scenario", scenario},
                                {"measured", {{"step_time_s", 1.0}}}, {"source", {{"title", "test"}}}}.dump();
    const Ran r = run_cli("check " + path);
    EXPECT_EQ(r.code, 2) << file;
    EXPECT_NE(r.out.find(path + ": /scenario: the scenario file it names: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(why), std::string::npos) << r.out;
  }
}

TEST(Check, FarOffRunFailsAndOomVerdictIsCompared) {
  const std::string d = test::test_data("measured/");
  EXPECT_EQ(run_cli("check " + d + "far_off.json").code, 1);
  // The shipped DDP example fits in memory; a run claiming OOM disagrees with the prediction.
  const Ran r = run_cli("check " + d + "oom_claimed.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("out of memory"), std::string::npos);
}

// Megatron-Bridge counts the core attention as its causal mask computes it (flop_utils.py): half
// the full score matrix of Megatron-LM's MFU convention. On its dense Llama 3 70B run (seq 8192) the
// two conventions differ by one attention forward's half per layer, a closed form; converted, the
// predicted TFLOP/s per token is the source's to 0.1 % (the same error as tokens/s), where the
// unconverted count is 7 % higher.
TEST(Validate, ModelTflopsInTheSourcesAttentionConvention) {
  const MeasuredRun run = load_measured(test::data_dir() + "/scenarios/measured/pub-mbridge-26.02-dgx-gb200-llama3_70b-fp8-64gpu-tp1pp1cp1.json",
                                        test::data_dir());
  const Scenario& sc = run.scenario;
  const ForwardFlops f = forward_flops(build_model_graph(sc.model, layer_shape(sc)));
  const double b = static_cast<double>(sc.training.micro_batch), s = static_cast<double>(sc.training.seq_len);
  const double heads = static_cast<double>(sc.model.heads / sc.parallel.tp), d = static_cast<double>(sc.model.head_dim());
  EXPECT_NEAR(f.model - f.causal, static_cast<double>(sc.model.layers) * 0.5 * 2 * b * heads * s * s * (d + d), 1e-6 * f.model);
  const RunCheck c = check_run(run, Registries{}, Tolerances{});
  const Comparison* tok = nullptr;
  const Comparison* tf = nullptr;
  for (const Comparison& x : c.comparisons) {
    if (x.figure == "tflops_per_gpu") tf = &x;
    if (x.figure == "tokens_per_s_per_gpu") tok = &x;
  }
  ASSERT_TRUE(tok && tf);
  EXPECT_EQ(tf->detail, "model_causal");
  EXPECT_NEAR(tf->error, tok->error, 1e-3);
  EXPECT_GT(c.result.tflops_per_gpu / tf->predicted, 1.06);
}

TEST(Validate, RatchetsFailOnTheirOwnMape) {
  // One run measured at the predicted step time and 1.5x the predicted nvidia-smi peak: the
  // throughput error is 0, the memory error -1/3. Each ratchet judges only its own figure.
  const Scenario sc = load_scenario(test::data_dir() + "/" + kScenario, test::data_dir());
  const Result r = simulate(sc, Registries{}).result;
  const std::string dir = ::testing::TempDir() + "ratchet_runs";
  std::filesystem::remove_all(dir);  // fresh: validate reads every *.json in it
  std::filesystem::create_directories(dir);
  Json j = {{"schema", "parasim.measured/1"}, {"id", "ratchet"}, {"scenario", read_json_file(test::data_dir() + "/" + kScenario)},
            {"measured", {{"step_time_s", r.step_time_s}, {"peak_mem_gib", {{"value", 1.5 * r.peak_mem_gib}, {"read", "nvidia-smi"}}}}},
            {"source", {{"title", "test"}}}};
  std::ofstream(dir + "/ratchet.json") << j.dump();
  Ran out = run_cli("validate " + dir + " --max-throughput-mape 0.01 --max-memory-mape 0.5 -o " + dir + "/report.md --force");
  EXPECT_EQ(out.code, 0) << out.out;
  out = run_cli("validate " + dir + " --max-throughput-mape 0.01 --max-memory-mape 0.3 -o " + dir + "/report.md --force");
  EXPECT_EQ(out.code, 1) << out.out;
  EXPECT_NE(out.out.find("FAIL: peak-memory MAPE 33.33% is above the ratchet 30.00%"), std::string::npos) << out.out;
  EXPECT_EQ(out.out.find("FAIL: throughput"), std::string::npos) << out.out;
  // The report attributes the error by class of priced time unless told not to; the JSON carries
  // each run's time shares and the per-source fit.
  auto slurp = [](const std::string& f) {
    std::ifstream in(f);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_NE(slurp(dir + "/report.md").find("## Error attribution"), std::string::npos);
  ASSERT_EQ(run_cli("validate " + dir + " --no-attribution -o " + dir + "/plain.md --force").code, 0);
  EXPECT_EQ(slurp(dir + "/plain.md").find("## Error attribution"), std::string::npos);
  // Runs are also grouped by job size (the GPU count a step waits on): this one run in its bucket.
  const std::string plain = slurp(dir + "/plain.md");
  const std::int64_t n = sc.cluster.gpus();
  const std::string bucket = n == 1 ? "1 GPU" : n <= 8 ? "2-8 GPUs" : n <= 64 ? "9-64 GPUs" : n <= 512 ? "65-512 GPUs" : "513-4,096 GPUs";
  const auto table = plain.find("### By job size");
  ASSERT_NE(table, std::string::npos);
  EXPECT_NE(plain.find("| " + bucket + " | 1 | 0.0% |", table), std::string::npos) << plain.substr(table, 400);
  ASSERT_EQ(run_cli("validate " + dir + " --json -o " + dir + "/report.json --force").code, 0);
  const Json rep = read_json_file(dir + "/report.json");
  for (const char* by : {"by_source", "by_gpu"}) {
    ASSERT_EQ(rep["attribution"][by].size(), 2u) << by;  // the run's group, then all runs
    EXPECT_EQ(rep["attribution"][by][1]["group"], "all runs");
  }
  EXPECT_EQ(rep["attribution"]["by_gpu"][0]["group"], "a100-sxm4-80g");
  EXPECT_EQ(rep["by_gpu"]["a100-sxm4-80g"]["throughput"]["n"], 1);
  EXPECT_EQ(rep["by_job_size"][bucket]["throughput"]["n"], 1);
  double sum = 0;
  for (const auto& k : kTimeClasses) sum += rep["checks"][0]["time_shares"][k.name].get<double>();
  EXPECT_GT(sum, 0.5);
}

TEST(Validate, ARunThatRanFitInMemory) {
  // A measured step time means the run completed: a prediction of out-of-memory for it is a wrong
  // verdict (printed as "no (ran)" against "yes"), counted by validate and held by its ratchet.
  Json scenario = read_json_file(test::data_dir() + "/" + kScenario);
  const Scenario sc = load_scenario(test::data_dir() + "/" + kScenario, test::data_dir());
  const Result fits = simulate(sc, Registries{}).result;
  ASSERT_TRUE(fits.fits_in_memory);
  scenario["training"]["micro_batch"] = 64;  // one microbatch of 64 sequences per rank
  scenario["training"]["global_batch"] = 64 * scenario["parallel"]["dp"].get<std::int64_t>();
  scenario["parallel"]["recompute"] = "none";
  const std::string dir = ::testing::TempDir() + "ran_runs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Json j = {{"schema", "parasim.measured/1"}, {"id", "ran"}, {"scenario", scenario}, {"measured", {{"step_time_s", fits.step_time_s}}},
            {"source", {{"title", "test"}}}};
  std::ofstream(dir + "/ran.json") << j.dump();
  Ran out = run_cli("check " + dir + "/ran.json --tolerance 10");
  EXPECT_EQ(out.code, 1) << out.out;
  EXPECT_NE(out.out.find("no (ran)"), std::string::npos) << out.out;
  out = run_cli("validate " + dir + " --no-attribution --max-oom-disagreements 1 -o " + dir + "/report.md --force");
  EXPECT_EQ(out.code, 0) << out.out;
  out = run_cli("validate " + dir + " --no-attribution --max-oom-disagreements 0 -o " + dir + "/report.md --force");
  EXPECT_EQ(out.code, 1) << out.out;
  EXPECT_NE(out.out.find("FAIL: 1 of 1 out-of-memory verdicts disagree; the ratchet allows 0"), std::string::npos) << out.out;
  // The same run at the micro batch that fits agrees.
  j["scenario"] = read_json_file(test::data_dir() + "/" + kScenario);
  std::ofstream(dir + "/ran.json") << j.dump();
  EXPECT_EQ(run_cli("validate " + dir + " --no-attribution --max-oom-disagreements 0 -o " + dir + "/report.md --force").code, 0);
}

// A report of runs from three sources with the given ln(measured / predicted step) each, of model
// class `cls`.
ValidationReport report_of(const std::vector<std::pair<std::string, double>>& runs, const std::string& cls = "dense") {
  ValidationReport rep;
  for (const auto& [source, r] : runs) {
    RunCheck c;
    c.source = source;
    c.model_class = cls;
    Comparison cmp;
    cmp.figure = "step_time_s";
    cmp.throughput_error = std::expm1(r);
    c.comparisons.push_back(cmp);
    rep.runs.push_back(c);
  }
  return rep;
}

// Writes `j` as the model-error file in `dir` and returns the ConfigError loading it gives, or
// "(no error)".
std::string model_error_file_error(const std::string& dir, const Json& j) {
  std::ofstream(dir + "/" + kModelErrorFile) << j.dump();
  try {
    (void)load_model_error(dir);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Validate, ModelErrorBandIsTheMiddleEightyPercentAndItsHeldOutCoverage) {
  // Eleven runs from sources a (r = 0.00-0.04), b (0.05-0.09) and c (0.11).
  std::vector<std::pair<std::string, double>> runs;
  for (int i = 0; i < 10; ++i) runs.push_back({i < 5 ? "a" : "b", 0.01 * i});
  runs.push_back({"c", 0.11});
  const ModelErrorBand me = model_error_of(report_of(runs)).all;
  ASSERT_EQ(me.log_ratios.size(), 11u);
  EXPECT_EQ(me.sources, 3);
  EXPECT_NEAR(me.p10, 0.01, 1e-12);  // quantile 0.1 of 11 sorted values: the 2nd
  EXPECT_NEAR(me.p90, 0.09, 1e-12);
  // Held out: a's runs against b and c (p10..p90 = 0.055..0.10): none inside; b's against a and c
  // (0.005..0.075): 0.05, 0.06 and 0.07 inside; c's against a and b (0.009..0.081): 0.11 outside.
  EXPECT_NEAR(me.held_out_coverage, 3.0 / 11.0, 1e-12);
}

TEST(Validate, ModelErrorFileRoundTripsAndIsCheckedByValidate) {
  const ModelErrorBands error = model_error_of(report_of({{"a", -0.1}, {"a", 0.0}, {"b", 0.1}, {"b", 0.2}, {"c", 0.3}}));
  const ModelErrorBand& me = error.all;
  const std::string dir = ::testing::TempDir() + "model_error_data";
  std::filesystem::create_directories(dir + "/calibrate");
  std::ofstream(dir + "/" + kModelErrorFile) << model_error_json(error, "test").dump();
  const std::optional<ModelErrorBands> back = load_model_error(dir);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->all.log_ratios, me.log_ratios);
  EXPECT_DOUBLE_EQ(back->all.p10, me.p10);
  EXPECT_DOUBLE_EQ(back->all.held_out_coverage, me.held_out_coverage);
  ASSERT_EQ(back->classes.count("dense"), 1u);
  EXPECT_EQ(back->classes.at("dense").log_ratios, me.log_ratios);
  EXPECT_FALSE(load_model_error(dir + "/none").has_value());
  // Every sampled step time times exp(r) for every r: one sample of 2 s and r = ln 1 .. ln 3.
  ModelErrorBand flat;
  flat.log_ratios = {0.0, std::log(2.0), std::log(3.0)};
  const auto [lo, hi] = combined_interval({2.0}, flat);
  EXPECT_NEAR(lo, 2.0 * (1.0 + 0.2 * 1.0), 1e-9);  // quantile 0.1 of {2, 4, 6}: 2 + 0.2 x 2
  EXPECT_NEAR(hi, 6.0 - 0.2 * 2.0, 1e-9);
  // A malformed file names the file and the JSON path.
  Json bad = model_error_json(error, "test");
  bad["log_ratios"] = {0.2, "x"};
  EXPECT_NE(model_error_file_error(dir, bad).find("model_error.json: /log_ratios/1: expected a number"), std::string::npos);
  bad["log_ratios"] = {0.2, 0.1};
  std::ofstream(dir + "/" + kModelErrorFile) << bad.dump();
  EXPECT_THROW((void)load_model_error(dir), ConfigError);
  // validate writes the band of its runs and fails a check against a stale file.
  const Scenario sc = load_scenario(test::data_dir() + "/" + kScenario, test::data_dir());
  const Result r = simulate(sc, Registries{}).result;
  const std::string runs = ::testing::TempDir() + "model_error_runs";
  std::filesystem::create_directories(runs);
  std::ofstream(runs + "/run.json") << Json{{"schema", "parasim.measured/1"}, {"id", "run"},
                                            {"scenario", read_json_file(test::data_dir() + "/" + kScenario)},
                                            {"measured", {{"step_time_s", 1.2 * r.step_time_s}}}, {"source", {{"title", "t"}}}}
                                           .dump();
  const std::string file = dir + "/" + kModelErrorFile;
  ASSERT_EQ(run_cli("validate " + runs + " --no-attribution --write-model-error " + file + " -o " + runs + "/r.md --force").code, 0);
  const ModelErrorBands written = read_model_error(file);
  EXPECT_NEAR(written.all.p10, std::log(1.2), 1e-6);
  EXPECT_NEAR(written.classes.at("dense").p90, std::log(1.2), 1e-6);
  EXPECT_EQ(run_cli("validate " + runs + " --no-attribution --check-model-error " + file + " -o " + runs + "/r.md --force").code, 0);
  std::ofstream(runs + "/run.json") << Json{{"schema", "parasim.measured/1"}, {"id", "run"},
                                            {"scenario", read_json_file(test::data_dir() + "/" + kScenario)},
                                            {"measured", {{"step_time_s", 1.5 * r.step_time_s}}}, {"source", {{"title", "t"}}}}
                                           .dump();
  const Ran stale = run_cli("validate " + runs + " --no-attribution --check-model-error " + file + " -o " + runs + "/r.md --force");
  EXPECT_EQ(stale.code, 1) << stale.out;
  EXPECT_NE(stale.out.find("regenerate it with"), std::string::npos) << stale.out;
}

TEST(Validate, ModelErrorBandsPerModelClass) {
  // Ten dense runs at r = 0.00..0.09 (sources a, b) and ten MoE runs at 0.20..0.38 (sources c, d).
  ValidationReport rep = report_of({{"a", 0.00}, {"a", 0.01}, {"a", 0.02}, {"a", 0.03}, {"a", 0.04},
                                    {"b", 0.05}, {"b", 0.06}, {"b", 0.07}, {"b", 0.08}, {"b", 0.09}});
  for (const RunCheck& c : report_of({{"c", 0.20}, {"c", 0.22}, {"c", 0.24}, {"c", 0.26}, {"c", 0.28},
                                      {"d", 0.30}, {"d", 0.32}, {"d", 0.34}, {"d", 0.36}, {"d", 0.38}}, "moe").runs)
    rep.runs.push_back(c);
  const ModelErrorBands e = model_error_of(rep);
  ASSERT_EQ(e.all.log_ratios.size(), 20u);
  ASSERT_EQ(e.classes.size(), 2u);
  EXPECT_NEAR(e.classes.at("dense").p10, 0.009, 1e-12);  // quantile 0.1 of 0.00..0.09: 0.9 of the way to the 2nd
  EXPECT_NEAR(e.classes.at("dense").p90, 0.081, 1e-12);
  EXPECT_NEAR(e.classes.at("moe").p10, 0.218, 1e-12);
  EXPECT_NEAR(e.classes.at("moe").p90, 0.362, 1e-12);
  EXPECT_EQ(e.classes.at("moe").sources, 2);
  // A class with at least kMinClassRuns runs gets its own band; any other class, all runs' band.
  EXPECT_EQ(e.band_for("moe").first, &e.classes.at("moe"));
  EXPECT_EQ(e.band_for("moe").second, "moe");
  EXPECT_EQ(e.band_for("other").first, &e.all);
  ModelErrorBands few = e;
  few.classes.at("moe").log_ratios.resize(kMinClassRuns - 1);
  EXPECT_EQ(few.band_for("moe").first, &few.all);
  EXPECT_EQ(few.band_for("moe").second, "all");
  // The class of a scenario is its model's.
  ModelSpec m;
  EXPECT_EQ(model_class(m), "dense");
  m.moe = MoeSpec{.experts = 8, .top_k = 2, .expert_ffn_hidden = 1024};
  EXPECT_EQ(model_class(m), "moe");
  // A file without classes (written before them) reads; an unknown class is an error at its path.
  const std::string dir = ::testing::TempDir() + "model_error_classes";
  std::filesystem::create_directories(dir + "/calibrate");
  Json j = model_error_json(e, "test");
  j.erase("classes");
  std::ofstream(dir + "/" + kModelErrorFile) << j.dump();
  const std::optional<ModelErrorBands> old = load_model_error(dir);
  ASSERT_TRUE(old.has_value());
  EXPECT_TRUE(old->classes.empty());
  EXPECT_EQ(old->band_for("moe").first, &old->all);
  j = model_error_json(e, "test");
  j["classes"]["sparse"] = j["classes"]["moe"];
  EXPECT_NE(model_error_file_error(dir, j).find("/classes/sparse: expected the model class"), std::string::npos);
}

TEST(Validate, ErrorStatsAreMeanMedianMaxBias) {
  const ErrorStats s = error_stats({0.1, -0.3, 0.2});
  EXPECT_NEAR(s.mape, 0.2, 1e-12);
  EXPECT_NEAR(s.median, 0.2, 1e-12);
  EXPECT_NEAR(s.max, 0.3, 1e-12);
  EXPECT_NEAR(s.bias, 0.0, 1e-12);
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST(Uncertainty, IntervalIsDeterministicAndBracketsTheRangeEnds) {
  const Scenario sc = load_scenario(test::data_dir() + "/scenarios/default.json", test::data_dir());
  const Interval a = predict_interval(sc, Registries{}, 8, 7), b = predict_interval(sc, Registries{}, 8, 7);
  EXPECT_EQ(a.step_time_p10_s, b.step_time_p10_s);
  EXPECT_EQ(a.step_time_p90_s, b.step_time_p90_s);
  EXPECT_LT(a.step_time_p10_s, a.step_time_p90_s);
  // Every sample lies between the run with all ranged figures at their best and at their worst.
  Scenario best = sc, worst = sc;
  for (auto* s : {&best, &worst}) {
    const bool hi = s == &best;
    for (auto& [dt, f] : s->profile.gemm_max_efficiency) f.value = hi ? f.high : f.low;
    // The attention figures of the kernel the scenario runs.
    const auto [af, ab] = s->profile.attention_efficiency(s->training.priced_attention_kernel());
    for (Figure* f : {af, ab}) f->value = hi ? f->high : f->low;
    Figure& clock = s->profile.sustained_clock_ratio;
    clock.value = hi ? clock.high : clock.low;
  }
  EXPECT_GE(a.step_time_p10_s, simulate(best, Registries{}).result.step_time_s * (1 - 1e-9));
  EXPECT_LE(a.step_time_p90_s, simulate(worst, Registries{}).result.step_time_s * (1 + 1e-9));
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

TEST(Check, ComponentsAreComparedAndReportedButDoNotDecide) {
  const MeasuredRun run = load_measured(test::test_data("measured/components.json"), test::data_dir());
  const RunCheck c = check_run(run, Registries{}, Tolerances{});
  ASSERT_EQ(c.comparisons.size(), 4u);
  EXPECT_EQ(c.comparisons[1].figure, "component.compute_s");
  EXPECT_EQ(c.comparisons[2].figure, "component.comm_exposed_s");
  EXPECT_EQ(c.comparisons[3].figure, "component.bubble_fraction");
  // Predicted compute is the rank-weighted mean compute-stream time: a fraction of 50 s.
  EXPECT_GT(c.comparisons[1].predicted, 0.0);
  EXPECT_LT(c.comparisons[1].error, -0.9);
  EXPECT_TRUE(c.comparisons[1].pass);  // components inform, the step time decides
  EXPECT_FALSE(c.pass);                // 100 s measured step is far off
}

}  // namespace
}  // namespace parasim

namespace parasim {
namespace {

// Scenarios that mix the classes of priced time differently: sequence length (attention), the
// unfused attention path (memory-bound softmax), data parallel over nodes (collectives); twice as
// many runs as classes, so that the fit may tell all four apart.
std::vector<Scenario> attribution_scenarios() {
  std::vector<Scenario> out;
  for (int seq : {1024, 4096, 8192, 16384}) {
    Json j = test::base_scenario();
    j["training"]["seq_len"] = seq;
    j["training"]["global_batch"] = 8 * 16384 / seq;
    out.push_back(test::scenario_from(j));
  }
  for (int seq : {1024, 2048}) {
    Json unfused = test::base_scenario();
    unfused["training"]["flash_attention"] = false;
    unfused["training"]["seq_len"] = seq;
    out.push_back(test::scenario_from(unfused));
  }
  for (int nodes : {2, 4, 16}) {
    Json j = test::base_scenario();
    j["cluster"]["nodes"] = nodes;
    j["parallel"]["dp"] = 8 * nodes;
    j["training"]["global_batch"] = 8 * nodes;
    j["training"]["seq_len"] = 1024;
    j["parallel"]["zero_stage"] = 3;
    out.push_back(test::scenario_from(j));
  }
  return out;
}

TEST(Attribution, SharesOfAStepWithoutCommunicationSumToOne) {
  Json j = test::base_scenario();
  j["cluster"]["gpus_per_node"] = 1;
  j["parallel"]["dp"] = 1;
  j["training"]["global_batch"] = 2;
  const Scenario sc = test::scenario_from(j);
  const Registries reg;
  const TimeShares s = time_shares(sc, reg, simulate(sc, reg).result.step_time_s);
  EXPECT_EQ(s[3], 0.0);  // no collective, no transfer
  for (double x : s) EXPECT_GE(x, 0.0);
  EXPECT_GT(s[1], 0.0);  // the fused attention kernels run
  // Each class's time adds to the step: class i's elasticity is s_i = ln(1 + 0.02 f_i) / ln 1.02 for
  // its fraction f_i of the step, so f_i = (1.02^s_i - 1) / 0.02 and the fractions sum to one (the
  // elasticities themselves sum to up to 0.7 % more: 0.22 % per class at f = 1/3).
  double fractions = 0;
  for (size_t i = 0; i < 3; ++i) fractions += (std::pow(1.02, s[i]) - 1.0) / 0.02;
  EXPECT_NEAR(fractions, 1.0, 1e-3);
  EXPECT_NEAR(s[0] + s[1] + s[2], 1.0, 0.007);
}

TEST(Attribution, RecoversTheMultipliersThatMadeTheMeasurements) {
  // "Measured" step times simulated with known multipliers on each class of priced time; the fit
  // over the runs' time shares must give them back and explain the error.
  const Registries reg;
  const TimeShares truth = {1.15, 0.90, 1.20, 1.30};
  std::vector<RunCheck> runs;
  for (const Scenario& sc : attribution_scenarios()) {
    const double predicted = simulate(sc, reg).result.step_time_s;
    Scenario measured = sc;
    for (size_t k = 0; k < kTimeClasses.size(); ++k) measured.profile.time_scale.*kTimeClasses[k].member = truth[k];
    const double step = simulate(measured, reg).result.step_time_s;
    RunCheck c;
    c.has_shares = true;
    c.shares = time_shares(sc, reg, predicted);
    Comparison t;
    t.figure = "step_time_s";
    t.measured = step;
    t.predicted = predicted;
    t.throughput_error = step / predicted - 1.0;
    c.comparisons.push_back(t);
    runs.push_back(c);
  }
  std::vector<const RunCheck*> ptrs;
  for (const auto& c : runs) ptrs.push_back(&c);
  const Attribution a = attribute("synthetic", ptrs);
  ASSERT_EQ(a.n, static_cast<std::int64_t>(runs.size()));
  for (size_t k = 0; k < kTimeClasses.size(); ++k) {
    SCOPED_TRACE(kTimeClasses[k].name);
    ASSERT_TRUE(a.fitted[k]) << "mean share " << a.mean_share[k];
    EXPECT_NEAR(a.multiplier[k], truth[k], 0.05 * truth[k]);
  }
  EXPECT_GT(a.mape_before, 0.10);
  EXPECT_LT(a.mape_after, 0.25 * a.mape_before);
}

}  // namespace
}  // namespace parasim
