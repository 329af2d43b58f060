#pragma once
// Online allocators over a free list, as a runtime allocator would place
// buffers: each allocate sees only what is live now. first_fit takes the
// lowest hole that fits, best_fit the smallest (lowest on ties); with no
// fitting hole both grow the arena at its top. Freed holes merge with their
// neighbours. best_fit is O(log n) an event; first_fit O(log n) too, but
// for the scan of one size class (holes between bytes and twice as many).

#include <memopt/heap/algorithm.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

namespace memopt {
namespace detail {

/// How a free list files its holes for the search its allocator makes: by
/// size (the smallest that fits) or by size class (the lowest that fits).
enum class hole_index { by_size, by_class };

/// Holes below the top of the arena, by offset and as `Index` files them.
template <hole_index Index>
class free_list {
 public:
  /// Where `bytes` go: the hole `pick` chooses, else the top.
  template <class Pick>
  std::uint64_t allocate(std::uint64_t bytes, std::uint64_t alignment, Pick pick) {
    if (const auto hole = pick(*this, bytes, alignment)) {
      const auto [begin, end] = *hole;
      const std::uint64_t offset = align_up(begin, alignment);
      erase_hole(begin, end);
      if (begin < offset) add_hole(begin, offset);
      if (offset + bytes < end) add_hole(offset + bytes, end);
      return offset;
    }
    const std::uint64_t offset = align_up(top_, alignment);
    if (top_ < offset) add_hole(top_, offset);
    top_ = offset + bytes;
    high_water_ = std::max(high_water_, top_);
    return offset;
  }

  void free(std::uint64_t offset, std::uint64_t bytes) {
    std::uint64_t begin = offset;
    std::uint64_t end = offset + bytes;
    if (auto next = by_offset_.find(end); next != by_offset_.end()) {
      end = next->second;
      erase_hole(next->first, next->second);
    }
    if (auto next = by_offset_.lower_bound(begin); next != by_offset_.begin()) {
      const auto below = std::prev(next);
      if (below->second == begin) {
        begin = below->first;
        erase_hole(below->first, below->second);
      }
    }
    if (end == top_) {
      top_ = begin;
    } else {
      add_hole(begin, end);
    }
  }

  [[nodiscard]] std::uint64_t high_water() const noexcept { return high_water_; }

  /// The lowest hole holding `bytes` at `alignment`. Holes are filed by size
  /// class (floor of log2): in a class above that of `bytes` the lowest hole
  /// fits (alignment aside), so only one class is scanned.
  [[nodiscard]] std::optional<std::pair<std::uint64_t, std::uint64_t>> lowest_fit(
      std::uint64_t bytes, std::uint64_t alignment) const
    requires(Index == hole_index::by_class) {
    std::optional<std::pair<std::uint64_t, std::uint64_t>> best;
    for (std::size_t c = size_class(bytes); c < by_class_.size(); ++c) {
      for (const std::uint64_t begin : by_class_[c]) {
        if (best && begin >= best->first) break;
        const std::uint64_t end = by_offset_.at(begin);
        if (align_up(begin, alignment) + bytes <= end) {
          best = std::pair{begin, end};
          break;
        }
      }
    }
    return best;
  }

  /// The smallest hole holding `bytes` at `alignment`, lowest on ties.
  [[nodiscard]] std::optional<std::pair<std::uint64_t, std::uint64_t>> smallest_fit(
      std::uint64_t bytes, std::uint64_t alignment) const
    requires(Index == hole_index::by_size) {
    for (auto it = by_size_.lower_bound({bytes, 0}); it != by_size_.end(); ++it) {
      const auto [size, begin] = *it;
      if (align_up(begin, alignment) + bytes <= begin + size) return std::pair{begin, begin + size};
    }
    return std::nullopt;
  }

 private:
  static std::size_t size_class(std::uint64_t bytes) {
    return bytes == 0 ? 0 : static_cast<std::size_t>(std::bit_width(bytes) - 1);
  }
  void add_hole(std::uint64_t begin, std::uint64_t end) {
    by_offset_.emplace(begin, end);
    if constexpr (Index == hole_index::by_size) {
      by_size_.emplace(end - begin, begin);
    } else {
      by_class_[size_class(end - begin)].insert(begin);
    }
  }
  void erase_hole(std::uint64_t begin, std::uint64_t end) {
    by_offset_.erase(begin);
    if constexpr (Index == hole_index::by_size) {
      by_size_.erase({end - begin, begin});
    } else {
      by_class_[size_class(end - begin)].erase(begin);
    }
  }

  std::map<std::uint64_t, std::uint64_t> by_offset_;           // begin -> end
  std::set<std::pair<std::uint64_t, std::uint64_t>> by_size_;  // (size, begin): by_size only
  std::array<std::set<std::uint64_t>, 64> by_class_;           // begins by size class: by_class only
  std::uint64_t top_ = 0;
  std::uint64_t high_water_ = 0;
};

/// An online allocator choosing holes with `Pick`.
template <class Pick>
class online_fit {
 public:
  static constexpr std::string_view name() { return Pick::name; }
  void allocate(buffer_id b, std::uint64_t bytes, std::uint64_t alignment = 1) {
    if (b >= offsets_.size()) offsets_.resize(b + 1, 0);
    if (bytes == 0) return;
    offsets_[b] = holes_.allocate(bytes, alignment, Pick{});
    live_bytes_ += bytes;
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  }
  void free(buffer_id b, std::uint64_t bytes) {
    if (bytes == 0) return;
    holes_.free(offsets_[b], bytes);
    live_bytes_ -= bytes;
  }
  [[nodiscard]] heap_plan finish() && {
    heap_plan plan;
    plan.arena_bytes = holes_.high_water();
    plan.peak_bytes = peak_bytes_;
    plan.offsets = std::move(offsets_);
    return plan;
  }

 private:
  free_list<Pick::index> holes_;
  std::vector<std::uint64_t> offsets_;
  std::uint64_t live_bytes_ = 0;
  std::uint64_t peak_bytes_ = 0;
};

struct pick_lowest {
  static constexpr std::string_view name = "first-fit";
  static constexpr hole_index index = hole_index::by_class;
  auto operator()(const free_list<index>& holes, std::uint64_t bytes, std::uint64_t alignment) const {
    return holes.lowest_fit(bytes, alignment);
  }
};
struct pick_smallest {
  static constexpr std::string_view name = "best-fit";
  static constexpr hole_index index = hole_index::by_size;
  auto operator()(const free_list<index>& holes, std::uint64_t bytes, std::uint64_t alignment) const {
    return holes.smallest_fit(bytes, alignment);
  }
};

}  // namespace detail

/// The lowest hole that fits (a classic free-list allocator).
using first_fit = detail::online_fit<detail::pick_lowest>;
/// The smallest hole that fits, as XLA's lazy best-fit heap.
using best_fit = detail::online_fit<detail::pick_smallest>;

}  // namespace memopt
