// docs/errors.md lists every error a user can hit with an example command and the message; this
// test runs each example and checks its exit code and message, so the page and the code cannot
// drift. A row: | what | `parasim ...` | exit | `message` |, where $S is the source tree, $R
// tests/data/repro, $E tests/data/errors and $T a fresh empty folder (the working directory).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "../test_util.h"

namespace parasim {
namespace {

struct DocRow {
  int line = 0;
  std::string command, message;
  int exit = -1;
};

// Cells of a Markdown table row; "\|" is a literal bar, backticks are dropped.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cur += '|';
      ++i;
    } else if (line[i] == '|') {
      out.push_back(cur);
      cur.clear();
    } else if (line[i] != '`') {
      cur += line[i];
    }
  }
  for (auto& c : out) {
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
  }
  return out;
}

std::vector<DocRow> rows_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<DocRow> rows;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.rfind("| ", 0) != 0) continue;
    const auto c = cells(line);
    if (c.size() != 4 || c[1].rfind("parasim ", 0) != 0) continue;
    rows.push_back({n, c[1], c[3], std::stoi(c[2])});
  }
  return rows;
}

std::string subst(std::string s, const std::string& tmp) {
  const std::pair<const char*, std::string> vars[] = {{"$S", test::data_dir()}, {"$R", test::test_data("repro")},
                                                      {"$E", test::test_data("errors")}, {"$T", tmp}};
  for (const auto& [k, v] : vars)
    for (size_t at; (at = s.find(k)) != std::string::npos;) s.replace(at, 2, v);
  return s;
}

TEST(ErrorsDoc, EveryExampleGivesItsMessageAndExitCode) {
  const std::vector<DocRow> rows = rows_of(test::data_dir() + "/docs/errors.md");
  ASSERT_GT(rows.size(), 40u);
  for (size_t i = 0; i < rows.size(); ++i) {
    const DocRow& r = rows[i];
    const std::string tmp = ::testing::TempDir() + "errors_doc/" + std::to_string(i);
    std::filesystem::remove_all(tmp);
    std::filesystem::create_directories(tmp);
    std::ofstream(tmp + "/.cmd.sh") << "parasim() { '" << PARASIM_BINARY << "' \"$@\"; }\ncd '" << tmp << "'\n" << subst(r.command, tmp) << "\n";
    const auto [code, out] = test::run_shell("bash '" + tmp + "/.cmd.sh'");
    EXPECT_EQ(code, r.exit) << "docs/errors.md:" << r.line << ": " << r.command << "\n" << out;
    EXPECT_NE(out.find(subst(r.message, tmp)), std::string::npos) << "docs/errors.md:" << r.line << ": " << r.command << "\n" << out;
  }
}

}  // namespace
}  // namespace parasim
