#pragma once
// Random training graphs for the rematerialisation tests and benchmarks: a
// random forward DAG with skip connections, a loss, and a backward node per
// forward node reading that node's inputs and the gradients of its readers;
// one output per vertex, no views, the last gradient the graph's output.

#include <memopt/io/graph_file.hpp>
#include <memopt/liveness.hpp>
#include <memopt/remat/floor.hpp>
#include <memopt/rewrite/graph.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace memopt::testing {

/// A random training graph: x, forward f1..fk (each reads one or two earlier
/// tensors), loss, then b_k..b_1 (b_i reads f_i's inputs and the gradient
/// from each reader of f_i, the loss's for f_k); the graph's output is b_1's.
inline memopt::io::file_graph training_graph(std::mt19937_64& rng, std::size_t k) {
  std::uniform_int_distribution<int> bytes(1, 8);
  std::uniform_int_distribution<int> flops(1, 20);
  std::vector<std::vector<std::size_t>> inputs(k + 1);  // forward i reads these (0 = x)
  for (std::size_t i = 1; i <= k; ++i) {
    inputs[i].push_back(i - 1);
    if (i >= 2 && std::bernoulli_distribution(0.4)(rng)) inputs[i].push_back(std::uniform_int_distribution<std::size_t>(0, i - 2)(rng));
  }
  const auto f = [](std::size_t i) { return i == 0 ? std::string("x") : std::string("f").append(std::to_string(i)); };
  std::string nodes = R"([{"name": "x", "op": "input", "outputs": [)" + std::to_string(bytes(rng)) + "]}";
  for (std::size_t i = 1; i <= k; ++i) {
    // Drawn one statement each: the operands of + are unsequenced, and every
    // compiler must build the same graphs.
    const int size = bytes(rng);
    const int cost = flops(rng);
    nodes += R"(, {"name": ")" + f(i) + R"(", "op": "layer", "outputs": [)" + std::to_string(size) +
             R"(], "flops": )" + std::to_string(cost) + R"(, "inputs": [)";
    for (std::size_t j = 0; j < inputs[i].size(); ++j) nodes += (j ? ", \"" : "\"") + f(inputs[i][j]) + ":0\"";
    nodes += "]}";
  }
  nodes += R"(, {"name": "loss", "op": "loss", "outputs": [1], "inputs": [")" + f(k) + R"(:0"]})";
  for (std::size_t i = k; i >= 1; --i) {
    std::string reads;
    for (const std::size_t j : inputs[i]) reads.append(", \"").append(f(j)).append(":0\"");
    if (i == k) reads += R"(, "loss:0")";
    for (std::size_t c = i + 1; c <= k; ++c) {
      if (std::ranges::find(inputs[c], i) != inputs[c].end()) reads += ", \"b" + std::to_string(c) + ":0\"";
    }
    nodes += R"(, {"name": "b)" + std::to_string(i) + R"(", "op": "grad", "outputs": [)" + std::to_string(bytes(rng)) +
             R"(], "inputs": [)" + reads.substr(2) + "]}";
  }
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "training", "nodes": )" + nodes +
                                 R"(], "outputs": ["b1:0"]})");
}

/// A training_graph(rng, k), its facts and program order, and a budget drawn
/// between its rematerialisation floor and the program order's peak: the
/// setting of the tests against the optimum.
struct budgeted_training {
  memopt::io::file_graph graph;
  memopt::rewrite::graph_facts facts;
  std::vector<std::size_t> program;
  std::uint64_t budget = 0;
};

inline budgeted_training budgeted_training_graph(std::mt19937_64& rng, std::size_t k) {
  budgeted_training t{.graph = training_graph(rng, k)};
  t.facts = memopt::rewrite::read_facts(t.graph);
  t.program.resize(t.facts.size());
  for (std::size_t v = 0; v < t.program.size(); ++v) t.program[v] = v;
  const auto peak = memopt::liveness(t.graph, std::span<const std::size_t>(t.program)).peak_bytes;
  const auto floor = memopt::remat::rematerialisation_floor(t.facts).bytes;
  t.budget = std::uniform_int_distribution<std::uint64_t>(floor, peak)(rng);
  return t;
}

}  // namespace memopt::testing
