#pragma once
// The arena problem: buffers with fixed half-open lifetimes [lower, upper) and
// sizes, as in MiniMalloc; heap_plan, the answer every heap algorithm returns;
// max_live_bytes, the no-fragmentation lower bound (no plan is smaller). The
// problem of one schedule is heap_buffers_of (heap/lifetimes.hpp).
//
// A buffer with zero bytes or an empty lifetime (lower == upper) takes no
// space: it overlaps nothing and sits at offset 0. max_live_bytes is
// O(n log n); throws size_overflow_error (with the buffer's index in `vertex`)
// when a live sum does not fit 64 bits.

#include <memopt/detail/checked.hpp>
#include <memopt/detail/event_sweep.hpp>
#include <memopt/error.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace memopt {

struct heap_buffer {
  std::uint64_t lower = 0;      ///< first time step the buffer is live
  std::uint64_t upper = 0;      ///< first time step it is dead again (exclusive)
  std::uint64_t bytes = 0;
  std::uint64_t alignment = 1;  ///< its offset must be a multiple of this (>= 1)

  [[nodiscard]] bool takes_space() const noexcept { return bytes > 0 && lower < upper; }
  /// Live at a common time step, both taking space.
  [[nodiscard]] bool overlaps(const heap_buffer& other) const noexcept {
    return takes_space() && other.takes_space() && lower < other.upper && other.lower < upper;
  }
};

/// An offset for every buffer of one arena.
struct heap_plan {
  std::vector<std::uint64_t> offsets;  ///< by buffer
  std::uint64_t arena_bytes = 0;       ///< max of offset + bytes over buffers taking space
  std::uint64_t peak_bytes = 0;        ///< max-live: the lower bound for arena_bytes

  /// arena / peak - 1: the space lost to holes (0 for a perfect plan).
  [[nodiscard]] double fragmentation() const noexcept {
    return peak_bytes == 0 ? 0.0
                           : static_cast<double>(arena_bytes) / static_cast<double>(peak_bytes) - 1.0;
  }
};

namespace detail {

/// b's lifetime for sweep_intervals: empty when it takes no space.
inline auto space_time(std::span<const heap_buffer> buffers) {
  return [buffers](std::size_t b) {
    const heap_buffer& x = buffers[b];
    return x.takes_space() ? std::pair(x.lower, x.upper) : std::pair(std::uint64_t{0}, std::uint64_t{0});
  };
}

}  // namespace detail

/// The largest total size of buffers live at one time step.
[[nodiscard]] inline std::uint64_t max_live_bytes(std::span<const heap_buffer> buffers) {
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
  detail::sweep_intervals(
      buffers.size(), detail::space_time(buffers),
      [&](std::size_t b) {
        live = detail::checked_add(live, buffers[b].bytes, b);
        peak = std::max(peak, live);
      },
      [&](std::size_t b) { live -= buffers[b].bytes; });
  return peak;
}

namespace detail {

/// The distinct lifetime ends of the buffers taking space: section s is the
/// time span [at[s], at[s + 1]); a buffer spans sections [of(lower), of(upper)).
struct time_sections {
  std::vector<std::uint64_t> at;

  explicit time_sections(std::span<const heap_buffer> buffers) {
    for (const auto& x : buffers) {
      if (!x.takes_space()) continue;
      at.push_back(x.lower);
      at.push_back(x.upper);
    }
    std::ranges::sort(at);
    at.erase(std::unique(at.begin(), at.end()), at.end());
  }
  [[nodiscard]] std::size_t size() const noexcept { return at.empty() ? 0 : at.size() - 1; }
  [[nodiscard]] std::size_t of(std::uint64_t t) const {
    return static_cast<std::size_t>(std::ranges::lower_bound(at, t) - at.begin());
  }
};

}  // namespace detail

/// arena_bytes of `offsets` on `buffers` (0 when nothing takes space).
[[nodiscard]] inline std::uint64_t arena_bytes_of(std::span<const heap_buffer> buffers,
                                                  std::span<const std::uint64_t> offsets) {
  std::uint64_t arena = 0;
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    if (buffers[b].takes_space()) arena = std::max(arena, offsets[b] + buffers[b].bytes);
  }
  return arena;
}

/// A plan from offsets: arena and peak computed from the buffers.
[[nodiscard]] inline heap_plan make_heap_plan(std::span<const heap_buffer> buffers,
                                              std::vector<std::uint64_t> offsets) {
  heap_plan plan;
  plan.arena_bytes = arena_bytes_of(buffers, offsets);
  plan.peak_bytes = max_live_bytes(buffers);
  plan.offsets = std::move(offsets);
  return plan;
}

}  // namespace memopt
