#pragma once
// heap_algorithm: XLA's HeapAlgorithm shape with static dispatch. A caller
// feeds allocate/free events in time order and finish() returns the plan.
// Event i happens at time i: a buffer is live from its allocate to its free,
// so two buffers overlap exactly when one is allocated before the other is
// freed. An algorithm may also take an alignment: allocate(b, bytes, alignment).
//
// plan_heap(buffers, algorithm) runs an algorithm on a whole problem: an
// offline algorithm (one with pack(buffers)) directly, any other by
// replaying the buffers' allocate/free events, frees first at equal times.
// O(n log n) plus the algorithm's cost. Throws std::invalid_argument when a
// buffer asks for an alignment the algorithm cannot take.

#include <memopt/graph/buffers.hpp>
#include <memopt/heap/problem.hpp>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace memopt {

template <class A>
concept heap_algorithm = requires(A a, buffer_id b, std::uint64_t bytes) {
  a.allocate(b, bytes);
  a.free(b, bytes);
  { std::move(a).finish() } -> std::same_as<heap_plan>;
};

/// An algorithm that sees the whole problem at once (XLA's global ones).
template <class A>
concept offline_heap_algorithm = heap_algorithm<A> && requires(const A a, std::span<const heap_buffer> buffers) {
  { a.pack(buffers) } -> std::same_as<std::vector<std::uint64_t>>;
};

namespace detail {

[[nodiscard]] inline std::uint64_t align_up(std::uint64_t offset, std::uint64_t alignment) {
  const std::uint64_t rest = offset % alignment;
  return rest == 0 ? offset : offset + (alignment - rest);
}

/// Records allocate/free events as lifetimes for an offline algorithm, whose
/// pack() places them all in finish().
template <class Derived>
class recorded_lifetimes {
 public:
  void allocate(buffer_id b, std::uint64_t bytes, std::uint64_t alignment = 1) {
    if (b >= buffers_.size()) buffers_.resize(b + 1);
    buffers_[b] = {.lower = clock_++, .upper = 0, .bytes = bytes, .alignment = alignment};
  }
  void free(buffer_id b, std::uint64_t /*bytes*/) { buffers_[b].upper = ++clock_; }
  [[nodiscard]] heap_plan finish() && {
    auto offsets = static_cast<const Derived&>(*this).pack(buffers_);
    return make_heap_plan(buffers_, std::move(offsets));
  }

 private:
  std::vector<heap_buffer> buffers_;
  std::uint64_t clock_ = 0;
};

}  // namespace detail

/// Runs `algorithm` on the whole problem; offsets by buffer index.
template <heap_algorithm A>
[[nodiscard]] heap_plan plan_heap(std::span<const heap_buffer> buffers, A algorithm = {}) {
  if constexpr (offline_heap_algorithm<A>) {
    return make_heap_plan(buffers, algorithm.pack(buffers));
  } else {
    struct event {
      std::uint64_t time;
      bool allocates;
      buffer_id buffer;
    };
    std::vector<event> events;
    for (buffer_id b = 0; b < buffers.size(); ++b) {
      if (!buffers[b].takes_space()) continue;
      events.push_back({buffers[b].lower, true, b});
      events.push_back({buffers[b].upper, false, b});
    }
    std::ranges::sort(events, [](const event& x, const event& y) {
      if (x.time != y.time) return x.time < y.time;
      return x.allocates != y.allocates ? x.allocates < y.allocates : x.buffer < y.buffer;
    });
    for (const event& e : events) {
      const heap_buffer& x = buffers[e.buffer];
      if (!e.allocates) {
        algorithm.free(e.buffer, x.bytes);
      } else if constexpr (requires { algorithm.allocate(e.buffer, x.bytes, x.alignment); }) {
        algorithm.allocate(e.buffer, x.bytes, x.alignment);
      } else if (x.alignment > 1) {
        throw std::invalid_argument("the heap algorithm takes no alignment");
      } else {
        algorithm.allocate(e.buffer, x.bytes);
      }
    }
    auto plan = std::move(algorithm).finish();
    plan.offsets.resize(buffers.size(), 0);  // buffers taking no space sit at 0
    plan.peak_bytes = max_live_bytes(buffers);  // over the problem's own time steps
    return plan;
  }
}

}  // namespace memopt
