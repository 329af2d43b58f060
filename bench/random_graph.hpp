#pragma once
// Large random DAGs for benchmarks: vertex i's predecessors are drawn mostly
// from a window just before it (as in real networks, where a tensor is read
// soon after it is made), sometimes from anywhere before it (skip
// connections). Vertex order is a topological order. On request, some outputs
// are views or in-place results of one of their vertex's data inputs, as a
// third of a training graph's outputs are.

#include <memopt/graph/tensor_traits.hpp>

#include <boost/graph/adjacency_list.hpp>

#include <cstdint>
#include <random>
#include <vector>

namespace memopt::bench {

using graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, tensor_node,
                                    tensor_edge>;

struct random_graph_options {
  std::size_t vertices = 1'000'000;
  std::size_t edges = 3'000'000;
  std::size_t window = 64;
  double long_edge_probability = 0.05;
  double control_probability = 0.05;
  double alias_probability = 0;  ///< chance that output 0 aliases a data input (half in place)
  std::uint64_t seed = 1;
};

inline graph random_graph(const random_graph_options& o = {}) {
  std::mt19937_64 rng(o.seed);
  graph g(o.vertices);
  for (std::size_t v = 0; v < o.vertices; ++v) {
    const std::size_t ports = 1 + (rng() % 4 == 0 ? 1 : 0);
    for (std::size_t p = 0; p < ports; ++p) g[v].outputs.push_back({.bytes = 1024 + rng() % (1 << 20)});
    g[v].persistent = rng() % 20 == 0;
  }
  g[o.vertices - 1].outputs[0].live_out = true;
  std::bernoulli_distribution long_edge(o.long_edge_probability);
  std::bernoulli_distribution control(o.control_probability);
  for (std::size_t e = 0; e < o.edges; ++e) {
    const std::size_t to = 1 + rng() % (o.vertices - 1);
    const std::size_t back = long_edge(rng) ? 1 + rng() % to : 1 + rng() % std::min(to, o.window);
    const std::size_t from = to - back;
    add_edge(from, to, tensor_edge{.port = rng() % g[from].outputs.size(), .control = control(rng)}, g);
  }
  if (o.alias_probability > 0) {
    std::bernoulli_distribution aliases(o.alias_probability);
    std::vector<buffer_ref<std::size_t>> read(o.vertices, {o.vertices, 0});  // a data input of each vertex
    for (std::size_t v = 0; v < o.vertices; ++v) {
      for (const auto e : boost::make_iterator_range(out_edges(v, g))) {
        if (!g[e].control) read[target(e, g)] = {v, g[e].port};
      }
    }
    for (std::size_t v = 0; v < o.vertices; ++v) {
      if (read[v].vertex == o.vertices || !aliases(rng)) continue;
      g[v].outputs[0].shares = shared_storage<std::size_t>{read[v], rng() % 2 == 0};
      g[v].persistent = g[v].persistent && g[read[v].vertex].persistent;
    }
  }
  return g;
}

}  // namespace memopt::bench
