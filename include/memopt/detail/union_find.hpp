#pragma once
// Disjoint sets over dense indices, with path halving, joined by rank
// (colocation groups). Indices are 32-bit, so a find step touches half the
// memory.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace memopt::detail {

class union_find {
 public:
  /// n singletons; std::length_error from 2^32 elements on.
  explicit union_find(std::size_t n) : parent_(n), rank_(n, 0) {
    if (n > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("union_find: 2^32 or more elements");
    for (std::size_t v = 0; v < n; ++v) parent_[v] = static_cast<std::uint32_t>(v);
  }

  [[nodiscard]] std::size_t size() const noexcept { return parent_.size(); }
  [[nodiscard]] bool is_root(std::size_t v) const { return parent_[v] == v; }

  /// The root of v's set.
  [[nodiscard]] std::size_t find(std::size_t v) {
    while (parent_[v] != v) v = parent_[v] = parent_[parent_[v]];
    return v;
  }
  /// Joins the sets of roots a and b, the shallower under the deeper; returns
  /// the new root.
  std::size_t unite_roots(std::size_t a, std::size_t b) {
    if (a == b) return a;
    if (rank_[a] < rank_[b]) std::swap(a, b);
    if (rank_[a] == rank_[b]) ++rank_[a];
    parent_[b] = static_cast<std::uint32_t>(a);
    return a;
  }

 private:
  std::vector<std::uint32_t> parent_;
  std::vector<std::uint8_t> rank_;
};

}  // namespace memopt::detail
