#include "sim/parallel/placement.h"

#include <algorithm>
#include <numeric>

namespace parasim {

namespace {

// Groups repeat with the period of their block (the outermost dimension's stride x size) and of
// the node size, so the first lcm of the two ranks hold every distinct placement (a block is
// closed under group membership).
std::int64_t window(std::int64_t world, std::int64_t gpn, std::int64_t block) {
  if (block <= 0 || gpn <= 0) return world;
  const std::int64_t g = std::gcd(block, gpn);
  const std::int64_t l = block / g > world / gpn + 1 ? world : block / g * gpn;
  return std::min(world, l);
}

// The first base at or after r: a rank whose index in every dimension is 0 (a rank with index i
// in a dimension of stride s and size n skips to the start of the next block of s * n).
std::int64_t next_base(std::int64_t r, const std::vector<std::pair<std::int64_t, std::int64_t>>& dims) {
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& [s, n] : dims)
      if ((r / s) % n != 0) {
        r = (r / (s * n) + 1) * (s * n);
        moved = true;
      }
  }
  return r;
}

}  // namespace

GroupPlacement place_groups(std::int64_t world, std::int64_t gpn, const std::vector<std::pair<std::int64_t, std::int64_t>>& dims) {
  GroupPlacement out;
  std::int64_t block = 1, size = 1;
  for (const auto& [s, n] : dims) {
    block = std::max(block, s * n);
    size *= n;
  }
  if (size <= 1 || gpn <= 0) return out;
  const std::int64_t w = window(world, gpn, block);
  std::vector<std::int64_t> crossing(static_cast<size_t>((w + gpn - 1) / gpn), 0);
  std::vector<std::int64_t> members, nodes;
  for (std::int64_t b = next_base(0, dims); b < w; b = next_base(b + 1, dims)) {
    members.assign(1, b);
    for (const auto& [s, n] : dims) {
      const size_t have = members.size();
      for (std::int64_t i = 1; i < n; ++i)
        for (size_t j = 0; j < have; ++j) members.push_back(members[j] + i * s);
    }
    nodes.clear();
    for (std::int64_t m : members) nodes.push_back(m / gpn);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    const auto spanned = static_cast<std::int64_t>(nodes.size());
    out.max_nodes = std::max(out.max_nodes, spanned);
    if (spanned > 1)
      for (std::int64_t nd : nodes)
        if (nd < static_cast<std::int64_t>(crossing.size())) ++crossing[static_cast<size_t>(nd)];
  }
  for (std::int64_t c : crossing) out.crossing_per_node = std::max(out.crossing_per_node, c);
  return out;
}

GroupPlacement place_pairs(std::int64_t world, std::int64_t gpn, std::int64_t stride, std::int64_t size, std::int64_t from,
                           std::int64_t to) {
  GroupPlacement out;
  if (gpn <= 0 || size <= 1) return out;
  std::vector<std::int64_t> crossing(static_cast<size_t>((world + gpn - 1) / gpn), 0);
  const std::vector<std::pair<std::int64_t, std::int64_t>> dims{{stride, size}};
  const std::int64_t w = window(world, gpn, stride * size);
  for (std::int64_t b = next_base(0, dims); b < w; b = next_base(b + 1, dims)) {
    const std::int64_t a = (b + from * stride) / gpn, z = (b + to * stride) / gpn;
    if (a == z) continue;
    out.max_nodes = 2;
    ++crossing[static_cast<size_t>(a)];
  }
  for (std::int64_t c : crossing) out.crossing_per_node = std::max(out.crossing_per_node, c);
  return out;
}

}  // namespace parasim
