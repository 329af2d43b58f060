#pragma once
// The heap algorithms by name, as memopt-plan arena's --algo takes them:
//   memopt::heap::by_name("best-fit")(buffers, limits, capacity) -> heap_result
// entries() lists names and descriptions for help texts; names() the names.
// Every entry answers as exact_fit does: the plan, whether it fits the
// capacity, whether it is proved optimal; a heuristic proves optimality only
// by meeting max-live, and a misfit only when max-live exceeds the capacity
// (best also by its search's refutations).

#include <memopt/heap/algorithm.hpp>
#include <memopt/heap/choose_best.hpp>
#include <memopt/heap/exact.hpp>
#include <memopt/heap/global_fit.hpp>
#include <memopt/heap/online_fit.hpp>
#include <memopt/registry.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memopt {

/// What a heap registry entry returns; `method` is the entry's name, but for
/// best, who found the plan (a heuristic, "exact-windows" or "exact").
struct heap_result : exact_result {};

}  // namespace memopt

namespace memopt::heap {

enum class algorithm { first_fit, best_fit, xla_size, xla_area, greedy_size, greedy_breadth, best, exact };

struct entry {
  algorithm id;
  std::string_view name;
  std::string_view description;
  std::optional<double> default_seconds;  ///< set for exact: its time limit by default

  [[nodiscard]] heap_result operator()(std::span<const heap_buffer> buffers, const search_limits& limits = {},
                                       std::optional<std::uint64_t> capacity = {}) const {
    heap_result r;
    r.method = name;
    switch (id) {
      case algorithm::first_fit: r.plan = plan_heap(buffers, first_fit{}); break;
      case algorithm::best_fit: r.plan = plan_heap(buffers, best_fit{}); break;
      case algorithm::xla_size: r.plan = plan_heap(buffers, xla_size_fit{}); break;
      case algorithm::xla_area: r.plan = plan_heap(buffers, xla_area_fit{}); break;
      case algorithm::greedy_size: r.plan = plan_heap(buffers, greedy_by_size{}); break;
      case algorithm::greedy_breadth: r.plan = plan_heap(buffers, greedy_by_breadth{}); break;
      case algorithm::best:
        static_cast<exact_result&>(r) = best_arena(buffers, limits);
        break;
      case algorithm::exact:
        static_cast<exact_result&>(r) =
            exact_fit(buffers, {.capacity = capacity,
                                .time_limit_seconds = limits.time_limit_or(*default_seconds),
                                .work_limit = limits.work_limit,
                                .stop = limits.stop,
                                .progress = limits.progress});
        r.method = name;
        return r;
    }
    const auto& plan = r.plan;
    r.proved_optimal = r.proved_optimal || plan.arena_bytes == plan.peak_bytes;
    r.status = !capacity || plan.arena_bytes <= *capacity ? fit_status::fits
               : plan.peak_bytes > *capacity || r.proved_optimal ? fit_status::does_not_fit
                                                                 : fit_status::unknown;
    return r;
  }
};

inline constexpr std::array entries_table{
    entry{algorithm::first_fit, "first-fit", "online: the lowest hole that fits", {}},
    entry{algorithm::best_fit, "best-fit", "online: the smallest hole that fits (XLA's lazy best fit)", {}},
    entry{algorithm::xla_size, "xla-size", "XLA's global best fit, larger then longer buffers first", {}},
    entry{algorithm::xla_area, "xla-area", "XLA's global best fit, larger bytes x lifetime first", {}},
    entry{algorithm::greedy_size, "greedy-size", "TFLite's greedy by size", {}},
    entry{algorithm::greedy_breadth, "greedy-breadth", "TFLite's greedy by breadth: busiest time first", {}},
    entry{algorithm::best, "best", "best_arena: the smallest arena of every heuristic, then exact_fit within 2^17 nodes", {}},
    entry{algorithm::exact, "exact", "exact_fit: the minimum arena (or a capacity decided), anytime", 60.0},
};

/// Every heap algorithm, in the order help texts and reports list them.
[[nodiscard]] inline std::span<const entry> entries() { return entries_table; }

[[nodiscard]] inline std::vector<std::string> names() { return detail::names_of(entries()); }

/// The algorithm called `name`; unknown_algorithm_error listing the names otherwise.
[[nodiscard]] inline const entry& by_name(std::string_view name) {
  return detail::entry_named(entries(), "heap algorithm", name);
}

}  // namespace memopt::heap
