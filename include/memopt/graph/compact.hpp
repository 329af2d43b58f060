#pragma once
// compact_graph: a read-only snapshot of a tensor graph in compressed sparse
// rows, by dense vertex index: distinct successors and predecessors (data and
// control edges alike, and the orders in-place writes impose: graph/storage.hpp),
// the distinct storages each vertex reads and the distinct vertices reading
// each storage. Algorithms that walk a graph many times (schedulers, sharing,
// simulation) take this snapshot once, in O(V + E).
//
// Reads are by storage: a vertex reading a view reads the view's root, so a
// storage's readers are the readers of all its tensors, and a buffer in
// another's storage has no readers and no bytes (buffer_table) of its own.
// Rows keep edge order; for a bidirectional graph, predecessors and reads
// follow each vertex's in-edges (its operand order).
//
// Throws bad_port_error for a data edge reading a port its source lacks,
// bad_alias_error for an alias that is not one (graph/buffers.hpp, storage.hpp).
// Cycles are not checked here (see require_acyclic).

#include <memopt/detail/edge_walk.hpp>
#include <memopt/error.hpp>
#include <memopt/graph/buffers.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/storage.hpp>
#include <memopt/graph/tensor_traits.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <span>
#include <utility>
#include <vector>

namespace memopt {

/// Rows of a sparse matrix: row r is items[first[r] .. first[r + 1]).
template <class T>
struct csr_rows {
  std::vector<std::size_t> first{0};  ///< rows + 1 offsets
  std::vector<T> items;
  [[nodiscard]] std::span<const T> operator[](std::size_t r) const {
    return {items.data() + first[r], first[r + 1] - first[r]};
  }
  [[nodiscard]] std::size_t size(std::size_t r) const { return first[r + 1] - first[r]; }
};

/// A vertex or buffer number in compact rows: 32 bits halve the snapshot of a
/// large graph (make_compact_graph refuses graphs that do not fit).
using compact_index = std::uint32_t;

struct compact_graph {
  buffer_table buffers;
  csr_rows<compact_index> successors;    ///< by vertex: distinct successors
  csr_rows<compact_index> predecessors;  ///< by vertex: distinct predecessors
  csr_rows<compact_index> reads;         ///< by vertex: distinct buffers it reads
  csr_rows<compact_index> readers;       ///< by buffer: distinct vertices reading it
  std::vector<storage_hazard> hazards;   ///< in-place orders, also among the successors

