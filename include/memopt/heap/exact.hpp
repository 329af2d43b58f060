#pragma once
// exact_fit: the smallest arena for fixed lifetimes, or whether the buffers
// fit a given capacity; complete and anytime. A depth-first search in the
// manner of Moffitt's MiniMalloc (ASPLOS 2023):
// - canonical solutions only: each buffer sits at the lowest offset its placed
//   neighbours allow, and offsets are placed in non-decreasing order;
// - per-section lower bounds: in each time section, the floor plus the bytes
//   still to place must fit the capacity;
// - dominance: a buffer may not go where it leaves a hole every unplaced
//   buffer could have used, nor be tried elsewhere when nothing it overlaps
//   is left to place above it;
// - decomposition at time cut points no unplaced buffer crosses;
// - restarts over several static buffer orders with growing node limits.
// Before it, an incomplete search by windows of time (window_search): the
// lifetimes cut where few buffers cross, each window solved by the same
// search with the buffers of earlier windows fixed, a failing window merged
// with those before it. A complete search on a whole graph backtracks over
// choices made far away in time; the windows do not, and reach max-live on
// graphs (NASNet's cells) where the complete search does not in 10^6 nodes.
// Deciding, the windows go first with at most window_work nodes per buffer.
// Minimising: the best heuristic's arena first, then up to four probes of a
// binary search by windows, then rounds of binary search between the largest
// refuted capacity and the best arena, each probe a decision search with a
// node limit that grows by round.
// Exponential in the worst case; with a time limit it returns the best plan
// found and says whether it proved it optimal (or proved "does not fit").
// best_arena: choose_best, then exact_fit within a small budget (2^17 nodes)
// when the heuristics miss max-live: the recommended arena.

#include <memopt/detail/budget.hpp>
#include <memopt/heap/choose_best.hpp>
#include <memopt/heap/exact_search.hpp>
#include <memopt/heap/problem.hpp>
#include <memopt/heap/window_search.hpp>
#include <memopt/progress.hpp>
#include <memopt/registry.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memopt {

enum class fit_status {
  fits,          ///< the plan fits the capacity
  does_not_fit,  ///< proved: no plan fits the capacity
  unknown        ///< the time ran out before either was shown
};

struct exact_fit_options {
  std::optional<std::uint64_t> capacity;  ///< decide this capacity; none: minimise the arena
  std::optional<double> time_limit_seconds;
  /// Search nodes in all; with no time limit, the result depends on the input alone.
  std::optional<std::uint64_t> work_limit;
  /// Static buffer orders tried in turn, each a string of keys, larger first:
  /// W lifetime length, A bytes x length, T most bytes left in a section it
  /// spans, Z bytes, L lower, U upper; then buffer index.
  std::vector<std::string> preorders = {"WAT", "TAW", "TWA"};
  /// The search by windows of time that goes first: buffers per window (0:
  /// none), and search nodes per buffer, both for each window's attempt and
  /// for each capacity tried (minimising tries at most four).
  std::size_t window_items = 16;
  std::uint64_t window_work = 64;
  const std::atomic<bool>* stop = nullptr;  ///< once *stop is true the search ends with its best
  progress_callback progress;               ///< hears the best arena and the bound after each probe
};

struct exact_result {
  heap_plan plan;                 ///< the best plan found (a heuristic's at worst)
  fit_status status = fit_status::unknown;  ///< against the capacity; "fits" when minimising
  bool proved_optimal = false;    ///< no smaller arena exists
  std::uint64_t nodes = 0;        ///< search nodes visited
  /// Who found the plan: the heuristic choose_best kept, "exact-windows"
  /// (the search by windows of time) or "exact" (the search on the whole).
  std::string method;
  /// A time limit ended the search: the same call may give another plan under
  /// another load; with a work limit alone it never does.
  bool stopped_by_clock = false;
};

