#pragma once
// The graphs of the rewrite family. graph_facts is what the passes read of
// the caller's graph, once, by vertex index: names, op types, devices and
// flops (op_traits), outputs and persistence (tensor_traits), data inputs in
// operand order and control predecessors. rewritten_graph is what apply()
// builds: memopt's own bundles plus the op facts, so every family (schedules,
// liveness, simulation, arenas) runs on it as on any graph.
//
// Operand order: for a bidirectional graph, the order in_edges lists a
// vertex's data edges; otherwise the order of the sources' out_edges, by
// source index (a directed-only graph keeps no other record of it).

#include <memopt/detail/per_output.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/index_map.hpp>
#include <memopt/graph/tensor_traits.hpp>
#include <memopt/simulate/op_traits.hpp>

#include <boost/graph/adjacency_list.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>
#include <string>
#include <vector>

namespace memopt::rewrite {

inline constexpr std::size_t no_vertex = std::numeric_limits<std::size_t>::max();

/// A data input of a vertex: (producer index, port).
using operand = buffer_ref<std::size_t>;

struct graph_facts {
  std::vector<std::string> name;
  std::vector<std::string> op;
  std::vector<std::string> device;
  std::vector<double> flops;
  std::vector<bool> persistent;
  std::vector<std::uint64_t> scratch;               ///< by vertex: tensor_traits::scratch_bytes
  std::vector<std::vector<tensor_output>> outputs;  ///< bytes, live_out, shares (by index)
  std::vector<std::vector<operand>> operands;        ///< by vertex: data inputs, operand order
  std::vector<std::vector<std::size_t>> control;     ///< by vertex: control predecessors
  std::vector<std::vector<std::size_t>> consumers;   ///< by vertex: who reads it (data or control), each once, by index
  /// By vertex: reads only the shape and type of its data inputs (an op of
  /// default_shape_only_ops() when read_facts fills it; empty: none does). A
  /// copy of it needs none of their values, so it may read nothing.
  std::vector<bool> shape_only;
  [[nodiscard]] std::size_t size() const noexcept { return name.size(); }
};

/// Op types that read only the shape and type of their data input, never its
/// values, and that a runtime can run without it (ATen names: memopt.torch
/// makes such a copy from the traced shape): empty_like(x) makes the same
/// tensor whatever x holds. TF's ZerosLike and ONNX's EyeLike read only a
/// shape too, but their runtimes need the input, so they are not listed.
/// Random draws among them (rand_like, ...) are still unrepeatable
/// (remat_options::unrepeatable_ops).
[[nodiscard]] inline std::vector<std::string> default_shape_only_ops() {
  return {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like",
          "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full"};
}

/// Whether vertex v of f reads only the shapes of its data inputs (graph_facts::shape_only).
[[nodiscard]] inline bool reads_shape_only(const graph_facts& f, std::size_t v) {
  return v < f.shape_only.size() && f.shape_only[v];
}

/// The facts of g, vertex v as index(v). O(V + E log E).
template <sim::simulation_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] graph_facts read_facts(const G& g, Index index = {}) {
  using tensors = tensor_traits<G>;
  using ops = sim::op_traits<G>;
  require_index_map(g, index);
  const std::size_t n = num_vertices(g);
  graph_facts f;
  f.name.resize(n);
  f.op.resize(n);
  f.device.resize(n);
  f.flops.resize(n);
  f.persistent.resize(n);
  f.scratch.resize(n);
  f.outputs.resize(n);
  f.operands.resize(n);
  f.control.resize(n);
  f.consumers.resize(n);
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    const std::size_t i = index(v);
    f.name[i] = std::string(ops::name(g, v));
    if (f.name[i].empty()) f.name[i] = "v" + std::to_string(i);
    f.op[i] = std::string(ops::op_type(g, v));
    f.device[i] = std::string(ops::device(g, v));
    f.flops[i] = ops::flops(g, v);
    f.persistent[i] = tensors::is_persistent(g, v);
    f.scratch[i] = scratch_bytes_of<G>(g, v);
    for (std::size_t port = 0, k = tensors::num_outputs(g, v); port < k; ++port) {
      f.outputs[i].push_back({.bytes = tensors::output_bytes(g, v, port),
                              .live_out = tensors::is_live_out(g, v, port),
                              .shares = tensors::shares_storage_of(g, v, port)});
    }
  }
  const auto add = [&](std::size_t source, std::size_t target, const auto& e) {
    if (tensors::is_control(g, e)) {
      f.control[target].push_back(source);
    } else {
      f.operands[target].push_back({source, tensors::port(g, e)});
    }
    f.consumers[source].push_back(target);
  };
  if constexpr (bidirectional_dag<G>) {
    for (const auto v : boost::make_iterator_range(vertices(g))) {
      for (const auto e : boost::make_iterator_range(in_edges(v, g))) add(index(source(e, g)), index(v), e);
    }
  } else {
    std::vector<vertex_t<G>> by_index(n);
    for (const auto v : boost::make_iterator_range(vertices(g))) by_index[index(v)] = v;
    for (std::size_t i = 0; i < n; ++i) {
      for (const auto e : boost::make_iterator_range(out_edges(by_index[i], g))) add(i, index(target(e, g)), e);
    }
  }
  for (auto& readers : f.consumers) {
    std::ranges::sort(readers);
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
  }
  const auto shape_only_ops = default_shape_only_ops();
  f.shape_only.resize(n);
  for (std::size_t v = 0; v < n; ++v) {
    f.shape_only[v] = !f.operands[v].empty() && std::ranges::find(shape_only_ops, f.op[v]) != shape_only_ops.end();
  }
  return f;
}

