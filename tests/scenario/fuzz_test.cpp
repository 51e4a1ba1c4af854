// Seeded mutation fuzzing of the shipped scenarios: every mutated input either fails with a
// ConfigError (exit 2 in the CLI) or simulates to finite figures; nothing else escapes. Run under
// the sanitizer build (PARASIM_SANITIZE=ON) this is also an ASan/UBSan fuzz pass.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "../test_util.h"

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
      const std::int64_t x = v.get<std::int64_t>();
      const std::int64_t opts[] = {x * 2, x * 2, x / 2, x / 2, x + 1, x - 1, x * 4, x * 7, 0, 1, std::int64_t{1} << 16, std::int64_t{1} << 24};
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
  int rejected = 0, simulated = 0, skipped = 0;
  for (int i = 0; i < 2000; ++i) {
    const Json j = mutate(seeds[rng() % seeds.size()], rng);
    try {
      const Scenario sc = parse_scenario(j, "fuzz.json", test::data_dir());
      // Keep the test fast: big steps are valid but take seconds each.
      if (sc.microbatches() * sc.parallel.pp * sc.parallel.vpp > 4096 || sc.model.layers > 512) {
        ++skipped;
        continue;
      }
      const auto out = simulate(sc, Registries{});
      ASSERT_TRUE(std::isfinite(out.result.step_time_s) && out.result.step_time_s > 0) << j.dump();
      ASSERT_TRUE(std::isfinite(out.result.peak_mem_gib) && out.result.peak_mem_gib > 0) << j.dump();
      ASSERT_TRUE(std::isfinite(out.result.mfu)) << j.dump();
      ++simulated;
    } catch (const ConfigError& e) {
      // Every message names the file and a JSON pointer.
      ASSERT_EQ(std::string(e.what()).rfind("fuzz.json: /", 0), 0u) << e.what() << "\n" << j.dump();
      ++rejected;
    } catch (const std::exception& e) {
      FAIL() << "unexpected " << typeid(e).name() << ": " << e.what() << "\n" << j.dump();
    }
  }
  // Both outcomes are exercised.
  EXPECT_GT(rejected, 500);
  EXPECT_GT(simulated, 200);
  std::printf("fuzz: %d rejected, %d simulated, %d skipped as large\n", rejected, simulated, skipped);
}

}  // namespace
}  // namespace parasim
