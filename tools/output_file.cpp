#include "tools/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

namespace parasim {

namespace {
namespace fs = std::filesystem;

std::string fmt_error(const std::string& option, const std::string& path, const std::string& what) {
  return option + " " + path + ": " + what;
}

std::string reason() { return errno ? std::strerror(errno) : "write failed"; }

// A new, empty file beside `path` with the mode a plain create would give it (0666 less umask).
std::string make_temp(const std::string& path, const std::string& option) {
  std::string name = path + ".tmp.XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  const int fd = mkstemp(buf.data());
  if (fd < 0) throw OutputError(fmt_error(option, path, "cannot create a file beside it: " + reason()));
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  close(fd);
  return buf.data();
}
}  // namespace

void check_writable(const std::string& path, bool force, const std::string& option) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::is_directory(st)) throw OutputError(fmt_error(option, path, "is a directory, expected a file name"));
  if (fs::is_regular_file(st) && !force)
    throw OutputError(fmt_error(option, path, "exists; refusing to overwrite it (use --force or another name)"));
}

OutputFile::OutputFile(std::string path, bool force, std::string option) : path_(std::move(path)), option_(std::move(option)) {
  check_writable(path_, force, option_);
  std::error_code ec;
  const bool in_place = fs::exists(path_, ec) && !fs::is_regular_file(path_, ec);
  if (!in_place) temp_ = make_temp(path_, option_);
  out_.open(in_place ? path_ : temp_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    const std::string why = reason();
    if (!temp_.empty()) fs::remove(temp_, ec);
    throw OutputError(fmt_error(option_, path_, "cannot write: " + why));
  }
}

OutputFile::~OutputFile() {
  if (committed_ || temp_.empty()) return;
  out_.close();
  std::error_code ec;
  fs::remove(temp_, ec);
}

void OutputFile::commit() {
  errno = 0;
  out_.flush();
  const bool flushed = out_.good();
  out_.close();
  if (!flushed || out_.fail()) throw OutputError(fmt_error(option_, path_, "write failed (" + reason() + "); nothing was written"));
  if (!temp_.empty()) {
    std::error_code ec;
    fs::rename(temp_, path_, ec);
    if (ec) throw OutputError(fmt_error(option_, path_, "cannot move the written file into place: " + ec.message()));
  }
  committed_ = true;
}

void write_output_file(const std::string& path, const std::string& text, bool force, const std::string& option) {
  OutputFile f(path, force, option);
  f.stream() << text;
  f.commit();
}

void flush_stdout() {
  errno = 0;
  std::cout.flush();
  const bool ok = std::cout.good() && std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (!ok) throw OutputError("standard output: write failed (" + reason() + "); the output is incomplete");
}

}  // namespace parasim
