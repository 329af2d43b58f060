#pragma once
// Every entry point that takes a caller's vertex index map checks it once:
// require_index_map throws bad_index_error unless index maps the vertices of
// g one-to-one onto [0, num_vertices(g)), naming the first vertex at fault by
// its position in vertices(g). vertices_by_index is the inverse table,
// checked the same way. Both O(V).

#include <memopt/error.hpp>
#include <memopt/graph/concepts.hpp>

#include <cstddef>
#include <vector>

namespace memopt {

/// The vertices of g by dense index: vertices_by_index(g, index)[index(v)] == v.
/// Throws bad_index_error for an index map that is not one-to-one onto [0, n).
template <dag G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::vector<vertex_t<G>> vertices_by_index(const G& g, Index index = {}) {
  const std::size_t n = num_vertices(g);
  std::vector<vertex_t<G>> by_index(n);
  std::vector<std::size_t> position_of(n, n);  // n: no vertex has this index yet
  std::size_t position = 0;
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    const std::size_t i = index(v);
    if (i >= n) throw bad_index_error(index_fault::out_of_range, position, i, n);
    if (position_of[i] != n) throw bad_index_error(index_fault::repeated, position, i, n, position_of[i]);
    position_of[i] = position++;
    by_index[i] = v;
  }
  return by_index;
}

/// Throws bad_index_error unless index maps g's vertices one-to-one onto [0, n).
template <dag G, vertex_index_map<G> Index>
void require_index_map(const G& g, const Index& index) {
  (void)vertices_by_index(g, index);
}

}  // namespace memopt
