#pragma once
// Orders and cycles: program_order, positions_of (step of each vertex),
// check_topological_order / is_topological_order (validators), find_cycle,
// require_acyclic.
// All O(V + E). Control edges order vertices exactly as data edges do, and on
// a tensor graph so do the orders in-place writes impose (graph/storage.hpp).

#include <memopt/error.hpp>
#include <memopt/graph/buffers.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/index_map.hpp>
#include <memopt/graph/storage.hpp>
#include <memopt/graph/tensor_traits.hpp>

#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace memopt {

/// The step of a vertex that an order does not run.
inline constexpr std::size_t unscheduled = std::numeric_limits<std::size_t>::max();

/// The vertices in the graph's own iteration order (for files: program order).
template <dag G>
[[nodiscard]] std::vector<vertex_t<G>> program_order(const G& g) {
  std::vector<vertex_t<G>> order;
  order.reserve(num_vertices(g));
  for (const auto v : boost::make_iterator_range(vertices(g))) order.push_back(v);
  return order;
}

/// One fault of an order, as check_topological_order reports it.
struct order_violation {
  order_fault fault;
  std::size_t vertex;     ///< index of the vertex at fault
  std::size_t other = 0;  ///< the predecessor, for before_predecessor
  friend bool operator==(const order_violation&, const order_violation&) = default;
};

namespace detail {

/// step[i] = position of the vertex with index i in `order`. Calls
/// on_fault(order_violation) for an unknown index, a duplicate (the first
/// position is kept) and, at the end, each vertex the order misses.
template <dag G, vertex_index_map<G> Index, class OnFault>
std::vector<std::size_t> positions_of(const G& g, std::span<const vertex_t<G>> order,
                                      const Index& index, OnFault&& on_fault) {
  const std::size_t n = num_vertices(g);
  std::vector<std::size_t> step(n, unscheduled);
  for (std::size_t t = 0; t < order.size(); ++t) {
    const std::size_t i = index(order[t]);
    if (i >= n) {
      on_fault(order_violation{order_fault::unknown_vertex, i});
    } else if (step[i] != unscheduled) {
      on_fault(order_violation{order_fault::duplicate, i});
    } else {
      step[i] = t;
    }
  }
  if (order.size() != n) {
    for (std::size_t i = 0; i < n; ++i) {
      if (step[i] == unscheduled) on_fault(order_violation{order_fault::missing, i});
    }
  }
  return step;
}

}  // namespace detail

/// Every way `order` fails to be a topological order of g (empty = valid):
/// unknown, duplicate and missing vertices, each edge u -> v with v run
/// before u (reported once per edge) and, on a tensor graph, each storage
/// hazard broken (write_too_early, read_too_early).
template <dag G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::vector<order_violation> check_topological_order(
    const G& g, std::span<const vertex_t<G>> order, Index index = {}) {
  require_index_map(g, index);
  std::vector<order_violation> violations;
  const auto report = [&](const order_violation& v) { violations.push_back(v); };
  const auto step = detail::positions_of(g, order, index, report);
  for (const auto u : boost::make_iterator_range(vertices(g))) {
    const std::size_t i = index(u);
    if (i >= step.size() || step[i] == unscheduled) continue;
    for (const auto e : boost::make_iterator_range(out_edges(u, g))) {
      const std::size_t j = index(target(e, g));
      if (j < step.size() && step[j] != unscheduled && step[j] <= step[i]) {
        report(order_violation{order_fault::before_predecessor, j, i});
      }
    }
  }
  if constexpr (tensor_graph<G>) {
    const auto runs = [&](std::size_t i) { return i < step.size() && step[i] != unscheduled; };
    for (const auto& h : storage_hazards(g, make_buffer_table(g, index), index)) {
      if (runs(h.before) && runs(h.after) && step[h.after] <= step[h.before]) {
        report(order_violation{h.fault(), h.after, h.before});
      }
    }
  }
  return violations;
}

/// True when `order` runs every vertex once, each after all its predecessors.
template <dag G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] bool is_topological_order(const G& g, std::span<const vertex_t<G>> order,
                                        Index index = {}) {
  return check_topological_order(g, order, index).empty();
}

/// A directed cycle of g, its vertices in edge order (the last has an edge to
/// the first; a self-loop gives one vertex), or nullopt when g is acyclic.
/// Iterative depth-first search: no recursion, whatever the depth.
template <dag G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::optional<std::vector<vertex_t<G>>> find_cycle(const G& g, Index index = {}) {
  enum class color : unsigned char { white, grey, black };
  using out_edge_iterator = typename boost::graph_traits<G>::out_edge_iterator;
  struct frame {
    vertex_t<G> v;
    out_edge_iterator next, end;
  };
  require_index_map(g, index);
  std::vector<color> colors(num_vertices(g), color::white);
  std::vector<frame> stack;
  for (const auto root : boost::make_iterator_range(vertices(g))) {
    if (colors[index(root)] != color::white) continue;
    colors[index(root)] = color::grey;
    auto [first, last] = out_edges(root, g);
    stack.push_back({root, first, last});
    while (!stack.empty()) {
      frame& top = stack.back();
      if (top.next == top.end) {
        colors[index(top.v)] = color::black;
        stack.pop_back();
        continue;
      }
      const auto w = target(*top.next++, g);
      const color c = colors[index(w)];
      if (c == color::grey) {
        std::vector<vertex_t<G>> cycle;
        std::size_t k = stack.size();
        while (stack[k - 1].v != w) --k;
        for (; k <= stack.size(); ++k) cycle.push_back(stack[k - 1].v);
        return cycle;
      }
      if (c == color::white) {
        colors[index(w)] = color::grey;
        auto [wf, wl] = out_edges(w, g);
        stack.push_back({w, wf, wl});
      }
    }
  }
  return std::nullopt;
}

/// Throws cycle_error (with the cycle's vertex indices) when g has a cycle.
template <dag G, vertex_index_map<G> Index = identity_index>
void require_acyclic(const G& g, Index index = {}) {
  if (auto cycle = find_cycle(g, index)) {
    std::vector<std::size_t> indices;
    indices.reserve(cycle->size());
    for (const auto v : *cycle) indices.push_back(index(v));
    throw cycle_error(std::move(indices));
  }
}

namespace detail {

/// Throws for an order fault found while walking an order: cycle_error when g
/// has a cycle (then no order could be right, and the cycle is the news), else
/// not_topological_error for `fault`. Looks for the cycle only once a fault is
/// found, so acyclic graphs with valid orders pay nothing.
template <dag G, vertex_index_map<G> Index>
[[noreturn]] void throw_order_fault(const G& g, const order_violation& fault, const Index& index) {
  require_acyclic(g, index);
  throw not_topological_error(fault.fault, fault.vertex, fault.other);
}

}  // namespace detail

}  // namespace memopt
