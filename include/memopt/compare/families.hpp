#pragma once
// The library's families as cells, each with the family's bound on the graph:
//   schedule_cells(g, name, options, own..., index)  every scheduler of the
//       registry (transient peak), then a user's own list-scheduler priorities
//       or schedulers beside them; bound: the static lower bound and every
//       built-in search's certified one. index, g's vertex index map, may be
//       left out on a graph whose vertices are their own index (vecS).
//   arena_cells(g, name, order, options)      every heap algorithm on the
//       lifetimes of `order` (arena bytes); bound: their max-live
//   share_cells(g, name, order, options)      every sharing pass for `order`
//       (bytes of the storages); reference: that order's peak
// options.algorithms keeps the named built-ins only; options.limits bounds the
// searches (a work limit alone: the same values on any machine). Throws what
// the algorithms throw (cycle_error, bad_port_error, ...; not_topological_error
// when `program` is kept and vertices(g) is not a topological order).

#include <memopt/compare/cell.hpp>
#include <memopt/detail/trailing_index.hpp>
#include <memopt/heap/graph.hpp>
#include <memopt/heap/registry.hpp>
#include <memopt/liveness.hpp>
#include <memopt/schedule/registry.hpp>
#include <memopt/share/registry.hpp>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memopt::compare {

struct comparison_options {
  search_limits limits;                 ///< for the searching algorithms (exact, best)
  std::vector<std::string> algorithms;  ///< keep only these built-ins (by registry name); empty: every one
};

/// A user's own entry in a schedule comparison: a list-scheduler priority
/// (its name() names the column) or a callable g -> schedule_result<G> (its method does).
template <class S, class G>
concept own_scheduler = schedule_priority<S> || requires(const S& s, const G& g) {
  { s(g) } -> std::convertible_to<schedule_result<G>>;
};

}  // namespace memopt::compare

namespace memopt::detail {

inline bool is_selected(const compare::comparison_options& options, std::string_view name) {
  return options.algorithms.empty() || std::ranges::find(options.algorithms, name) != options.algorithms.end();
}

inline std::vector<compare::cell>& with_bound(std::vector<compare::cell>& cells, std::uint64_t bound) {
  for (auto& c : cells) c.lower_bound = bound;
  return cells;
}

/// A user's priority through list_schedule, or a user's scheduler called.
template <class G, class S, class Index>
schedule_result<G> run_own_scheduler(const G& g, const S& s, const Index& index) {
  if constexpr (schedule_priority<S>) {
    return memopt::list_schedule(g, s, {}, index);
  } else {
    return s(g);
  }
}

/// schedule_cells's arguments after the options: own schedulers, then g's
/// vertex index map (a callable from vertex to index that is no own_scheduler).
template <class G, class... Args>
concept own_then_index = sizeof...(Args) > 0 && vertex_index_map<last_t<Args...>, G> &&
                         !compare::own_scheduler<last_t<Args...>, G> &&
                         all_but_last(compare::own_scheduler<Args, G>...);

}  // namespace memopt::detail

namespace memopt::compare {

/// Every scheduler of memopt::schedule's registry on g, then each of `own`:
/// schedule_cells(g, graph, options, own..., index).
template <tensor_graph G, class... Args>
  requires detail::own_then_index<G, Args...>
[[nodiscard]] std::vector<cell> schedule_cells(const G& g, const std::string& graph,
                                               const comparison_options& options, const Args&... args) {
  return detail::with_last_first(
      [&](const auto& index, const auto&... own) {
        std::vector<cell> cells;
        std::uint64_t bound = memopt::lower_bound(g, index);
        for (const auto& e : schedule::entries()) {
          if (!detail::is_selected(options, e.name)) continue;
          const auto [r, seconds] = timed([&] { return e(g, options.limits, index); });
          bound = std::max(bound, r.lower_bound_bytes);  // a search's certified bound
          cells.push_back({graph, "schedule", std::string(e.name), r.peak_bytes, 0, seconds});
        }
        [[maybe_unused]] const auto add_own = [&](const auto& s) {
          const auto [r, seconds] = timed([&] { return detail::run_own_scheduler(g, s, index); });
          cells.push_back({graph, "schedule", r.method, r.peak_bytes, 0, seconds});
        };
        (add_own(own), ...);
        return detail::with_bound(cells, bound);
      },
      args...);
}

/// schedule_cells on a graph whose vertices are their own index: schedule_cells(g, graph, options, own...).
template <tensor_graph G, own_scheduler<G>... Own>
  requires indexed_dag<G>
[[nodiscard]] std::vector<cell> schedule_cells(const G& g, const std::string& graph,
                                               const comparison_options& options = {}, const Own&... own) {
  return schedule_cells(g, graph, options, own..., identity_index{});
}

/// Every heap algorithm of memopt::heap's registry on the lifetimes of `order`.
template <tensor_graph G>
[[nodiscard]] std::vector<cell> arena_cells(const G& g, const std::string& graph, std::span<const vertex_t<G>> order,
                                            const comparison_options& options = {}) {
  const auto problem = memopt::make_arena_problem(g, order);
  std::vector<cell> cells;
  for (const auto& e : heap::entries()) {
    if (!detail::is_selected(options, e.name)) continue;
    const auto [r, seconds] = timed([&] { return e(problem.buffers, options.limits); });
    cells.push_back({graph, "arena", std::string(e.name), r.plan.arena_bytes, 0, seconds});
  }
  return detail::with_bound(cells, memopt::max_live_bytes(problem.buffers));
}

/// Every sharing pass of memopt::share's registry for `order`.
template <tensor_graph G>
[[nodiscard]] std::vector<cell> share_cells(const G& g, const std::string& graph, std::span<const vertex_t<G>> order,
                                            const comparison_options& options = {}) {
  std::vector<cell> cells;
  for (const auto& e : share::entries()) {
    if (!detail::is_selected(options, e.name)) continue;
    const auto [plan, seconds] = timed([&] { return e(g, order); });
    cells.push_back({graph, "share", std::string(e.name), plan.total_bytes, 0, seconds});
  }
  return detail::with_bound(cells, memopt::liveness(g, order).peak_bytes);
}

}  // namespace memopt::compare