namespace detail {

/// By vertex and port: the root (vertex, port) of the tensor's storage.
using storage_root_table = memopt::detail::per_output<operand>;

/// The storage roots of f's tensors. O(tensors): each alias chain is walked once.
inline storage_root_table storage_roots(const graph_facts& f) {
  storage_root_table root(memopt::detail::output_offsets(f.outputs), {no_vertex, 0});
  std::vector<operand> path;
  for (std::size_t v = 0; v < f.size(); ++v) {
    for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
      operand t{v, port};
      path.clear();
      // Up to a tensor resolved already or one that owns its storage (aliases do not loop in a valid graph).
      while (root[t.vertex][t.port].vertex == no_vertex && f.outputs[t.vertex][t.port].shares && path.size() <= f.size()) {
        path.push_back(t);
        t = f.outputs[t.vertex][t.port].shares->source;
      }
      const operand r = root[t.vertex][t.port].vertex == no_vertex ? t : root[t.vertex][t.port];
      root[t.vertex][t.port] = r;
      for (const operand p : path) root[p.vertex][p.port] = r;
    }
  }
  return root;
}

/// By vertex and port: the tensor's storage is overwritten in place by some op.
inline std::vector<std::vector<bool>> overwritten_storages(const graph_facts& f) {
  const auto root = storage_roots(f);
  std::set<std::pair<std::size_t, std::size_t>> written;  // roots of storages written in place
  for (std::size_t v = 0; v < f.size(); ++v) {
    for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
      const auto& shares = f.outputs[v][port].shares;
      if (shares && shares->in_place) written.emplace(root[v][port].vertex, root[v][port].port);
    }
  }
  std::vector<std::vector<bool>> overwritten(f.size());
  for (std::size_t v = 0; v < f.size(); ++v) {
    for (const operand r : root[v]) overwritten[v].push_back(written.contains({r.vertex, r.port}));
  }
  return overwritten;
}

/// A topological order of the facts' graph (data and control), smallest index first among the ready.
inline std::vector<std::size_t> topological_positions(const graph_facts& f) {
  const std::size_t n = f.size();
  std::vector<std::size_t> waiting(n, 0);
  for (std::size_t v = 0; v < n; ++v) waiting[v] = f.operands[v].size() + f.control[v].size();
  std::vector<std::vector<std::size_t>> successors(n);
  for (std::size_t v = 0; v < n; ++v) {
    for (const operand& o : f.operands[v]) successors[o.vertex].push_back(v);
    for (const std::size_t c : f.control[v]) successors[c].push_back(v);
  }
  std::set<std::size_t> ready;
  for (std::size_t v = 0; v < n; ++v) {
    if (waiting[v] == 0) ready.insert(v);
  }
  std::vector<std::size_t> position(n, n);
  std::size_t next = 0;
  while (!ready.empty()) {
    const std::size_t v = *ready.begin();
    ready.erase(ready.begin());
    position[v] = next++;
    for (const std::size_t s : successors[v]) {
      if (--waiting[s] == 0) ready.insert(s);
    }
  }
  return position;
}

/// Every vertex a node reads, data or control, each once.
inline std::vector<std::size_t> inputs_of(const graph_facts& f, std::size_t v) {
  std::vector<std::size_t> in;
  for (const operand& o : f.operands[v]) in.push_back(o.vertex);
  in.insert(in.end(), f.control[v].begin(), f.control[v].end());
  std::ranges::sort(in);
  in.erase(std::unique(in.begin(), in.end()), in.end());
  return in;
}

}  // namespace detail

/// A node of a rewritten graph: memopt's tensor bundle and the op facts.
struct rewritten_node : tensor_node {
  std::string name;
  std::string op;
  std::string device;
  double flops = 0;
  std::uint64_t host_bytes = 0;      ///< held in host memory (swap-out copies); its outputs count 0 on the device
  std::size_t origin = no_vertex;    ///< the original vertex it is, or no_vertex when added
  std::size_t added = no_vertex;     ///< its position in the plan's nodes, or no_vertex
  bool changed = false;              ///< an original vertex the plan made another op
  bool relaxed_allocation = false;   ///< its outputs need no host-pinned memory
};

/// Vertex i < n is original vertex i; then the plan's nodes in order.
/// Edges into each vertex: its data inputs in operand order, then its control
/// predecessors.
using rewritten_graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, rewritten_node, tensor_edge>;

}  // namespace memopt::rewrite
