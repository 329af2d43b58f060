#pragma once
// check_heap_plan: what is wrong with a plan, empty when it is valid. A valid
// plan has one offset per buffer; every buffer taking space sits at a multiple
// of its alignment, inside the capacity when one is given; no two buffers live
// at a common time step share a byte; arena_bytes is the top of the highest
// buffer; and, given storages, every tensor sits where its storage does.
// O(n log n + collisions reported).

#include <memopt/detail/checked.hpp>
#include <memopt/graph/buffer_id.hpp>
#include <memopt/heap/problem.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
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
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    const heap_buffer& x = buffers[b];
    if (!x.takes_space()) continue;
    const std::uint64_t offset = plan.offsets[b];
    std::uint64_t top = 0;
    if (x.alignment == 0 || offset % x.alignment != 0) faults.push_back({heap_fault::misaligned, b});
    if (detail::add_overflows(offset, x.bytes, top) || (capacity && top > *capacity)) {
      faults.push_back({heap_fault::over_capacity, b});
    }
    arena = std::max(arena, top);
  }
  if (arena != plan.arena_bytes) faults.push_back({heap_fault::wrong_arena});
  // Sweep in time with the live buffers keyed by offset: in a valid plan they
  // are disjoint, so a newcomer is checked against its neighbours only.
  std::multimap<std::uint64_t, std::size_t> live;  // offset -> buffer
  const auto on_start = [&](std::size_t b) {
    const std::uint64_t begin = plan.offsets[b];
    const std::uint64_t end = begin + buffers[b].bytes;
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
  };
  const auto on_end = [&](std::size_t b) {
    auto at = live.lower_bound(plan.offsets[b]);
    while (at->second != b) ++at;
    live.erase(at);
  };
  detail::sweep_intervals(buffers.size(), detail::space_time(buffers), on_start, on_end);
  return faults;
}

}  // namespace memopt
