// The progress line's text (tools/progress.h), and that no progress reaches a stderr that is not a
// terminal (ctest's is a pipe).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>

#include "../test_util.h"
#include "tools/progress.h"

namespace parasim {
namespace {

TEST(Progress, RateIsDoneOverElapsedAndEtaIsWhatIsLeftAtThatRate) {
  // 50 of 200 in 10 s: 5 per second; 150 left at 5/s is 30 s.
  EXPECT_EQ(progress_text("validate", 50, 200, 10.0), "validate 50/200  5.0/s  ETA 30 s");
  // 3 of 4 in 2 s: 1.5/s; 1 left is 0.67 s, printed to the second.
  EXPECT_EQ(progress_text("check", 3, 4, 2.0), "check 3/4  1.5/s  ETA 1 s");
  EXPECT_EQ(progress_text("sweep", 8, 8, 4.0), "sweep 8/8  2.0/s  ETA 0 s");
}

TEST(Progress, NoRateYetGivesNoEta) {
  EXPECT_EQ(progress_text("plan 8 GPUs", 0, 10, 0.0), "plan 8 GPUs 0/10  0.0/s  ETA ?");
  EXPECT_EQ(progress_text("plan 8 GPUs", 0, 10, 3.0), "plan 8 GPUs 0/10  0.0/s  ETA ?");
}

TEST(Progress, NothingWhenStderrIsNotATerminal) {
  // check over two measured runs with stderr into the same pipe as stdout: no \r, no ETA.
  const std::string m = test::test_data("measured/components.json");
  const std::string out = test::run_cli("check " + m + " " + m).out;
  EXPECT_FALSE(out.empty());
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.find("ETA"), std::string::npos) << out;
}

}  // namespace
}  // namespace parasim
