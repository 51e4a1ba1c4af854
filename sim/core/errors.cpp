#include "sim/core/errors.h"

#include <fmt/format.h>

namespace parasim {

std::string printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const auto next = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      out += fmt::format("\\u{:04x}", c);
    } else if (c == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) {  // C1 controls U+0080..U+009F
      out += fmt::format("\\u{:04x}", next(1));
      ++i;
    } else if (c == 0xe2 && ((next(1) == 0x80 && next(2) >= 0xaa && next(2) <= 0xae) ||   // U+202A..U+202E
                             (next(1) == 0x81 && next(2) >= 0xa6 && next(2) <= 0xa9))) {  // U+2066..U+2069
      out += fmt::format("\\u{:04x}", 0x2000 + ((next(1) & 0x3f) << 6) + (next(2) & 0x3f));
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace parasim
