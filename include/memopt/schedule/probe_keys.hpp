#pragma once
// How the exact scheduler's depth-first probes (segment_search.hpp) order the
// moves of a set and when they restart: the Luby sequence of run lengths, and
// sort keys that differ from one run to the next, the same on every platform
// (splitmix64): live bytes jittered, or positions in an incumbent order.

#include <memopt/detail/splitmix.hpp>

#include <cstddef>
#include <cstdint>

namespace memopt::detail {

/// How the depth-first probes order their moves (segment_search).
enum class probe_guidance {
  none,       ///< least live bytes after the move first
  incumbent,  ///< also the incumbent's order: a probe just under its peak first
};

/// The Luby sequence 1, 1, 2, 1, 1, 2, 4, 1, ... at n >= 1: restart lengths
/// within a log factor of the best fixed length, unknown here.
inline std::uint64_t luby(std::uint64_t n) {
  for (std::uint64_t size = 1;; size = 2 * size + 1) {
    if (size == n) return (size + 1) / 2;
    if (size > n) return luby(n - size / 2);
  }
}

/// `live` moved by up to 1/16 either way, the same for (run, vertex).
inline std::uint64_t jittered(std::uint64_t live, std::uint64_t run, std::size_t vertex) {
  const std::uint64_t z = splitmix64(run * golden_gamma + vertex);
  const std::uint64_t step = live / 16 / 1024;
  return live - live / 16 + step * (z % 2049);
}

/// A sort key for the vertex at `position` of an order: in the first run the
/// position, later moved by up to three places, the same for (run, vertex).
inline std::uint64_t near_position(std::uint64_t position, std::uint64_t run, std::size_t vertex) {
  if (run == 0) return position * 64;
  return position * 64 + splitmix64(run * golden_gamma + vertex) % 256;
}

}  // namespace memopt::detail
