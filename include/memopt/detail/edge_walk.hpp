#pragma once
// for_each_vertex_fetching_edges: vertices(g) in order, with the edges of the
// vertices a few places ahead asked of the memory early. Boost's
// adjacency_list keeps each vertex's edges in a vector of their own and each
// edge's bundle in a heap block of its own; a pass reading port and control
// edge after edge otherwise waits on two cache misses per vertex and one per
// edge (at 10^6 vertices, most of the liveness pass's time). Where edges are
// not adjacency_list's, this is a plain loop.

#include <memopt/graph/concepts.hpp>

#include <concepts>
#include <cstddef>

namespace memopt::detail {

inline void prefetch(const void* address) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(address);
#else
  (void)address;
#endif
}

/// Edges whose stored entry and property have addresses known without
/// reading them: adjacency_list's (an iterator over the vertex's edge vector,
/// a descriptor holding the property's address).
template <class EdgeIterator>
concept fetchable_edges = requires(const EdgeIterator& it) {
  { &*it.base() } -> std::convertible_to<const void*>;
  { (*it).get_property() } -> std::convertible_to<const void*>;
};

/// Calls visit(v) for each vertex in vertices(g) order; edges_of(v) is the
/// range of edges visit(v) reads (out_edges or in_edges).
template <class G, class EdgesOf, class Visit>
void for_each_vertex_fetching_edges(const G& g, EdgesOf&& edges_of, Visit&& visit) {
  const auto range = vertices(g);  // not a structured binding: clang 14's lambdas cannot capture one
  auto vertex = range.first;
  const auto end = range.second;
  using edge_iterator = decltype(edges_of(*vertex).first);
  if constexpr (fetchable_edges<edge_iterator>) {
    // Two steps, as each waits on the one before: the edge vector of the
    // vertex 2 * lead ahead, the properties of the one lead ahead.
    constexpr std::size_t lead = 4;  // 2 and 8 measured no better
    auto lists_ahead = vertex;
    auto properties_ahead = vertex;
    const auto fetch_list = [&] {
      if (lists_ahead == end) return;
      const auto [e, last] = edges_of(*lists_ahead++);
      if (e != last) prefetch(&*e.base());
    };
    const auto fetch_properties = [&] {
      if (properties_ahead == end) return;
      for (auto [e, last] = edges_of(*properties_ahead++); e != last; ++e) prefetch((*e).get_property());
    };
    for (std::size_t k = 0; k < 2 * lead; ++k) fetch_list();
    for (std::size_t k = 0; k < lead; ++k) fetch_properties();
    for (; vertex != end; ++vertex) {
      fetch_list();
      fetch_properties();
      visit(*vertex);
    }
  } else {
    for (; vertex != end; ++vertex) visit(*vertex);
  }
}

}  // namespace memopt::detail
