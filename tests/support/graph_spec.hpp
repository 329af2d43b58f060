#pragma once
// A graph described independently of any graph type, and builders for the
// graph types the tests run every algorithm on: vecS, listS (with an index
// map), bidirectionalS, and a hand-written non-Boost graph.

#include "hand_graph.hpp"

#include <memopt/graph.hpp>
#include <memopt/liveness.hpp>

#include <boost/graph/adjacency_list.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memopt::testing {

/// Output `port` lives in the storage of input tensor (node, node_port).
struct alias_spec {
  std::size_t port = 0;
  std::size_t node = 0;
  std::size_t node_port = 0;
  bool in_place = false;
};

/// Output `port` may take over the storage of input tensor (node, node_port)
/// where it dies (the in-place reuse rule, buffer_table::takes_over).
struct may_alias_spec {
  std::size_t port = 0;
  std::size_t node = 0;
  std::size_t node_port = 0;
};

struct node_spec {
  std::vector<std::uint64_t> outputs;                       ///< bytes per port
  std::vector<std::pair<std::size_t, std::size_t>> inputs;  ///< (producer, port)
  std::vector<std::size_t> control;                         ///< control predecessors
  bool persistent = false;
  std::vector<std::size_t> live_out;                        ///< ports that are graph outputs
  std::vector<alias_spec> aliases;                          ///< views and in-place results
  std::vector<may_alias_spec> may_aliases;                  ///< in-place candidates
  std::uint64_t scratch = 0;                                ///< bytes the op uses during its step only
};

/// Nodes are listed in a topological order; vertex i of every built graph is node i.
struct graph_spec {
  std::vector<node_spec> nodes;
};

using vec_graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, tensor_node,
                                        tensor_edge>;
using bidir_graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                          tensor_node, tensor_edge>;
using list_graph =
    boost::adjacency_list<boost::listS, boost::listS, boost::directedS,
                          boost::property<boost::vertex_index_t, std::size_t, tensor_node>,
                          tensor_edge>;

/// The index map an algorithm needs for G: identity, or list_graph's vertex_index.
template <class G>
auto index_map(const G& g) {
  if constexpr (indexed_dag<G>) {
    return identity_index{};
  } else {
    return from_property_map(get(boost::vertex_index, g));
  }
}

inline tensor_node bundle_of(const node_spec& spec) {
  tensor_node node;
  node.persistent = spec.persistent;
  node.scratch_bytes = spec.scratch;
  for (const auto bytes : spec.outputs) node.outputs.push_back({.bytes = bytes});
  for (const auto port : spec.live_out) node.outputs.at(port).live_out = true;
  for (const auto& a : spec.aliases) {
    node.outputs.at(a.port).shares = shared_storage<std::size_t>{{a.node, a.node_port}, a.in_place};
  }
  for (const auto& a : spec.may_aliases) node.outputs.at(a.port).alias = buffer_ref<std::size_t>{a.node, a.node_port};
  return node;
}

/// A graph built from a spec, with its vertices by spec index. Built in place
/// and never moved: moving a listS graph may copy it and void its descriptors.
template <class G>
struct built {
  G g;
  std::vector<vertex_t<G>> vertex;

  explicit built(const graph_spec& spec) {
    for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
      const auto& node = spec.nodes[i];
      if constexpr (std::is_same_v<G, hand_graph>) {
        vertex.push_back(g.add_vertex(node.outputs, node.persistent, node.live_out));
        if (node.scratch > 0) g.set_scratch(i, node.scratch);
        for (const auto& a : node.aliases) {
          g.share_storage(i, a.port, shared_storage<std::size_t>{{a.node, a.node_port}, a.in_place});
        }
      } else if constexpr (indexed_dag<G>) {
        vertex.push_back(add_vertex(bundle_of(node), g));
      } else {
        vertex.push_back(add_vertex(g));
        put(boost::vertex_index, g, vertex.back(), i);
        g[vertex.back()] = bundle_of(node);
      }
    }
    for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
      for (const auto& [producer, port] : spec.nodes[i].inputs) connect(producer, i, port, false);
      for (const auto producer : spec.nodes[i].control) connect(producer, i, 0, true);
    }
  }
  built(const built&) = delete;
  built& operator=(const built&) = delete;

  void connect(std::size_t from, std::size_t to, std::size_t port, bool control) {
    if constexpr (std::is_same_v<G, hand_graph>) {
      g.add_edge(from, to, port, control);
    } else {
      add_edge(vertex[from], vertex[to], tensor_edge{.port = port, .control = control}, g);
    }
  }
};

/// `auto [g, vertex] = build<G>(spec);` (the prvalue initialises the binding in place).
template <class G>
built<G> build(const graph_spec& spec) {
  return built<G>(spec);
}

/// The vertices of `order` (spec indices) in G.
template <class G>
std::vector<vertex_t<G>> to_vertices(const std::vector<vertex_t<G>>& vertex,
                                     const std::vector<std::size_t>& order) {
  std::vector<vertex_t<G>> result;
  for (const auto i : order) result.push_back(vertex.at(i));
  return result;
}

/// 0, 1, ..., n - 1: the spec's own order.
inline std::vector<std::size_t> identity_order(std::size_t n) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  return order;
}

/// liveness() of `order` (spec indices) on spec built as a G.
template <class G>
liveness_result liveness_of(const graph_spec& spec, const std::vector<std::size_t>& order) {
  const auto [g, vertex] = build<G>(spec);
  return liveness(g, to_vertices<G>(vertex, order), index_map(g));
}

}  // namespace memopt::testing
