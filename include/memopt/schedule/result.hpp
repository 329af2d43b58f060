#pragma once
// schedule_result: an order of the vertices with the peak the memory model
// gives it; and the glue every scheduler shares: schedulers compute an order
// of dense vertex indices on a compact_graph, and evaluate_order maps it back
// to the caller's vertices and takes its peak from liveness() on that same
// snapshot (a call reads the caller's graph once).

#include <memopt/detail/kahn.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/index_map.hpp>
#include <memopt/graph/topology.hpp>
#include <memopt/liveness/liveness.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace memopt {

template <class G>
struct schedule_result {
  std::string method;                  ///< what produced the order: a scheduler's name, or "exact"
  std::vector<vertex_t<G>> order;      ///< every vertex once, topological
  std::uint64_t peak_bytes = 0;        ///< transient peak, no fragmentation
  std::uint64_t persistent_bytes = 0;  ///< reported apart
  std::uint64_t lower_bound_bytes = 0; ///< no order peaks lower (0: not computed)
  bool proved_optimal = false;         ///< peak_bytes == lower_bound_bytes
  /// A time limit ended the search (a search's result only): the same call
  /// may give another order under another load; with a work limit alone it
  /// never does.
  bool stopped_by_clock = false;
};

namespace detail {

/// evaluate_order's body, for an order `maker` made (liveness_of_snapshot).
template <class G, class Snapshot>
[[nodiscard]] schedule_result<G> evaluate_order_of(Snapshot&& c, const std::vector<vertex_t<G>>& by_index,
                                                   const std::vector<std::size_t>& order, order_maker maker) {
  schedule_result<G> r;
  r.order.reserve(order.size());
  for (const auto i : order) r.order.push_back(by_index[i]);
  const auto live = liveness_of_snapshot(c, std::forward<Snapshot>(c).buffers, order, {}, maker);
  r.peak_bytes = live.peak_bytes;
  r.persistent_bytes = live.persistent_bytes;
  return r;
}

}  // namespace detail

/// The result of running `order` (dense indices) on the snapshot c of a graph
/// whose vertices by index are by_index: its vertices and peak. A snapshot
/// passed as an rvalue gives up its buffer table to the evaluation (no copy).
template <class G, class Snapshot>
  requires std::same_as<std::remove_cvref_t<Snapshot>, compact_graph>
[[nodiscard]] schedule_result<G> evaluate_order(Snapshot&& c, const std::vector<vertex_t<G>>& by_index,
                                                const std::vector<std::size_t>& order) {
  return detail::evaluate_order_of<G>(std::forward<Snapshot>(c), by_index, order, detail::order_maker::caller);
}

/// Runs `order_of` (compact_graph -> dense order) on g: the common body of
/// every scheduler's graph-level entry point; `method` names the scheduler.
/// The order must keep the snapshot's rows, as a scheduler's does: release
/// builds do not check it against them again.
template <tensor_graph G, vertex_index_map<G> Index, class OrderOf>
[[nodiscard]] schedule_result<G> schedule_with(const G& g, Index index, std::string_view method,
                                               OrderOf&& order_of) {
  auto c = make_compact_graph(g, index);
  const auto order = order_of(std::as_const(c));
  auto r = detail::evaluate_order_of<G>(std::move(c), vertices_by_index(g, index), order,
                                        detail::order_maker::scheduler);
  r.method = method;
  return r;
}

namespace detail {

/// Throws cycle_error with a cycle of g, which the caller found to be cyclic.
[[noreturn]] inline void throw_cycle(const compact_graph& g) {
  // Kahn's algorithm leaves every vertex on or behind a cycle unplaced; each
  // of them has an unplaced predecessor, so walking those must repeat.
  const std::size_t n = g.num_vertices();
  std::vector<bool> unplaced(n, true);
  for (const std::size_t v : kahn_order(g)) unplaced[v] = false;
  constexpr std::size_t unseen = static_cast<std::size_t>(-1);
  std::size_t v = 0;
  while (v < n && !unplaced[v]) ++v;
  std::vector<std::size_t> seen_at(n, unseen), walk;
  while (v < n && seen_at[v] == unseen) {
    seen_at[v] = walk.size();
    walk.push_back(v);
    for (const auto p : g.predecessors[v]) {
      if (unplaced[p]) {
        v = p;
        break;
      }
    }
  }
  // The walk went against the edges: reverse its loop into edge order.
  std::vector<std::size_t> cycle(walk.begin() + static_cast<std::ptrdiff_t>(v < n ? seen_at[v] : 0), walk.end());
  std::reverse(cycle.begin(), cycle.end());
  throw cycle_error(std::move(cycle));
}

/// By vertex v: its successors that read a storage v owns. One pass over
/// the reads and predecessors, O(V + E); without views, over the readers.
inline std::vector<compact_index> count_users(const compact_graph& g) {
  const std::size_t n = g.num_vertices();
  std::vector<compact_index> users(n, 0);
  const auto none = static_cast<compact_index>(n);
  if (g.buffers.aliased == 0) {
    // Every reader of v's outputs is then a successor of v: the readers of
    // its outputs, each once, read row after row (not a buffer's owner per read).
    std::vector<compact_index> counted_for(n, none);
    for (std::size_t v = 0; v < n; ++v) {
      const buffer_id begin = g.buffers.first[v];
      const buffer_id end = g.buffers.first[v + 1];
      if (end - begin == 1) {
        users[v] = static_cast<compact_index>(g.readers.size(begin));
        continue;
      }
      for (buffer_id b = begin; b < end; ++b) {
        for (const auto r : g.readers[b]) {
          if (counted_for[r] == v) continue;
          counted_for[r] = static_cast<compact_index>(v);
          ++users[v];
        }
      }
    }
    return users;
  }
  std::vector<compact_index> owner_read_by(n, none);
  for (std::size_t r = 0; r < n; ++r) {
    for (const auto b : g.reads[r]) owner_read_by[g.buffers.owner[b]] = static_cast<compact_index>(r);
    for (const auto p : g.predecessors[r]) {
      if (owner_read_by[p] == r) ++users[p];
    }
  }
  return users;
}

/// Throws cycle_error when a scheduler could not place every vertex.
inline void require_complete(const compact_graph& g, const std::vector<std::size_t>& order) {
  if (order.size() != g.num_vertices()) throw_cycle(g);
}

}  // namespace detail

}  // namespace memopt
