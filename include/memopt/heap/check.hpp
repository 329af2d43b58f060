#pragma once
// check_heap_plan: what is wrong with a plan, empty when it is valid. A valid
// plan has one offset per buffer; every buffer taking space sits at a multiple
// of its alignment, inside the capacity when one is given; no two buffers live
// at a common time step share a byte; arena_bytes is the top of the highest
// buffer; and, given storages, every tensor sits where its storage does.
// O(n log n + collisions reported).

#include <memopt/heap/problem.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <queue>
#include <utility>
#include <span>
#include <vector>

namespace memopt {

enum class heap_fault {
  wrong_count,   ///< offsets.size() differs from the number of buffers
  misaligned,    ///< `buffer`'s offset is not a multiple of its alignment
  over_capacity, ///< `buffer` ends beyond the capacity
  collision,     ///< `buffer` and `other` are live together and share bytes
  wrong_arena,   ///< arena_bytes is not the top of the highest buffer
  split_storage  ///< `buffer` lives in `other`'s storage but not at its offset
};

struct heap_violation {
  heap_fault fault;
  std::size_t buffer = 0;
  std::size_t other = 0;
  friend bool operator==(const heap_violation&, const heap_violation&) = default;
};

/// With `storage` (storage[b]: the buffer whose storage b lives in, e.g.
/// buffer_table::storage or alias_storage), every buffer must also sit at its
/// storage's offset.
[[nodiscard]] inline std::vector<heap_violation> check_heap_plan(
    std::span<const heap_buffer> buffers, const heap_plan& plan,
    std::optional<std::uint64_t> capacity = std::nullopt, std::span<const buffer_id> storage = {}) {
  std::vector<heap_violation> faults;
  if (plan.offsets.size() != buffers.size() || (!storage.empty() && storage.size() != buffers.size())) {
    faults.push_back({heap_fault::wrong_count});
    return faults;
  }
  for (std::size_t b = 0; b < storage.size(); ++b) {
    if (plan.offsets[b] != plan.offsets[storage[b]]) faults.push_back({heap_fault::split_storage, b, storage[b]});
  }
  std::uint64_t arena = 0;
  std::vector<std::size_t> placed;
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    const heap_buffer& x = buffers[b];
    if (!x.takes_space()) continue;
    const std::uint64_t offset = plan.offsets[b];
    std::uint64_t top = 0;
    if (x.alignment == 0 || offset % x.alignment != 0) faults.push_back({heap_fault::misaligned, b});
    if (__builtin_add_overflow(offset, x.bytes, &top) || (capacity && top > *capacity)) {
      faults.push_back({heap_fault::over_capacity, b});
    }
    arena = std::max(arena, top);
    placed.push_back(b);
  }
  if (arena != plan.arena_bytes) faults.push_back({heap_fault::wrong_arena});
  // Sweep in time with the live buffers keyed by offset: in a valid plan they
  // are disjoint, so a newcomer is checked against its neighbours only.
  std::ranges::sort(placed, [&](std::size_t a, std::size_t b) {
    return buffers[a].lower < buffers[b].lower;
  });
  std::multimap<std::uint64_t, std::size_t> live;  // offset -> buffer
  using ending = std::pair<std::uint64_t, std::size_t>;  // (upper, buffer)
  std::priority_queue<ending, std::vector<ending>, std::greater<>> ends;
  for (const std::size_t b : placed) {
    const heap_buffer& x = buffers[b];
    for (; !ends.empty() && ends.top().first <= x.lower; ends.pop()) {
      auto at = live.lower_bound(plan.offsets[ends.top().second]);
      while (at->second != ends.top().second) ++at;
      live.erase(at);
    }
    const std::uint64_t begin = plan.offsets[b];
    const std::uint64_t end = begin + x.bytes;
    auto next = live.lower_bound(begin);
    if (next != live.begin()) {
      const auto [below_offset, below] = *std::prev(next);
      if (below_offset + buffers[below].bytes > begin) {
        faults.push_back({heap_fault::collision, std::min(b, below), std::max(b, below)});
      }
    }
    for (; next != live.end() && next->first < end; ++next) {
      faults.push_back({heap_fault::collision, std::min(b, next->second), std::max(b, next->second)});
    }
    live.emplace(begin, b);
    ends.emplace(x.upper, b);
  }
  return faults;
}

}  // namespace memopt
