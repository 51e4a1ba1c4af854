// Where parasim's data files live (models/, calibrate/profiles/, calibrate/model_error.json,
// scenarios/, schemas/), found once at start-up; see docs/install.md.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace parasim {

// The candidates in order of precedence: an explicit --data-dir, then $PARASIM_DATA_DIR, then
// <dir of the executable or module>/../share/parasim (an install, and the build tree, where CMake
// links build/share/parasim to the source tree's data).
struct DataDirCandidates {
  std::optional<std::string> flag;  // --data-dir / data_dir=
  std::optional<std::string> env;   // $PARASIM_DATA_DIR
  std::string binary_dir;           // directory holding the executable (or the Python module)
};

// The first explicit candidate (flag, else env) when one is given, else the binary-relative one.
// A ConfigError (exit 2) when that directory has no models/ and calibrate/profiles/; the message
// names every path tried and how to point parasim at its data.
std::string resolve_data_dir(const DataDirCandidates& c);

// Directory of the running executable (/proc/self/exe), or "" when it cannot be read.
std::string executable_dir();

}  // namespace parasim
