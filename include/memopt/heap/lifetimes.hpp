#pragma once
// heap_buffers_of: the arena problem of one schedule, from the liveness
// module: one heap_buffer per buffer id, one block per storage. Apart from
// heap/problem.hpp so that a user of the arena algorithms alone (MiniMalloc
// CSV problems) does not compile the graph layer. O(buffers).

#include <memopt/heap/problem.hpp>
#include <memopt/liveness/liveness.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace memopt {

struct heap_buffers_options {
  std::uint64_t alignment = 1;  ///< of every buffer
  /// storage[b], the buffer whose storage b lives in: by default the graph's
  /// storages as the memory model gives them for the order (live.buffers.storage).
  std::span<const buffer_id> storage = {};
};

/// The arena problem of one schedule, one heap_buffer per buffer id: the closed
/// live interval [first, last] becomes [first, last + 1). Persistent buffers
/// live outside the arena: they get an empty lifetime and take no space.
/// A storage root lives until its last member dies and the members take no
/// space of their own (share_offsets gives them the root's offset).
[[nodiscard]] inline std::vector<heap_buffer> heap_buffers_of(const liveness_result& live,
                                                              const heap_buffers_options& options = {}) {
  std::vector<heap_buffer> buffers(live.buffers.size());
  for (buffer_id b = 0; b < buffers.size(); ++b) {
    buffers[b].alignment = options.alignment;
    if (live.buffers.persistent[b]) continue;
    buffers[b].lower = live.intervals[b].first;
    buffers[b].upper = live.intervals[b].last + 1;
    buffers[b].bytes = live.buffers.bytes[b];
  }
  const auto storage = options.storage.empty() ? std::span<const buffer_id>(live.buffers.storage)
                                              : options.storage;
  for (buffer_id b = 0; b < storage.size(); ++b) {
    const buffer_id root = storage[b];
    if (root == b) continue;
    buffers[root].upper = std::max(buffers[root].upper, buffers[b].upper);
    buffers[b].upper = buffers[b].lower;
  }
  return buffers;
}

}  // namespace memopt
