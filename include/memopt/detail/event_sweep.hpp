#pragma once
// sweep_intervals: half-open intervals [lower, upper) visited in time order,
// as start and end events. At equal times ends come first (an interval ending
// at t makes room for one starting at t), then events go by item, so a sweep
// is a function of its input. O(n) when every time is below twice the
// number of events (a schedule's steps: a counting sort), else O(n log n).
// The heap family's max-live sum, event replay, plan check and overlap lists
// all walk time this way.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memopt::detail {

/// Calls on_start(i) and on_end(i) for items i in [0, n) in time order;
/// bounds(i) gives i's [lower, upper) as a pair of std::uint64_t; an empty
/// interval (lower >= upper) takes no time and is skipped.
template <class Bounds, class OnStart, class OnEnd>
void sweep_intervals(std::size_t n, Bounds&& bounds, OnStart&& on_start, OnEnd&& on_end) {
  struct event {
    std::uint64_t time;
    bool starts;
    std::size_t item;
  };
  std::vector<event> events;
  events.reserve(2 * n);
  std::uint64_t latest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto [lower, upper] = bounds(i);
    if (lower >= upper) continue;
    events.push_back({lower, true, i});
    events.push_back({upper, false, i});
    latest = std::max(latest, upper);
  }
  // Items were added in increasing order, so a stable sort by (time, starts)
  // leaves equal keys by item.
  if (latest < 2 * events.size()) {  // times of a schedule's steps: count them
    const auto key = [](const event& e) { return 2 * e.time + (e.starts ? 1 : 0); };
    std::vector<std::size_t> first(2 * latest + 3, 0);
    for (const event& e : events) ++first[key(e) + 1];
    for (std::size_t k = 1; k < first.size(); ++k) first[k] += first[k - 1];
    std::vector<event> sorted(events.size());
    for (const event& e : events) sorted[first[key(e)]++] = e;
    events = std::move(sorted);
  } else {
    std::ranges::stable_sort(events, [](const event& x, const event& y) {
      return x.time != y.time ? x.time < y.time : x.starts < y.starts;
    });
  }
  for (const event& e : events) {
    if (e.starts) {
      on_start(e.item);
    } else {
      on_end(e.item);
    }
  }
}

}  // namespace memopt::detail
