#pragma once
// Seeded random DAGs with multi-port nodes, unread ports, repeated reads,
// control edges, persistent nodes, graph outputs and (on request) views and
// in-place results; random topological orders and random permutations; and a
// reference peak computed by brute force straight from the memory model's
// definition, storages and in-place orders included.

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
  /// Chance that an output of a node with data inputs is a view of one of
  /// them (half of those in place); an alias has its source's size, as
  /// in-place results and reshapes do.
  double alias_probability = 0;
  /// Chance that an output of a node with data inputs, not a view, is an
  /// in-place candidate (a may-alias) of one of them; most get its size.
  double may_alias_probability = 0;
  /// Chance that a node has scratch bytes (1 to max_bytes) during its step.
  double scratch_probability = 0;
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
    // drawn only when asked, so that other options keep their graphs
    if (o.scratch_probability > 0 && chance(o.scratch_probability)) node.scratch = std::uniform_int_distribution<std::uint64_t>(1, o.max_bytes)(rng);
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
      for (std::size_t p = 0; p < node.outputs.size() && !node.inputs.empty(); ++p) {
        if (!chance(o.alias_probability)) continue;
        const auto [source, port] = node.inputs[pick(0, node.inputs.size() - 1)];
        // A storage is persistent by its root: only a weight's alias is a weight.
        if (node.persistent && !spec.nodes[source].persistent) continue;
        node.aliases.push_back({.port = p, .node = source, .node_port = port, .in_place = chance(0.5)});
        node.outputs[p] = spec.nodes[source].outputs[port];
      }
      for (std::size_t p = 0; p < node.outputs.size() && !node.inputs.empty(); ++p) {
        const bool view = std::ranges::any_of(node.aliases, [&](const alias_spec& a) { return a.port == p; });
        if (view || o.may_alias_probability == 0 || !chance(o.may_alias_probability)) continue;
        const auto [source, port] = node.inputs[pick(0, node.inputs.size() - 1)];
        node.may_aliases.push_back({.port = p, .node = source, .node_port = port});
        if (chance(0.8)) node.outputs[p] = spec.nodes[source].outputs[port];
      }
    }
    spec.nodes.push_back(std::move(node));
  }
  return spec;
}

using tensor = std::pair<std::size_t, std::size_t>;  ///< (node, port)

/// The tensor owning the storage of each output, by node and port: aliases
/// followed to a tensor that has its own.
inline std::vector<std::vector<tensor>> storage_roots(const graph_spec& spec) {
  std::vector<std::vector<tensor>> root(spec.nodes.size());
  for (std::size_t v = 0; v < spec.nodes.size(); ++v) {
    for (std::size_t p = 0; p < spec.nodes[v].outputs.size(); ++p) root[v].push_back({v, p});
    for (const auto& a : spec.nodes[v].aliases) root[v][a.port] = root[a.node][a.node_port];
  }
  return root;
}

/// Pairs (before, after) that in-place writes impose, every one of them: each
/// node reading a storage keeps its side of each node writing it, as in the
/// spec's order.
inline std::vector<std::pair<std::size_t, std::size_t>> brute_force_hazards(const graph_spec& spec) {
  const auto root = storage_roots(spec);
  const std::size_t n = spec.nodes.size();
  const auto touches = [&](std::size_t v, tensor storage) {
    for (const auto& [u, p] : spec.nodes[v].inputs) {
      if (root[u][p] == storage) return true;
    }
    return false;
  };
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t w = 0; w < n; ++w) {
    for (const auto& a : spec.nodes[w].aliases) {
      if (!a.in_place) continue;
      const tensor storage = root[a.node][a.node_port];
      for (std::size_t v = 0; v < n; ++v) {
        if (v != w && touches(v, storage)) pairs.push_back(v < w ? std::pair{v, w} : std::pair{w, v});
      }
    }
  }
  return pairs;
}

/// Predecessors of each node (data, control and in-place orders), with repeats.
inline std::vector<std::vector<std::size_t>> predecessors(const graph_spec& spec) {
  std::vector<std::vector<std::size_t>> preds(spec.nodes.size());
  for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
    for (const auto& in : spec.nodes[i].inputs) preds[i].push_back(in.first);
    for (const auto c : spec.nodes[i].control) preds[i].push_back(c);
  }
  for (const auto& [before, after] : brute_force_hazards(spec)) preds[after].push_back(before);
  return preds;
}

