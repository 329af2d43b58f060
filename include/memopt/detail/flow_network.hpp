#pragma once
// flow_network: a directed network cut again and again with new capacities
// (the cost floor's cuts, the exact scheduler's cut bounds). Arcs come in
// pairs, an arc and its reverse, of capacity 0 until set. On the first cut
// after arcs were added the network is laid out in compressed sparse rows;
// each cut runs Boost.Graph's Boykov-Kolmogorov max-flow on that layout with
// capacities and residuals in flat arrays (an adjacency_list with edge
// properties allocates a block per edge, and a large share of a cut's time
// went to the allocator and to chasing those blocks).

#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/range/iterator_range.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memopt::detail {

class flow_network {
 public:
  using arc_id = std::size_t;

  explicit flow_network(std::size_t vertices = 0) : vertices_(vertices) {}

  std::size_t add_vertex() { return vertices_++; }
  [[nodiscard]] std::size_t num_arcs() const noexcept { return from_.size(); }

  /// An arc from -> to and its reverse, both of capacity 0; returns the arc's
  /// id (the reverse's is the next one).
  arc_id add_arc(std::size_t from, std::size_t to) {
    const arc_id a = from_.size();
    from_.insert(from_.end(), {from, to});
    to_.insert(to_.end(), {to, from});
    capacity_.insert(capacity_.end(), {0, 0});
    return a;
  }
  [[nodiscard]] std::size_t from(arc_id a) const { return from_[a]; }
  [[nodiscard]] std::size_t to(arc_id a) const { return to_[a]; }

  /// The capacity of arc a, to read or set before a cut.
  std::int64_t& capacity(arc_id a) { return capacity_[a]; }

  /// The maximum flow from source to sink under the capacities set: the
  /// minimum cut's capacity.
  std::int64_t max_flow(std::size_t source, std::size_t sink) {
    lay_out();
    const auto edge_index = boost::get(boost::edge_index, rows_);
    const auto vertex_index = boost::get(boost::vertex_index, rows_);
    return boost::boykov_kolmogorov_max_flow(
        rows_, boost::make_iterator_property_map(capacity_.begin(), boost::make_iterator_property_map(arc_at_.begin(), edge_index)),
        boost::make_iterator_property_map(residual_.begin(), edge_index),
        boost::make_iterator_property_map(reverse_.begin(), edge_index),
        boost::make_iterator_property_map(predecessor_.begin(), vertex_index),
        boost::make_iterator_property_map(color_.begin(), vertex_index),
        boost::make_iterator_property_map(distance_.begin(), vertex_index), vertex_index, source, sink);
  }

  /// After max_flow: the vertices the residual network reaches from the
  /// source (the source side of the minimum cut nearest the source, the same
  /// whichever maximum flow was found).
  [[nodiscard]] std::vector<bool> source_side(std::size_t source) const {
    std::vector<bool> reached(vertices_, false);
    std::vector<std::size_t> stack{source};
    reached[source] = true;
    while (!stack.empty()) {
      const std::size_t u = stack.back();
      stack.pop_back();
      for (const auto e : boost::make_iterator_range(boost::out_edges(u, rows_))) {
        const std::size_t w = boost::target(e, rows_);
        if (!reached[w] && residual_[boost::get(boost::edge_index, rows_, e)] > 0) {
          reached[w] = true;
          stack.push_back(w);
        }
      }
    }
    return reached;
  }

 private:
  using rows = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                                  boost::no_property, std::size_t, std::size_t>;
  using edge = boost::graph_traits<rows>::edge_descriptor;

  /// Lays the arcs out by source (each source's arcs in the order added);
  /// nothing to do when no arc or vertex was added since.
  void lay_out() {
    const std::size_t arcs = from_.size();
    if (arc_at_.size() == arcs && predecessor_.size() == vertices_) return;
    std::vector<std::size_t> next(vertices_ + 1, 0);  // by source: where its next arc goes
    for (const std::size_t u : from_) ++next[u + 1];
    for (std::size_t u = 0; u < vertices_; ++u) next[u + 1] += next[u];
    std::vector<std::size_t> slot(arcs);  // by arc id: its place in the rows
    for (arc_id a = 0; a < arcs; ++a) slot[a] = next[from_[a]]++;
    std::vector<std::pair<std::size_t, std::size_t>> sorted(arcs);
    arc_at_.resize(arcs);
    for (arc_id a = 0; a < arcs; ++a) {
      sorted[slot[a]] = {from_[a], to_[a]};
      arc_at_[slot[a]] = a;
    }
    rows_ = rows(boost::edges_are_sorted, sorted.begin(), sorted.end(), vertices_);
    reverse_.resize(arcs);
    for (arc_id a = 0; a < arcs; ++a) {
      const arc_id back = a % 2 == 0 ? a + 1 : a - 1;
      reverse_[slot[a]] = edge(to_[a], slot[back]);
    }
    residual_.assign(arcs, 0);
    predecessor_.assign(vertices_, edge());
    color_.assign(vertices_, boost::default_color_type{});
    distance_.assign(vertices_, 0);
  }

  std::size_t vertices_;
  std::vector<std::size_t> from_, to_;  ///< by arc id
  std::vector<std::int64_t> capacity_;  ///< by arc id
  rows rows_;
  // By the rows' edge index:
  std::vector<arc_id> arc_at_;
  std::vector<std::int64_t> residual_;
  std::vector<edge> reverse_;
  // By vertex, the max-flow's own:
  std::vector<edge> predecessor_;
  std::vector<boost::default_color_type> color_;
  std::vector<std::size_t> distance_;
};

}  // namespace memopt::detail
