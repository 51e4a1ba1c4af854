#include "sim/core/registry.h"

#include "sim/core/choice.h"

namespace parasim {

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string join_names(const std::vector<std::string>& names, const std::string& sep) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : sep) + n;
  return out;
}

// The closest name within an edit distance of about a third of its length, or "".
std::string closest_name(const std::string& wanted, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = std::max<size_t>(2, wanted.size() / 3) + 1;
  for (const auto& n : names) {
    const size_t d = edit_distance(wanted, n);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

std::vector<std::string> NamedChoice::name_list() const {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(n.name);
  return out;
}

}  // namespace parasim
