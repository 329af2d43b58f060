#pragma once
// exact_fit's complete search (detail::exact_search): the decision whether
// the buffers that take space fit a capacity, a depth-first search in the
// manner of Moffitt's MiniMalloc with canonical solutions, per-section lower
// bounds, dominance, decomposition at cut points and restarts over static
// buffer orders (see heap/exact.hpp). Some buffers may be fixed at offsets
// the others avoid, as the search by windows (heap/window_search.hpp) needs.

#include <memopt/detail/budget.hpp>
#include <memopt/detail/event_sweep.hpp>
#include <memopt/heap/algorithm.hpp>
#include <memopt/heap/problem.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memopt::detail {

/// No fixed offset: the buffer is the search's to place.
inline constexpr std::uint64_t no_offset = std::numeric_limits<std::uint64_t>::max();

/// The decision search on the buffers taking space ("items").
class exact_search {
 public:
  enum class outcome { found, none, out_of_nodes, out_of_time };

  /// `fixed`, empty or one entry per buffer: the offset a buffer must keep
  /// (an obstacle the others avoid), or no_offset for a buffer to place.
  exact_search(std::span<const heap_buffer> buffers, std::vector<std::string> preorders,
               std::span<const std::uint64_t> fixed = {})
      : num_buffers_(buffers.size()), preorders_(std::move(preorders)) {
    std::vector<std::size_t> obstacles;
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      if (!buffers[b].takes_space()) continue;
      if (!fixed.empty() && fixed[b] != no_offset) {
        obstacles.push_back(b);
      } else {
        buffer_of_.push_back(b);
        items_.push_back(buffers[b]);
      }
    }
    const time_sections times(buffers);  // obstacles' ends too: a section is all or none of one
    const auto section = [&](std::uint64_t t) { return times.of(t); };
    const std::size_t n = items_.size();
    sections_ = times.size();
    span_.resize(n);
    members_.resize(sections_);
    cuts_.assign(sections_ == 0 ? 0 : sections_ - 1, 0);
    slot_base_.resize(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      span_[i] = {section(items_[i].lower), section(items_[i].upper)};
      slot_base_[i + 1] = slot_base_[i] + (span_[i].second - span_[i].first);
      for (std::size_t s = span_[i].first; s + 1 < span_[i].second; ++s) ++cuts_[s];
    }
    slot_.resize(slot_base_[n]);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t s = span_[i].first; s < span_[i].second; ++s) {
        slot_[slot_base_[i] + (s - span_[i].first)] = members_[s].size();
        members_[s].push_back(i);
      }
    }
    if (!obstacles.empty()) {
      blocks_of_.resize(n);
      section_blocks_.resize(sections_);
      for (const std::size_t b : obstacles) {
        const block k{fixed[b], fixed[b] + buffers[b].bytes};
        const range covers{section(buffers[b].lower), section(buffers[b].upper)};
        for (std::size_t s = covers.first; s < covers.second; ++s) section_blocks_[s].push_back(k);
        for (std::size_t i = 0; i < n; ++i) {
          if (span_[i].first < covers.second && covers.first < span_[i].second) blocks_of_[i].push_back(k);
        }
      }
      for (auto& list : blocks_of_) std::ranges::sort(list, {}, &block::offset);
      section_bytes_above_.resize(sections_);
      for (std::size_t s = 0; s < sections_; ++s) {
        auto& list = section_blocks_[s];
        std::ranges::sort(list, {}, &block::offset);
        auto& sums = section_bytes_above_[s];
        sums.assign(list.size() + 1, 0);
        for (std::size_t k = list.size(); k-- > 0;) sums[k] = sums[k + 1] + (list[k].top - list[k].offset);
      }
    }
    unplaced_in_.resize(sections_);
    for (std::size_t s = 0; s < sections_; ++s) unplaced_in_[s] = members_[s].size();
    // Overlapping pairs by a sweep over sections (the lists' order is immaterial).
    overlaps_.resize(n);
    std::vector<std::size_t> active;
    sweep_intervals(
        n, [&](std::size_t i) { return std::pair<std::uint64_t, std::uint64_t>(span_[i].first, span_[i].second); },
        [&](std::size_t i) {
          for (const std::size_t j : active) {
            overlaps_[i].push_back(j);
            overlaps_[j].push_back(i);
          }
          active.push_back(i);
        },
        [&](std::size_t j) { std::erase(active, j); });
  }

  /// Offsets of every buffer fitting `capacity`, or why there are none.
  std::pair<outcome, std::vector<std::uint64_t>> solve(std::uint64_t capacity, search_budget& budget) {
    capacity_ = capacity;
    budget_ = &budget;
    const std::size_t n = items_.size();
    placed_.assign(n, false);
    offset_.assign(n, 0);
    solution_.assign(n, 0);
    min_offset_.assign(n, 0);
    for (std::size_t i = 0; i < n && !blocks_of_.empty(); ++i) min_offset_[i] = lowest_free(i, 0);
    floor_.assign(sections_, 0);
    total_.assign(sections_, 0);
    touched_at_.assign(sections_, 0);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t s = span_[i].first; s < span_[i].second; ++s) total_[s] += items_[i].bytes;
    }
    outcome result = n == 0 ? outcome::found : outcome::out_of_nodes;
    for (std::uint64_t limit = 2 * n; result == outcome::out_of_nodes; limit *= 2) {
      for (const auto& preorder : preorders_) {
        nodes_left_ = limit;
        preorder_ = &preorder;
        result = solve_range(all_items(), {0, sections_});
        if (result != outcome::out_of_nodes) break;
      }
    }
    std::vector<std::uint64_t> offsets;
    if (result == outcome::found) {
      offsets.assign(num_buffers_, 0);
      for (std::size_t i = 0; i < n; ++i) offsets[buffer_of_[i]] = solution_[i];
    }
    return {result, std::move(offsets)};
  }

  [[nodiscard]] std::uint64_t nodes() const noexcept { return nodes_; }

 private:
  using range = std::pair<std::size_t, std::size_t>;  // sections [first, second)
  struct candidate {
    std::uint64_t offset;
    std::size_t rank;  // position in the static order
  };
  struct change {
    std::size_t index;
    std::uint64_t old_value;
  };
  struct block {  // a fixed buffer's bytes [offset, top)
    std::uint64_t offset;
    std::uint64_t top;
  };

  [[nodiscard]] std::vector<std::size_t> all_items() const {
    std::vector<std::size_t> all(items_.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    return all;
  }

  /// Solves the items of `part`, which no unplaced item outside it overlaps,
  /// one independent piece at a time.
  outcome solve_range(const std::vector<std::size_t>& part, range sections) {
    // Split at cut points no item of the part crosses.
    std::size_t start = sections.first;
    for (std::size_t s = sections.first; s < sections.second; ++s) {
      const bool cut_after = s + 1 == sections.second || cuts_[s] == 0;
      if (!cut_after) continue;
      std::vector<std::size_t> piece;
      for (const std::size_t i : part) {
        if (!placed_[i] && span_[i].first < s + 1 && start < span_[i].second) piece.push_back(i);
      }
      if (!piece.empty()) {
        const outcome result = solve_piece(piece, {start, s + 1});
        if (result != outcome::found) return result;
      }
      start = s + 1;
    }
    return outcome::found;
  }

  outcome solve_piece(const std::vector<std::size_t>& piece, range sections) {
    const auto key = [&](std::size_t i, char k) -> long double {
      const heap_buffer& x = items_[i];
      const auto length = static_cast<long double>(x.upper - x.lower);
      switch (k) {
        case 'W': return length;
        case 'A': return length * static_cast<long double>(x.bytes);
        case 'Z': return static_cast<long double>(x.bytes);
        case 'L': return static_cast<long double>(x.lower);
        case 'U': return static_cast<long double>(x.upper);
        case 'T': {
          std::uint64_t most = 0;
          for (std::size_t s = span_[i].first; s < span_[i].second; ++s) most = std::max(most, total_[s]);
          return static_cast<long double>(most);
        }
        default: return 0;
      }
    };
    std::vector<std::pair<std::vector<long double>, std::size_t>> keyed;
    for (const std::size_t i : piece) {
      std::vector<long double> keys;
      for (const char k : *preorder_) keys.push_back(key(i, k));
      keyed.emplace_back(std::move(keys), i);
    }
    std::ranges::sort(keyed, [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::vector<std::size_t> order;
    order.reserve(keyed.size());
    for (const auto& entry : keyed) order.push_back(entry.second);
    std::vector<candidate> start(order.size());
    for (std::size_t r = 0; r < order.size(); ++r) start[r] = {0, r};
    return search(order, sections, start, 0, 0);
  }

  /// Places one more item of `order` (at its lowest offset) in every way the
  /// pruning rules allow, and recurses.
  outcome search(const std::vector<std::size_t>& order, range sections,
                 const std::vector<candidate>& previous, std::uint64_t last_offset,
                 std::size_t last_rank) {
    if (nodes_left_ == 0) return outcome::out_of_nodes;
    --nodes_left_;
    ++nodes_;
    if (!budget_->spend()) return outcome::out_of_time;
    std::vector<candidate> ready;
    ready.reserve(previous.size());
    for (const candidate& c : previous) {
      const std::size_t i = order[c.rank];
      if (!placed_[i]) ready.push_back({min_offset_[i], c.rank});
    }
    if (ready.empty()) {
      for (const std::size_t i : order) solution_[i] = offset_[i];
      return outcome::found;
    }
    std::ranges::sort(ready, [](const candidate& a, const candidate& b) {
      return a.offset != b.offset ? a.offset < b.offset : a.rank < b.rank;
    });
    // No item may go at or above the lowest top any unplaced item could reach:
    // that item would fit beneath, so the hole below would be wasted.
    std::uint64_t lowest_top = std::numeric_limits<std::uint64_t>::max();
    for (const candidate& c : ready) lowest_top = std::min(lowest_top, c.offset + items_[order[c.rank]].bytes);
    for (const candidate& c : ready) {
      if (c.offset < last_offset || (c.offset == last_offset && c.rank < last_rank)) continue;
      if (c.offset >= lowest_top) continue;
      const std::size_t i = order[c.rank];
      const std::size_t mins_mark = min_changes_.size();
      const std::size_t floors_mark = floor_changes_.size();
      const bool has_hat = place(i, c.offset);
      outcome result = outcome::none;
      if (feasible(sections, c.offset)) result = descend(i, order, sections, ready, c);
      unplace(i, mins_mark, floors_mark);
      if (result != outcome::none) return result;
      if (!has_hat) break;  // nothing above it: any other choice fails the same way
    }
    return outcome::none;
  }

  /// Recurses after placing i, in independent pieces when i was the last item
  /// crossing some cut points.
  outcome descend(std::size_t i, const std::vector<std::size_t>& order, range sections,
                  const std::vector<candidate>& ready, const candidate& c) {
    solution_[i] = offset_[i];
    bool split = false;
    for (std::size_t s = span_[i].first; s + 1 < span_[i].second; ++s) split |= --cuts_[s] == 0;
    const outcome result =
        split ? solve_range(order, sections) : search(order, sections, ready, c.offset, c.rank);
    for (std::size_t s = span_[i].first; s + 1 < span_[i].second; ++s) ++cuts_[s];
    return result;
  }

  /// Places i at `offset`; true when some unplaced item overlaps it.
  bool place(std::size_t i, std::uint64_t offset) {
    placed_[i] = true;
    offset_[i] = offset;
    const std::uint64_t top = offset + items_[i].bytes;
    bool has_hat = false;
    touched_.clear();
    ++epoch_;
    for (const std::size_t j : overlaps_[i]) {
      if (placed_[j]) continue;
      has_hat = true;
      if (min_offset_[j] >= top) continue;
      min_changes_.push_back({j, min_offset_[j]});
      min_offset_[j] = blocks_of_.empty() ? align_up(top, items_[j].alignment) : lowest_free(j, top);
      for (std::size_t s = span_[j].first; s < span_[j].second; ++s) {
        if (touched_at_[s] != epoch_) touched_.push_back(s);
        touched_at_[s] = epoch_;
      }
    }
    for (std::size_t s = span_[i].first; s < span_[i].second; ++s) {
      floor_changes_.push_back({s, floor_[s]});
      floor_[s] = top;
      total_[s] -= items_[i].bytes;
      // Move i behind the unplaced members of s; unplace (LIFO) moves it back.
      const std::size_t last = members_[s][--unplaced_in_[s]];
      std::size_t& i_slot = slot_[slot_base_[i] + (s - span_[i].first)];
      std::size_t& last_slot = slot_[slot_base_[last] + (s - span_[last].first)];
      std::swap(members_[s][i_slot], members_[s][last_slot]);
      std::swap(i_slot, last_slot);
    }
    // A section's floor is at least the lowest offset its unplaced items can take.
    for (const std::size_t s : touched_) {
      std::uint64_t lowest = unplaced_in_[s] == 0 ? 0 : std::numeric_limits<std::uint64_t>::max();
      for (std::size_t k = 0; k < unplaced_in_[s] && lowest > floor_[s]; ++k) {
        lowest = std::min(lowest, min_offset_[members_[s][k]]);
      }
      if (floor_[s] < lowest) {
        floor_changes_.push_back({s, floor_[s]});
        floor_[s] = lowest;
      }
    }
    return has_hat;
  }

  void unplace(std::size_t i, std::size_t mins_mark, std::size_t floors_mark) {
    for (std::size_t k = floor_changes_.size(); k > floors_mark; --k) {
      floor_[floor_changes_[k - 1].index] = floor_changes_[k - 1].old_value;
    }
    floor_changes_.resize(floors_mark);
    for (std::size_t k = min_changes_.size(); k > mins_mark; --k) {
      min_offset_[min_changes_[k - 1].index] = min_changes_[k - 1].old_value;
    }
    min_changes_.resize(mins_mark);
    for (std::size_t s = span_[i].first; s < span_[i].second; ++s) {
      total_[s] += items_[i].bytes;
      ++unplaced_in_[s];
    }
    placed_[i] = false;
  }

  /// Every section can still hold what is left of it above its floor (and
  /// beside the fixed buffers there).
  [[nodiscard]] bool feasible(range sections, std::uint64_t offset) const {
    if (section_blocks_.empty()) {
      for (std::size_t s = sections.first; s < sections.second; ++s) {
        if (std::max(floor_[s], offset) + total_[s] > capacity_) return false;
      }
      return true;
    }
    for (std::size_t s = sections.first; s < sections.second; ++s) {
      const std::uint64_t floor = std::max(floor_[s], offset);
      if (floor > capacity_ || total_[s] + fixed_above(s, floor) > capacity_ - floor) return false;
    }
    return true;
  }

  /// Bytes of fixed buffers in section s above `floor`: they are live
  /// together, so disjoint, and by offset their tops rise too.
  [[nodiscard]] std::uint64_t fixed_above(std::size_t s, std::uint64_t floor) const {
    const auto& blocks = section_blocks_[s];
    if (blocks.empty()) return 0;
    const auto above = std::ranges::upper_bound(blocks, floor, {}, &block::top);
    if (above == blocks.end()) return 0;
    const auto k = static_cast<std::size_t>(above - blocks.begin());
    return section_bytes_above_[s][k] - (floor > above->offset ? floor - above->offset : 0);
  }

  /// The lowest aligned offset at or above `at` where item i misses every
  /// fixed buffer it meets in time.
  [[nodiscard]] std::uint64_t lowest_free(std::size_t i, std::uint64_t at) const {
    const std::uint64_t alignment = items_[i].alignment;
    std::uint64_t offset = align_up(at, alignment);
    for (const block& k : blocks_of_[i]) {  // by offset: each one passed stays below
      if (k.offset >= offset + items_[i].bytes) break;
      if (k.top > offset) offset = align_up(k.top, alignment);
    }
    return offset;
  }

  std::size_t num_buffers_ = 0;
  std::vector<heap_buffer> items_;
  std::vector<std::size_t> buffer_of_;
  std::vector<std::string> preorders_;
  const std::string* preorder_ = nullptr;  // the static order of this round
  std::size_t sections_ = 0;
  std::vector<range> span_;                              // sections of each item
  std::vector<std::vector<std::size_t>> members_;        // items of each section, unplaced first
  std::vector<std::size_t> unplaced_in_;                 // how many members_[s] are unplaced
  std::vector<std::size_t> slot_base_, slot_;            // item i's place in members_[s]
  std::vector<std::vector<std::size_t>> overlaps_;       // items overlapping each item
  std::vector<std::size_t> cuts_;                        // unplaced items crossing s | s+1
  std::vector<std::vector<block>> blocks_of_;            // fixed buffers meeting item i, by offset
  std::vector<std::vector<block>> section_blocks_;       // fixed buffers live in section s, by offset
  std::vector<std::vector<std::uint64_t>> section_bytes_above_;  // their bytes from the k-th up

  std::uint64_t capacity_ = 0;
  search_budget* budget_ = nullptr;
  std::uint64_t nodes_left_ = 0;
  std::uint64_t nodes_ = 0;
  std::vector<bool> placed_;
  std::vector<std::uint64_t> offset_, solution_, min_offset_, floor_, total_;
  std::vector<change> min_changes_, floor_changes_;
  std::vector<std::size_t> touched_;      // sections whose floor may rise
  std::vector<std::uint64_t> touched_at_;  // epoch_ when last touched
  std::uint64_t epoch_ = 0;
};

}  // namespace memopt::detail
