// parasim sweep: combinations, skips by reason, OOM rows, ranking against individual simulations,
// thread-count independence.
#include <array>
#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "sim/planning/sweep.h"
#include "tests/test_util.h"

namespace parasim {
namespace {

// Llama 2 7B on 8 H100: with tp 1 and no sharding its model states alone (16 bytes x 6.7 B
// parameters = 108 GB) exceed 80 GB, so those rows are out of memory; tp 3 divides no head count
// (32 heads) and micro_batch 3 divides no 64 / dp.
SweepSpec small_sweep() {
  SweepSpec s;
  s.file = "test.json";
  s.base = test::base_scenario();
  s.axes = {parse_vary("tp=1,2,3,4"), parse_vary("micro_batch=1,3"), parse_vary("recompute=none,full")};
  return s;
}

TEST(Sweep, CountsSkipsAndKeepsOutOfMemoryRows) {
  const Registries reg;
  const SweepSpec spec = small_sweep();
  ASSERT_TRUE(spec.derive_dp());
  const Evaluated ev = run_sweep(spec, test::data_dir(), reg, Objective::Throughput, {});
  EXPECT_EQ(ev.total, 16u);
  EXPECT_EQ(ev.evaluated, 16u);
  std::int64_t skipped = 0;
  for (const auto& [reason, n] : ev.skipped) skipped += n;
  // tp 3: 4 combinations (dp not derivable: 8 % 3, so the GPU count check fails first); micro_batch
  // 3 with tp 1, 2, 4: 6 combinations (batch divisibility).
  EXPECT_EQ(skipped, 10);
  EXPECT_EQ(ev.rows.size(), 6u);
  bool oom = false;
  for (const Row& r : ev.rows)
    if (r.status == "oom") {
      oom = true;
      EXPECT_GT(r.peak_mem_gib, r.capacity_gib);
      EXPECT_EQ(r.settings["tp"], 1);
    }
  EXPECT_TRUE(oom);
}

// Varying pp derives the schedule as it derives dp: a pipeline schedule for pp > 1 (1f1b, or
// interleaved with vpp > 1; the scenario's own if it names one) and ddp for pp 1, so every pp of the
// sweep loads (without it every pp > 1 row of a ddp scenario was skipped); an axis that sets the
// schedule turns it off.
TEST(Sweep, VaryingPpDerivesTheSchedule) {
  SweepSpec s;
  s.file = "test.json";
  s.base = test::base_scenario();
  s.base["parallel"]["schedule"] = "ddp";
  s.axes = {parse_vary("pp=1,2,4")};
  const std::vector<std::string> want = {"ddp", "1f1b", "1f1b"};
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(s.scenario(i)["parallel"]["schedule"], want[i]) << i;
  EXPECT_EQ(s.setting_names().back(), "schedule");
  const Evaluated ev = run_sweep(s, test::data_dir(), Registries{}, Objective::Throughput, {});
  EXPECT_EQ(ev.rows.size(), 3u);
  s.base["parallel"]["vpp"] = 2;
  EXPECT_EQ(s.scenario(1)["parallel"]["schedule"], "interleaved");
  s.base["parallel"]["schedule"] = "gpipe";
  EXPECT_EQ(s.scenario(2)["parallel"]["schedule"], "gpipe");
  EXPECT_EQ(s.scenario(0)["parallel"]["schedule"], "ddp");
  s.base["parallel"]["schedule"] = "dataparallel";  // a non-pipeline schedule is kept at pp 1
  EXPECT_EQ(s.scenario(0)["parallel"]["schedule"], "dataparallel");
  EXPECT_EQ(s.scenario(1)["parallel"]["schedule"], "interleaved");
  s.axes.push_back(parse_vary("schedule=1f1b"));
  EXPECT_EQ(s.scenario(0)["parallel"]["schedule"], "1f1b");  // the axis's, not derived
}

TEST(Sweep, RanksAgreeWithIndividualSimulations) {
  const Registries reg;
  const SweepSpec spec = small_sweep();
  const Evaluated ev = run_sweep(spec, test::data_dir(), reg, Objective::Throughput, {});
  double last = 1e300;
  bool seen_oom = false;
  for (const Row& r : ev.rows) {
    const Scenario sc = parse_scenario(spec.scenario(r.index), "test.json", test::data_dir());
    const SimulationOutput out = simulate(sc, reg);
    EXPECT_DOUBLE_EQ(r.step_s, out.result.step_time_s);
    EXPECT_EQ(r.status == "ok", out.result.fits_in_memory);
    if (r.status == "ok") {
      EXPECT_FALSE(seen_oom) << "fitting rows come first";
      EXPECT_LE(out.result.tokens_per_s, last);
      last = out.result.tokens_per_s;
    } else {
      seen_oom = true;
    }
    // Exposed communication is part of the step.
    EXPECT_LE(r.exposed.total(), r.step_s * (1 + 1e-9));
  }
}

TEST(Sweep, ThreadCountDoesNotChangeTheOutput) {
  const Registries reg;
  const SweepSpec spec = small_sweep();
  EvalOptions one, two;
  two.jobs = 2;
  const std::string a = sweep_json(spec, run_sweep(spec, test::data_dir(), reg, Objective::Throughput, one), Objective::Throughput, 2.0).dump();
  const std::string b = sweep_json(spec, run_sweep(spec, test::data_dir(), reg, Objective::Throughput, two), Objective::Throughput, 2.0).dump();
  EXPECT_EQ(a, b);
}

// The processes of an mpirun each evaluate a balanced share (tools/mpi.h): the shares partition the
// indices, and no part carries more than the mean load plus one evaluation (Graham's LPT bound).
TEST(Sweep, BalancedSharesPartitionTheWorkEvenly) {
  std::vector<double> costs;
  for (int i = 0; i < 500; ++i) costs.push_back(1.0 + (i * 7919 % 97));  // uneven, deterministic
  for (int parts : {2, 3, 7}) {
    std::vector<int> owner(costs.size(), -1);
    double total = 0, most = 0, biggest = 0;
    for (double c : costs) total += c, biggest = std::max(biggest, c);
    for (int k = 0; k < parts; ++k) {
      double load = 0;
      for (std::size_t i : balanced_share(costs, parts, k)) {
        EXPECT_EQ(owner[i], -1) << "index " << i << " in two shares";
        owner[i] = k;
        load += costs[i];
      }
      most = std::max(most, load);
    }
    for (int o : owner) EXPECT_GE(o, 0);
    EXPECT_LE(most, total / parts + biggest) << parts << " parts";
  }
}

// What one process sends another: every figure of a row exactly (the output must be byte-identical).
TEST(Sweep, OutcomesRoundTripThroughJsonExactly) {
  const Registries reg;
  const SweepSpec spec = small_sweep();
  const Evaluated ev = run_sweep(spec, test::data_dir(), reg, Objective::Throughput, EvalOptions{});
  ASSERT_FALSE(ev.rows.empty());
  for (const Row& r : ev.rows) {
    const Outcome back = outcome_from_json(Json::parse(outcome_json(Outcome{r, "", ""}).dump()));
    ASSERT_TRUE(back.row);
    EXPECT_EQ(back.row->index, r.index);
    EXPECT_EQ(row_json(*back.row, 1.5).dump(), row_json(r, 1.5).dump());
    EXPECT_EQ(back.row->step_s, r.step_s);  // bit for bit
  }
  const Outcome skipped = outcome_from_json(outcome_json(Outcome{std::nullopt, "tp > heads", "tp=3: tp (3) > heads (2)"}));
  EXPECT_EQ(skipped.skipped, "tp > heads");
  EXPECT_EQ(skipped.skipped_example, "tp=3: tp (3) > heads (2)");
}

// A skipped kind of combination is shown by its first case, with its settings and numbers (the
// kind itself templates every number as N); a sweep none of whose combinations can be simulated is
// bad input: exit 2, the reasons on stderr, no CSV written.
TEST(Sweep, SkippedCombinationsAreShownWithTheirNumbers) {
  const std::string file = ::testing::TempDir() + "sweep_skipped.json";
  std::ofstream(file) << test::base_scenario().dump();
  const auto [rc, out] = test::cli_stdout("sweep " + file + " --vary tp=1,3,5");
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("tp=3: /parallel: dp*tp*pp*cp = "), std::string::npos) << out;
  EXPECT_NE(out.find("(and 1 more alike)"), std::string::npos) << out;
  const std::string csv = ::testing::TempDir() + "sweep_skipped.csv";
  std::remove(csv.c_str());
  const auto [rc2, out2] = test::cli_stdout("sweep " + file + " --vary tp=3,5 --csv " + csv);
  EXPECT_EQ(rc2, 2);
  EXPECT_FALSE(std::ifstream(csv).good());
}

TEST(Sweep, CommandOutputIsTheSameOnOneAndTwoThreads) {
  const std::string file = ::testing::TempDir() + "sweep_jobs.json";
  std::ofstream(file) << test::base_scenario().dump();
  const std::string args = "sweep " + file + " --vary tp=1,2,4 --vary micro_batch=1,2 --vary recompute=none,full";
  const auto one = test::cli_stdout(args + " --json --jobs 1");
  const auto two = test::cli_stdout(args + " --json --jobs 2");
  ASSERT_EQ(one.first, 0) << one.second;
  EXPECT_EQ(one.second, two.second);
  const auto table1 = test::cli_stdout(args + " --jobs 1");
  const auto table2 = test::cli_stdout(args + " --jobs 2");
  EXPECT_EQ(table1.second, table2.second);
  EXPECT_EQ(Json::parse(one.second)["schema"], "parasim.sweep/1");
}

TEST(Sweep, StopFlagEndsEarlyWithWhatWasDone) {
  const Registries reg;
  std::atomic<bool> stop{false};
  EvalOptions opt;
  opt.stop = &stop;
  opt.progress = [&](std::size_t done, std::size_t) {
    if (done == 3) stop = true;
  };
  const Evaluated ev = run_sweep(small_sweep(), test::data_dir(), reg, Objective::Throughput, opt);
  EXPECT_TRUE(ev.interrupted);
  EXPECT_EQ(ev.evaluated, 3u);
}

TEST(Sweep, UnknownKeySuggestsTheClosest) {
  try {
    parse_vary("micro_bach=1,2");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean \"micro_batch\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_vary("tp"), ConfigError);
  EXPECT_THROW(parse_vary("tp=1,,2"), ConfigError);
  EXPECT_EQ(parse_vary("/parallel/tp=2").pointer, "/parallel/tp");
}

TEST(Sweep, AKeyThatIsNoShortNameSuggestsTheDeclaredPointer) {
  // The last segment or the dotted path of exactly one declared scenario key names its pointer.
  for (const char* arg : {"moe_dispatcher=hybridep", "parallel.moe_dispatcher=hybridep"}) {
    try {
      parse_vary(arg);
      FAIL() << arg;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("did you mean \"/parallel/moe_dispatcher\""), std::string::npos) << e.what();
    }
  }
  try {
    parse_vary("qqqqqq=1");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
  // A beginning of a key's last segment names the keys it begins ("seq" is no short name: it once
  // suggested "ep", the closest short name by spelling).
  try {
    parse_vary("seq=2048,4096");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"/training/seq_len\""), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("\"ep\""), std::string::npos) << e.what();
  }
}

