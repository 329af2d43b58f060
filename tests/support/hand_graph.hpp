#pragma once
// A graph type that is no Boost class: plain vectors, adapted to Boost.Graph
// through graph_traits and ADL free functions, with its own tensor_traits.
// It is the archetype of memopt::dag and tensor_graph: it offers exactly what
// they ask for (no out_degree, num_edges, in_edges or traversal category), so
// an algorithm that needs more does not compile on it (tests/graph/graph_test.cpp).

#include <memopt/graph/tensor_traits.hpp>

#include <boost/graph/graph_traits.hpp>
#include <boost/iterator/counting_iterator.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace memopt::testing {

struct hand_edge {
  std::size_t from = 0;
  std::size_t to = 0;
  std::size_t port = 0;
  bool control = false;
  friend bool operator==(const hand_edge&, const hand_edge&) = default;
};

class hand_graph {
 public:
  std::size_t add_vertex(std::vector<std::uint64_t> sizes, bool persistent,
                         const std::vector<std::size_t>& live_out_ports) {
    out_.emplace_back();
    sizes_.push_back(std::move(sizes));
    persistent_.push_back(persistent);
    live_out_.emplace_back(sizes_.back().size(), false);
    for (const auto port : live_out_ports) live_out_.back().at(port) = true;
    shares_.emplace_back(sizes_.back().size());
    return out_.size() - 1;
  }
  void share_storage(std::size_t v, std::size_t port, shared_storage<std::size_t> source) {
    shares_.at(v).at(port) = source;
  }
  void set_scratch(std::size_t v, std::uint64_t bytes) {
    scratch_.resize(out_.size(), 0);
    scratch_.at(v) = bytes;
  }
  void add_edge(std::size_t from, std::size_t to, std::size_t port, bool control) {
    out_.at(from).push_back({from, to, port, control});
  }

  std::vector<std::vector<hand_edge>> out_;
  std::vector<std::vector<std::uint64_t>> sizes_;
  std::vector<bool> persistent_;
  std::vector<std::vector<bool>> live_out_;
  std::vector<std::vector<std::optional<shared_storage<std::size_t>>>> shares_;
  std::vector<std::uint64_t> scratch_;  ///< by vertex, where set_scratch was called
};


inline std::pair<boost::counting_iterator<std::size_t>, boost::counting_iterator<std::size_t>>
vertices(const hand_graph& g) {
  return {boost::counting_iterator<std::size_t>(0),
          boost::counting_iterator<std::size_t>(g.out_.size())};
}
inline std::size_t num_vertices(const hand_graph& g) { return g.out_.size(); }
inline auto out_edges(std::size_t v, const hand_graph& g) {
  return std::make_pair(g.out_[v].begin(), g.out_[v].end());
}
inline std::size_t source(const hand_edge& e, const hand_graph&) { return e.from; }
inline std::size_t target(const hand_edge& e, const hand_graph&) { return e.to; }

}  // namespace memopt::testing

template <>
struct boost::graph_traits<memopt::testing::hand_graph> {
  using vertex_descriptor = std::size_t;
  using edge_descriptor = memopt::testing::hand_edge;
  using directed_category = boost::directed_tag;
  using vertex_iterator = boost::counting_iterator<std::size_t>;
  using out_edge_iterator = std::vector<memopt::testing::hand_edge>::const_iterator;
};

template <>
struct memopt::tensor_traits<memopt::testing::hand_graph> {
  using G = memopt::testing::hand_graph;
  static std::size_t num_outputs(const G& g, std::size_t v) { return g.sizes_[v].size(); }
  static std::uint64_t output_bytes(const G& g, std::size_t v, std::size_t port) {
    return g.sizes_[v][port];
  }
  static bool is_live_out(const G& g, std::size_t v, std::size_t port) { return g.live_out_[v][port]; }
  static std::optional<buffer_ref<std::size_t>> alias_of(const G&, std::size_t, std::size_t) {
    return std::nullopt;
  }
  static std::optional<shared_storage<std::size_t>> shares_storage_of(const G& g, std::size_t v,
                                                                      std::size_t port) {
    return g.shares_[v][port];
  }
  static bool is_persistent(const G& g, std::size_t v) { return g.persistent_[v]; }
  static std::uint64_t scratch_bytes(const G& g, std::size_t v) { return v < g.scratch_.size() ? g.scratch_[v] : 0; }
  static std::size_t port(const G&, const memopt::testing::hand_edge& e) { return e.port; }
  static bool is_control(const G&, const memopt::testing::hand_edge& e) { return e.control; }
};
