#pragma once
// Seeded random DAGs with multi-port nodes, unread ports, repeated reads,
// control edges, persistent nodes and graph outputs; random topological orders
// and random permutations; and a reference peak computed by brute force
// straight from the memory model's definition.

#include "graph_spec.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace memopt::testing {

struct random_dag_options {
  std::size_t min_nodes = 1;
  std::size_t max_nodes = 40;
  std::size_t max_outputs = 3;
  std::size_t max_inputs = 4;
  std::size_t max_control = 2;
  double persistent_probability = 0.1;
  double live_out_probability = 0.1;
  std::uint64_t max_bytes = 1000;
};

inline graph_spec random_dag(std::mt19937_64& rng, const random_dag_options& o = {}) {
  const auto pick = [&](std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
  };
  const auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  graph_spec spec;
  const std::size_t n = pick(o.min_nodes, o.max_nodes);
  for (std::size_t i = 0; i < n; ++i) {
    node_spec node;
    node.persistent = chance(o.persistent_probability);
    const std::size_t outputs = pick(0, o.max_outputs);
    for (std::size_t p = 0; p < outputs; ++p) {
      node.outputs.push_back(chance(0.1) ? 0 : std::uniform_int_distribution<std::uint64_t>(1, o.max_bytes)(rng));
      if (chance(o.live_out_probability)) node.live_out.push_back(p);
    }
    if (i > 0) {
      for (std::size_t k = pick(0, o.max_inputs); k > 0; --k) {
        const std::size_t producer = pick(0, i - 1);
        const auto ports = spec.nodes[producer].outputs.size();
        if (ports > 0) node.inputs.push_back({producer, pick(0, ports - 1)});
      }
      for (std::size_t k = pick(0, o.max_control); k > 0; --k) node.control.push_back(pick(0, i - 1));
    }
    spec.nodes.push_back(std::move(node));
  }
  return spec;
}

/// Predecessors of each node (data and control), with repeats.
inline std::vector<std::vector<std::size_t>> predecessors(const graph_spec& spec) {
  std::vector<std::vector<std::size_t>> preds(spec.nodes.size());
  for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
    for (const auto& in : spec.nodes[i].inputs) preds[i].push_back(in.first);
    for (const auto c : spec.nodes[i].control) preds[i].push_back(c);
  }
  return preds;
}

/// A uniformly chosen ready node at every step: a random topological order.
inline std::vector<std::size_t> random_topological_order(const graph_spec& spec, std::mt19937_64& rng) {
  const std::size_t n = spec.nodes.size();
  const auto preds = predecessors(spec);
  std::vector<std::vector<std::size_t>> succs(n);
  std::vector<std::size_t> waiting(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto p : preds[i]) {
      succs[p].push_back(i);
      ++waiting[i];
    }
  }
  std::vector<std::size_t> ready, order;
  for (std::size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const std::size_t k = std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng);
    const std::size_t v = ready[k];
    ready[k] = ready.back();
    ready.pop_back();
    order.push_back(v);
    for (const auto s : succs[v]) {
      if (--waiting[s] == 0) ready.push_back(s);
    }
  }
  return order;
}

/// True when every node comes after all its predecessors, checked pair by pair.
inline bool brute_force_is_topological(const graph_spec& spec, const std::vector<std::size_t>& order) {
  const std::size_t n = spec.nodes.size();
  if (order.size() != n) return false;
  std::vector<std::size_t> sorted = order;
  std::ranges::sort(sorted);
  for (std::size_t i = 0; i < n; ++i) {
    if (sorted[i] != i) return false;
  }
  const auto preds = predecessors(spec);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a; b < n; ++b) {
      for (const auto p : preds[order[a]]) {
        if (p == order[b]) return false;  // order[a] runs before (or is) its predecessor
      }
    }
  }
  return true;
}

/// The peak by definition: at each step, sum every transient buffer that has
/// been produced and is still to be read at or after this step (or is a graph
/// output, or is being produced now).
inline std::uint64_t brute_force_peak(const graph_spec& spec, const std::vector<std::size_t>& order) {
  const std::size_t n = spec.nodes.size();
  std::vector<std::size_t> step(n);
  for (std::size_t t = 0; t < n; ++t) step[order[t]] = t;
  std::uint64_t peak = 0;
  for (std::size_t t = 0; t < n; ++t) {
    std::uint64_t live = 0;
    for (std::size_t v = 0; v < n; ++v) {
      const auto& node = spec.nodes[v];
      if (node.persistent || step[v] > t) continue;
      for (std::size_t port = 0; port < node.outputs.size(); ++port) {
        bool needed = step[v] == t || std::ranges::count(node.live_out, port) > 0;
        for (std::size_t r = 0; r < n && !needed; ++r) {
          for (const auto& in : spec.nodes[r].inputs) {
            if (in.first == v && in.second == port && step[r] >= t) needed = true;
          }
        }
        if (needed) live += node.outputs[port];
      }
    }
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace memopt::testing
