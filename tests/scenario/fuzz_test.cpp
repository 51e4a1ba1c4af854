// Seeded mutation fuzzing of the shipped scenarios: every mutated input either fails with a
// ConfigError (exit 2 in the CLI) or simulates to finite figures; nothing else escapes. Run under
// the sanitizer build (PARASIM_SANITIZE=ON) this is also an ASan/UBSan fuzz pass.
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "../test_util.h"
#include "sim/cost/cost_model.h"
#include "sim/scenario/measured.h"
#include "tools/validation.h"

namespace parasim {
namespace {

// Every JSON pointer below the root, in document order.
void pointers(const Json& j, const Json::json_pointer& at, std::vector<Json::json_pointer>& out) {
  if (!at.empty()) out.push_back(at);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) pointers(v, at / k, out);
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) pointers(j[i], at / i, out);
}

Json mutate(Json j, std::mt19937_64& rng) {
  const std::vector<Json> values = {0, -1, 1, 2, 3, 7, 1024, 1 << 16, 1 << 24, 1 << 30, std::int64_t{1} << 40,
                                    std::int64_t{1} << 62, 1e-300, 1e300, 0.5, -0.5, "", "x", nullptr, true, false,
                                    Json::array(), Json::object(), Json::array({1}), Json{{"a", 1}}};
  const int edits = rng() % 10 < 7 ? 1 : 2 + static_cast<int>(rng() % 2);
  for (int e = 0; e < edits; ++e) {
    std::vector<Json::json_pointer> ps, numeric;
    pointers(j, Json::json_pointer(), ps);
    for (const auto& q : ps)
      if (j[q].is_number()) numeric.push_back(q);
    // Mostly numbers (valid-looking layouts that exercise the simulator), sometimes anything.
    const auto p = !numeric.empty() && rng() % 100 < 60 ? numeric[rng() % numeric.size()] : ps[rng() % ps.size()];
    Json& v = j[p];
    const auto r = rng() % 100;
    if (r < 10 && j[p.parent_pointer()].is_object()) {
      j[p.parent_pointer()].erase(p.back());
    } else if (r < 80 && v.is_number_integer()) {
      // Saturating: an earlier edit may have left 2^62 here.
      const std::int64_t x = v.get<std::int64_t>();
      auto sat = [x](std::int64_t mul, std::int64_t add) {
        std::int64_t out = 0;
        if (__builtin_mul_overflow(x, mul, &out) || __builtin_add_overflow(out, add, &out))
          return (x < 0) == (mul < 0) ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
        return out;
      };
      const std::int64_t opts[] = {sat(2, 0), sat(2, 0), x / 2, x / 2, sat(1, 1), sat(1, -1), sat(4, 0), sat(7, 0), 0, 1, std::int64_t{1} << 16, std::int64_t{1} << 24};
      v = opts[rng() % std::size(opts)];
    } else if (r < 90 && v.is_number_float()) {
      const double f[] = {2.0, 0.5, 1000.0, 1e-3, 0.0, -1.0};
      v = v.get<double>() * f[rng() % std::size(f)];
    } else {
      v = values[rng() % values.size()];
    }
  }
  return j;
}

TEST(Fuzz, MutatedScenariosFailCleanlyOrSimulate) {
  std::vector<Json> seeds;
  for (const auto& e : std::filesystem::directory_iterator(test::data_dir() + "/scenarios"))
    if (e.path().extension() == ".json") seeds.push_back(read_json_file(e.path().string()));
  std::sort(seeds.begin(), seeds.end(), [](const Json& a, const Json& b) { return a.at("name") < b.at("name"); });
  ASSERT_GE(seeds.size(), 8u);
  std::mt19937_64 rng(20261129);
  test::FuzzTally t;
  for (int i = 0; i < 2000 && !HasFailure(); ++i) {
    const Json j = mutate(seeds[rng() % seeds.size()], rng);
    // Every message names the file and a JSON pointer.
    test::fuzz_case(t, {"fuzz.json: /"}, j.dump(), [&](bool& skipped) {
      const Scenario sc = parse_scenario(j, "fuzz.json", test::data_dir());
      // Keep the test fast: big steps are valid but take seconds each.
      if (sc.microbatches() * sc.parallel.pp * sc.parallel.vpp > 4096 || sc.model.layers > 512) {
        skipped = true;
        return;
      }
      const auto out = simulate(sc, Registries{});
      ASSERT_TRUE(std::isfinite(out.result.step_time_s) && out.result.step_time_s > 0);
      ASSERT_TRUE(std::isfinite(out.result.peak_mem_gib) && out.result.peak_mem_gib > 0);
      ASSERT_TRUE(std::isfinite(out.result.mfu));
    });
  }
  // Both outcomes are exercised.
  EXPECT_GT(t.rejected, 500);
  EXPECT_GT(t.accepted, 200);
  std::printf("fuzz: %d rejected, %d simulated, %d skipped as large\n", t.rejected, t.accepted, t.skipped);
}

