#pragma once
// The graph concepts memopt's algorithms are written against.
//
// Letters used throughout memopt:
//   G        a graph type              g      a graph
//   vertex_t<G> a vertex descriptor    u, v   vertices
//   edge_t<G>   an edge descriptor     e      an edge
//   Index    a vertex index map        i, j   dense vertex indices in [0, n)
//   buffer_id   a dense buffer index   b      a buffer: one output (vertex, port)
//   t        a step of a schedule (position in the order)
//
// Graph access is Boost.Graph's own: graph_traits plus the free functions
// vertices, out_edges, source, target, num_vertices, found by ADL.

#include <boost/graph/graph_traits.hpp>
#include <boost/range/iterator_range.hpp>

#include <concepts>
#include <cstddef>
#include <type_traits>

namespace memopt {

template <class G>
using vertex_t = typename boost::graph_traits<G>::vertex_descriptor;
template <class G>
using edge_t = typename boost::graph_traits<G>::edge_descriptor;

/// A graph memopt can walk through Boost.Graph's free functions:
/// - directed (directed_category converts to boost::directed_tag)
/// - vertices(g), num_vertices(g), out_edges(v, g), source(e, g), target(e, g)
/// Acyclicity is checked at run time (cycle_error), not by the concept.
/// e.g. static_assert(dag<boost::adjacency_list<boost::listS, boost::listS, boost::directedS>>);
template <class G>
concept dag =
    std::convertible_to<typename boost::graph_traits<G>::directed_category,
                        boost::directed_tag> &&
    requires(const G& g, vertex_t<G> v, edge_t<G> e) {
      vertices(g);
      out_edges(v, g);
      { num_vertices(g) } -> std::convertible_to<std::size_t>;
      { source(e, g) } -> std::convertible_to<vertex_t<G>>;
      { target(e, g) } -> std::convertible_to<vertex_t<G>>;
    };

/// A dag whose vertices are their own dense index in [0, n) (vecS); other
/// graphs pass a vertex index map to each algorithm.
template <class G>
concept indexed_dag = dag<G> && std::integral<vertex_t<G>>;

/// A dag that also lists each vertex's in-edges (bidirectionalS).
template <class G>
concept bidirectional_dag =
    dag<G> &&
    std::convertible_to<typename boost::graph_traits<G>::traversal_category,
                        boost::bidirectional_graph_tag> &&
    requires(const G& g, vertex_t<G> v) { in_edges(v, g); };

/// A callable giving each vertex of G its dense index in [0, num_vertices(g)).
template <class Index, class G>
concept vertex_index_map = std::regular_invocable<const Index&, vertex_t<G>> &&
                           std::convertible_to<std::invoke_result_t<const Index&, vertex_t<G>>,
                                               std::size_t>;

/// The index map of an indexed_dag: each vertex is its own index.
struct identity_index {
  template <std::integral V>
  constexpr std::size_t operator()(V v) const noexcept {
    return static_cast<std::size_t>(v);
  }
};

}  // namespace memopt
