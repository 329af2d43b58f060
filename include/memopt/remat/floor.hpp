#pragma once
// The rematerialisation floor: a peak no plan goes below, whatever it
// recomputes (with what remat_options lets copies remake).
//
// The floor is the largest, over the steps v of the graph, of the transient
// storages live at v in every plan that runs the graph's own vertices in a
// topological order of the graph, copies anywhere (as Checkmate's
// formulation does, and as every plan of rematerialize runs):
//   - the storages v reads and writes (a step's inputs and outputs are live
//     together), and v's scratch;
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
#include <memopt/remat/options.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace memopt::remat {

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

inline kept_storages find_kept_storages(const graph_facts& f, const rewrite::detail::storage_root_table& root,
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
inline std::vector<operand> step_storages(const graph_facts& f, const rewrite::detail::storage_root_table& root,
                                          std::size_t v) {
  std::vector<operand> own;
  for (const operand& o : f.operands[v]) own.push_back(root[o.vertex][o.port]);
  for (std::size_t port = 0; port < f.outputs[v].size(); ++port) own.push_back(root[v][port]);
  std::ranges::sort(own, [](operand a, operand b) { return std::pair(a.vertex, a.port) < std::pair(b.vertex, b.port); });
  own.erase(std::unique(own.begin(), own.end()), own.end());
  std::erase_if(own, [&](operand r) { return f.persistent[r.vertex] || f.outputs[r.vertex][r.port].bytes == 0; });
  return own;
}

/// What a floor measures at a step: the storages live there in every plan
/// (see the header comment), and the step's ancestors and descendants.
class step_measure {
 public:
  /// Throws bad_plan_error for a cyclic graph or a fed vertex that does not exist.
  step_measure(const graph_facts& f, const remat_options& options)
      : f_(f),
        root_(rewrite::detail::storage_roots(f)),
        recomputable_(recomputable_vertices(f, options)),
        kept_(find_kept_storages(f, root_, recomputable_)),
        position_(rewrite::detail::topological_positions(f)),
        order_(f.size()),
        ancestor_(f.size()),
        descendant_(f.size()),
        counted_(kept_.root.size()) {
    for (std::size_t v = 0; v < f.size(); ++v) {
      if (position_[v] == f.size()) throw bad_plan_error({"rematerialisation floor: the graph has a cycle through '" + f.name[v] + "'"});
      order_[position_[v]] = v;
    }
  }

  [[nodiscard]] const rewrite::detail::storage_root_table& root() const noexcept { return root_; }
  [[nodiscard]] const std::vector<bool>& recomputable() const noexcept { return recomputable_; }
  [[nodiscard]] const kept_storages& kept() const noexcept { return kept_; }
  [[nodiscard]] const std::vector<std::size_t>& position() const noexcept { return position_; }
  [[nodiscard]] const std::vector<std::size_t>& order() const noexcept { return order_; }
  [[nodiscard]] bool ancestor(std::size_t u) const { return ancestor_[u]; }      ///< of the step last measured
  [[nodiscard]] bool descendant(std::size_t w) const { return descendant_[w]; }  ///< of the step last measured
  [[nodiscard]] std::uint64_t bytes_of(operand r) const { return f_.outputs[r.vertex][r.port].bytes; }

  /// The storages live at v in every plan (by root); marks v's ancestors and
  /// descendants. O(V + E + U) for U kept storages.
  [[nodiscard]] std::vector<operand> live_at(std::size_t v) {
    const std::size_t n = f_.size();
    ancestor_.assign(n, false);
    descendant_.assign(n, false);
    for (auto k = position_[v]; k-- > 0;) {
      const std::size_t u = order_[k];
      ancestor_[u] = std::ranges::any_of(f_.consumers[u], [&](std::size_t c) { return c == v || ancestor_[c]; });
    }
    for (std::size_t k = position_[v] + 1; k < n; ++k) {
      const std::size_t w = order_[k];
      const auto in = rewrite::detail::inputs_of(f_, w);
      descendant_[w] = std::ranges::any_of(in, [&](std::size_t u) { return u == v || descendant_[u]; });
    }
    std::vector<operand> live = step_storages(f_, root_, v);
    counted_.assign(kept_.root.size(), false);
    for (const operand& r : live) {
      if (const std::size_t s = kept_.id[r.vertex][r.port]; s != no_vertex) counted_[s] = true;
    }
    for (std::size_t s = 0; s < kept_.root.size(); ++s) {
      if (counted_[s]) continue;
      const bool fixed = std::ranges::any_of(kept_.fixers[s], [&](std::size_t u) { return ancestor_[u]; });
      const bool read = kept_.to_the_end[s] || std::ranges::any_of(kept_.readers[s], [&](std::size_t w) { return descendant_[w]; });
      if (fixed && read) live.push_back(kept_.root[s]);
    }
    return live;
  }

  /// By step, an upper bound of what live_at counts there: the kept storages
  /// fixed before the step and read after it in one topological order, and
  /// the step's own. O(V + E + U).
  [[nodiscard]] std::vector<std::uint64_t> upper_bounds() const {
    const std::size_t n = f_.size();
    std::vector<std::int64_t> delta(n + 1, 0);
    for (std::size_t s = 0; s < kept_.root.size(); ++s) {
      std::size_t fixed = n, read = kept_.to_the_end[s] ? n : 0;
      for (const std::size_t v : kept_.fixers[s]) fixed = std::min(fixed, position_[v]);
      for (const std::size_t v : kept_.readers[s]) read = std::max(read, position_[v]);
      if (fixed + 1 >= read) continue;
      delta[fixed + 1] += static_cast<std::int64_t>(kept_.bytes[s]);
      delta[read] -= static_cast<std::int64_t>(kept_.bytes[s]);
    }
    std::vector<std::uint64_t> bound(n);
    std::int64_t across = 0;
    for (std::size_t k = 0; k < n; ++k) {
      across += delta[k];
      std::uint64_t own = 0;
      for (const operand& r : step_storages(f_, root_, order_[k])) own += bytes_of(r);
      bound[order_[k]] = own + static_cast<std::uint64_t>(across);
    }
    return bound;
  }

 private:
  const graph_facts& f_;
  rewrite::detail::storage_root_table root_;
  std::vector<bool> recomputable_;
  kept_storages kept_;
  std::vector<std::size_t> position_;
  std::vector<std::size_t> order_;
  std::vector<bool> ancestor_;
  std::vector<bool> descendant_;
  std::vector<bool> counted_;
};

}  // namespace detail

