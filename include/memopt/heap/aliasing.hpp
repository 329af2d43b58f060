#pragma once
// share_offsets: every buffer of a storage at its root's offset. Storages are
// the memory model's (liveness_result::buffers.storage): views, in-place
// results, and outputs that took over a dying input's storage in the order
// (in-place reuse, liveness/liveness.hpp). Plan one block per storage
// (heap_buffers_of with options.storage), then share_offsets. O(buffers).

#include <memopt/graph/buffer_id.hpp>
#include <memopt/heap/problem.hpp>

#include <span>

namespace memopt {

/// Gives every buffer its storage root's offset.
inline void share_offsets(heap_plan& plan, std::span<const buffer_id> storage) {
  for (buffer_id b = 0; b < storage.size(); ++b) plan.offsets[b] = plan.offsets[storage[b]];
}

}  // namespace memopt
