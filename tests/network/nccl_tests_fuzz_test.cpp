// Seeded mutation fuzzing of the nccl-tests importer (text and -J JSON): cut, doubled and dropped
// lines, numbers replaced by extremes or words. Every mutant either fails with a ConfigError
// naming the file, or imports rows whose figures are finite and positive, and whose merge into a
// profile still loads.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "../test_util.h"
#include "calibrate/import/nccl_tests.h"

namespace parasim {
namespace {


std::string mutate_text(const std::string& text, std::mt19937_64& rng) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  if (lines.empty()) return text;
  const char* words[] = {"0", "-1", "1e308", "-0", "nan", "inf", "1e-300", "x", "", "99999999999999999999", "0x10"};
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !lines.empty(); ++e) {
    const size_t i = rng() % lines.size();
    switch (rng() % 5) {
      case 0: lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i)); break;
      case 1: lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), lines[i]); break;
      case 2: lines.resize(i + 1); lines.back() = lines.back().substr(0, rng() % (lines.back().size() + 1)); break;
      default: {  // replace the k-th number on the line
        static const std::regex num(R"([-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?)");
        std::vector<std::smatch> ms;
        for (auto it = std::sregex_iterator(lines[i].begin(), lines[i].end(), num); it != std::sregex_iterator(); ++it) ms.push_back(*it);
        if (ms.empty()) break;
        const auto& m = ms[rng() % ms.size()];
        const auto pos = static_cast<size_t>(m.position(0));
        lines[i] = lines[i].substr(0, pos) + words[rng() % std::size(words)] + lines[i].substr(pos + static_cast<size_t>(m.length(0)));
      }
    }
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(Fuzz, MutatedNcclTestsLogsFailCleanlyOrImportFinitely) {
  const std::vector<std::string> seeds = {"all_reduce_8gpu.txt", "all_gather_2node.txt", "all_reduce_2node.json"};
  const Json base = read_json_file(test::data_dir() + "/calibrate/profiles/h100-sxm5-80g.json");
  std::mt19937_64 rng(3);
  test::FuzzTally t;
  for (int i = 0; i < 1500 && !HasFailure(); ++i) {
    const std::string& seed = seeds[rng() % seeds.size()];
    const std::string text = mutate_text(test::slurp(test::test_data("nccl-tests/" + seed)), rng);
    test::fuzz_case(t, {"fuzz.log"}, text, [&](bool&) {
      const NcclTestsLog log = parse_nccl_tests_any(text, "fuzz.log");
      for (const auto& r : log.rows) ASSERT_TRUE(std::isfinite(r.bytes) && r.bytes > 0 && std::isfinite(r.time_s) && r.time_s > 0);
      Json prof = base;
      merge_nccl_tests(prof, log);
      parse_profile(prof, "merged.json");  // what the importer writes must load
    });
  }
  EXPECT_GT(t.rejected, 100);
  EXPECT_GT(t.accepted, 100);
  std::printf("nccl-tests fuzz: %d rejected, %d imported\n", t.rejected, t.accepted);
}

}  // namespace
}  // namespace parasim