TEST(Fuzz, MutatedProfilesFailCleanlyOrPriceFinitely) {
  std::vector<Json> seeds;
  for (const auto& name : profile_names(test::data_dir()))
    seeds.push_back(read_json_file(test::data_dir() + "/calibrate/profiles/" + name + ".json"));
  ASSERT_GE(seeds.size(), 5u);
  Json base = test::base_scenario();
  std::mt19937_64 rng(7);
  test::FuzzTally t;
  for (int i = 0; i < 1500 && !HasFailure(); ++i) {
    const Json j = mutate(seeds[rng() % seeds.size()], rng);
    test::fuzz_case(t, {"fuzz-profile.json: /"}, j.dump(), [&](bool&) {
      const Profile p = parse_profile(j, "fuzz-profile.json");
      for (const auto& [dt, f] : p.peak_tflops) {
        if (!p.gemm_max_efficiency.count(dt)) continue;
        const CostModel cm(p, dt);
        for (const auto& [m, n, k] : {std::array<std::int64_t, 3>{1, 1, 1}, {4096, 4096, 4096}, {65536, 1024, 128}})
          ASSERT_TRUE(std::isfinite(cm.gemm_s(m, n, k)) && cm.gemm_s(m, n, k) > 0) << dt;
        for (const std::int64_t cp : {1, 2, 8})
          ASSERT_TRUE(std::isfinite(cm.attention_s(1e12, true, 8192, cp)) && cm.attention_s(1e12, true, 8192, cp) > 0);
        ASSERT_TRUE(std::isfinite(cm.memory_s(1e9)) && cm.memory_s(1e9) > 0);
      }
      // The whole step on this profile (a DDP job on one node).
      Scenario sc = test::scenario_from(base);
      sc.profile = p;
      const auto out = simulate(sc, Registries{});
      ASSERT_TRUE(std::isfinite(out.result.step_time_s) && out.result.step_time_s > 0);
    });
  }
  EXPECT_GT(t.rejected, 300);
  EXPECT_GT(t.accepted, 300);
  std::printf("profile fuzz: %d rejected, %d priced\n", t.rejected, t.accepted);
}

TEST(Fuzz, MutatedMeasuredRunsFailCleanlyOrCheck) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(test::data_dir() + "/scenarios/measured"))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 100u);
  // One file per process: two test runs at once (two checkouts, two build trees) must not share it.
  const std::string tmp =
      (std::filesystem::temp_directory_path() / ("parasim-fuzz-measured-" + std::to_string(getpid()) + ".json")).string();
  const Registries reg;
  std::mt19937_64 rng(11);
  test::FuzzTally t;
  for (int i = 0; i < 600 && !HasFailure(); ++i) {
    const Json j = mutate(read_json_file(files[rng() % files.size()]), rng);
    {
      std::ofstream(tmp) << j.dump();
    }
    // "<file>: /pointer: ..." or, inside the inline scenario, "<file> (/scenario): /pointer: ...".
    test::fuzz_case(t, {tmp + ": /", tmp + " (/scenario): /"}, j.dump(), [&](bool& skipped) {
      const MeasuredRun run = load_measured(tmp, test::data_dir());
      const Scenario& sc = run.scenario;
      if (sc.microbatches() * sc.parallel.pp * sc.parallel.vpp > 4096 || sc.model.layers > 512) {
        skipped = true;
        return;
      }
      const RunCheck c = check_run(run, reg, Tolerances{});
      for (const auto& cmp : c.comparisons) ASSERT_TRUE(std::isfinite(cmp.predicted)) << cmp.figure;
    });
  }
  std::filesystem::remove(tmp);
  EXPECT_GT(t.rejected, 100);
  EXPECT_GT(t.accepted, 100);
  std::printf("measured-run fuzz: %d rejected, %d checked\n", t.rejected, t.accepted);
}

}  // namespace
}  // namespace parasim
