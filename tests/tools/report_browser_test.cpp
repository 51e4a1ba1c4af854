// parasim report's HTML in a real browser: Debian's chromium, headless, loads each page with no
// console error, and the DOM it builds holds the SVG charts, each with shapes in it. Skipped when
// chromium is not installed (tools/scripts/install-deps.sh installs it as an optional test dependency).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../test_util.h"

namespace parasim {
namespace {

using test::slurp;

std::string capture(const std::string& cmd) {
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), f)) out.append(buf.data(), n);
  pclose(f);
  return out;
}

bool have_chromium() { return std::system("command -v chromium >/dev/null 2>&1") == 0; }


// Loads the page headless; returns the DOM and puts the browser's log in `log`.
std::string load(const std::string& html, std::string& log) {
  const std::string log_file = html + ".log";
  const std::string dom = capture("timeout 120 chromium --headless --disable-gpu --no-sandbox --no-first-run --disable-extensions "
                                  "--user-data-dir=" + html + ".profile --enable-logging=stderr --v=0 --dump-dom file://" + html +
                                  " 2>" + log_file);
  log = slurp(log_file);
  return dom;
}

void expect_charts(const std::string& input, size_t charts) {
  const std::string html = ::testing::TempDir() + "browser_" + std::to_string(charts) + "_" +
                           std::to_string(std::hash<std::string>{}(input)) + ".html";
  ASSERT_EQ(std::system((std::string(PARASIM_BINARY) + " report " + input + " -o " + html + " 2>/dev/null").c_str()), 0) << input;
  std::string log;
  const std::string dom = load(html, log);
  EXPECT_EQ(log.find("Uncaught"), std::string::npos) << log;
  EXPECT_EQ(log.find("ERROR:CONSOLE"), std::string::npos) << log;
  ASSERT_NE(dom.find("</html>"), std::string::npos) << "no DOM from chromium: " << log.substr(0, 2000);
  // Each <svg>...</svg> the browser parsed must have a size and a drawn shape with a non-zero
  // extent in it (plain string search: std::regex recurses too deep on a page this size).
  size_t n = 0;
  for (size_t at = dom.find("<svg"); at != std::string::npos; at = dom.find("<svg", at + 1), ++n) {
    const size_t end = dom.find("</svg>", at);
    ASSERT_NE(end, std::string::npos);
    const std::string svg = dom.substr(at, end - at);
    const size_t vb = svg.find("viewBox=\"0 0 ");
    ASSERT_NE(vb, std::string::npos) << "chart " << n;
    std::istringstream size(svg.substr(vb + 13, 40));
    double w = 0, h = 0;
    size >> w >> h;
    EXPECT_GT(w, 0);
    EXPECT_GT(h, 0);
    size_t shapes = 0;
    for (const char* tag : {"<rect ", "<circle ", "<polyline ", "<path "})
      for (size_t p = svg.find(tag); p != std::string::npos; p = svg.find(tag, p + 1)) {
        const std::string el = svg.substr(p, svg.find('>', p) - p);
        const bool empty = el.find("width=\"0\"") != std::string::npos || el.find("height=\"0\"") != std::string::npos ||
                           el.find("points=\"\"") != std::string::npos;
        shapes += empty ? 0 : 1;
      }
    EXPECT_GT(shapes, 0u) << "chart " << n << " of " << input << " draws nothing";
  }
  EXPECT_EQ(n, charts) << input;
}

TEST(ReportBrowser, ScenarioPageLoadsWithItsCharts) {
  if (!have_chromium()) GTEST_SKIP() << "chromium is not installed (tools/scripts/install-deps.sh)";
  expect_charts(test::data_dir() + "/scenarios/default.json", 4);
}

TEST(ReportBrowser, PlanPageLoadsWithItsCharts) {
  if (!have_chromium()) GTEST_SKIP() << "chromium is not installed (tools/scripts/install-deps.sh)";
  expect_charts(test::test_data("report/plan.json"), 2);
}

}  // namespace
}  // namespace parasim
