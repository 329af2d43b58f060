#pragma once
// Offline best-fit packers that see every lifetime first, then place the
// buffers one by one in a global order, each in the smallest hole left by
// the already placed buffers it overlaps in time (else above them all):
// - xla_size_fit: largest first, longer lifetime on ties (XLA's
//   GlobalDecreasingSizeBestFitHeap, kSpatial);
// - xla_area_fit: largest bytes x lifetime first (XLA's kTemporal);
// - greedy_by_size: largest first, in index order on ties (TFLite's
//   greedy-by-size offsets, Pisarchyk & Lee 2020);
// - greedy_by_breadth: the time steps with the most live bytes first, each
//   placing its still unplaced buffers largest first (TFLite's greedy by
//   breadth, applied to offsets).
// O(n log n + K log K), K the overlapping pairs (as XLA's interval tree):
// near n log n when few buffers are live at a time.

#include <memopt/detail/segment_tree.hpp>
#include <memopt/heap/algorithm.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace memopt {
namespace detail {

/// A static centred interval tree over the buffers taking space: which of
/// them are live at some step of a closed range. O(n log n) to build.
class lifetime_tree {
 public:
  explicit lifetime_tree(std::span<const heap_buffer> buffers) : buffers_(buffers) {
    std::vector<std::size_t> all;
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      if (buffers[b].takes_space()) all.push_back(b);
    }
    root_ = build(std::move(all));
  }

  /// Calls f(b) for every buffer live at a step of [first, last].
  template <class F>
  void for_each_overlap(std::uint64_t first, std::uint64_t last, F&& f) const {
    std::vector<std::size_t> stack;
    if (root_ != none) stack.push_back(root_);
    while (!stack.empty()) {
      const node& n = nodes_[stack.back()];
      stack.pop_back();
      if (last < n.center) {
        for (const std::size_t b : n.by_first) {
          if (buffers_[b].lower > last) break;
          f(b);
        }
        if (n.left != none) stack.push_back(n.left);
      } else if (first > n.center) {
        for (const std::size_t b : n.by_last) {
          if (buffers_[b].upper - 1 < first) break;
          f(b);
        }
        if (n.right != none) stack.push_back(n.right);
      } else {
        for (const std::size_t b : n.by_first) f(b);
        if (n.left != none) stack.push_back(n.left);
        if (n.right != none) stack.push_back(n.right);
      }
    }
  }

 private:
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  struct node {
    std::uint64_t center = 0;
    std::vector<std::size_t> by_first;  ///< live at center, by lower ascending
    std::vector<std::size_t> by_last;   ///< live at center, by upper descending
    std::size_t left = none;            ///< dead before center
    std::size_t right = none;           ///< born after center
  };

  std::size_t build(std::vector<std::size_t> items) {
    if (items.empty()) return none;
    // The median first step: some buffer is live there, so each level shrinks.
    const auto middle = items.begin() + static_cast<std::ptrdiff_t>(items.size() / 2);
    std::ranges::nth_element(items, middle, {}, [&](std::size_t b) { return buffers_[b].lower; });
    const std::uint64_t center = buffers_[*middle].lower;
    std::vector<std::size_t> here, left, right;
    for (const std::size_t b : items) {
      if (buffers_[b].upper - 1 < center) {
        left.push_back(b);
      } else if (buffers_[b].lower > center) {
        right.push_back(b);
      } else {
        here.push_back(b);
      }
    }
    items = {};
    const std::size_t id = nodes_.size();
    nodes_.emplace_back().center = center;
    auto by_last = here;
    std::ranges::sort(here, {}, [&](std::size_t b) { return buffers_[b].lower; });
    std::ranges::sort(by_last, std::greater<>{}, [&](std::size_t b) { return buffers_[b].upper; });
    nodes_[id].by_first = std::move(here);
    nodes_[id].by_last = std::move(by_last);
    const std::size_t l = build(std::move(left));
    const std::size_t r = build(std::move(right));
    nodes_[id].left = l;
    nodes_[id].right = r;
    return id;
  }

  std::span<const heap_buffer> buffers_;
  std::vector<node> nodes_;
  std::size_t root_ = none;
};