// Values are numbers where JSON spells one, as a scenario file reads them: 0x10, +5, 5. and .5 stay
// strings (the scenario then refuses them where it wants a number); 2 stays an integer.
TEST(Sweep, ValuesAreNumbersAsJsonSpellsThem) {
  const VaryAxis a = parse_vary("/training/seq_len=2,2.5,1e3,-1,0x10,+5,5.,.5");
  ASSERT_EQ(a.values.size(), 8u);
  EXPECT_TRUE(a.values[0].is_number_integer());
  EXPECT_EQ(a.values[1].get<double>(), 2.5);
  EXPECT_EQ(a.values[2].get<double>(), 1000.0);
  EXPECT_EQ(a.values[3].get<std::int64_t>(), -1);
  for (size_t i = 4; i < 8; ++i) EXPECT_TRUE(a.values[i].is_string()) << a.values[i].dump();
}

TEST(Sweep, TwoAxesOnOneSettingAreRefused) {
  // The later axis would overwrite the earlier's values, labelling rows with settings never run.
  EXPECT_THROW(parse_vary_axes({"nodes=2,4", "nodes=8"}), ConfigError);
  EXPECT_THROW(parse_vary_axes({"nodes=2", "/cluster/nodes=4"}), ConfigError);
  EXPECT_THROW(parse_vary_axes({"/parallel/moe_dispatcher=deepep", R"(/parallel={"dp":16})"}), ConfigError);
  EXPECT_EQ(parse_vary_axes({"tp=1,2", "pp=1,2", "/parallel/vpp=1"}).size(), 3u);
  EXPECT_THROW(parse_vary("//=1"), ConfigError);
  EXPECT_THROW(parse_vary("/parallel/~2=1"), ConfigError);
}

