#pragma once
// compact_graph: a read-only snapshot of a tensor graph in compressed sparse
// rows, by dense vertex index: distinct successors and predecessors (data and
// control edges alike), the distinct buffers each vertex reads and the distinct
// vertices reading each buffer. Algorithms that walk a graph many times
// (schedulers, sharing, simulation) take this snapshot once, in O(V + E).
// Rows keep edge order; for a bidirectional graph, predecessors and reads
// follow each vertex's in-edges (its operand order).
//
// Throws bad_port_error for a data edge reading a port its source lacks.
// Cycles are not checked here (see require_acyclic).

#include <memopt/error.hpp>
#include <memopt/graph/buffers.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/tensor_traits.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace memopt {

/// Rows of a sparse matrix: row r is items[first[r] .. first[r + 1]).
template <class T>
struct csr_rows {
  std::vector<std::size_t> first{0};
  std::vector<T> items;
  [[nodiscard]] std::span<const T> operator[](std::size_t r) const {
    return {items.data() + first[r], first[r + 1] - first[r]};
  }
  [[nodiscard]] std::size_t size(std::size_t r) const { return first[r + 1] - first[r]; }
};

struct compact_graph {
  buffer_table buffers;
  csr_rows<std::size_t> successors;    ///< by vertex: distinct successors
  csr_rows<std::size_t> predecessors;  ///< by vertex: distinct predecessors
  csr_rows<buffer_id> reads;           ///< by vertex: distinct buffers it reads
  csr_rows<std::size_t> readers;       ///< by buffer: distinct vertices reading it

  [[nodiscard]] std::size_t num_vertices() const noexcept { return buffers.num_vertices(); }
};

namespace detail {

/// Rows built from (row, item) pairs, each item kept once per row, in the
/// order first met. for_each(emit) must emit the same pairs each call.
template <class T, class ForEach>
csr_rows<T> distinct_rows(std::size_t rows, std::size_t item_bound, const ForEach& for_each) {
  csr_rows<T> r;
  r.first.assign(rows + 1, 0);
  for_each([&](std::size_t row, T) { ++r.first[row + 1]; });
  for (std::size_t k = 0; k < rows; ++k) r.first[k + 1] += r.first[k];
  std::vector<std::size_t> next(r.first.begin(), r.first.end() - 1);
  r.items.resize(r.first.back());
  for_each([&](std::size_t row, T item) { r.items[next[row]++] = item; });
  // Rows are now contiguous, so one stamp per item tells a repeat within a row.
  constexpr std::size_t never = static_cast<std::size_t>(-1);
  std::vector<std::size_t> seen(item_bound, never);
  std::size_t kept = 0;
  for (std::size_t row = 0; row < rows; ++row) {
    const std::size_t begin = r.first[row];
    const std::size_t end = r.first[row + 1];
    r.first[row] = kept;
    for (std::size_t k = begin; k < end; ++k) {
      const T item = r.items[k];
      if (seen[item] == row) continue;
      seen[item] = row;
      r.items[kept++] = item;
    }
  }
  r.first[rows] = kept;
  r.items.resize(kept);
  return r;
}

}  // namespace detail

/// The snapshot of g, vertex v numbered index(v).
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] compact_graph make_compact_graph(const G& g, Index index = {}) {
  using traits = tensor_traits<G>;
  compact_graph c;
  c.buffers = make_buffer_table(g, index);
  const std::size_t n = c.buffers.num_vertices();
  const std::size_t buffer_count = c.buffers.size();

  // Every edge once, its port checked: (source, target, buffer read or none).
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  struct arc {
    std::size_t from, to, buffer;
  };
  std::vector<arc> arcs;
  const auto add_arc = [&](const edge_t<G>& e) {
    const std::size_t i = index(source(e, g));
    const std::size_t j = index(target(e, g));
    std::size_t b = none;
    if (!traits::is_control(g, e)) {
      const std::size_t port = traits::port(g, e);
      const std::size_t outputs = c.buffers.num_outputs(i);
      if (port >= outputs) throw bad_port_error(i, j, port, outputs);
      b = c.buffers.id(i, port);
    }
    arcs.push_back({i, j, b});
  };
  // With in-edges at hand, predecessors and reads keep each vertex's operand
  // order (the in-edge order), which order-sensitive schedulers follow.
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    if constexpr (bidirectional_dag<G>) {
      for (const auto e : boost::make_iterator_range(in_edges(v, g))) add_arc(e);
    } else {
      for (const auto e : boost::make_iterator_range(out_edges(v, g))) add_arc(e);
    }
  }
  const auto each_arc = [&](auto&& f) {
    return [&arcs, f](auto emit) {
      for (const auto& a : arcs) f(a, emit);
    };
  };
  c.successors = detail::distinct_rows<std::size_t>(
      n, n, each_arc([](const arc& a, auto emit) { emit(a.from, a.to); }));
  c.predecessors = detail::distinct_rows<std::size_t>(
      n, n, each_arc([](const arc& a, auto emit) { emit(a.to, a.from); }));
  c.reads = detail::distinct_rows<buffer_id>(n, buffer_count, each_arc([](const arc& a, auto emit) {
    if (a.buffer != none) emit(a.to, a.buffer);
  }));
  c.readers = detail::distinct_rows<std::size_t>(buffer_count, n, each_arc([](const arc& a, auto emit) {
    if (a.buffer != none) emit(a.buffer, a.to);
  }));
  return c;
}

}  // namespace memopt
