#pragma once
// exact_schedule: the minimum peak over all topological orders, anytime.
//
// exact_order is one pipeline, a header per stage:
// 1. split (segments.hpp): inert vertices run first, floating ones right
//    before their first successor, and the rest splits at cut vertices into
//    segments ordered independently;
// 2. search (segment_search.hpp, with the bound of exact_bounds.hpp):
//    segments are solved highest peak first by A* over downward-closed vertex
//    sets and depth-first probes at limits between bound and peak; a segment
//    whose peak cannot raise the graph's bound is not searched;
// 3. assemble (assemble.hpp): the segments' orders back into one order;
// 4. improve (windows.hpp): when the peak stays above the bound, windows of
//    consecutive ops around it are reordered exactly with everything else
//    fixed; when they stall with budget left, again with probes guided by
//    the order found, and so on while a round lowers the peak.
// With a time or state limit it returns its best order and a certified lower
// bound (the least bound left open). docs/design.md has the arguments.
//
// Exponential in the worst case (it solves an NP-hard problem); limits keep
// it bounded. Throws cycle_error on a cyclic graph.

#include <memopt/detail/budget.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/progress.hpp>
#include <memopt/schedule/assemble.hpp>
#include <memopt/schedule/best_of.hpp>
#include <memopt/schedule/result.hpp>
#include <memopt/schedule/segment_search.hpp>
#include <memopt/schedule/segments.hpp>
#include <memopt/schedule/windows.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

namespace memopt {

/// With a work_limit and no time limit, the result depends on the graph alone
/// (same order on any machine, under any load).
struct exact_options {
  std::optional<double> time_limit_seconds = 10.0;  ///< for the whole search; nullopt: none
  std::optional<std::uint64_t> work_limit;          ///< states expanded in the whole search
  std::size_t state_limit = 2'000'000;              ///< states stored for one segment
  const std::atomic<bool>* stop = nullptr;          ///< once *stop is true the search ends with its best
  progress_callback progress;                       ///< hears the peak and bound after each part searched
};

/// An order with its peak and a lower bound on every order's peak.
struct order_bounds {
  std::vector<std::size_t> order;  ///< dense vertex indices
  std::uint64_t peak_bytes = 0;
  std::uint64_t lower_bound_bytes = 0;
  bool proved_optimal = false;  ///< peak_bytes == lower_bound_bytes
  bool stopped_by_clock = false;  ///< the time limit ended the search (search_budget::clock_stopped)
};

/// The exact order, starting from `start` (any topological order; its
/// segments are kept where the search cannot or need not improve them).
/// Segments are searched largest peak first, each with half of the budget left;
/// if the peak is still above the bound, windows around it are reordered
/// exactly (improve_by_windows) with the rest, in rounds that alternate the
/// probes' guidance until two in a row find nothing or the budget is spent.
[[nodiscard]] inline order_bounds exact_order(const compact_graph& g, const std::vector<std::size_t>& start,
                                              const exact_options& options = {}) {
  detail::search_budget budget(options.time_limit_seconds, options.work_limit, options.stop);
  // 1. Split.
  const auto role = detail::vertex_roles(g, start);
  const auto segments = detail::split_into_segments(g, start, role);
  auto local_orders = detail::identity_orders(segments);
  // 2. Search.
  std::vector<std::uint64_t> peaks(segments.size());
  std::uint64_t lower_bound = 0;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    peaks[s] = segments[s].peak_of(local_orders[s]);
    lower_bound = std::max(lower_bound, detail::static_bound(segments[s]));
  }
  // The highest segments decide the peak: improve them first, each search
  // only down to the bound the others already force.
  std::vector<std::size_t> by_peak(segments.size());
  std::iota(by_peak.begin(), by_peak.end(), std::size_t{0});
  std::ranges::sort(by_peak, [&](auto a, auto b) { return peaks[a] > peaks[b]; });
  const auto report = [&](std::uint64_t peak) {
    if (options.progress) options.progress({.best_bytes = peak, .bound_bytes = std::min(lower_bound, peak), .work = budget.used()});
  };
  const auto highest = [&] { return std::accumulate(peaks.begin(), peaks.end(), std::uint64_t{0}, [](auto a, auto b) { return std::max(a, b); }); };
  report(highest());
  for (const auto s : by_peak) {
    if (peaks[s] <= lower_bound) break;
    detail::segment_search search(segments[s], budget.slice(1.0 / 2), options.state_limit);
    auto found = search.run(std::move(local_orders[s]), lower_bound);
    budget.charge(search.budget());
    local_orders[s] = std::move(found.order);
    peaks[s] = found.peak;
    lower_bound = std::max(lower_bound, found.lower_bound);
    report(highest());
  }
  // 3. Assemble.
  order_bounds r;
  r.order = detail::assemble(g, start, role, segments, local_orders);
  r.peak_bytes = highest();
  // 4. Improve. A round stalls when none of its windows lowers the peak;
  // the other guidance then often does (on RandWire's 64-node stages, where
  // the first round ends with a quarter to a third of the budget unspent).
  auto guidance = detail::probe_guidance::none;
  for (int stalled = 0; stalled < 2 && r.peak_bytes > lower_bound && !budget.exhausted();) {
    const std::uint64_t before = r.peak_bytes;
    r.order = detail::improve_by_windows(g, std::move(r.order), role, lower_bound, budget, options.state_limit,
                                         guidance, options.progress);
    r.peak_bytes = 0;
    for (const auto& seg : detail::split_into_segments(g, r.order, role)) {
      r.peak_bytes = std::max(r.peak_bytes, seg.peak_of(detail::identity_orders({seg}).front()));
    }
    stalled = r.peak_bytes < before ? 0 : stalled + 1;
    guidance = guidance == detail::probe_guidance::none ? detail::probe_guidance::incumbent : detail::probe_guidance::none;
  }
  r.lower_bound_bytes = std::min(lower_bound, r.peak_bytes);
  r.proved_optimal = r.peak_bytes == r.lower_bound_bytes;
  r.stopped_by_clock = budget.clock_stopped();
  report(r.peak_bytes);
  return r;
}

