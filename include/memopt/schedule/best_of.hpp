#pragma once
// best_of: runs several schedulers on one snapshot of the graph and keeps the
// order with the lowest peak (from liveness), reporting every candidate's
// peak and time. xla_schedule is XLA's default: best_of list, dfs, post-order.
//
// A scheduler is any callable taking a compact_graph and returning an order
// of dense vertex indices; the ones here also have a name(). The vertex index
// map comes last, as everywhere in memopt: best_of(g, schedulers..., index),
// or best_of(g, schedulers...) on a graph whose vertices are their own index.

#include <memopt/detail/trailing_index.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/registry.hpp>
#include <memopt/schedule/dfs.hpp>
#include <memopt/schedule/inductor.hpp>
#include <memopt/schedule/list.hpp>
#include <memopt/schedule/result.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memopt {

template <class S>
concept scheduler = requires(const S& s, const compact_graph& g) {
  { s(g) } -> std::convertible_to<std::vector<std::size_t>>;
};

template <schedule_priority Priority = bytes_freed_priority>
struct list_scheduler {
  Priority priority{};
  list_options options{};
  static constexpr std::string_view name() { return priority_name<Priority>(); }
  std::vector<std::size_t> operator()(const compact_graph& g) const { return list_order(g, priority, options); }
};

namespace detail {

/// A string usable as a template argument.
template <std::size_t N>
struct label {
  char text[N]{};
  constexpr label(const char (&s)[N]) { std::copy_n(s, N, text); }  // NOLINT: implicit by design
};

}  // namespace detail

/// A scheduler made of an order function and its name.
template <std::vector<std::size_t> (*Order)(const compact_graph&), detail::label Name>
struct named_scheduler {
  static constexpr std::string_view name() { return Name.text; }
  std::vector<std::size_t> operator()(const compact_graph& g) const { return Order(g); }
};

using dfs_scheduler = named_scheduler<dfs_order, "dfs">;
using post_order_scheduler = named_scheduler<post_order_order, "post-order">;
using lpmf_scheduler = named_scheduler<lpmf_order, "lpmf">;
using bfs_scheduler = named_scheduler<bfs_order, "bfs">;
using dfs_size_scheduler = named_scheduler<dfs_size_order, "dfs-size">;

/// One scheduler's outcome in best_of.
struct candidate_peak {
  std::string name;
  std::uint64_t peak_bytes = 0;
  double seconds = 0;  ///< the scheduler's own time, evaluation apart
};

/// method is candidates[chosen].name.
template <class G>
struct best_of_result : schedule_result<G> {
  std::size_t chosen = 0;                  ///< index into candidates (the first of equal peaks)
  std::vector<candidate_peak> candidates;  ///< in the order given
};

/// A given order under a name: the graph's own order, a framework's.
struct fixed_order {
  std::string label;
  std::vector<std::size_t> order;
  std::string_view name() const { return label; }
  std::vector<std::size_t> operator()(const compact_graph&) const { return order; }
};