TEST(Sweep, ValuesAreTypedAndNullRemovesTheKey) {
  SweepSpec s;
  s.file = "test.json";
  s.base = test::base_scenario();
  s.base["parallel"]["fsdp"] = {{"sharding", "full"}};
  s.axes = {parse_vary("fsdp=null,hybrid"), parse_vary("sequence_parallel=false")};
  EXPECT_FALSE(s.scenario(0)["parallel"].contains("fsdp"));
  EXPECT_EQ(s.scenario(1)["parallel"]["fsdp"]["sharding"], "hybrid");
  EXPECT_EQ(s.scenario(1)["parallel"]["sequence_parallel"], false);
}

// A value may be a list or an object: commas inside brackets, braces and quoted strings do not
// split the values; bare words in a list are read as the other values are.
TEST(Sweep, ListAndObjectValuesKeepTheirCommas) {
  const VaryAxis scopes = parse_vary(R"(cuda_graph_scope=[],[mamba],["attn","moe_router"])");
  EXPECT_EQ(scopes.pointer, "/training/cuda_graph_scope");
  ASSERT_EQ(scopes.values.size(), 3u);
  EXPECT_EQ(scopes.values[0], Json::array());
  EXPECT_EQ(scopes.values[1], Json::array({"mamba"}));
  EXPECT_EQ(scopes.values[2], Json::array({"attn", "moe_router"}));
  EXPECT_EQ(parse_vary("cuda_graph_scope=[attn,moe_router]").values.at(0), scopes.values[2]);  // bare names as quoted
  // A value listed twice (here once quoted, once bare) would only repeat its rows: refused.
  EXPECT_THROW(parse_vary(R"(cuda_graph_scope=["attn","moe_router"],[attn,moe_router])"), ConfigError);
  EXPECT_THROW(parse_vary("/parallel/tp=2,4,2"), ConfigError);
  const VaryAxis objs = parse_vary(R"(/parallel/fsdp={"sharding":"full","prefetch":1},null,"a,b",[1,[2,3]])");
  ASSERT_EQ(objs.values.size(), 4u);
  EXPECT_EQ(objs.values[0], Json({{"sharding", "full"}, {"prefetch", 1}}));
  EXPECT_TRUE(objs.values[1].is_null());
  EXPECT_EQ(objs.values[2], "a,b");
  EXPECT_EQ(objs.values[3], Json::parse("[1,[2,3]]"));
  for (const char* bad : {"recompute_modules=[core_attn", "recompute_modules=[core_attn]]", "/parallel/fsdp={\"sharding\":}",
                          "recompute_modules=[a,,b]", "tp=\"2", "recompute_modules=[a},[b]", "recompute_modules=[ ,a]"})
    EXPECT_THROW(parse_vary(bad), ConfigError) << bad;
  // Items are trimmed, a quote inside a bare word is a character, and nesting is bounded (a value
  // 60,000 lists deep is refused before any recursion, not a stack overflow).
  EXPECT_EQ(parse_vary("recompute_modules=[core_attn, layernorm], [ ]").values,
            std::vector<Json>({Json::array({"core_attn", "layernorm"}), Json::array()}));
  EXPECT_EQ(parse_vary("gpu=a\"b,c").values, std::vector<Json>({"a\"b", "c"}));
  EXPECT_EQ(parse_vary("tp= 1, 2").values, std::vector<Json>({1, 2}));
  EXPECT_THROW(parse_vary("recompute_modules=" + std::string(60000, '[') + "1" + std::string(60000, ']')), ConfigError);
  EXPECT_NO_THROW(parse_vary("/parallel/stage_layers=" + std::string(16, '[') + "1" + std::string(16, ']')));
  SweepSpec s;
  s.file = "test.json";
  s.base = test::base_scenario();
  s.axes = {parse_vary("recompute_modules=[core_attn],[layernorm,moe_act]")};
  EXPECT_EQ(s.scenario(1)["parallel"]["recompute_modules"], Json::array({"layernorm", "moe_act"}));
}

TEST(Sweep, ErrorKindGroupsNumbers) {
  EXPECT_EQ(error_kind("a.json: /parallel: dp*tp*pp*cp = 1*3*1*1 = 3 but the cluster has 1*8 = 8 GPUs", "a.json"),
            error_kind("a.json: /parallel: dp*tp*pp*cp = 2*3*1*1 = 6 but the cluster has 2*8 = 16 GPUs", "a.json"));
  EXPECT_EQ(error_kind("x: /p: profile h100-sxm5-80g has no fp8 10", "x"), "/p: profile h100-sxm5-80g has no fp8 N");
}

}  // namespace
}  // namespace parasim
