// Output files are written whole or not at all (tools/output_file.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../test_util.h"
#include "tools/output_file.h"

namespace parasim {
namespace {

using test::slurp;

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "output_file_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}


size_t entries(const std::string& dir) { return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator())); }

TEST(OutputFile, CommittedFileIsWholeAndNoTemporaryStays) {
  const std::string d = fresh_dir("commit");
  write_output_file(d + "/a.json", "{}\n", false, "-o");
  EXPECT_EQ(slurp(d + "/a.json"), "{}\n");
  EXPECT_EQ(entries(d), 1u);
  // A plain create's permissions, not mkstemp's 0600.
  EXPECT_NE(fs::status(d + "/a.json").permissions() & fs::perms::owner_read, fs::perms::none);
}

TEST(OutputFile, AnErrorBeforeCommitLeavesNoFileAndKeepsTheOldOne) {
  const std::string d = fresh_dir("abort");
  {
    OutputFile f(d + "/new.json", false, "--trace");
    f.stream() << "half";
  }  // an exception unwinding here: no commit
  EXPECT_FALSE(fs::exists(d + "/new.json"));
  EXPECT_EQ(entries(d), 0u);
  std::ofstream(d + "/old.json") << "old";
  {
    OutputFile f(d + "/old.json", true, "--trace");
    f.stream() << "half";
  }
  EXPECT_EQ(slurp(d + "/old.json"), "old");
  EXPECT_EQ(entries(d), 1u);
}

TEST(OutputFile, ExistingFileIsRefusedWithoutForce) {
  const std::string d = fresh_dir("exists");
  std::ofstream(d + "/x.json") << "mine";
  try {
    OutputFile f(d + "/x.json", false, "--write-model-error");
    FAIL() << "expected an OutputError";
  } catch (const OutputError& e) {
    EXPECT_EQ(std::string(e.what()), "--write-model-error " + d + "/x.json: exists; refusing to overwrite it (use --force or another name)");
  }
  write_output_file(d + "/x.json", "new", true, "-o");
  EXPECT_EQ(slurp(d + "/x.json"), "new");
  EXPECT_THROW(OutputFile(d, true, "-o"), OutputError);  // a directory is never a file name
}

TEST(OutputFile, DeviceTargetsAreWrittenInPlaceAndTheirErrorsSeen) {
  write_output_file("/dev/null", "x", false, "-o");  // no --force needed: nothing to lose
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  try {
    write_output_file("/dev/full", std::string(1 << 16, 'x'), false, "--trace");
    FAIL() << "expected an OutputError";
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find("--trace /dev/full: write failed (No space left on device)"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
}

TEST(OutputFile, MissingFolderIsAClearError) {
  try {
    write_output_file(::testing::TempDir() + "no/such/dir/x.json", "x", false, "-o");
    FAIL() << "expected an OutputError";
  } catch (const OutputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create a file beside it: No such file or directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace parasim