  [[nodiscard]] std::size_t num_vertices() const noexcept { return buffers.num_vertices(); }
};

namespace detail {

/// Offsets from counts: counts[r + 1] holds row r's size; afterwards first[r]
/// is where row r starts.
inline void counts_to_offsets(std::vector<std::size_t>& first) {
  for (std::size_t r = 1; r < first.size(); ++r) first[r] += first[r - 1];
}

/// Rows from (row, item) entries, each row's items in the order given. O(rows + entries).
template <class T>
[[nodiscard]] csr_rows<T> group_rows(std::size_t rows, std::span<const std::pair<std::size_t, T>> entries) {
  csr_rows<T> grouped;
  grouped.first.assign(rows + 1, 0);
  for (const auto& entry : entries) ++grouped.first[entry.first + 1];
  counts_to_offsets(grouped.first);
  grouped.items.resize(entries.size());
  // first[r + 1] is where row r ends: fill each row from its end, entries in
  // reverse, then shift the offsets down one to where rows start.
  for (auto entry = entries.rbegin(); entry != entries.rend(); ++entry) {
    grouped.items[--grouped.first[entry->first + 1]] = entry->second;
  }
  std::copy(grouped.first.begin() + 1, grouped.first.end(), grouped.first.begin());
  grouped.first.back() = entries.size();
  return grouped;
}

/// Drops repeated items within each row, keeping first occurrences in order.
/// `seen` holds one stamp per possible item, none equal to a row number yet.
template <class T>
void drop_repeats(csr_rows<T>& rows, std::vector<std::size_t>& seen) {
  std::size_t kept = 0;
  const std::size_t count = rows.first.size() - 1;
  for (std::size_t row = 0; row < count; ++row) {
    const std::size_t begin = rows.first[row];
    const std::size_t end = rows.first[row + 1];
    rows.first[row] = kept;
    for (std::size_t k = begin; k < end; ++k) {
      const T item = rows.items[k];
      if (seen[item] == row) continue;
      seen[item] = row;
      rows.items[kept++] = item;
    }
  }
  rows.first[count] = kept;
  rows.items.resize(kept);
}

/// num_edges(g) when the graph offers it (an allocation hint only).
template <class G>
std::size_t num_edges_hint(const G& g) {
  if constexpr (requires { num_edges(g); }) {
    return static_cast<std::size_t>(num_edges(g));
  } else {
    return 0;
  }
}

}  // namespace detail

/// The snapshot of g, vertex v numbered index(v). O(V + E).
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] compact_graph make_compact_graph(const G& g, Index index = {}) {
  using traits = tensor_traits<G>;
  compact_graph c;
  c.buffers = make_buffer_table(g, index);
  const std::size_t n = c.buffers.num_vertices();
  const std::size_t buffer_count = c.buffers.size();
  if (std::max(n, buffer_count) >= std::numeric_limits<compact_index>::max()) {
    throw std::length_error("memopt::make_compact_graph: more than 2^32 - 2 vertices or buffers");
  }
  c.successors.first.assign(n + 1, 0);
  c.predecessors.first.assign(n + 1, 0);
  c.reads.first.assign(n + 1, 0);
  c.readers.first.assign(buffer_count + 1, 0);

  // One pass over the edges (their bundles are the slow part of a Boost
  // graph to read) into packed arcs, ports checked; then count and place.
  // With in-edges at hand, predecessors and reads keep each vertex's operand
  // order (the in-edge order), which order-sensitive schedulers follow.
  constexpr compact_index control_arc = std::numeric_limits<compact_index>::max();
  struct arc {
    compact_index from, to, buffer;
  };
  std::vector<arc> arcs;
  arcs.reserve(detail::num_edges_hint(g));
  const auto visit = [&](const edge_t<G>& e) {
    const std::size_t i = index(source(e, g));
    const std::size_t j = index(target(e, g));
    compact_index b = control_arc;
    if (!traits::is_control(g, e)) {
      const std::size_t port = traits::port(g, e);
      const std::size_t outputs = c.buffers.num_outputs(i);
      if (port >= outputs) throw bad_port_error(i, j, port, outputs);
      b = static_cast<compact_index>(c.buffers.storage[c.buffers.id(i, port)]);
    }
    arcs.push_back({static_cast<compact_index>(i), static_cast<compact_index>(j), b});
  };
  if constexpr (bidirectional_dag<G>) {
    const auto in_edges_of = [&g](vertex_t<G> v) { return in_edges(v, g); };
    detail::for_each_vertex_fetching_edges(g, in_edges_of, [&](vertex_t<G> v) {
      for (const auto e : boost::make_iterator_range(in_edges(v, g))) visit(e);
    });
  } else {
    const auto out_edges_of = [&g](vertex_t<G> v) { return out_edges(v, g); };
    detail::for_each_vertex_fetching_edges(g, out_edges_of, [&](vertex_t<G> v) {
      for (const auto e : boost::make_iterator_range(out_edges(v, g))) visit(e);
    });
  }
  c.hazards = storage_hazards(g, c.buffers, index);
  for (const storage_hazard& h : c.hazards) {
    arcs.push_back({static_cast<compact_index>(h.before), static_cast<compact_index>(h.after), control_arc});
  }
  for (const arc& a : arcs) {
    ++c.successors.first[a.from + 1];
    ++c.predecessors.first[a.to + 1];
    if (a.buffer != control_arc) {
      ++c.reads.first[a.to + 1];
      ++c.readers.first[a.buffer + 1];
    }
  }
  for (auto* rows : {&c.successors.first, &c.predecessors.first, &c.reads.first, &c.readers.first}) {
    detail::counts_to_offsets(*rows);
  }
  c.successors.items.resize(c.successors.first.back());
  c.predecessors.items.resize(c.predecessors.first.back());
  c.reads.items.resize(c.reads.first.back());
  c.readers.items.resize(c.readers.first.back());
  // first[r + 1] is now where row r ends: fill rows from their ends, arcs in
  // reverse so each row keeps edge order. Each first[r + 1] ends at row r's
  // start; shifting the offsets down one restores them.
  for (auto a = arcs.rbegin(); a != arcs.rend(); ++a) {
    c.successors.items[--c.successors.first[a->from + 1]] = a->to;
    c.predecessors.items[--c.predecessors.first[a->to + 1]] = a->from;
    if (a->buffer != control_arc) {
      c.reads.items[--c.reads.first[a->to + 1]] = a->buffer;
      c.readers.items[--c.readers.first[a->buffer + 1]] = a->to;
    }
  }
  for (auto* rows : {&c.successors, &c.predecessors, &c.reads, &c.readers}) {
    const std::size_t total = rows->items.size();
    std::copy(rows->first.begin() + 1, rows->first.end(), rows->first.begin());
    rows->first.back() = total;
  }
  arcs = {};
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> seen(std::max(n, buffer_count), none);
  detail::drop_repeats(c.successors, seen);
  std::fill(seen.begin(), seen.end(), none);
  detail::drop_repeats(c.predecessors, seen);
  std::fill(seen.begin(), seen.end(), none);
  detail::drop_repeats(c.reads, seen);
  std::fill(seen.begin(), seen.end(), none);
  detail::drop_repeats(c.readers, seen);
  return c;
}

}  // namespace memopt