namespace detail {

/// The arena granularity: every canonical plan's arena is a multiple of the
/// gcd of the sizes when each alignment divides it (else 1).
[[nodiscard]] inline std::uint64_t arena_granularity(std::span<const heap_buffer> buffers) {
  std::uint64_t g = 0;
  for (const auto& x : buffers) {
    if (x.takes_space()) g = std::gcd(g, x.bytes);
  }
  for (const auto& x : buffers) {
    if (x.takes_space() && g % x.alignment != 0) return 1;
  }
  return std::max<std::uint64_t>(g, 1);
}

/// exact_fit from the plan `start` (choose_best's, or a caller's own).
[[nodiscard]] inline exact_result exact_fit_from(std::span<const heap_buffer> buffers,
                                                 const exact_fit_options& options, heap_choice start) {
  search_budget budget(options.time_limit_seconds, options.work_limit, options.stop);
  exact_result r;
  r.plan = std::move(start.plan);
  r.method = std::move(start.method);
  const std::uint64_t g = arena_granularity(buffers);
  const std::uint64_t lower = (r.plan.peak_bytes + g - 1) / g * g;
  // A search's answer for one capacity; a plan found is kept when smaller, as `method`'s.
  const auto answer = [&](exact_search::outcome outcome, std::vector<std::uint64_t> offsets, const char* method) {
    if (outcome == exact_search::outcome::none) return fit_status::does_not_fit;
    if (outcome != exact_search::outcome::found) return fit_status::unknown;
    auto plan = make_heap_plan(buffers, std::move(offsets));
    if (plan.arena_bytes < r.plan.arena_bytes) {
      r.plan = std::move(plan);
      r.method = method;
    }
    return fit_status::fits;
  };
  std::optional<exact_search> complete;  // built on first use
  std::uint64_t window_nodes = 0;
  const auto attempt = [&](std::uint64_t capacity, search_budget& within) {
    if (!complete) complete.emplace(buffers, options.preorders);
    auto [outcome, offsets] = complete->solve(capacity, within);
    r.nodes = window_nodes + complete->nodes();
    return answer(outcome, std::move(offsets), "exact");
  };
  // The search by windows of time: incomplete, but cheap where buffers live
  // briefly (the usual graph), and a refutation is a proof. Each call gets
  // at most window_work nodes per buffer.
  std::optional<window_search> windows;  // built on first use
  const std::uint64_t items = static_cast<std::uint64_t>(std::ranges::count_if(buffers, &heap_buffer::takes_space));
  const std::uint64_t window_limit = options.window_work * std::max<std::uint64_t>(items, 1);
  const auto by_windows = [&](std::uint64_t capacity) {
    if (!windows) windows.emplace(buffers, options.preorders, options.window_items);
    search_budget part = budget.limited(window_limit);
    auto [outcome, offsets] = windows->solve(capacity, part, options.window_work);
    budget.charge(part);
    r.nodes = window_nodes = windows->nodes();
    return answer(outcome, std::move(offsets), "exact-windows");
  };
  if (options.capacity) {
    const std::uint64_t capacity = *options.capacity;
    if (r.plan.arena_bytes <= capacity) {
      r.status = fit_status::fits;
    } else if (r.plan.peak_bytes > capacity) {
      r.status = fit_status::does_not_fit;
    } else {
      r.status = options.window_items > 0 ? by_windows(capacity) : fit_status::unknown;
      if (r.status == fit_status::unknown) r.status = attempt(capacity, budget);
    }
    r.proved_optimal = r.plan.arena_bytes <= lower;
    r.stopped_by_clock = budget.clock_stopped();
    return r;
  }
  r.status = fit_status::fits;
  std::uint64_t proved = lower;
  const auto report = [&] {
    if (options.progress) {
      options.progress({.best_bytes = r.plan.arena_bytes, .bound_bytes = std::min(proved, r.plan.arena_bytes), .work = budget.used()});
    }
  };
  // First a binary search over multiples of g in [proved, best arena) by
  // windows, at most four probes.
  std::uint64_t unknown_below = proved;  // the capacities below it are refuted or unknown
  for (int probes = 0;
       options.window_items > 0 && probes < 4 && unknown_below < r.plan.arena_bytes && !budget.exhausted();
       ++probes) {
    const std::uint64_t probe =
        probes == 0 ? unknown_below : unknown_below + (r.plan.arena_bytes - unknown_below) / g / 2 * g;
    const fit_status status = by_windows(probe);
    if (status == fit_status::does_not_fit) proved = std::max(proved, probe + g);
    if (status != fit_status::fits) unknown_below = probe + g;
    report();
  }
  // Rounds of binary search over multiples of g in [proved, best arena), the
  // first probe of each at `proved` (every capacity below it is refuted).
  // Each probe gets at most `probe_work` nodes, twice as many each round,
  // so that one hard probe cannot take the whole budget: a probe that runs
  // out sends the search upwards, unrefuted, and the next round returns to
  // it with more work.
  constexpr std::uint64_t most_work = std::numeric_limits<std::uint64_t>::max() / 2;
  for (std::uint64_t probe_work = 64 * (buffers.size() + 1); proved < r.plan.arena_bytes && !budget.exhausted();
       probe_work = std::min(probe_work, most_work) * 2) {
    std::uint64_t low = proved;
    for (bool first = true; low < r.plan.arena_bytes && !budget.exhausted(); first = false) {
      const std::uint64_t probe = first ? low : low + (r.plan.arena_bytes - low) / g / 2 * g;
      search_budget part = budget.limited(probe_work);
      const fit_status status = attempt(probe, part);
      budget.charge(part);
      // No plan fits a refuted capacity, nor any below it.
      if (status == fit_status::does_not_fit) proved = std::max(proved, probe + g);
      report();
      if (status == fit_status::fits) continue;
      low = probe + g;
    }
  }
  r.proved_optimal = r.plan.arena_bytes <= proved;
  r.stopped_by_clock = budget.clock_stopped();
  return r;
}

}  // namespace detail

