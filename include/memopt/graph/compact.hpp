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
// bad_alias_error for an alias that is not one (graph/buffers.hpp, storage.hpp),
// std::length_error for a graph its 32-bit rows cannot hold (2^32 - 1 vertices,
// buffers, or entries in one set of rows). Cycles are not checked here (see
// require_acyclic).

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
#include <string>
#include <utility>
#include <vector>

namespace memopt {

/// Rows of a sparse matrix: row r is items[first[r] .. first[r + 1]), the
/// offsets of type Offset.
template <class T, class Offset = std::size_t>
struct csr_rows {
  std::vector<Offset> first{0};  ///< rows + 1 offsets
  std::vector<T> items;
  [[nodiscard]] std::span<const T> operator[](std::size_t r) const {
    return {items.data() + first[r], static_cast<std::size_t>(first[r + 1] - first[r])};
  }
  [[nodiscard]] std::size_t size(std::size_t r) const { return first[r + 1] - first[r]; }
};

/// A vertex or buffer number in compact rows: 32 bits halve the snapshot of a
/// large graph (make_compact_graph refuses graphs that do not fit).
using compact_index = std::uint32_t;

/// Rows of compact numbers, offsets in 32 bits too (a snapshot's, a task
/// graph's): their builders refuse more than 2^32 - 1 entries.
using compact_rows = csr_rows<compact_index, compact_index>;

struct compact_graph {
  buffer_table buffers;
  compact_rows successors;              ///< by vertex: distinct successors
  compact_rows predecessors;            ///< by vertex: distinct predecessors
  compact_rows reads;                   ///< by vertex: distinct buffers it reads
  compact_rows readers;                 ///< by buffer: distinct vertices reading it
  std::vector<storage_hazard> hazards;  ///< in-place orders, also among the successors

