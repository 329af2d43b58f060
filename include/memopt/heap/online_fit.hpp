#pragma once
// Online allocators over a free list, as a runtime allocator would place
// buffers: each allocate sees only what is live now. first_fit takes the
// lowest hole that fits, best_fit the smallest (lowest on ties); with no
// fitting hole both grow the arena at its top. Freed holes merge with their
// neighbours. Each hole index (heap/hole_index.hpp) serves one search: best
// fit's takes O(log n) an event, first fit's O(log n) too but for the scan of
// one size class (holes between bytes and twice as many).

#include <memopt/heap/algorithm.hpp>
#include <memopt/heap/hole_index.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace memopt {
namespace detail {

/// The arena below its top, buffers and holes in address order: a linked list
/// of blocks in a pool of slots, so that a freed buffer meets its neighbours
/// in O(1) and a block costs no allocation of its own. `Holes` files the holes
/// for the allocator's search. No hole ends at the top: it lowers the top.
template <class Holes>
class free_list {
 public:
  struct placement {
    std::uint64_t offset;
    std::size_t block;  ///< what free takes back
  };

  /// Where `bytes` go: the hole `Holes` finds, else the top.
  placement allocate(std::uint64_t bytes, std::uint64_t alignment) {
    if (const auto found = holes_.find(bytes, alignment)) {
      const std::uint64_t offset = align_up(found->begin, alignment);
      const std::size_t at = found->block;
      holes_.erase(*found);
      if (found->begin < offset) add_hole(found->begin, offset, blocks_[at].prev, at);
      if (offset + bytes < found->end) add_hole(offset + bytes, found->end, at, blocks_[at].next);
      blocks_[at].begin = offset;
      blocks_[at].end = offset + bytes;
      blocks_[at].is_hole = false;
      return {offset, at};
    }
    const std::uint64_t offset = align_up(top_, alignment);
    if (top_ < offset) add_hole(top_, offset, last_, none);
    top_ = offset + bytes;
    high_water_ = std::max(high_water_, top_);
    return {offset, link({offset, top_, last_, none, false})};
  }

  void free(std::size_t at) {
    std::uint64_t begin = blocks_[at].begin;
    std::uint64_t end = blocks_[at].end;
    if (const std::size_t next = blocks_[at].next; next != none && blocks_[next].is_hole) {
      end = blocks_[next].end;
      remove_hole(next);
    }
    if (const std::size_t prev = blocks_[at].prev; prev != none && blocks_[prev].is_hole) {
      begin = blocks_[prev].begin;
      remove_hole(prev);
    }
    if (at == last_) {
      top_ = begin;
      unlink(at);
    } else {
      blocks_[at].begin = begin;
      blocks_[at].end = end;
      blocks_[at].is_hole = true;
      holes_.insert({begin, end, at});
    }
  }

  [[nodiscard]] std::uint64_t high_water() const noexcept { return high_water_; }

 private:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  struct block {
    std::uint64_t begin;
    std::uint64_t end;
    std::size_t prev;  // the block below, none at 0
    std::size_t next;  // the block above, none at the top
    bool is_hole;
  };

  /// A slot for b, linked between its prev and next.
  std::size_t link(const block& b) {
    std::size_t at = blocks_.size();
    if (spare_.empty()) {
      blocks_.push_back(b);
    } else {
      at = spare_.back();
      spare_.pop_back();
      blocks_[at] = b;
    }
    if (b.prev != none) blocks_[b.prev].next = at;
    if (b.next == none) {
      last_ = at;
    } else {
      blocks_[b.next].prev = at;
    }
    return at;
  }
  void unlink(std::size_t at) {
    const block& b = blocks_[at];
    if (b.prev != none) blocks_[b.prev].next = b.next;
    if (b.next == none) {
      last_ = b.prev;
    } else {
      blocks_[b.next].prev = b.prev;
    }
    spare_.push_back(at);
  }
  void add_hole(std::uint64_t begin, std::uint64_t end, std::size_t prev, std::size_t next) {
    holes_.insert({begin, end, link({begin, end, prev, next, true})});
  }
  void remove_hole(std::size_t at) {
    holes_.erase({blocks_[at].begin, blocks_[at].end, at});
    unlink(at);
  }

  std::vector<block> blocks_;
  std::vector<std::size_t> spare_;  // slots of blocks merged away
  std::size_t last_ = none;         // the block ending at the top
  Holes holes_;
  std::uint64_t top_ = 0;
  std::uint64_t high_water_ = 0;
};

/// An online allocator searching holes filed by `Holes`.
template <class Holes>
class online_fit {
 public:
  static constexpr std::string_view name() { return Holes::allocator_name; }
  void allocate(buffer_id b, std::uint64_t bytes, std::uint64_t alignment = 1) {
    if (b >= offsets_.size()) {
      offsets_.resize(b + 1, 0);
      block_of_.resize(b + 1, 0);
    }
    if (bytes == 0) return;
    const auto [offset, block] = holes_.allocate(bytes, alignment);
    offsets_[b] = offset;
    block_of_[b] = block;
    live_bytes_ += bytes;
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  }
  void free(buffer_id b, std::uint64_t bytes) {
    if (bytes == 0) return;
    holes_.free(block_of_[b]);
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
  free_list<Holes> holes_;
  std::vector<std::uint64_t> offsets_;
  std::vector<std::size_t> block_of_;  // by buffer: its block in holes_ while live
  std::uint64_t live_bytes_ = 0;
  std::uint64_t peak_bytes_ = 0;
};

}  // namespace detail

/// The lowest hole that fits (a classic free-list allocator).
using first_fit = detail::online_fit<detail::holes_by_class>;
/// The smallest hole that fits, as XLA's lazy best-fit heap.
using best_fit = detail::online_fit<detail::holes_by_size>;

}  // namespace memopt
