#pragma once
// Seeded random arena problems (zero sizes, empty and equal lifetimes, some
// alignments, sizes spread over many powers of two on request) and
// brute-force oracles straight from the definitions.

#include <memopt/heap/problem.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace memopt::testing {

struct random_heap_options {
  std::size_t max_buffers = 40;
  std::uint64_t max_time = 30;
  std::uint64_t max_bytes = 100;
  bool alignments = false;
  bool spread_sizes = false;  ///< sizes up to 2^40, of every bit width
};

inline std::vector<heap_buffer> random_heap(std::mt19937_64& rng, const random_heap_options& o = {}) {
  const auto pick = [&](std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  std::vector<heap_buffer> buffers(pick(0, o.max_buffers));
  for (auto& b : buffers) {
    b.lower = pick(0, o.max_time);
    b.upper = pick(0, 9) == 0 ? b.lower : pick(b.lower, o.max_time);
    b.bytes = pick(0, 9) == 0 ? 0 : o.spread_sizes ? pick(1, std::uint64_t{1} << pick(0, 40)) : pick(1, o.max_bytes);
    if (o.alignments) b.alignment = std::uint64_t{1} << pick(0, 3);
  }
  if (buffers.size() > 2 && pick(0, 3) == 0) buffers[1] = buffers[0];  // equal lifetimes and sizes
  return buffers;
}

/// Max-live by definition: the most bytes live at any one time step.
inline std::uint64_t brute_force_max_live(const std::vector<heap_buffer>& buffers) {
  std::uint64_t end = 0;
  for (const auto& b : buffers) end = std::max(end, b.upper);
  std::uint64_t best = 0;
  for (std::uint64_t t = 0; t < end; ++t) {
    std::uint64_t live = 0;
    for (const auto& b : buffers) {
      if (b.bytes > 0 && b.lower <= t && t < b.upper) live += b.bytes;
    }
    best = std::max(best, live);
  }
  return best;
}

/// The smallest arena, over every order of placing the buffers each at its
/// lowest aligned offset clear of those placed before. (Sorting an optimal
/// plan by offset and placing in that order never raises a buffer, so some
/// order reaches the optimum.) For a handful of buffers only.
inline std::uint64_t brute_force_min_arena(const std::vector<heap_buffer>& buffers) {
  std::vector<std::size_t> order;
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    if (buffers[b].takes_space()) order.push_back(b);
  }
  std::uint64_t best = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> offset(buffers.size(), 0);
  do {
    std::uint64_t arena = 0;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const heap_buffer& x = buffers[order[k]];
      std::vector<std::uint64_t> candidates{0};
      for (std::size_t j = 0; j < k; ++j) candidates.push_back(offset[order[j]] + buffers[order[j]].bytes);
      std::uint64_t chosen = std::numeric_limits<std::uint64_t>::max();
      for (std::uint64_t c : candidates) {
        c = (c + x.alignment - 1) / x.alignment * x.alignment;
        bool clear = true;
        for (std::size_t j = 0; j < k && clear; ++j) {
          const heap_buffer& y = buffers[order[j]];
          clear = !x.overlaps(y) || c + x.bytes <= offset[order[j]] || offset[order[j]] + y.bytes <= c;
        }
        if (clear) chosen = std::min(chosen, c);
      }
      offset[order[k]] = chosen;
      arena = std::max(arena, chosen + x.bytes);
    }
    best = std::min(best, arena);
  } while (std::next_permutation(order.begin(), order.end()));
  return order.empty() ? 0 : best;
}

/// An online allocator by definition, offsets by buffer: buffers arrive by
/// (lower, index) after those ending by then leave; the holes are the gaps
/// between the live buffers, the top the end of the highest. `smallest`: the
/// smallest hole that fits, lowest on ties (best fit); else the lowest (first
/// fit); with none, the top.
inline std::vector<std::uint64_t> brute_force_online_fit(const std::vector<heap_buffer>& buffers, bool smallest) {
  std::vector<std::size_t> arrivals;
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    if (buffers[b].takes_space()) arrivals.push_back(b);
  }
  std::ranges::stable_sort(arrivals, {}, [&](std::size_t b) { return buffers[b].lower; });
  std::vector<std::uint64_t> offset(buffers.size(), 0);
  std::vector<std::size_t> live;
  for (const std::size_t b : arrivals) {
    const heap_buffer& x = buffers[b];
    std::erase_if(live, [&](std::size_t y) { return buffers[y].upper <= x.lower; });
    std::ranges::sort(live, {}, [&](std::size_t y) { return offset[y]; });
    std::uint64_t below = 0;  // the end of the live buffer below the gap
    std::uint64_t chosen = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t chosen_size = 0;
    for (const std::size_t y : live) {
      const std::uint64_t begin = below;
      const std::uint64_t end = offset[y];
      below = offset[y] + buffers[y].bytes;
      const std::uint64_t aligned = (begin + x.alignment - 1) / x.alignment * x.alignment;
      if (begin == end || aligned + x.bytes > end) continue;
      if (chosen == std::numeric_limits<std::uint64_t>::max() || (smallest && end - begin < chosen_size)) {
        chosen = aligned;
        chosen_size = end - begin;
      }
    }
    offset[b] = chosen != std::numeric_limits<std::uint64_t>::max() ? chosen
                                                                    : (below + x.alignment - 1) / x.alignment * x.alignment;
    live.push_back(b);
  }
  return offset;
}

}  // namespace memopt::testing
