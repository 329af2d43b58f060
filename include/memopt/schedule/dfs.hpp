#pragma once
// XLA's two depth-first schedulers, on the predecessors of each vertex:
// - post_order_schedule: the post-order of a depth-first search from every
//   vertex no one reads (in index order), operands in operand order.
// - dfs_schedule: the same search started from the sinks, visiting first the
//   operands with more extra users (users - 1, summed over the operands'
//   operands), then the larger cumulative size (own transient bytes plus the
//   operands', capped as XLA caps it), then the lower index.
// Persistent vertices count as size 0 with no extra users, as XLA ignores
// parameters and constants. O(V log V + E). Iterative: no recursion, whatever
// the depth. Throws cycle_error on a cyclic graph.

#include <memopt/graph/compact.hpp>
#include <memopt/schedule/result.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memopt {

namespace detail {

/// Post-order of a DFS over predecessors from each root in turn; `children(v,
/// out)` fills the predecessors of v in the order to visit them.
template <class Children>
std::vector<std::size_t> predecessor_post_order(const compact_graph& g,
                                                const std::vector<std::size_t>& roots,
                                                const Children& children) {
  enum class mark : unsigned char { unvisited, open, done };
  std::vector<mark> state(g.num_vertices(), mark::unvisited);
  std::vector<std::size_t> order;
  order.reserve(g.num_vertices());
  std::vector<std::size_t> stack, kids;
  for (const auto root : roots) {
    stack.push_back(root);
    while (!stack.empty()) {
      const std::size_t v = stack.back();
      if (state[v] == mark::done) {
        stack.pop_back();
      } else if (state[v] == mark::open) {
        stack.pop_back();
        state[v] = mark::done;
        order.push_back(v);
      } else {
        state[v] = mark::open;
        kids.clear();
        children(v, kids);
        // The first child to visit goes on top.
        for (auto it = kids.rbegin(); it != kids.rend(); ++it) {
          if (state[*it] == mark::open) throw_cycle(g);  // a predecessor on the path
          if (state[*it] == mark::unvisited) stack.push_back(*it);
        }
      }
    }
  }
  return order;
}

inline bool has_readers(const compact_graph& g, std::size_t v) {
  for (buffer_id b = g.buffers.first[v]; b < g.buffers.first[v + 1]; ++b) {
    if (g.readers.size(b) > 0) return true;
  }
  return false;
}

}  // namespace detail

/// XLA's post-order scheduler, as dense vertex indices.
[[nodiscard]] inline std::vector<std::size_t> post_order_order(const compact_graph& g) {
  std::vector<std::size_t> roots;
  for (std::size_t v = 0; v < g.num_vertices(); ++v) {
    if (!detail::has_readers(g, v)) roots.push_back(v);
  }
  auto order = detail::predecessor_post_order(g, roots, [&](std::size_t v, std::vector<std::size_t>& out) {
    out.assign(g.predecessors[v].begin(), g.predecessors[v].end());
  });
  detail::require_complete(g, order);
  return order;
}

/// XLA's DFS scheduler, as dense vertex indices.
[[nodiscard]] inline std::vector<std::size_t> dfs_order(const compact_graph& g) {
  const std::size_t n = g.num_vertices();
  const auto& buffers = g.buffers;
  // Extra users and cumulative sizes, computed in post-order (operands first).
  std::vector<std::size_t> extra_users(n, 0);
  std::vector<std::uint64_t> total_size(n, 0);
  std::uint64_t cumulative = 0;
  const auto saturating_add = [](std::uint64_t a, std::uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
  };
  const auto users = detail::count_users(g);
  std::vector<std::size_t> operands;
  for (const auto v : post_order_order(g)) {
    if (buffers.first[v] < buffers.first[v + 1] && buffers.persistent[buffers.first[v]]) continue;
    std::uint64_t size = 0;
    for (buffer_id b = buffers.first[v]; b < buffers.first[v + 1]; ++b) {
      size = saturating_add(size, buffers.bytes[b]);
    }
    cumulative = saturating_add(cumulative, size);
    extra_users[v] = users[v] > 0 ? users[v] - 1 : 0;
    total_size[v] = size;
    operands.clear();
    for (const auto b : g.reads[v]) operands.push_back(buffers.owner[b]);
    std::sort(operands.begin(), operands.end());
    operands.erase(std::unique(operands.begin(), operands.end()), operands.end());
    for (const auto u : operands) {
      extra_users[v] = std::min(extra_users[v] + extra_users[u], n);
      total_size[v] = saturating_add(total_size[v], total_size[u]);
    }
    total_size[v] = std::min(total_size[v], cumulative);
  }
  std::vector<std::size_t> sinks;
  for (std::size_t v = 0; v < n; ++v) {
    if (g.successors.size(v) == 0) sinks.push_back(v);
  }
  const auto first = [&](std::size_t a, std::size_t b) {
    if (extra_users[a] != extra_users[b]) return extra_users[a] > extra_users[b];
    if (total_size[a] != total_size[b]) return total_size[a] > total_size[b];
    return a < b;
  };
  auto order = detail::predecessor_post_order(g, sinks, [&](std::size_t v, std::vector<std::size_t>& out) {
    out.assign(g.predecessors[v].begin(), g.predecessors[v].end());
    std::sort(out.begin(), out.end(), first);
  });
  detail::require_complete(g, order);
  return order;
}

template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] schedule_result<G> post_order_schedule(const G& g, Index index = {}) {
  return schedule_with(g, index, "post-order", post_order_order);
}

template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] schedule_result<G> dfs_schedule(const G& g, Index index = {}) {
  return schedule_with(g, index, "dfs", dfs_order);
}

}  // namespace memopt
