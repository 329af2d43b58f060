#pragma once
// The peak-memory reordering heuristics of PyTorch Inductor
// (torch/_inductor/memory.py, reorder_for_peak_memory), on our memory model:
// - lpmf_schedule, least peak memory first: keep the peak so far; among ready
//   vertices whose step memory (live + its outputs) stays within it, run the
//   one leaving the least memory after it (outputs - bytes freed), otherwise the
//   one whose step memory is lowest; ties by index.
// - bfs_schedule: run the ready vertex whose predecessors ran earliest (their
//   sorted positions, compared lexicographically), ties by index.
// - dfs_size_schedule: depth-first post-order over predecessors, starting from
//   vertices in ascending size-with-reads (outputs plus buffers read), visiting
//   the smaller predecessors first.
// Persistent buffers count as 0 bytes, as Inductor leaves out graph parameters.
// lpmf O((V + E) log V), bfs O((V + E) log V) comparisons of position lists,
// dfs_size O(V log V + E). Throw cycle_error on a cyclic graph.

#include <memopt/detail/kahn.hpp>
#include <memopt/detail/keyed_position_set.hpp>
#include <memopt/detail/radix_sort.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/schedule/dfs.hpp>
#include <memopt/schedule/list.hpp>
#include <memopt/schedule/result.hpp>

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <queue>
#include <span>
#include <vector>

namespace memopt {

namespace detail {

/// The vertices ranked by (size, index), for lpmf's question: which ready
/// vertices have a size at most some limit? Those ranked below a bound.
class size_ranks {
 public:
  explicit size_ranks(const list_state& state) : rank_(state.graph.num_vertices()), size_(rank_.size()) {
    const auto by_size = sorted_with_index(rank_.size(), [&](std::size_t v) { return state.bytes_defined(v); });
    for (std::size_t r = 0; r < by_size.size(); ++r) {
      size_[r] = by_size[r].first;
      rank_[by_size[r].second] = static_cast<compact_index>(r);
    }
  }

  [[nodiscard]] std::size_t of(std::size_t v) const { return rank_[v]; }
  [[nodiscard]] std::uint64_t size_at(std::size_t r) const { return size_[r]; }
  /// The ranks of the vertices whose size is <= limit: [0, bound(limit)).
  [[nodiscard]] std::size_t bound(std::uint64_t limit) const {
    if (size_.empty() || limit >= size_.back()) return size_.size();  // most steps: every vertex fits
    return static_cast<std::size_t>(std::ranges::upper_bound(size_, limit) - size_.begin());
  }