/// Whether storage `storage` is still needed once the nodes with
/// done(node) have run: one of its tensors is a graph output, or is read or
/// defined by a node not done.
template <class Done>
bool storage_needed(const graph_spec& spec, const std::vector<std::vector<tensor>>& root, tensor storage,
                    Done&& done) {
  for (std::size_t v = 0; v < spec.nodes.size(); ++v) {
    const auto& node = spec.nodes[v];
    for (std::size_t p = 0; p < node.outputs.size(); ++p) {
      if (root[v][p] != storage) continue;
      if (!done(v) || std::ranges::count(node.live_out, p) > 0) return true;
    }
    if (done(v)) continue;
    for (const auto& [u, p] : node.inputs) {
      if (root[u][p] == storage) return true;
    }
  }
  return false;
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

/// The peak by definition: at each step, sum every transient storage (by its
/// root's size) that has been produced and is still to be read or defined at
/// or after this step (or holds a graph output, or is being produced now),
/// and the scratch of the op of this step.
inline std::uint64_t brute_force_peak(const graph_spec& spec, const std::vector<std::size_t>& order) {
  const std::size_t n = spec.nodes.size();
  const auto root = storage_roots(spec);
  std::vector<std::size_t> step(n);
  for (std::size_t t = 0; t < n; ++t) step[order[t]] = t;
  std::uint64_t peak = 0;
  for (std::size_t t = 0; t < n; ++t) {
    std::uint64_t live = spec.nodes[order[t]].scratch;
    for (std::size_t v = 0; v < n; ++v) {
      const auto& node = spec.nodes[v];
      if (node.persistent || step[v] > t) continue;
      for (std::size_t port = 0; port < node.outputs.size(); ++port) {
        if (root[v][port] != tensor{v, port}) continue;
        const bool needed = step[v] == t || storage_needed(spec, root, {v, port}, [&](std::size_t u) {
                              return step[u] < t;
                            });
        if (needed) live += node.outputs[port];
      }
    }
    peak = std::max(peak, live);
  }
  return peak;
}

/// The peak under in-place reuse, by simulating the rule step by step: each
/// tensor gets a home storage when its op runs (a view its source's; an
/// in-place candidate that is no graph output its source's home when that
/// home is transient, made by a node with predecessors (not a graph input),
/// holds exactly its bytes, no graph output, no tensor read after this step
/// and no other output of this op; otherwise its own); then each step counts every
/// transient home made so far with a tensor made at this step, read at or
/// after it, or a graph output.
inline std::uint64_t brute_force_reuse_peak(const graph_spec& spec, const std::vector<std::size_t>& order) {
  const std::size_t n = spec.nodes.size();
  std::vector<std::size_t> step(n);
  for (std::size_t t = 0; t < n; ++t) step[order[t]] = t;
  std::vector<std::vector<tensor>> home(n);
  for (std::size_t v = 0; v < n; ++v) home[v].assign(spec.nodes[v].outputs.size(), {n, 0});  // not made yet
  const auto bytes_of = [&](tensor h) { return spec.nodes[h.first].outputs[h.second]; };
  const auto members_of = [&](tensor h, auto&& visit) {
    for (std::size_t v = 0; v < n; ++v) {
      for (std::size_t p = 0; p < home[v].size(); ++p) {
        if (home[v][p] == h) visit(v, p);
      }
    }
  };
  const auto read_from = [&](std::size_t u, std::size_t port, std::size_t t) {
    for (std::size_t w = 0; w < n; ++w) {
      if (step[w] >= t && std::ranges::count(spec.nodes[w].inputs, tensor{u, port}) > 0) return true;
    }
    return false;
  };
  for (std::size_t t = 0; t < n; ++t) {
    const std::size_t v = order[t];
    const auto& node = spec.nodes[v];
    for (std::size_t p = 0; p < node.outputs.size(); ++p) home[v][p] = {v, p};
    for (const auto& a : node.aliases) home[v][a.port] = home[a.node][a.node_port];
    for (const auto& a : node.may_aliases) {
      if (node.persistent || home[v][a.port] != tensor{v, a.port} ||
          std::ranges::count(node.live_out, a.port) > 0) {
        continue;
      }
      const tensor h = home[a.node][a.node_port];
      const auto& root = spec.nodes[h.first];
      const bool graph_input = root.inputs.empty() && root.control.empty();
      bool free = !root.persistent && !graph_input && bytes_of(h) == node.outputs[a.port];
      members_of(h, [&](std::size_t u, std::size_t port) {
        free = free && u != v && std::ranges::count(spec.nodes[u].live_out, port) == 0 && !read_from(u, port, t + 1);
      });
      if (free) home[v][a.port] = h;
    }
  }
  std::uint64_t peak = 0;
  for (std::size_t t = 0; t < n; ++t) {
    std::uint64_t live = spec.nodes[order[t]].scratch;
    for (std::size_t v = 0; v < n; ++v) {
      for (std::size_t p = 0; p < home[v].size(); ++p) {
        const tensor h{v, p};
        if (home[v][p] != h || spec.nodes[v].persistent || step[v] > t) continue;
        bool needed = false;
        members_of(h, [&](std::size_t u, std::size_t port) {
          needed = needed || step[u] == t || std::ranges::count(spec.nodes[u].live_out, port) > 0 ||
                   read_from(u, port, t);
        });
        if (needed) live += bytes_of(h);
      }
    }
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace memopt::testing
