#pragma once
// The rematerialisation floor: a peak no plan goes below, whatever it
// recomputes (with what remat_options lets copies remake).
//
// The floor is the largest, over the steps v of the graph, of the transient
// storages live at v in every plan that runs the graph's own vertices in a
// topological order of the graph, copies anywhere (as Checkmate's
// formulation does, and as every plan of rematerialize runs):
//   - the storages v reads and writes (a step's inputs and outputs are live
//     together);
//   - the storages holding a value no copy can remake (a source such as the
//     input batch, a random draw, a fed vertex, what the caller excludes),
//     made by an ancestor of v and read by a descendant of v: every order
//     runs the maker before v and the reader after it;
//   - the graph outputs (the loss, the gradients) made by an ancestor of v:
//     kept to the end.
// Views share their source's storage and count once. The floor names its
// step and the storages that make it, so a user sees why a budget is out of
// reach. It is found by branch and bound: an upper bound for every step from
// one topological order (kept storages fixed before the step and read after
// it there), then the steps by falling bound, each measured exactly from its
// ancestors and descendants, O(V + E + U) each for U kept storages, until no
// bound is above the floor found (on training graphs, a few steps).

#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/rewrite/remat_options.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace memopt::rewrite {

struct remat_floor {
  std::uint64_t bytes = 0;
  std::size_t vertex = no_vertex;  ///< the step where it is reached
  std::vector<operand> storages;   ///< the storages (by root tensor) live there, largest first
};

namespace detail {

/// The storages every plan keeps once made (see the header comment): who
/// fixes them (makes a value no copy remakes, or a graph output) and who
/// reads them.
struct kept_storages {
  std::vector<operand> root;                      ///< by id
  std::vector<std::uint64_t> bytes;               ///< by id
  std::vector<bool> to_the_end;                   ///< by id: holds a graph output
  std::vector<std::vector<std::size_t>> fixers;   ///< by id
  std::vector<std::vector<std::size_t>> readers;  ///< by id
  std::vector<std::vector<std::size_t>> id;       ///< by root tensor (vertex, port): its id, or no_vertex
};

inline kept_storages find_kept_storages(const graph_facts& f, const std::vector<std::vector<operand>>& root,
                                        const std::vector<bool>& recomputable) {
  kept_storages k;
  k.id.resize(f.size());
  for (std::size_t v = 0; v < f.size(); ++v) k.id[v].assign(f.outputs[v].size(), no_vertex);
  for (std::size_t v = 0; v < f.size(); ++v) {
    for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
      const operand r = root[v][port];
      const bool fixed = !recomputable[v] || f.outputs[v][port].live_out;
      if (!fixed || f.persistent[r.vertex] || f.outputs[r.vertex][r.port].bytes == 0) continue;
      std::size_t& s = k.id[r.vertex][r.port];
      if (s == no_vertex) {
        s = k.root.size();
        k.root.push_back(r);
        k.bytes.push_back(f.outputs[r.vertex][r.port].bytes);
        k.to_the_end.push_back(false);
        k.fixers.emplace_back();
        k.readers.emplace_back();
      }
      if (f.outputs[v][port].live_out) k.to_the_end[s] = true;
      k.fixers[s].push_back(v);
    }
  }
  for (std::size_t v = 0; v < f.size(); ++v) {
    for (const operand& o : f.operands[v]) {
      const operand r = root[o.vertex][o.port];
      if (const std::size_t s = k.id[r.vertex][r.port]; s != no_vertex) k.readers[s].push_back(v);
    }
  }
  return k;
}

/// The storages v reads or writes, by root, each once.
inline std::vector<operand> step_storages(const graph_facts& f, const std::vector<std::vector<operand>>& root,
                                          std::size_t v) {
  std::vector<operand> own;
  for (const operand& o : f.operands[v]) own.push_back(root[o.vertex][o.port]);
  for (std::size_t port = 0; port < f.outputs[v].size(); ++port) own.push_back(root[v][port]);
  std::ranges::sort(own, [](operand a, operand b) { return std::pair(a.vertex, a.port) < std::pair(b.vertex, b.port); });
  own.erase(std::unique(own.begin(), own.end()), own.end());
  std::erase_if(own, [&](operand r) { return f.persistent[r.vertex] || f.outputs[r.vertex][r.port].bytes == 0; });
  return own;
}

}  // namespace detail

