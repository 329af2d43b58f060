#pragma once
// A training graph as the rematerialisation benchmarks use it: the graph, its
// facts, its program order and that order's peak, and its total flops; from
// examples/generate's generators (cnn-train, transformer-train) or a graph
// at hand.
#include <generate/generators.hpp>
#include <memopt/io/graph_file.hpp>
#include <memopt/liveness.hpp>
#include <memopt/rewrite.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace memopt::bench {

struct training_graph {
  io::file_graph graph;
  rewrite::graph_facts facts;
  std::vector<std::size_t> program;
  std::uint64_t peak = 0;
  double flops = 0;
};

inline training_graph make_training_graph(io::file_graph graph) {
  training_graph t{.graph = std::move(graph)};
  t.facts = rewrite::read_facts(t.graph);
  const auto program = program_order(t.graph);
  t.program.assign(program.begin(), program.end());
  t.peak = liveness(t.graph, program).peak_bytes;
  for (const double f : t.facts.flops) t.flops += f;
  return t;
}

/// A generated graph of `kind` with about `vertices` vertices (seed 1).
inline training_graph generated_training_graph(const std::string& kind, std::size_t vertices) {
  std::ostringstream text;
  graph_gen::write_graph(text, graph_gen::generate(kind, vertices, 1));
  return make_training_graph(io::parse_graph(text.str()));
}

/// The graph `make()` builds, built once per key for the whole run.
template <class Make>
const training_graph& cached(const std::string& key, Make make) {
  static std::map<std::string, training_graph> graphs;
  auto it = graphs.find(key);
  if (it == graphs.end()) it = graphs.emplace(key, make()).first;
  return it->second;
}

}  // namespace memopt::bench
