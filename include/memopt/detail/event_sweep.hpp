#pragma once
// sweep_intervals: half-open intervals [lower, upper) visited in time order,
// as start and end events. At equal times ends come first (an interval ending
// at t makes room for one starting at t), then events go by item, so a sweep
// is a function of its input. O(n log n). The heap family's max-live sum,
// event replay, plan check and overlap lists all walk time this way.

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
  for (std::size_t i = 0; i < n; ++i) {
    const auto [lower, upper] = bounds(i);
    if (lower >= upper) continue;
    events.push_back({lower, true, i});
    events.push_back({upper, false, i});
  }
  std::ranges::sort(events, [](const event& x, const event& y) {
    if (x.time != y.time) return x.time < y.time;
    return x.starts != y.starts ? x.starts < y.starts : x.item < y.item;
  });
  for (const event& e : events) {
    if (e.starts) {
      on_start(e.item);
    } else {
      on_end(e.item);
    }
  }
}

}  // namespace memopt::detail
