#pragma once
// splitmix64's finaliser: a well-spread 64-bit value from any 64-bit input,
// the same on every platform (the exact search's set hashes, the beam's
// Zobrist keys, the probes' jitter).

#include <cstdint>

namespace memopt::detail {

inline constexpr std::uint64_t golden_gamma = 0x9e3779b97f4a7c15ULL;  ///< splitmix64's step

[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace memopt::detail
