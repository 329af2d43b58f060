#pragma once
// How the online allocators (heap/online_fit.hpp) file their holes for the
// search each makes, every hole a half-open [begin, end) of the arena:
// - holes_by_class: the lowest hole that fits (first fit), by size class;
// - holes_by_size: the smallest hole that fits, lowest on ties (best fit),
//   in flat buckets of close sizes.
// Each takes insert(hole), erase(hole) and find(bytes, alignment), the hole
// chosen for `bytes` at `alignment` if one fits.

#include <memopt/heap/algorithm.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

namespace memopt::detail {

/// [begin, end) of the arena, free; `block` names it in its allocator's list.
struct hole {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::size_t block = 0;

  [[nodiscard]] bool fits(std::uint64_t bytes, std::uint64_t alignment) const {
    return align_up(begin, alignment) + bytes <= end;
  }
};

/// First fit's holes, by size class (floor of log2 of the size) and begin: in
/// a class above that of `bytes` the lowest hole fits (alignment aside), so
/// only one class is scanned. O(log n) an update, a search O(log n) but for
/// the scan of one class.
class holes_by_class {
 public:
  static constexpr std::string_view allocator_name = "first-fit";

  void insert(const hole& h) { by_class_[size_class(h.end - h.begin)].emplace(h.begin, h); }
  void erase(const hole& h) { by_class_[size_class(h.end - h.begin)].erase(h.begin); }

  /// The lowest hole holding `bytes` at `alignment`.
  [[nodiscard]] std::optional<hole> find(std::uint64_t bytes, std::uint64_t alignment) const {
    std::optional<hole> best;
    for (std::size_t c = size_class(bytes); c < by_class_.size(); ++c) {
      for (const auto& [begin, h] : by_class_[c]) {
        if (best && begin >= best->begin) break;
        if (h.fits(bytes, alignment)) {
          best = h;
          break;
        }
      }
    }
    return best;
  }

 private:
  static std::size_t size_class(std::uint64_t bytes) {
    return bytes == 0 ? 0 : static_cast<std::size_t>(std::bit_width(bytes) - 1);
  }

  std::array<std::map<std::uint64_t, hole>, 64> by_class_;  // by size class, by begin
};

/// Best fit's holes in order of (size, begin), as sorted runs in buckets of
/// close sizes: a size's bucket is its floor of log2 and the next
/// `fraction_bits` bits (as a float's exponent and mantissa), so buckets
/// follow sizes and each spans at most 1/256 of its sizes (finer buckets keep
/// runs short: 16,000 holes at 10^6 vertices). A bit map marks the buckets in
/// use, a summary the words in use. The smallest hole of at least `bytes` is
/// in the bucket of `bytes` or first in the next bucket in use: a search is a
/// binary search in one bucket and a few bit scans, an update a binary search
/// and a move within one bucket; no allocation once buckets have grown. (A
/// std::set of (size, begin) did the same with a heap node per hole and a
/// cache miss per level.)
///
/// Holes smaller than a threshold no request has gone under wait aside,
/// unsorted, in and out in O(1): best fit leaves many slivers that no buffer
/// fits, and filed they made most of the sorted runs' length. A request under
/// the threshold halves it below itself and files the holes that have grown
/// eligible: at most 64 such passes over the holes aside, and holes a request
/// could take are always filed, so the choice is best fit's exactly.
class holes_by_size {
 public:
  static constexpr std::string_view allocator_name = "best-fit";

  void insert(const hole& h) {
    const entry e = entry_of(h);
    if (e.size < filed_from_) {
      if (e.block >= aside_at_.size()) aside_at_.resize(2 * e.block + 1);
      aside_at_[e.block] = aside_.size();
      aside_.push_back(e);
      return;
    }
    file(e);
  }

  void erase(const hole& h) {
    const entry e = entry_of(h);
    if (e.size < filed_from_) {
      const std::size_t at = aside_at_[e.block];
      aside_[at] = aside_.back();
      aside_at_[aside_[at].block] = at;
      aside_.pop_back();
      return;
    }
    const std::size_t b = bucket_of(e.size);
    auto& run = buckets_[b];
    run.erase(std::ranges::lower_bound(run, e));
    if (!run.empty()) return;
    in_use_[b / 64] &= ~(std::uint64_t{1} << (b % 64));
    if (in_use_[b / 64] == 0) words_in_use_[b / 64 / 64] &= ~(std::uint64_t{1} << (b / 64 % 64));
  }