  [[nodiscard]] std::size_t num_vertices() const noexcept { return buffers.num_vertices(); }
};

namespace detail {

/// Throws std::length_error when rows of `entries` items overflow Offset.
template <class Offset>
void require_offsets(std::size_t entries) {
  if (entries > std::numeric_limits<Offset>::max()) {
    throw std::length_error("memopt: " + std::to_string(entries) + " entries overflow rows with " +
                            std::to_string(8 * sizeof(Offset)) + "-bit offsets");
  }
}

/// Rows from the (row, item) entries for_each_entry(emit) hands to emit, each
/// row's items in the order handed. for_each_entry runs twice (a count, then
/// the placing) and must hand the same entries both times. O(rows + entries).
/// Throws std::length_error for more entries than Offset holds.
template <class T, class Offset = std::size_t, class ForEachEntry>
[[nodiscard]] csr_rows<T, Offset> gather_rows(std::size_t rows, ForEachEntry&& for_each_entry) {
  csr_rows<T, Offset> gathered;
  // Counts land two places up, so that the sums leave first[r + 1] at row r's
  // start; placing moves it to row r's end, which is row r + 1's start.
  gathered.first.assign(rows + 2, 0);
  std::size_t entries = 0;
  for_each_entry([&](std::size_t row, const T&) {
    ++gathered.first[row + 2];
    ++entries;
  });
  require_offsets<Offset>(entries);
  for (std::size_t r = 2; r < gathered.first.size(); ++r) gathered.first[r] += gathered.first[r - 1];
  gathered.items.resize(gathered.first.back());
  for_each_entry([&](std::size_t row, const T& item) { gathered.items[gathered.first[row + 1]++] = item; });
  gathered.first.pop_back();
  return gathered;
}

/// Rows from (row, item) entries, each row's items in the order given. O(rows + entries).
template <class T>
[[nodiscard]] csr_rows<T> group_rows(std::size_t rows, std::span<const std::pair<std::size_t, T>> entries) {
  return gather_rows<T>(rows, [&](auto&& emit) {
    for (const auto& [row, item] : entries) emit(row, item);
  });
}

/// Drops repeated items within each row, keeping first occurrences in order.
/// `seen` holds one stamp per possible item, none equal to a row number yet.
inline void drop_repeats(compact_rows& rows, std::vector<compact_index>& seen) {
  compact_index kept = 0;  // no more than the rows held
  const std::size_t count = rows.first.size() - 1;
  for (std::size_t row = 0; row < count; ++row) {
    const std::size_t begin = rows.first[row];
    const std::size_t end = rows.first[row + 1];
    rows.first[row] = kept;
    for (std::size_t k = begin; k < end; ++k) {
      const compact_index item = rows.items[k];
      if (seen[item] == row) continue;
      seen[item] = static_cast<compact_index>(row);
      rows.items[kept++] = item;
    }
  }
  rows.first[count] = kept;
  rows.items.resize(kept);
}

/// Row r of the rows `walked` (of the r-th vertex walked) as row walk[r]; the
/// rows themselves when the walk went in index order.
[[nodiscard]] inline compact_rows by_index(compact_rows&& walked, std::span<const compact_index> walk) {
  bool in_order = true;
  for (std::size_t r = 0; r < walk.size() && in_order; ++r) in_order = walk[r] == r;
  if (in_order) return std::move(walked);
  return gather_rows<compact_index, compact_index>(walk.size(), [&](auto&& emit) {
    for (std::size_t r = 0; r < walk.size(); ++r) {
      for (const compact_index item : walked[r]) emit(walk[r], item);
    }
  });
}

/// The transpose of the rows `walked` (row r by vertex walk[r]) over `columns`
/// rows, each row in walk order.
[[nodiscard]] inline compact_rows transposed(const compact_rows& walked, std::span<const compact_index> walk,
                                             std::size_t columns) {
  return gather_rows<compact_index, compact_index>(columns, [&](auto&& emit) {
    for (std::size_t r = 0; r < walk.size(); ++r) {
      for (const compact_index item : walked[r]) emit(item, walk[r]);
    }
  });
}

/// Each row of `rows` followed by the items of the same row of `extra` that it
/// lacks, in their order. `seen` as for drop_repeats. O(rows + items).
inline void append_missing(compact_rows& rows, const compact_rows& extra, std::vector<compact_index>& seen) {
  require_offsets<compact_index>(rows.items.size() + extra.items.size());
  compact_rows merged;
  merged.first.reserve(rows.first.size());
  merged.items.reserve(rows.items.size() + extra.items.size());
  for (std::size_t r = 0; r + 1 < rows.first.size(); ++r) {
    const auto row = static_cast<compact_index>(r);
    for (const compact_index item : rows[r]) {
      seen[item] = row;
      merged.items.push_back(item);
    }
    for (const compact_index item : extra[r]) {
      if (seen[item] == row) continue;
      seen[item] = row;
      merged.items.push_back(item);
    }
    merged.first.push_back(static_cast<compact_index>(merged.items.size()));
  }
  rows = std::move(merged);
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

  // One pass over the edges (their bundles are the slow part of a Boost graph
  // to read), vertex by vertex, ports checked. The rows of the vertex walked
  // are made as its edges come, repeats dropped by stamps: its successors, or
  // with in-edges at hand its predecessors and reads (in operand order, which
  // order-sensitive schedulers follow). The other rows are their transposes,
  // or for out-edges the reads grouped twice.
  constexpr bool by_target = bidirectional_dag<G>;
  constexpr compact_index unseen = std::numeric_limits<compact_index>::max();
  std::vector<compact_index> vertex_seen(n, unseen), buffer_seen(buffer_count, unseen);
  std::vector<compact_index> walk;  // walk[r]: the index of the r-th vertex walked
  walk.reserve(n);
  compact_rows neighbours, reads;  // by walk position
  neighbours.first.reserve(n + 1);
  neighbours.items.reserve(detail::num_edges_hint(g));
  struct read_arc {
    compact_index reader, storage;
  };
  std::vector<read_arc> read_arcs;  // out-edges' data arcs, in walk order
  if constexpr (!by_target) read_arcs.reserve(neighbours.items.capacity());
  // Without views a storage is one vertex's output, so the out-edges of one
  // vertex alone can repeat a read arc: a repeat is looked for among the
  // vertex's arcs when its target repeats, and none is left to drop after.
  const bool views = c.buffers.aliased > 0;
  const auto visit = [&](vertex_t<G> v, const auto& edges) {
    const auto at = static_cast<compact_index>(index(v));
    walk.push_back(at);
    const std::size_t first_arc = read_arcs.size();
    for (const auto e : boost::make_iterator_range(edges)) {
      const std::size_t i = index(source(e, g));
      const std::size_t j = index(target(e, g));
      const auto other = static_cast<compact_index>(by_target ? i : j);
      const bool repeated = vertex_seen[other] == at;
      if (!repeated) {
        vertex_seen[other] = at;
        neighbours.items.push_back(other);
      }
      if (traits::is_control(g, e)) continue;
      const std::size_t port = traits::port(g, e);
      const std::size_t outputs = c.buffers.num_outputs(i);
      if (port >= outputs) throw bad_port_error(i, j, port, outputs);
      const auto storage = static_cast<compact_index>(c.buffers.storage[c.buffers.id(i, port)]);
      if constexpr (by_target) {
        if (buffer_seen[storage] != at) {
          buffer_seen[storage] = at;
          reads.items.push_back(storage);
        }
      } else {
        const read_arc arc{static_cast<compact_index>(j), storage};
        const auto same = [&](const read_arc& a) { return a.reader == arc.reader && a.storage == arc.storage; };
        const auto visited = std::span(read_arcs).subspan(first_arc);
        if (!views && repeated && std::ranges::any_of(visited, same)) continue;
        read_arcs.push_back(arc);
      }
    }
    neighbours.first.push_back(static_cast<compact_index>(neighbours.items.size()));
    if constexpr (by_target) reads.first.push_back(static_cast<compact_index>(reads.items.size()));
  };
  if constexpr (by_target) {
    const auto in_edges_of = [&g](vertex_t<G> v) { return in_edges(v, g); };
    detail::for_each_vertex_fetching_edges(g, in_edges_of, [&](vertex_t<G> v) { visit(v, in_edges(v, g)); });
    detail::require_offsets<compact_index>(std::max(neighbours.items.size(), reads.items.size()));
    c.successors = detail::transposed(neighbours, walk, n);
    c.predecessors = detail::by_index(std::move(neighbours), walk);
    c.readers = detail::transposed(reads, walk, buffer_count);
    c.reads = detail::by_index(std::move(reads), walk);
  } else {
    const auto out_edges_of = [&g](vertex_t<G> v) { return out_edges(v, g); };
    detail::for_each_vertex_fetching_edges(g, out_edges_of, [&](vertex_t<G> v) { visit(v, out_edges(v, g)); });
    detail::require_offsets<compact_index>(neighbours.items.size());
    c.predecessors = detail::transposed(neighbours, walk, n);
    c.successors = detail::by_index(std::move(neighbours), walk);
    c.reads = detail::gather_rows<compact_index, compact_index>(n, [&](auto&& emit) {
      for (const read_arc& a : read_arcs) emit(a.reader, a.storage);
    });
    c.readers = detail::gather_rows<compact_index, compact_index>(buffer_count, [&](auto&& emit) {
      for (const read_arc& a : read_arcs) emit(a.storage, a.reader);
    });
    read_arcs = {};
    if (views) {
      detail::drop_repeats(c.reads, buffer_seen);  // unstamped: the walk of out-edges stamps vertices only
      std::ranges::fill(vertex_seen, unseen);
      detail::drop_repeats(c.readers, vertex_seen);
    }
  }

  // In-place orders follow the edges in both rows, where they add an arc.
  c.hazards = storage_hazards(g, c.buffers, index);
  if (!c.hazards.empty()) {
    const auto hazard_rows = [&](bool by_before) {
      return detail::gather_rows<compact_index, compact_index>(n, [&](auto&& emit) {
        for (const storage_hazard& h : c.hazards) {
          emit(by_before ? h.before : h.after, static_cast<compact_index>(by_before ? h.after : h.before));
        }
      });
    };
    std::ranges::fill(vertex_seen, unseen);
    detail::append_missing(c.successors, hazard_rows(true), vertex_seen);
    std::ranges::fill(vertex_seen, unseen);
    detail::append_missing(c.predecessors, hazard_rows(false), vertex_seen);
  }
  return c;
}

}  // namespace memopt