/// The floor (see the header comment), with what `options` lets copies
/// remake. Throws bad_plan_error for a cyclic graph or a fed vertex that does
/// not exist.
[[nodiscard]] inline remat_floor rematerialisation_floor(const graph_facts& f, const remat_options& options = {}) {
  const std::size_t n = f.size();
  const auto root = detail::storage_roots(f);
  const auto kept = detail::find_kept_storages(f, root, detail::recomputable_vertices(f, options));
  const auto position = detail::topological_positions(f);
  std::vector<std::size_t> order(n);
  for (std::size_t v = 0; v < n; ++v) {
    if (position[v] == n) throw bad_plan_error({"rematerialisation_floor: the graph has a cycle through '" + f.name[v] + "'"});
    order[position[v]] = v;
  }
  const auto bytes_of = [&](operand r) { return f.outputs[r.vertex][r.port].bytes; };
  // An upper bound of each step's floor: a kept storage can be live across v
  // only if it is fixed before v and read after it in this order.
  std::vector<std::int64_t> delta(n + 1, 0);
  for (std::size_t s = 0; s < kept.root.size(); ++s) {
    std::size_t fixed = n, read = kept.to_the_end[s] ? n : 0;
    for (const std::size_t v : kept.fixers[s]) fixed = std::min(fixed, position[v]);
    for (const std::size_t v : kept.readers[s]) read = std::max(read, position[v]);
    if (fixed + 1 >= read) continue;
    delta[fixed + 1] += static_cast<std::int64_t>(kept.bytes[s]);
    delta[read] -= static_cast<std::int64_t>(kept.bytes[s]);
  }
  std::vector<std::pair<std::uint64_t, std::size_t>> bound(n);  // (bound, vertex)
  std::int64_t across = 0;
  for (std::size_t k = 0; k < n; ++k) {
    across += delta[k];
    std::uint64_t own = 0;
    for (const operand& r : detail::step_storages(f, root, order[k])) own += bytes_of(r);
    bound[k] = {own + static_cast<std::uint64_t>(across), order[k]};
  }
  std::ranges::sort(bound, [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  // Branch and bound: the steps by falling bound, each measured exactly (its
  // ancestors and descendants), until no bound left can beat the floor.
  remat_floor floor;
  std::vector<bool> ancestor(n), descendant(n), counted(kept.root.size());
  for (const auto& step : bound) {
    const std::size_t v = step.second;  // not a structured binding: the lambdas below capture it
    if (floor.vertex != no_vertex && step.first <= floor.bytes) break;
    ancestor.assign(n, false);
    descendant.assign(n, false);
    for (auto k = position[v]; k-- > 0;) {
      const std::size_t u = order[k];
      ancestor[u] = std::ranges::any_of(f.consumers[u], [&](std::size_t c) { return c == v || ancestor[c]; });
    }
    for (std::size_t k = position[v] + 1; k < n; ++k) {
      const std::size_t w = order[k];
      const auto in = detail::inputs_of(f, w);
      descendant[w] = std::ranges::any_of(in, [&](std::size_t u) { return u == v || descendant[u]; });
    }
    std::vector<operand> live = detail::step_storages(f, root, v);
    counted.assign(kept.root.size(), false);
    for (const operand& r : live) {
      if (const std::size_t s = kept.id[r.vertex][r.port]; s != no_vertex) counted[s] = true;
    }
    for (std::size_t s = 0; s < kept.root.size(); ++s) {
      if (counted[s]) continue;
      const bool fixed = std::ranges::any_of(kept.fixers[s], [&](std::size_t u) { return ancestor[u]; });
      const bool read = kept.to_the_end[s] || std::ranges::any_of(kept.readers[s], [&](std::size_t w) { return descendant[w]; });
      if (fixed && read) live.push_back(kept.root[s]);
    }
    std::uint64_t bytes = 0;
    for (const operand& r : live) bytes += bytes_of(r);
    if (floor.vertex == no_vertex || bytes > floor.bytes || (bytes == floor.bytes && v < floor.vertex)) {
      floor = {bytes, v, std::move(live)};
    }
  }
  std::ranges::stable_sort(floor.storages, std::greater<>(), bytes_of);
  return floor;
}

}  // namespace memopt::rewrite