  /// The smallest hole holding `bytes` at `alignment`, lowest on ties.
  [[nodiscard]] std::optional<hole> find(std::uint64_t bytes, std::uint64_t alignment) {
    if (bytes < filed_from_) file_from(bytes / 2);
    std::size_t b = bucket_of(bytes);
    if (b >= buckets_.size()) return std::nullopt;  // every hole is smaller
    // In the bucket of `bytes`, holes from `bytes` up; in later ones, all.
    auto from = std::ranges::lower_bound(buckets_[b], entry{bytes, 0, 0});
    while (true) {
      for (auto it = from; it != buckets_[b].end(); ++it) {
        const hole h{it->begin, it->begin + it->size, it->block};
        if (h.fits(bytes, alignment)) return h;
      }
      b = next_in_use(b + 1);
      if (b == no_bucket) return std::nullopt;
      from = buckets_[b].begin();
    }
  }

 private:
  struct entry {  // (size, begin) is unique: the block never decides the order
    std::uint64_t size;
    std::uint64_t begin;
    std::size_t block;
    friend auto operator<=>(const entry&, const entry&) = default;
  };
  static entry entry_of(const hole& h) { return {h.end - h.begin, h.begin, h.block}; }

  void file(const entry& e) {
    const std::size_t b = bucket_of(e.size);
    if (b >= buckets_.size()) buckets_.resize(b + 1);
    auto& run = buckets_[b];
    run.insert(std::ranges::lower_bound(run, e), e);
    set_bit(in_use_, b);
    set_bit(words_in_use_, b / 64);
  }
  /// Lowers the threshold to `size`, filing the holes aside it now reaches.
  void file_from(std::uint64_t size) {
    filed_from_ = size;
    std::size_t kept = 0;
    for (std::size_t k = 0; k < aside_.size(); ++k) {
      const entry e = aside_[k];
      if (e.size >= size) {
        file(e);
      } else {
        aside_at_[e.block] = kept;
        aside_[kept++] = e;
      }
    }
    aside_.resize(kept);
  }

  static constexpr unsigned fraction_bits = 8;
  static constexpr std::size_t num_buckets = std::size_t{65 - fraction_bits} << fraction_bits;
  static constexpr std::size_t no_bucket = num_buckets;
  static constexpr std::size_t num_words = (num_buckets + 63) / 64;

  /// Sizes below 2^(fraction_bits + 1) have a bucket each; above, a bucket
  /// per top fraction_bits + 1 bits: increasing with size, and dense.
  static std::size_t bucket_of(std::uint64_t size) {
    const auto width = static_cast<unsigned>(std::bit_width(size));
    const unsigned shift = std::max(width, fraction_bits + 1) - fraction_bits - 1;
    return (std::size_t{shift} << fraction_bits) + static_cast<std::size_t>(size >> shift);
  }

  template <std::size_t N>
  static void set_bit(std::array<std::uint64_t, N>& bits, std::size_t i) {
    bits[i / 64] |= std::uint64_t{1} << (i % 64);
  }
  /// The first bit set from i on, else 64 * N.
  template <std::size_t N>
  static std::size_t next_set(const std::array<std::uint64_t, N>& bits, std::size_t i) {
    if (i >= 64 * N) return 64 * N;
    if (const std::uint64_t rest = bits[i / 64] >> (i % 64); rest != 0) {
      return i + static_cast<std::size_t>(std::countr_zero(rest));
    }
    for (std::size_t w = i / 64 + 1; w < N; ++w) {
      if (bits[w] != 0) return 64 * w + static_cast<std::size_t>(std::countr_zero(bits[w]));
    }
    return 64 * N;
  }

  /// The first bucket in use from b on, else no_bucket.
  [[nodiscard]] std::size_t next_in_use(std::size_t b) const {
    if (b >= num_buckets) return no_bucket;
    if (const std::uint64_t rest = in_use_[b / 64] >> (b % 64); rest != 0) {
      return b + static_cast<std::size_t>(std::countr_zero(rest));
    }
    const std::size_t w = next_set(words_in_use_, b / 64 + 1);
    return w >= num_words ? no_bucket : 64 * w + static_cast<std::size_t>(std::countr_zero(in_use_[w]));
  }

  std::uint64_t filed_from_ = UINT64_MAX;  ///< holes this large or larger are filed in buckets_
  std::vector<entry> aside_;               ///< the others, unsorted
  std::vector<std::size_t> aside_at_;      ///< by block: its place in aside_ while there
  std::vector<std::vector<entry>> buckets_;  // sorted; grown to the largest bucket used
  std::array<std::uint64_t, num_words> in_use_{};
  std::array<std::uint64_t, (num_words + 63) / 64> words_in_use_{};
};

}  // namespace memopt::detail