[[nodiscard]] inline exact_result exact_fit(std::span<const heap_buffer> buffers,
                                            const exact_fit_options& options = {}) {
  return detail::exact_fit_from(buffers, options, choose_best(buffers));
}

/// best_arena's budget by default: search nodes, and seconds as a cap.
inline constexpr std::uint64_t best_arena_work = std::uint64_t{1} << 17;
inline constexpr double best_arena_seconds = 0.5;

/// The recommended arena: choose_best, then, when its plan is above
/// max-live, exact_fit from it within a small budget (limits.work_limit, by
/// default best_arena_work nodes, capped at best_arena_seconds unless only a
/// work limit is given; the search is skipped when the buffers taking space
/// outnumber a quarter of the work, as it could not place them all). With no
/// time limit, the plan depends on the input alone. `method` says whose plan
/// it is; proved_optimal, whether no smaller arena exists (at max-live, or a
/// refutation below).
[[nodiscard]] inline exact_result best_arena(std::span<const heap_buffer> buffers, const search_limits& limits = {}) {
  heap_choice choice = choose_best(buffers);
  const std::uint64_t work = limits.work_limit.value_or(best_arena_work);
  const auto items = static_cast<std::uint64_t>(std::ranges::count_if(buffers, &heap_buffer::takes_space));
  if (choice.plan.arena_bytes > choice.plan.peak_bytes && items <= work / 4) {
    return detail::exact_fit_from(buffers,
                                  {.time_limit_seconds = limits.time_limit_or(best_arena_seconds),
                                   .work_limit = work,
                                   .stop = limits.stop,
                                   .progress = limits.progress},
                                  std::move(choice));
  }
  exact_result r;
  r.plan = std::move(choice.plan);
  r.method = std::move(choice.method);
  r.status = fit_status::fits;
  r.proved_optimal = r.plan.arena_bytes == r.plan.peak_bytes;
  return r;
}

/// best_arena as an offline heap algorithm, for plan_heap and plan_arena:
/// plan_arena(g, order, best_arena_fit{}) is the recommended arena of a
/// schedule. best_arena itself also says which method won and what it proved.
struct best_arena_fit {
  search_limits limits{};

  [[nodiscard]] std::vector<std::uint64_t> pack(std::span<const heap_buffer> buffers) const {
    return best_arena(buffers, limits).plan.offsets;
  }
};

}  // namespace memopt