/// Places the buffers in `order`, each in the smallest hole among the placed
/// buffers it overlaps (lowest on ties), else above them.
[[nodiscard]] inline std::vector<std::uint64_t> place_best_fit(std::span<const heap_buffer> buffers,
                                                               std::span<const std::size_t> order) {
  const lifetime_tree tree(buffers);
  std::vector<std::uint64_t> offsets(buffers.size(), 0);
  std::vector<bool> placed(buffers.size(), false);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> taken;  // [offset, end)
  for (const std::size_t b : order) {
    const heap_buffer& x = buffers[b];
    if (!x.takes_space()) continue;
    taken.clear();
    tree.for_each_overlap(x.lower, x.upper - 1, [&](std::size_t other) {
      if (placed[other]) taken.emplace_back(offsets[other], offsets[other] + buffers[other].bytes);
    });
    std::ranges::sort(taken);
    std::uint64_t best = 0;
    std::uint64_t best_hole = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t reached = 0;  // the top of the taken ranges seen so far
    for (const auto& [begin, end] : taken) {
      if (begin > reached && align_up(reached, x.alignment) + x.bytes <= begin &&
          begin - reached < best_hole) {
        best_hole = begin - reached;
        best = align_up(reached, x.alignment);
      }
      reached = std::max(reached, end);
    }
    offsets[b] = best_hole != std::numeric_limits<std::uint64_t>::max() ? best : align_up(reached, x.alignment);
    placed[b] = true;
  }
  return offsets;
}

/// Buffer indices sorted by `less`.
template <class Less>
[[nodiscard]] std::vector<std::size_t> sorted_buffers(std::size_t n, Less less) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::ranges::stable_sort(order, less);
  return order;
}

/// A global best-fit packer visiting buffers in the order `Order` gives.
template <class Order>
struct global_fit {
  static constexpr std::string_view name() { return Order::name; }
  [[nodiscard]] std::vector<std::uint64_t> pack(std::span<const heap_buffer> buffers) const {
    return place_best_fit(buffers, Order{}(buffers));
  }
};

struct size_then_length_order {
  static constexpr std::string_view name = "xla-size";
  std::vector<std::size_t> operator()(std::span<const heap_buffer> buffers) const {
    return sorted_buffers(buffers.size(), [&](std::size_t a, std::size_t b) {
      const auto length = [&](std::size_t x) { return buffers[x].upper - buffers[x].lower; };
      if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
      return length(a) > length(b);
    });
  }
};

struct area_order {
  static constexpr std::string_view name = "xla-area";
  std::vector<std::size_t> operator()(std::span<const heap_buffer> buffers) const {
    const auto area = [&](std::size_t x) {
      return static_cast<long double>(buffers[x].bytes) *
             static_cast<long double>(buffers[x].upper - buffers[x].lower);
    };
    return sorted_buffers(buffers.size(), [&](std::size_t a, std::size_t b) {
      if (area(a) != area(b)) return area(a) > area(b);
      return buffers[a].bytes > buffers[b].bytes;
    });
  }
};

struct size_order {
  static constexpr std::string_view name = "greedy-size";
  std::vector<std::size_t> operator()(std::span<const heap_buffer> buffers) const {
    return sorted_buffers(buffers.size(), [&](std::size_t a, std::size_t b) {
      return buffers[a].bytes > buffers[b].bytes;
    });
  }
};

/// Each buffer ranks by the busiest time section it lives in (sections by
/// live bytes, descending, earlier first on ties), then by size.
struct breadth_order {
  static constexpr std::string_view name = "greedy-breadth";
  std::vector<std::size_t> operator()(std::span<const heap_buffer> buffers) const {
    const time_sections times(buffers);
    const auto section = [&](std::uint64_t t) { return times.of(t); };
    const std::size_t sections = times.size();
    std::vector<std::uint64_t> breadth(sections + 1, 0);
    for (const auto& x : buffers) {
      if (!x.takes_space()) continue;
      breadth[section(x.lower)] += x.bytes;
      breadth[section(x.upper)] -= x.bytes;
    }
    for (std::size_t s = 1; s < sections; ++s) breadth[s] += breadth[s - 1];
    breadth.resize(sections);
    const auto busiest = sorted_buffers(sections, [&](std::size_t a, std::size_t b) {
      return breadth[a] > breadth[b];
    });
    // rank[s]: position of section s among the busiest; a buffer's key is the
    // least rank over its sections, a range minimum (segment tree, O(log n)).
    constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
    std::vector<std::size_t> rank(sections);
    for (std::size_t r = 0; r < sections; ++r) rank[busiest[r]] = r;
    const min_tree least(rank, none);
    std::vector<std::size_t> key(buffers.size(), none);
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      if (buffers[b].takes_space()) key[b] = least.min(section(buffers[b].lower), section(buffers[b].upper));
    }
    return sorted_buffers(buffers.size(), [&](std::size_t a, std::size_t b) {
      if (key[a] != key[b]) return key[a] < key[b];
      return buffers[a].bytes > buffers[b].bytes;
    });
  }
};

}  // namespace detail

using xla_size_fit = detail::global_fit<detail::size_then_length_order>;
using xla_area_fit = detail::global_fit<detail::area_order>;
using greedy_by_size = detail::global_fit<detail::size_order>;
using greedy_by_breadth = detail::global_fit<detail::breadth_order>;

}  // namespace memopt
