// Where the ranks of a parallel group sit: rank r runs on node r / gpus_per_node, and a group of
// one dimension (or of several, e.g. data x context parallel) holds the ranks base + sum_k i_k s_k
// for every base whose index in each of those dimensions is 0. A collective's price depends on how
// its group spans nodes, so it is read off the real placement of every group of that kind rather
// than assumed from the stride alone (a stride below the node size can still cross a node
// boundary, e.g. pipeline stage 3 -> 4 of tp 2 x pp 8 on two 8-GPU nodes).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace parasim {

struct GroupPlacement {
  std::int64_t max_nodes = 1;          // the most nodes one group of this kind spans
  std::int64_t crossing_per_node = 0;  // node-spanning groups with a member on one node, at most
};

// dims: (stride, size) of each dimension the group runs over; world: all ranks of the job.
GroupPlacement place_groups(std::int64_t world, std::int64_t gpus_per_node, const std::vector<std::pair<std::int64_t, std::int64_t>>& dims);

// Point-to-point transfers from index `from` to index `to` of a dimension (stride, size), for every
// base: max_nodes is 2 when any such pair crosses a node, crossing_per_node the most crossing
// pairs that leave one node at once.
GroupPlacement place_pairs(std::int64_t world, std::int64_t gpus_per_node, std::int64_t stride, std::int64_t size,
                           std::int64_t from, std::int64_t to);

}  // namespace parasim
