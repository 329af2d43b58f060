#pragma once
// min_tree: the minimum of keys over ranges of positions, with point updates
// (a bottom-up segment tree, O(log n) each). greedy_by_breadth ranks buffers
// by the busiest time section they span with another.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <utility>
#include <vector>

namespace memopt::detail {

template <std::totally_ordered Key>
class min_tree {
 public:
  /// n positions, each holding `empty` (no key is above it).
  min_tree(std::size_t n, Key empty) : size_(width(n)), empty_(empty), tree_(2 * size_, empty) {}
  /// keys.size() positions holding `keys`, built in O(n).
  min_tree(const std::vector<Key>& keys, Key empty) : min_tree(keys.size(), empty) {
    std::ranges::copy(keys, tree_.begin() + static_cast<std::ptrdiff_t>(size_));
    for (std::size_t i = size_ - 1; i > 0; --i) tree_[i] = std::min(tree_[2 * i], tree_[2 * i + 1]);
  }

  void set(std::size_t i, Key key) {
    i += size_;
    tree_[i] = key;
    for (i /= 2; i > 0; i /= 2) {
      Key least = std::min(tree_[2 * i], tree_[2 * i + 1]);
      if (least == tree_[i]) return;  // the ancestors hold what they held
      tree_[i] = std::move(least);
    }
  }
  /// min over positions [lo, hi); `empty` when the range is.
  [[nodiscard]] Key min(std::size_t lo, std::size_t hi) const {
    Key best = empty_;
    for (lo += size_, hi += size_; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) best = std::min(best, tree_[lo++]);
      if (hi & 1) best = std::min(best, tree_[--hi]);
    }
    return best;
  }

 private:
  static std::size_t width(std::size_t n) {
    std::size_t w = 1;
    while (w < n) w *= 2;
    return w;
  }

  std::size_t size_;
  Key empty_;
  std::vector<Key> tree_;
};

}  // namespace memopt::detail