 private:
  std::vector<compact_index> rank_;  ///< by vertex
  std::vector<std::uint64_t> size_;  ///< by rank, ascending
};

}  // namespace detail

/// Inductor's least-peak-memory-first order, as dense vertex indices.
[[nodiscard]] inline std::vector<std::size_t> lpmf_order(const compact_graph& g) {
  const std::size_t n = g.num_vertices();
  list_state state(g);
  std::uint64_t peak = 0;  // starts at the graph outputs, which any order holds at the end
  for (buffer_id b = 0; b < g.buffers.size(); ++b) {
    if (g.buffers.live_out[b] && !g.buffers.persistent[b]) peak += g.buffers.bytes[b];
  }
  // Ready vertices sit at their rank by (size, index), keyed by (outputs -
  // bytes freed, index): the least key within a rank bound is the choice.
  const detail::size_ranks rank(state);
  // A key: the memory left after the step (outputs - bytes freed), then the index.
  using key = balance_key;
  const key none{};
  detail::keyed_position_set<key> ready(n, none);  // by rank
  const auto after = [&](std::size_t v) {
    return key::of(state.bytes_defined(v), state.bytes_freed(v) + state.bytes_dropped(v), v);
  };
  const auto make_ready = [&](std::size_t v) { ready.lower(rank.of(v), after(v)); };
  detail::ready_tracker tracker(g);
  tracker.start(make_ready);
  std::uint64_t live = 0;
  std::vector<std::size_t> order;
  order.reserve(n);
  for (std::size_t step = 0; step < n; ++step) {
    const std::size_t within = live <= peak ? rank.bound(peak - live) : 0;
    key chosen = ready.min(0, within);
    if (chosen == none) {
      // Nothing fits under the peak: the smallest step memory, then the least left after.
      const std::size_t smallest = ready.first_from(within);
      if (smallest == SIZE_MAX) break;  // a cycle: caught below
      chosen = ready.min(smallest, rank.bound(rank.size_at(smallest)));
    }
    const std::size_t v = chosen.count();
    ready.erase(rank.of(v));
    order.push_back(v);
    live += state.bytes_defined(v);
    peak = std::max(peak, live);
    live -= state.bytes_freed(v) + state.bytes_dropped(v);
    for (const auto b : state.run(v)) {
      if (g.buffers.live_out[b]) continue;  // every reader ran
      const std::size_t r = state.sole_unscheduled_reader(b);
      if (!tracker.waits(r)) ready.lower(rank.of(r), after(r));  // r, not run, is ready: it now frees b too
    }
    tracker.ran(v, make_ready);
  }
  detail::require_complete(g, order);
  return order;
}

/// Inductor's BFS order (earliest-run predecessors first), as dense vertex indices.
[[nodiscard]] inline std::vector<std::size_t> bfs_order(const compact_graph& g) {
  const std::size_t n = g.num_vertices();
  // A vertex is queued once, when ready: the sorted positions of its
  // predecessors go back to back in one pool, no allocation a vertex.
  std::vector<compact_index> position(n), pool;
  pool.reserve(g.predecessors.items.size());
  struct entry {
    std::size_t first;  // its positions: pool[first, first + count)
    compact_index count;
    compact_index vertex;
  };
  const auto positions = [&pool](const entry& e) {
    return std::span<const compact_index>(pool.data() + e.first, e.count);
  };
  const auto later = [&](const entry& a, const entry& b) {
    const auto order = std::lexicographical_compare_three_way(positions(a).begin(), positions(a).end(),
                                                              positions(b).begin(), positions(b).end());
    return order != 0 ? order > 0 : a.vertex > b.vertex;
  };
  std::priority_queue<entry, std::vector<entry>, decltype(later)> ready(later);
  const auto push = [&](std::size_t v) {
    const entry e{pool.size(), static_cast<compact_index>(g.predecessors.size(v)), static_cast<compact_index>(v)};
    for (const auto p : g.predecessors[v]) pool.push_back(position[p]);
    std::sort(pool.begin() + static_cast<std::ptrdiff_t>(e.first), pool.end());
    ready.push(e);
  };
  detail::ready_tracker tracker(g);
  tracker.start(push);
  std::vector<std::size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const std::size_t v = ready.top().vertex;
    ready.pop();
    position[v] = static_cast<compact_index>(order.size());
    order.push_back(v);
    tracker.ran(v, push);
  }
  detail::require_complete(g, order);
  return order;
}

/// Inductor's DFS order by size with reads, as dense vertex indices.
[[nodiscard]] inline std::vector<std::size_t> dfs_size_order(const compact_graph& g) {
  const std::size_t n = g.num_vertices();
  std::vector<std::uint64_t> weight(n);
  for (std::size_t v = 0; v < n; ++v) {
    for (buffer_id b = g.buffers.first[v]; b < g.buffers.first[v + 1]; ++b) {
      if (!g.buffers.persistent[b]) weight[v] += g.buffers.bytes[b];
    }
    for (const auto b : g.reads[v]) {
      if (!g.buffers.persistent[b]) weight[v] += g.buffers.bytes[b];
    }
  }
  const auto lighter = [&](std::size_t a, std::size_t b) { return std::pair{weight[a], a} < std::pair{weight[b], b}; };
  std::vector<std::size_t> roots;  // every vertex, lighter first (a radix sort, as lpmf ranks sizes)
  roots.reserve(n);
  for (const auto& [w, v] : detail::sorted_with_index(n, [&](std::size_t v) { return weight[v]; })) roots.push_back(v);
  auto order = detail::predecessor_post_order(g, roots, [&](std::size_t v, std::vector<std::size_t>& out) {
    out.assign(g.predecessors[v].begin(), g.predecessors[v].end());
    std::ranges::sort(out, lighter);
  });
  detail::require_complete(g, order);
  return order;
}

template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] schedule_result<G> lpmf_schedule(const G& g, Index index = {}) {
  return schedule_with(g, index, "lpmf", lpmf_order);
}

template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] schedule_result<G> bfs_schedule(const G& g, Index index = {}) {
  return schedule_with(g, index, "bfs", bfs_order);
}

template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] schedule_result<G> dfs_size_schedule(const G& g, Index index = {}) {
  return schedule_with(g, index, "dfs-size", dfs_size_order);
}

}  // namespace memopt
