#pragma once
// The schedulers by name, as memopt-plan's --algo takes them:
//   memopt::schedule::by_name("xla")(g, limits, index) -> schedule_result<G>
// entries() lists names and descriptions for help texts; names() the names.
// An entry runs the same call a user would write (xla: xla_schedule(g, index)),
// so its result, method included, is that call's. The searching ones (exact,
// best) take their limits from search_limits, else their default_seconds
// (and best its default_work: the first of the two ends the search).

#include <memopt/registry.hpp>
#include <memopt/schedule/best_of.hpp>
#include <memopt/schedule/dfs.hpp>
#include <memopt/schedule/exact.hpp>
#include <memopt/schedule/inductor.hpp>
#include <memopt/schedule/list.hpp>
#include <memopt/schedule/result.hpp>

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memopt {

/// The graph's own order (vertices(g)) and its peak; not_topological_error
/// when it is not a topological order.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] schedule_result<G> program_schedule(const G& g, Index index = {}) {
  schedule_result<G> r{.method = "program", .order = program_order(g)};
  const auto live = liveness(g, r.order, index);
  r.peak_bytes = live.peak_bytes;
  r.persistent_bytes = live.persistent_bytes;
  return r;
}

}  // namespace memopt

namespace memopt::schedule {

enum class algorithm { program, list, least_live_after, dfs, post_order, xla, lpmf, bfs, dfs_size, exact, best };

struct entry {
  algorithm id;
  std::string_view name;
  std::string_view description;
  std::optional<double> default_seconds;  ///< set for the searching ones: their time limit by default
  std::optional<std::uint64_t> default_work;  ///< with default_seconds when neither limit is given: whichever comes first

  template <tensor_graph G, vertex_index_map<G> Index = identity_index>
  [[nodiscard]] schedule_result<G> operator()(const G& g, const search_limits& limits = {},
                                              Index index = {}) const {
    const auto search = [&] {
      return exact_options{.time_limit_seconds = limits.time_limit_or(*default_seconds),
                           .work_limit = limits.work_limit_or(default_work),
                           .stop = limits.stop,
                           .progress = limits.progress};
    };
    switch (id) {
      case algorithm::program: break;
      case algorithm::list: return list_schedule(g, bytes_freed_priority{}, {}, index);
      case algorithm::least_live_after: return list_schedule(g, least_live_after_priority{}, {}, index);
      case algorithm::dfs: return dfs_schedule(g, index);
      case algorithm::post_order: return post_order_schedule(g, index);
      case algorithm::xla: return xla_schedule(g, index);
      case algorithm::lpmf: return lpmf_schedule(g, index);
      case algorithm::bfs: return bfs_schedule(g, index);
      case algorithm::dfs_size: return dfs_size_schedule(g, index);
      case algorithm::exact:
      case algorithm::best: return exact_schedule(g, search(), index);
    }
    return program_schedule(g, index);
  }
};

inline constexpr std::array entries_table{
    entry{algorithm::program, "program", "the graph's own order (vertices(g)); refused when not topological", {}},
    entry{algorithm::list, "list", "XLA's list scheduler: most bytes freed minus defined, then most users", {}},
    entry{algorithm::least_live_after, "least-live-after",
          "list scheduler: least live memory after the step, then the smaller outputs", {}},
    entry{algorithm::dfs, "dfs", "XLA's DFS from the sinks, operands with more extra users and bytes first", {}},
    entry{algorithm::post_order, "post-order", "XLA's post-order of a DFS from every unread vertex", {}},
    entry{algorithm::xla, "xla", "XLA's default: the best of list, dfs and post-order", {}},
    entry{algorithm::lpmf, "lpmf", "Inductor's least peak memory first", {}},
    entry{algorithm::bfs, "bfs", "Inductor's BFS: predecessors that ran earliest first", {}},
    entry{algorithm::dfs_size, "dfs-size", "Inductor's DFS, smaller vertices first", {}},
    entry{algorithm::exact, "exact", "exact_schedule: the minimum peak, anytime, seeded by every heuristic", 60.0},
    entry{algorithm::best, "best", "exact_schedule within a short budget: the recommended scheduler", best_schedule_seconds,
          best_schedule_work},
};

/// Every scheduler, in the order help texts and reports list them.
[[nodiscard]] inline std::span<const entry> entries() { return entries_table; }

[[nodiscard]] inline std::vector<std::string> names() { return detail::names_of(entries()); }

/// The scheduler called `name`; unknown_algorithm_error listing the names otherwise.
[[nodiscard]] inline const entry& by_name(std::string_view name) {
  return detail::entry_named(entries(), "scheduler", name);
}

}  // namespace memopt::schedule
