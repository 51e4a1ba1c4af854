// parasim report and run --tokens as a user meets them: the files they write, their exit codes.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "../test_util.h"
#include "sim/planning/goodput.h"

namespace parasim {
namespace {

using test::Ran;
using test::run_cli;
using test::slurp;

std::string tmp(const std::string& name) { return ::testing::TempDir() + name; }
std::string scenario(const std::string& name) { return test::data_dir() + "/scenarios/" + name; }

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(Report, ScenarioHtmlIsSelfContainedWithCharts) {
  const std::string out = tmp("default.html");
  const Ran r = run_cli("report " + scenario("default.json") + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string html = slurp(out);
  EXPECT_EQ(count(html, "<svg"), 4u);  // Gantt, memory curve, memory breakdown at the peak, where the time goes
  EXPECT_EQ(count(html, "</svg>"), 4u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find(" href="), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_NE(html.find("capacity"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
}

TEST(Report, MarkdownCarriesTheSameTables) {
  const std::string md = tmp("default.md");
  ASSERT_EQ(run_cli("report " + scenario("default.json") + " -o " + md).code, 0);
  const std::string text = slurp(md);
  for (const char* h : {"## Prediction", "## The step, per pipeline stage and stream", "## Memory per GPU over the step", "## Where the time goes"})
    EXPECT_NE(text.find(h), std::string::npos) << h;
  EXPECT_NE(text.find("| rank | compute busy |"), std::string::npos);
}

// A Result carries its resolved scenario, so a report of it simulates the same step again.
TEST(Report, ResultIsSimulatedAgainFromItsScenario) {
  const Ran run = run_cli("run --json --tokens 1e10 " + scenario("default.json"), false);
  ASSERT_EQ(run.code, 0);
  const Json result = Json::parse(run.out);
  ASSERT_TRUE(result.contains("resolved_scenario"));
  const Scenario again = parse_scenario(result["resolved_scenario"], "result", test::data_dir());
  EXPECT_DOUBLE_EQ(simulate(again, Registries{}).result.step_time_s, result["step_time_s"].get<double>());
  const std::string in = tmp("result.json"), md = tmp("result.md");
  std::ofstream(in) << run.out;
  const Ran r = run_cli("report " + in + " -o " + md);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string text = slurp(md);
  EXPECT_NE(text.find("re-simulated from the scenario in the Result"), std::string::npos);
  EXPECT_EQ(text.find("parasim or its data changed since"), std::string::npos);
  EXPECT_NE(text.find("## Time to train, with goodput"), std::string::npos);  // the Result's own time to train
}

TEST(Report, SweepAndPlanDrawThroughputAndCurve) {
  const std::string sweep = tmp("sweep.html"), plan = tmp("plan.html");
  ASSERT_EQ(run_cli("report " + test::test_data("report/sweep.json") + " -o " + sweep).code, 0);
  ASSERT_EQ(run_cli("report " + test::test_data("report/plan.json") + " -o " + plan).code, 0);
  const std::string s = slurp(sweep), p = slurp(plan);
  const Json doc = read_json_file(test::test_data("report/sweep.json"));
  size_t ok = 0, bad = 0;
  for (const Json& r : doc["rows"]) (r["status"] == "ok" ? ok : bad) += 1;
  EXPECT_EQ(count(s, "<circle"), ok);             // every layout that fits is a point
  EXPECT_EQ(count(s, "l8,8 m0,-8 l-8,8"), bad);    // every one that does not is a cross
  EXPECT_NE(s.find("Pareto front"), std::string::npos);
  EXPECT_EQ(count(p, "<svg"), 2u);  // throughput against GPUs, days and cost against GPUs
  EXPECT_NE(p.find("days and cost against GPUs"), std::string::npos);
}

// A plan at one GPU count: throughput against peak memory per GPU, the capacity drawn as a line,
// every fitting layout a point placed by its memory (a larger peak lies further right).
TEST(Report, OneGpuCountDrawsThroughputAgainstMemory) {
  Json doc = read_json_file(test::test_data("report/plan.json"));
  Json rows = Json::array();
  for (const Json& r : doc["rows"])
    if (r["gpus"] == 512) rows.push_back(r);
  ASSERT_GE(rows.size(), 2u);
  doc["rows"] = rows;
  doc.erase("curve");
  const std::string in = tmp("plan512.json"), out = tmp("plan512.html");
  std::ofstream(in) << doc.dump();
  std::filesystem::remove(out);
  ASSERT_EQ(run_cli("report " + in + " -o " + out).code, 0);
  const std::string h = slurp(out);
  EXPECT_NE(h.find("throughput against peak memory per GPU"), std::string::npos);
  EXPECT_NE(h.find("capacity " + std::to_string(std::lround(rows[0]["capacity_gib"].get<double>())) + " GiB"), std::string::npos);
  // The two fitting rows with the lowest and highest peak: the higher peak is drawn further right.
  std::vector<std::pair<double, double>> xs;  // peak, cx
  for (size_t at = h.find("<circle cx='"); at != std::string::npos; at = h.find("<circle cx='", at + 1))
    xs.emplace_back(0.0, std::stod(h.substr(at + 12)));
  size_t i = 0;
  for (const Json& r : rows)
    if (r["status"] == "ok") xs.at(i++).first = r["peak_mem_gib"].get<double>();
  ASSERT_EQ(i, xs.size());
  const auto lo = std::min_element(xs.begin(), xs.end()), hi = std::max_element(xs.begin(), xs.end());
  if (lo->first < hi->first) {
    EXPECT_LT(lo->second, hi->second);
  }
}

TEST(Report, BadInputExitsTwoAndWritesNothing) {
  const std::string out = tmp("never.html");
  std::filesystem::remove(out);
  const std::string unknown = tmp("unknown.json");
  std::ofstream(unknown) << R"({"schema": "parasim.other/1"})";
  Ran r = run_cli("report " + unknown + " -o " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("/schema"), std::string::npos) << r.out;
  const std::string badrows = tmp("badrows.json");
  std::ofstream(badrows) << R"({"schema": "parasim.sweep/1", "rows": [{"gpus": "many"}]})";
  r = run_cli("report " + badrows + " -o " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/rows/0/gpus"), std::string::npos) << r.out;
  r = run_cli("report " + scenario("default.json") + " -o " + tmp("report.txt"));
  EXPECT_EQ(r.code, 2);
  const std::string noscenario = tmp("old_result.json");
  std::ofstream(noscenario) << R"({"schema": "parasim.result/1", "step_time_s": 1})";
  r = run_cli("report " + noscenario + " -o " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/resolved_scenario"), std::string::npos) << r.out;
  // A Result whose step time was edited to null: bad input naming the file, not an internal error.
  const Ran ran = run_cli("run --json " + scenario("default.json"), false);
  Json result = Json::parse(ran.out);
  result["step_time_s"] = nullptr;
  const std::string edited = tmp("edited_result.json");
  std::ofstream(edited) << result.dump();
  r = run_cli("report " + edited + " -o " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(edited + ": not a parasim.result/1 document as parasim writes it"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// Thousands of ops per rank stay drawable: rectangles are merged below a pixel and capped per lane.
TEST(Report, LargeStepsAreAggregated) {
  const std::string out = tmp("large.html");
  const Ran r = run_cli("report " + scenario("interleaved-gpt3-175b-1024xa100.json") + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string html = slurp(out);
  EXPECT_LT(html.size(), 4'000'000u);
  const std::regex note("([0-9]+) ops on ([0-9]+) simulated ranks drawn as ([0-9]+) rectangles");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, note));
  EXPECT_GT(std::stoll(m[1]), std::stoll(m[3]));
}

TEST(TimeToTrain, RunPrintsItUnderTheSummaryAndInJson) {
  const Ran text = run_cli("run " + scenario("default.json") + " --tokens 1e11 --price-per-gpu-hour 2");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("time to train 1e+11 tokens"), std::string::npos) << text.out;
  const Ran js = run_cli("run --json " + scenario("default.json") + " --tokens 1e11 --price-per-gpu-hour 2 --failures-per-gpu-hour 0 "
                    "--planned-per-day 0",
                    false);
  ASSERT_EQ(js.code, 0);
  const Json t = Json::parse(js.out)["time_to_train"];
  for (const char* k : {"tokens", "steps", "step_s", "ideal_days", "days", "gpu_hours", "cost", "goodput", "band", "checkpoint", "failures", "sources"})
    EXPECT_TRUE(t.contains(k)) << k;
  // No failures and no planned stops: nothing is worth a checkpoint, the wall clock is the compute time.
  EXPECT_DOUBLE_EQ(t["goodput"].get<double>(), 1.0);
  EXPECT_NEAR(t["cost"].get<double>(), 2 * t["gpu_hours"].get<double>(), 1e-6);
  EXPECT_LT(t["band"]["p10_days"].get<double>(), t["band"]["p90_days"].get<double>());
}

TEST(TimeToTrain, BadOverrideExitsNonZero) {
  EXPECT_NE(run_cli("run " + scenario("default.json") + " --tokens 1e9 --checkpoint sometimes").code, 0);
  EXPECT_NE(run_cli("run " + scenario("default.json") + " --tokens -5").code, 0);
  // NaN and infinity are refused as numbers, in run's and plan's time-to-train options and plan's headroom.
  for (const char* opt : {"--tokens nan", "--tokens inf", "--price-per-gpu-hour nan"})
    EXPECT_EQ(run_cli("run " + scenario("default.json") + " " + opt).code, 2) << opt;
  EXPECT_EQ(run_cli("plan --model llama3-8b --gpu h100-sxm5-80g --gpus 8 --seq 8192 --global-batch 64").code, 0);
  for (const char* opt : {"--headroom nan", "--tokens nan", "--deadline-days nan --tokens 1e9", "--price-per-gpu-hour -1"})
    EXPECT_EQ(run_cli(std::string("plan --model llama3-8b --gpu h100-sxm5-80g --gpus 8 --seq 8192 --global-batch 64 ") + opt).code, 2) << opt;
}

}  // namespace
}  // namespace parasim
