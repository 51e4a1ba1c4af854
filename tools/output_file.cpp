#include "tools/output_file.h"

#include <fcntl.h>
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

// A new, empty file beside `path` with the mode a plain create would give it (0666 less umask).
int make_temp(const std::string& path, const std::string& option, std::string& name) {
  std::vector<char> buf(path.begin(), path.end());
  for (const char c : std::string(".tmp.XXXXXX")) buf.push_back(c);
  buf.push_back('\0');
  const int fd = mkstemp(buf.data());
  if (fd < 0) throw OutputError(fmt_error(option, path, std::string("cannot create a file beside it: ") + std::strerror(errno)));
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  name = buf.data();
  return fd;
}

// The descriptor to write: a temporary file beside a regular (or absent) target, else the target.
int open_target(const std::string& path, bool force, const std::string& option, std::string& temp) {
  check_writable(path, force, option);
  std::error_code ec;
  if (!fs::exists(path, ec) || fs::is_regular_file(path, ec)) return make_temp(path, option, temp);
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC);
  if (fd < 0) throw OutputError(fmt_error(option, path, std::string("cannot write: ") + std::strerror(errno)));
  return fd;
}
}  // namespace

FdBuffer::FdBuffer(int fd) : fd_(fd) { setp(buf_.data(), buf_.data() + buf_.size()); }

bool FdBuffer::drain() {
  for (char* p = pbase(); p < pptr();) {
    const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!error_) error_ = n < 0 ? errno : EIO;
      return false;
    }
    p += n;
  }
  setp(buf_.data(), buf_.data() + buf_.size());
  return true;
}

FdBuffer::int_type FdBuffer::overflow(int_type c) {
  if (error_ || !drain()) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

int FdBuffer::sync() { return !error_ && drain() ? 0 : -1; }

void check_writable(const std::string& path, bool force, const std::string& option) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::is_directory(st)) throw OutputError(fmt_error(option, path, "is a directory, expected a file name"));
  if (fs::is_regular_file(st) && !force)
    throw OutputError(fmt_error(option, path, "exists; refusing to overwrite it (use --force or another name)"));
}

OutputFile::OutputFile(std::string path, bool force, std::string option)
    : path_(std::move(path)), option_(std::move(option)), fd_(open_target(path_, force, option_, temp_)), buf_(fd_), out_(&buf_) {}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  std::error_code ec;
  if (!committed_ && !temp_.empty()) fs::remove(temp_, ec);
}

void OutputFile::commit() {
  out_.flush();
  int err = buf_.error();
  if (::close(fd_) != 0 && !err) err = errno;
  fd_ = -1;
  if (err || !out_.good())
    throw OutputError(fmt_error(option_, path_, std::string("write failed (") + (err ? std::strerror(err) : "stream error") +
                                                    "); nothing was written"));
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
  if (!ok) throw OutputError(std::string("standard output: write failed (") + (errno ? std::strerror(errno) : "stream error") +
                             "); the output is incomplete");
}

}  // namespace parasim
