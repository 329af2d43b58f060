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
#include <utility>
#include <vector>

namespace memopt::detail {

/// Calls on_start(i) and on_end(i) for items i in [0, n) in time order;
/// bounds(i) gives i's [lower, upper) as a pair of std::uint64_t; an empty
/// interval (lower >= upper) takes no time and is skipped.
template <class Bounds, class OnStart, class OnEnd>
void sweep_intervals(std::size_t n, Bounds&& bounds, OnStart&& on_start, OnEnd&& on_end) {
  std::size_t count = 0;
  std::uint64_t latest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto [lower, upper] = bounds(i);
    if (lower >= upper) continue;
    count += 2;
    latest = std::max(latest, upper);
  }
  // Each event as one number, 2 * item + 1 for a start, 2 * item for an end,
  // put in time order. Items are visited in increasing order, so a stable
  // order by (time, starts) leaves equal keys by item.
  std::vector<std::size_t> events(count);
  if (latest < 2 * count) {  // times of a schedule's steps: count them into place
    std::vector<std::size_t> first(2 * latest + 3, 0);  // by key 2 * time + starts
    for (std::size_t i = 0; i < n; ++i) {
      const auto [lower, upper] = bounds(i);
      if (lower >= upper) continue;
      ++first[2 * lower + 2];
      ++first[2 * upper + 1];
    }
    for (std::size_t k = 1; k < first.size(); ++k) first[k] += first[k - 1];
    for (std::size_t i = 0; i < n; ++i) {
      const auto [lower, upper] = bounds(i);
      if (lower >= upper) continue;
      events[first[2 * lower + 1]++] = 2 * i + 1;
      events[first[2 * upper]++] = 2 * i;
    }
  } else {
    std::vector<std::pair<std::uint64_t, std::size_t>> timed;  // (time, event)
    timed.reserve(count);
    for (std::size_t i = 0; i < n; ++i) {
      const auto [lower, upper] = bounds(i);
      if (lower >= upper) continue;
      timed.emplace_back(lower, 2 * i + 1);
      timed.emplace_back(upper, 2 * i);
    }
    std::ranges::stable_sort(timed, [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first < y.first : (x.second & 1) < (y.second & 1);
    });
    std::ranges::transform(timed, events.begin(), [](const auto& t) { return t.second; });
  }
  for (const std::size_t e : events) {
    if (e % 2 == 1) {
      on_start(e / 2);
    } else {
      on_end(e / 2);
    }
  }
}

}  // namespace memopt::detail