/// A lower bound on the peak of every order of g (no search).
[[nodiscard]] inline std::uint64_t lower_bound_of(const compact_graph& g) {
  const auto order = post_order_order(g);
  std::uint64_t bound = 0;
  for (const auto& seg : detail::split_into_segments(g, order, detail::vertex_roles(g, order))) {
    bound = std::max(bound, detail::static_bound(seg));
  }
  return bound;
}

/// The minimum peak over all orders (anytime: see exact_options), starting
/// from best_heuristic's order, so never above any heuristic's peak. The
/// candidates are the heuristic seeds then "exact", the search itself; chosen
/// and method say which produced the order (the search only when it found a
/// lower peak than every seed), proved_optimal whether it is the minimum.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] best_of_result<G> exact_schedule(const G& g, const exact_options& options = {}, Index index = {}) {
  auto c = make_compact_graph(g, index);
  const auto by_index = vertices_by_index(g, index);
  auto best = detail::best_heuristic_snapshot<G>(c, by_index, detail::program_indices(g, index));
  std::vector<std::size_t> start;
  for (const auto v : best.order) start.push_back(index(v));
  const auto started = std::chrono::steady_clock::now();
  const auto found = exact_order(c, start, options);
  auto r = evaluate_order<G>(std::move(c), by_index, found.order);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  best.candidates.push_back({"exact", r.peak_bytes, seconds});
  if (r.peak_bytes < best.peak_bytes) {
    static_cast<schedule_result<G>&>(best) = std::move(r);
    best.chosen = best.candidates.size() - 1;
    best.method = "exact";
  }
  best.lower_bound_bytes = std::min(found.lower_bound_bytes, best.peak_bytes);
  best.proved_optimal = best.peak_bytes == best.lower_bound_bytes;
  best.stopped_by_clock = found.stopped_by_clock;
  return best;
}

/// best_schedule's budget: states expanded, and seconds as a cap. On most
/// graphs the states run out first (2,000,000 take about 1.6 s on a RandWire
/// graph of 64-vertex stages), so the order repeats; where the clock comes
/// first the result says so (stopped_by_clock).
inline constexpr std::uint64_t best_schedule_work = 2'000'000;
inline constexpr double best_schedule_seconds = 3.0;

/// The library's recommended scheduler: exact_schedule within a small budget
/// (best_schedule_work states, at most best_schedule_seconds).
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] best_of_result<G> best_schedule(const G& g, Index index = {}) {
  return exact_schedule(g, exact_options{.time_limit_seconds = best_schedule_seconds, .work_limit = best_schedule_work}, index);
}

/// A lower bound on the peak of every order of g.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::uint64_t lower_bound(const G& g, Index index = {}) {
  return lower_bound_of(make_compact_graph(g, index));
}

}  // namespace memopt
