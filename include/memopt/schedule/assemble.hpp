#pragma once
// assemble: the exact scheduler's third stage (exact.hpp), which puts the
// whole order back together from each segment's local order (segments.hpp):
// inert vertices first, each floating one right before its first successor.
// identity_orders: each segment's vertices in the order they were split in.

#include <memopt/graph/compact.hpp>
#include <memopt/schedule/segments.hpp>

#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

namespace memopt::detail {

/// The whole order from each segment's local order: inert vertices first,
/// each floating one right before its first successor.
inline std::vector<std::size_t> assemble(const compact_graph& g, const std::vector<std::size_t>& start,
                                         const std::vector<vertex_role>& role, const std::vector<segment>& segments,
                                         const std::vector<std::vector<std::size_t>>& local_orders) {
  std::vector<std::size_t> order;
  order.reserve(g.num_vertices());
  std::vector<char> placed(g.num_vertices(), 0);
  for (const auto v : start) {
    if (role[v] == vertex_role::inert) order.push_back(v);
  }
  // Floating vertices not placed yet among v's ancestors, predecessors first
  // (their ancestors are all inert or floating).
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // vertex, predecessors looked at
  const auto place_floating_before = [&](std::size_t v) {
    stack.assign(1, {v, 0});
    while (!stack.empty()) {
      auto& [u, next] = stack.back();
      if (next < g.predecessors.size(u)) {
        const std::size_t p = g.predecessors[u][next++];
        if (role[p] == vertex_role::floating && !placed[p]) {
          placed[p] = 1;
          stack.emplace_back(p, 0);
        }
        continue;
      }
      if (u != v) order.push_back(u);
      stack.pop_back();
    }
  };
  for (std::size_t s = 0; s < segments.size(); ++s) {
    for (const auto i : local_orders[s]) {
      const std::size_t v = segments[s].vertices[i];
      place_floating_before(v);
      order.push_back(v);
    }
  }
  return order;
}

inline std::vector<std::vector<std::size_t>> identity_orders(const std::vector<segment>& segments) {
  std::vector<std::vector<std::size_t>> orders(segments.size());
  for (std::size_t s = 0; s < segments.size(); ++s) {
    orders[s].resize(segments[s].size());
    std::iota(orders[s].begin(), orders[s].end(), std::size_t{0});
  }
  return orders;
}

}  // namespace memopt::detail