namespace detail {

/// best_of on the snapshot c of a graph whose vertices by index are by_index.
template <class G, scheduler... S>
[[nodiscard]] best_of_result<G> best_of_snapshot(const compact_graph& c, const std::vector<vertex_t<G>>& by_index,
                                                 const S&... schedulers) {
  best_of_result<G> best;
  const auto run = [&](const auto& s) {
    const auto started = std::chrono::steady_clock::now();
    const std::vector<std::size_t> order = s(c);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    auto r = evaluate_order<G>(c, by_index, order);
    best.candidates.push_back({algorithm_name(s, "scheduler", best.candidates.size()), r.peak_bytes, seconds});
    if (best.candidates.size() == 1 || r.peak_bytes < best.peak_bytes) {
      static_cast<schedule_result<G>&>(best) = std::move(r);
      best.chosen = best.candidates.size() - 1;
      best.method = best.candidates.back().name;
    }
  };
  (run(schedulers), ...);
  return best;
}

/// The graph's own order (vertices(g)) as dense indices.
template <dag G, vertex_index_map<G> Index>
[[nodiscard]] std::vector<std::size_t> program_indices(const G& g, Index index) {
  std::vector<std::size_t> order;
  order.reserve(num_vertices(g));
  for (const auto v : boost::make_iterator_range(vertices(g))) order.push_back(index(v));
  return order;
}

/// Whether `order` (a permutation of c's vertices) runs every arc of c
/// forward, in-place orders included.
inline bool runs_forward(const compact_graph& c, const std::vector<std::size_t>& order) {
  std::vector<std::size_t> position(order.size());
  for (std::size_t t = 0; t < order.size(); ++t) position[order[t]] = t;
  for (std::size_t i = 0; i < c.num_vertices(); ++i) {
    for (const std::size_t j : c.successors[i]) {
      if (position[j] <= position[i]) return false;
    }
  }
  return true;
}

/// best_heuristic on the snapshot c; `program` is the graph's own order.
template <class G>
[[nodiscard]] best_of_result<G> best_heuristic_snapshot(const compact_graph& c,
                                                        const std::vector<vertex_t<G>>& by_index,
                                                        std::vector<std::size_t> program) {
  const auto heuristics = [&](const auto&... first) {
    return best_of_snapshot<G>(c, by_index, first..., list_scheduler<>{}, dfs_scheduler{}, post_order_scheduler{},
                               lpmf_scheduler{}, bfs_scheduler{}, dfs_size_scheduler{});
  };
  if (runs_forward(c, program)) return heuristics(fixed_order{"program", std::move(program)});
  return heuristics();
}

/// best_of's arguments after g: schedulers, then g's vertex index map (a
/// callable from vertex to index that is no scheduler).
template <class G, class... Args>
concept schedulers_then_index = sizeof...(Args) > 0 && vertex_index_map<last_t<Args...>, G> &&
                                !scheduler<last_t<Args...>> && all_but_last(scheduler<Args>...);

}  // namespace detail

/// The lowest-peak order among the schedulers' (the first one on ties), all
/// run and evaluated on one snapshot of g: best_of(g, schedulers..., index).
template <tensor_graph G, class... Args>
  requires detail::schedulers_then_index<G, Args...>
[[nodiscard]] best_of_result<G> best_of(const G& g, const Args&... args) {
  static_assert(sizeof...(Args) > 1, "best_of needs at least one scheduler");
  return detail::with_last_first(
      [&](const auto& index, const auto&... schedulers) {
        return detail::best_of_snapshot<G>(make_compact_graph(g, index), vertices_by_index(g, index), schedulers...);
      },
      args...);
}

/// best_of on a graph whose vertices are their own index: best_of(g, schedulers...).
template <tensor_graph G, scheduler... S>
  requires indexed_dag<G>
[[nodiscard]] best_of_result<G> best_of(const G& g, const S&... schedulers) {
  return best_of(g, schedulers..., identity_index{});
}

/// The graph's own order (vertices(g)) as dense indices, when it is a
/// topological order; nullopt otherwise.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::optional<fixed_order> program_scheduler(const G& g, Index index = {}) {
  if (!is_topological_order(g, program_order(g), index)) return std::nullopt;
  return fixed_order{"program", detail::program_indices(g, index)};
}

/// The best of every heuristic here (XLA's three, Inductor's three) and of the
/// graph's own order when it is topological (listed first), on one snapshot.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] best_of_result<G> best_heuristic(const G& g, Index index = {}) {
  return detail::best_heuristic_snapshot<G>(make_compact_graph(g, index), vertices_by_index(g, index),
                                            detail::program_indices(g, index));
}

/// XLA's default memory scheduler: the best of list, DFS and post-order.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] best_of_result<G> xla_schedule(const G& g, Index index = {}) {
  return best_of(g, list_scheduler<>{}, dfs_scheduler{}, post_order_scheduler{}, index);
}

}  // namespace memopt