/// The floor (see the header comment), with what `options` lets copies
/// remake. Throws bad_plan_error for a cyclic graph or a fed vertex that does
/// not exist.
[[nodiscard]] inline remat_floor rematerialisation_floor(const graph_facts& f, const remat_options& options = {}) {
  detail::step_measure measure(f, options);
  const auto upper = measure.upper_bounds();
  std::vector<std::pair<std::uint64_t, std::size_t>> bound(f.size());  // (bound, vertex)
  // v's scratch is live at v's step in every plan
  for (std::size_t v = 0; v < f.size(); ++v) bound[v] = {upper[v] + f.scratch[v], v};
  std::ranges::sort(bound, [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  // Branch and bound: the steps by falling bound, each measured exactly (its
  // ancestors and descendants), until no bound left can beat the floor.
  remat_floor floor;
  for (const auto& [upper_bound, v] : bound) {
    if (floor.vertex != no_vertex && upper_bound <= floor.bytes) break;
    std::vector<operand> live = measure.live_at(v);
    std::uint64_t bytes = f.scratch[v];
    for (const operand& r : live) bytes += measure.bytes_of(r);
    if (floor.vertex == no_vertex || bytes > floor.bytes || (bytes == floor.bytes && v < floor.vertex)) {
      floor = {bytes, v, std::move(live)};
    }
  }
  std::ranges::stable_sort(floor.storages, std::greater<>(), [&](operand r) { return measure.bytes_of(r); });
  return floor;
}

}  // namespace memopt::remat
