// The progress line of long commands (sweep, plan, validate, check, stack compare): "what done/total  rate/s  ETA
// s" on stderr, redrawn in place with \r and cleared at the end, only when stderr is a terminal,
// so piped and redirected output stays byte-identical.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace parasim {

using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

// The line for `done` of `total` after `elapsed_s` seconds: rate = done / elapsed, ETA = what is
// left at that rate ("?" before the first item is done). Pure, no terminal codes.
std::string progress_text(const std::string& what, std::size_t done, std::size_t total, double elapsed_s);

// A callback drawing progress_text on stderr at most every 200 ms (and at the last item, after
// which the line is erased); empty (no callback) when stderr is not a terminal.
ProgressFn terminal_progress(const std::string& what);

}  // namespace parasim
