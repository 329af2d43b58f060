#pragma once
// Checked arithmetic on byte counts: sums of sizes must not wrap silently.
// add_overflows is the one portable primitive (the compiler's builtin where
// there is one); checked_add throws size_overflow_error naming the vertex
// whose bytes did not fit.

#include <memopt/error.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace memopt::detail {

/// out = a + b (wrapped); true when the true sum does not fit T.
template <std::unsigned_integral T>
[[nodiscard]] constexpr bool add_overflows(T a, T b, T& out) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_add_overflow(a, b, &out);
#else
  out = static_cast<T>(a + b);
  return out < a;
#endif
}

/// sum + added, or size_overflow_error naming `vertex`.
inline std::uint64_t checked_add(std::uint64_t sum, std::uint64_t added, std::size_t vertex) {
  std::uint64_t total = 0;
  if (add_overflows(sum, added, total)) throw size_overflow_error(vertex, sum, added);
  return total;
}

/// The same, naming the vertex `vertex_of()` returns; it is called only on
/// an overflow, so a vertex that costs a random read to find costs nothing
/// on the way.
template <std::invocable VertexOf>
std::uint64_t checked_add(std::uint64_t sum, std::uint64_t added, VertexOf&& vertex_of) {
  std::uint64_t total = 0;
  if (add_overflows(sum, added, total)) throw size_overflow_error(vertex_of(), sum, added);
  return total;
}

}  // namespace memopt::detail
