#pragma once
// Heap algorithms, two shapes with static dispatch:
// - online_heap_algorithm: XLA's HeapAlgorithm. A caller feeds allocate/free
//   events in time order and finish() returns the plan. Event i happens at
//   time i: a buffer is live from its allocate to its free, so two buffers
//   overlap exactly when one is allocated before the other is freed. An
//   algorithm may also take an alignment: allocate(b, bytes, alignment).
// - offline_heap_algorithm: sees the whole problem at once (XLA's global
//   fits, TFLite's greedy ones): pack(buffers) returns an offset per buffer.
// heap_algorithm is either; plan_heap(buffers, algorithm) runs one on a whole
// problem: an offline one directly, an online one by replaying the buffers'
// allocate/free events, frees first at equal times. O(n log n) plus the
// algorithm's cost. Throws std::invalid_argument when a buffer asks for an
// alignment the online algorithm cannot take, or when an offline algorithm
// does not give one offset per buffer.

#include <memopt/graph/buffer_id.hpp>
#include <memopt/heap/problem.hpp>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace memopt {

template <class A>
concept online_heap_algorithm = requires(A a, buffer_id b, std::uint64_t bytes) {
  a.allocate(b, bytes);
  a.free(b, bytes);
  { std::move(a).finish() } -> std::same_as<heap_plan>;
};

template <class A>
concept offline_heap_algorithm = requires(A& a, std::span<const heap_buffer> buffers) {
  { a.pack(buffers) } -> std::same_as<std::vector<std::uint64_t>>;
};

template <class A>
concept heap_algorithm = online_heap_algorithm<A> || offline_heap_algorithm<A>;

namespace detail {

[[nodiscard]] inline std::uint64_t align_up(std::uint64_t offset, std::uint64_t alignment) {
  const std::uint64_t rest = offset % alignment;
  return rest == 0 ? offset : offset + (alignment - rest);
}

}  // namespace detail

/// Runs `algorithm` on the whole problem; offsets by buffer index.
template <heap_algorithm A>
[[nodiscard]] heap_plan plan_heap(std::span<const heap_buffer> buffers, A algorithm = {}) {
  if constexpr (offline_heap_algorithm<A>) {
    auto offsets = algorithm.pack(buffers);
    if (offsets.size() != buffers.size()) {
      throw std::invalid_argument("the heap algorithm gave " + std::to_string(offsets.size()) +
                                  " offsets for " + std::to_string(buffers.size()) + " buffers");
    }
    return make_heap_plan(buffers, std::move(offsets));
  } else {
    std::uint64_t live = 0;  // max-live over the problem's own time steps, in the same sweep
    std::uint64_t peak = 0;
    detail::sweep_intervals(
        buffers.size(), detail::space_time(buffers),
        [&](buffer_id b) {
          const heap_buffer& x = buffers[b];
          live = detail::checked_add(live, x.bytes, b);
          peak = std::max(peak, live);
          if constexpr (requires { algorithm.allocate(b, x.bytes, x.alignment); }) {
            algorithm.allocate(b, x.bytes, x.alignment);
          } else if (x.alignment > 1) {
            throw std::invalid_argument("the heap algorithm takes no alignment");
          } else {
            algorithm.allocate(b, x.bytes);
          }
        },
        [&](buffer_id b) {
          live -= buffers[b].bytes;
          algorithm.free(b, buffers[b].bytes);
        });
    auto plan = std::move(algorithm).finish();
    plan.offsets.resize(buffers.size(), 0);  // buffers taking no space sit at 0
    plan.peak_bytes = peak;
    return plan;
  }
}

}  // namespace memopt
