#include "tools/data_dir.h"

#include <filesystem>

#include "sim/core/errors.h"

namespace parasim {

namespace fs = std::filesystem;

namespace {
// A data directory holds the model zoo and the GPU profiles; everything else is optional.
bool holds_data(const std::string& dir) {
  std::error_code ec;
  return fs::is_directory(fs::path(dir) / "models", ec) && fs::is_directory(fs::path(dir) / "calibrate" / "profiles", ec);
}
}  // namespace

std::string resolve_data_dir(const DataDirCandidates& c) {
  std::vector<std::pair<std::string, std::string>> tried;  // {path, where it came from}
  if (c.flag) tried.emplace_back(*c.flag, "--data-dir");
  else if (c.env) tried.emplace_back(*c.env, "$PARASIM_DATA_DIR");
  else if (!c.binary_dir.empty())
    tried.emplace_back((fs::path(c.binary_dir) / ".." / "share" / "parasim").lexically_normal().string(), "beside the executable");
  for (const auto& [path, from] : tried)
    if (holds_data(path)) return path;
  std::string msg = "no parasim data found (models/ and calibrate/profiles/); tried:";
  for (const auto& [path, from] : tried) msg += "\n  " + path + " (" + from + ")";
  if (tried.empty()) msg += "\n  (nothing: the executable's location is unknown)";
  msg += "\npoint parasim at the data with --data-dir DIR or PARASIM_DATA_DIR=DIR (the source tree, or <prefix>/share/parasim)";
  throw ConfigError(msg);
}

std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace parasim
