// Output files written whole or not at all. Every file a command writes (import -o, run --trace,
// validate -o, --write-model-error, profile derive -o, sweep and plan --csv, report -o) goes through
// OutputFile: it refuses an existing file unless --force (--csv and report -o pass it: they replace), writes into a temporary file beside the target, and renames it into place only after a
// successful flush and close, so a full disk, a write error or a kill leaves the old file (or
// none), never a truncated one. A target that exists and is not a regular file (/dev/null, a FIFO,
// /dev/stdout) is written in place and needs no --force: there is nothing to lose.
// Write errors are OutputErrors (exit 2, like other input the user can fix: a path, a full disk).
#pragma once
#include <array>
#include <ostream>
#include <streambuf>
#include <string>

#include "sim/core/errors.h"

namespace parasim {

class OutputError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// A stream buffer over a file descriptor that keeps the errno of the first failed write.
class FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd);
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override;
  int sync() override;

 private:
  bool drain();
  int fd_;
  int error_ = 0;
  std::array<char, 1 << 16> buf_{};
};

class OutputFile {
 public:
  // Throws OutputError when the target exists and `force` is false, or the file cannot be
  // created. `option` names the command-line option in messages ("--trace").
  OutputFile(std::string path, bool force, std::string option);
  ~OutputFile();  // not committed: removes the temporary file
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream() { return out_; }
  // Flushes, closes and renames into place; throws OutputError on any failure.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, option_, temp_;  // temp_ empty: writing the target in place
  int fd_ = -1;
  FdBuffer buf_;
  std::ostream out_;
  bool committed_ = false;
};

// Refuses an existing regular file unless force (for commands that check before long work).
void check_writable(const std::string& path, bool force, const std::string& option);

// Writes text whole to path through an OutputFile.
void write_output_file(const std::string& path, const std::string& text, bool force, const std::string& option);

// Flushes standard output; throws OutputError when anything written to it failed (a full disk, a
// closed pipe, /dev/full), so no command exits 0 with its output cut.
void flush_stdout();

}  // namespace parasim
