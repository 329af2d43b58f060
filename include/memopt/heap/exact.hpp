#pragma once
// exact_fit: the smallest arena for fixed lifetimes, or whether the buffers
// fit a given capacity; complete and anytime. A depth-first search in the
// manner of Moffitt's MiniMalloc (ASPLOS 2023):
// - canonical solutions only: each buffer sits at the lowest offset its placed
//   neighbours allow, and offsets are placed in non-decreasing order;
// - per-section lower bounds: in each time section, the floor plus the bytes
//   still to place must fit the capacity;
// - dominance: a buffer may not go where it leaves a hole every unplaced
//   buffer could have used, nor be tried elsewhere when nothing it overlaps
//   is left to place above it;
// - decomposition at time cut points no unplaced buffer crosses;
// - restarts over several static buffer orders with growing node limits.
// Before it, an incomplete search by windows of time (window_search): the
// lifetimes cut where few buffers cross, each window solved by the same
// search with the buffers of earlier windows fixed, a failing window merged
// with those before it. A complete search on a whole graph backtracks over
// choices made far away in time; the windows do not, and reach max-live on
// graphs (NASNet's cells) where the complete search does not in 10^6 nodes.
// Deciding, the windows go first with at most window_work nodes per buffer.
// Minimising: the best heuristic's arena first, then up to four probes of a
// binary search by windows, then rounds of binary search between the largest
// refuted capacity and the best arena, each probe a decision search with a
// node limit that grows by round.
// Exponential in the worst case; with a time limit it returns the best plan
// found and says whether it proved it optimal (or proved "does not fit").
// best_arena: choose_best, then exact_fit within a small budget (2^17 nodes)
// when the heuristics miss max-live: the recommended arena.

#include <memopt/detail/budget.hpp>
#include <memopt/detail/event_sweep.hpp>
#include <memopt/heap/choose_best.hpp>
#include <memopt/heap/problem.hpp>
#include <memopt/progress.hpp>
#include <memopt/registry.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memopt {

enum class fit_status {
  fits,          ///< the plan fits the capacity
  does_not_fit,  ///< proved: no plan fits the capacity
  unknown        ///< the time ran out before either was shown
};

struct exact_fit_options {
  std::optional<std::uint64_t> capacity;  ///< decide this capacity; none: minimise the arena
  std::optional<double> time_limit_seconds;
  /// Search nodes in all; with no time limit, the result depends on the input alone.
  std::optional<std::uint64_t> work_limit;
  /// Static buffer orders tried in turn, each a string of keys, larger first:
  /// W lifetime length, A bytes x length, T most bytes left in a section it
  /// spans, Z bytes, L lower, U upper; then buffer index.
  std::vector<std::string> preorders = {"WAT", "TAW", "TWA"};
  /// The search by windows of time that goes first: buffers per window (0:
  /// none), and search nodes per buffer, both for each window's attempt and
  /// for each capacity tried (minimising tries at most four).
  std::size_t window_items = 16;
  std::uint64_t window_work = 64;
  const std::atomic<bool>* stop = nullptr;  ///< once *stop is true the search ends with its best
  progress_callback progress;               ///< hears the best arena and the bound after each probe
};

struct exact_result {
  heap_plan plan;                 ///< the best plan found (a heuristic's at worst)
  fit_status status = fit_status::unknown;  ///< against the capacity; "fits" when minimising
  bool proved_optimal = false;    ///< no smaller arena exists
  std::uint64_t nodes = 0;        ///< search nodes visited
  /// Who found the plan: the heuristic choose_best kept, "exact-windows"
  /// (the search by windows of time) or "exact" (the search on the whole).
  std::string method;
  /// A time limit ended the search: the same call may give another plan under
  /// another load; with a work limit alone it never does.
  bool stopped_by_clock = false;
};

namespace detail {

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

/// The decision by windows of time, a rolling horizon: the sections are cut
/// where few buffers cross, into windows of about `window_items` buffers
/// each, solved left to right by exact_search on the buffers the window
/// holds (cut at its end), those of earlier windows crossing into it fixed
/// where they were placed. A window that fails (refuted, or out of its work)
/// is merged with the 1, 2, 4, ... windows before it and solved again, down
/// to the first window: a refutation there proves that nothing fits, as the buffers
/// before the window's end, cut there, are a relaxation of the problem.
/// Incomplete otherwise, but each search is local, so that a conflict in one
/// window does not undo the choices of the others.
class window_search {
 public:
  using outcome = exact_search::outcome;

  window_search(std::span<const heap_buffer> buffers, std::vector<std::string> preorders,
                std::size_t window_items)
      : buffers_(buffers), preorders_(std::move(preorders)), times_(buffers) {
    const std::size_t sections = times_.size();
    std::vector<std::size_t> starts(sections, 0);
    std::vector<std::size_t> crossing(sections, 0);  // items live in s and s + 1
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      if (!buffers[b].takes_space()) continue;
      const range span{times_.of(buffers[b].lower), times_.of(buffers[b].upper)};
      items_.push_back({b, span});
      ++starts[span.first];
      ++crossing[span.first];
      --crossing[span.second - 1];
    }
    for (std::size_t s = 1; s < sections; ++s) crossing[s] += crossing[s - 1];
    std::ranges::sort(items_, [](const item& x, const item& y) {
      return x.span.first != y.span.first ? x.span.first < y.span.first : x.buffer < y.buffer;
    });
    // Each window takes at least window_items buffers, then ends at the cut
    // fewest buffers cross before it holds twice as many (the first on ties).
    bounds_ = {0};
    for (std::size_t s = 0; s < sections;) {
      std::size_t held = 0;
      std::size_t end = sections;
      std::size_t fewest = std::numeric_limits<std::size_t>::max();
      for (std::size_t t = s; t + 1 < sections; ++t) {
        held += starts[t];
        if (held >= window_items && crossing[t] < fewest) {
          fewest = crossing[t];
          end = t + 1;
        }
        if (held >= 2 * window_items && end != sections) break;
      }
      bounds_.push_back(end);
      s = end;
    }
    // The items crossing each bound, and where each window's own items begin.
    crossing_.resize(bounds_.size());
    first_item_.resize(bounds_.size());
    std::vector<std::size_t> active;
    std::size_t next = 0;
    for (std::size_t w = 0; w < bounds_.size(); ++w) {
      const std::size_t bound = bounds_[w];
      for (; next < items_.size() && items_[next].span.first < bound; ++next) active.push_back(next);
      std::erase_if(active, [&](std::size_t k) { return items_[k].span.second <= bound; });
      crossing_[w] = active;
      first_item_[w] = next;
    }
  }

  /// Offsets of every buffer fitting `capacity`, or why there are none;
  /// `work_per_item` search nodes for each item a window places, each time.
  std::pair<outcome, std::vector<std::uint64_t>> solve(std::uint64_t capacity, search_budget& budget,
                                                       std::uint64_t work_per_item) {
    std::vector<std::uint64_t> offsets(buffers_.size(), 0);
    for (std::size_t last = 0; last + 1 < bounds_.size(); ++last) {
      // Back 1, 2, 4, ... windows: a conflict with a buffer placed long ago
      // reaches it in a few attempts.
      for (std::size_t back = 0;; back = std::max<std::size_t>(1, 2 * back)) {
        const std::size_t first = last - std::min(back, last);
        const outcome result = attempt(first, last, capacity, budget, work_per_item, offsets);
        if (result == outcome::found) break;
        if (result == outcome::out_of_time || first == 0) return {result, {}};
      }
    }
    return {outcome::found, std::move(offsets)};
  }

  [[nodiscard]] std::uint64_t nodes() const noexcept { return nodes_; }
  [[nodiscard]] std::size_t windows() const noexcept { return bounds_.size() - 1; }

 private:
  using range = std::pair<std::size_t, std::size_t>;  // sections [first, second)
  struct item {
    std::size_t buffer;
    range span;
  };

  /// Windows first..last as one, the items crossing into it where `offsets`
  /// puts them; on success their offsets are in `offsets`.
  outcome attempt(std::size_t first, std::size_t last, std::uint64_t capacity, search_budget& budget,
                  std::uint64_t work_per_item, std::vector<std::uint64_t>& offsets) {
    const std::uint64_t begin = times_.at[bounds_[first]];
    const std::uint64_t end = times_.at[bounds_[last + 1]];
    std::vector<heap_buffer> part;
    std::vector<std::uint64_t> fixed;
    std::vector<std::size_t> buffer_of;
    const auto add = [&](const item& x, std::uint64_t offset) {
      heap_buffer cut = buffers_[x.buffer];
      cut.lower = std::max(cut.lower, begin);
      cut.upper = std::min(cut.upper, end);
      part.push_back(cut);
      fixed.push_back(offset);
      buffer_of.push_back(x.buffer);
    };
    for (const std::size_t k : crossing_[first]) add(items_[k], offsets[items_[k].buffer]);
    const std::size_t own = first_item_[last + 1] - first_item_[first];
    for (std::size_t k = first_item_[first]; k < first_item_[last + 1]; ++k) add(items_[k], no_offset);
    exact_search search(part, preorders_, fixed);
    search_budget within = budget.limited(work_per_item * std::max<std::size_t>(own, 1));
    auto [result, placed] = search.solve(capacity, within);
    budget.charge(within);
    nodes_ += search.nodes();
    // The search restarts until its budget ends: the window's own work running
    // out is a failure of the window, the whole budget's is the end.
    if (result == outcome::out_of_time && !budget.exhausted()) result = outcome::out_of_nodes;
    if (result == outcome::found) {
      for (std::size_t k = 0; k < part.size(); ++k) {
        if (fixed[k] == no_offset) offsets[buffer_of[k]] = placed[k];
      }
    }
    return result;
  }

  std::span<const heap_buffer> buffers_;
  std::vector<std::string> preorders_;
  time_sections times_;
  std::vector<item> items_;                         // taking space, by first section
  std::vector<std::size_t> bounds_;                 // window w: sections [bounds_[w], bounds_[w + 1])
  std::vector<std::vector<std::size_t>> crossing_;  // items_ crossing bounds_[w]
  std::vector<std::size_t> first_item_;             // items_ from here start at or after bounds_[w]
  std::uint64_t nodes_ = 0;
};

/// The arena granularity: every canonical plan's arena is a multiple of the
/// gcd of the sizes when each alignment divides it (else 1).
[[nodiscard]] inline std::uint64_t arena_granularity(std::span<const heap_buffer> buffers) {
  std::uint64_t g = 0;
  for (const auto& x : buffers) {
    if (x.takes_space()) g = std::gcd(g, x.bytes);
  }
  for (const auto& x : buffers) {
    if (x.takes_space() && g % x.alignment != 0) return 1;
  }
  return std::max<std::uint64_t>(g, 1);
}

/// exact_fit from the plan `start` (choose_best's, or a caller's own).
[[nodiscard]] inline exact_result exact_fit_from(std::span<const heap_buffer> buffers,
                                                 const exact_fit_options& options, heap_choice start) {
  search_budget budget(options.time_limit_seconds, options.work_limit, options.stop);
  exact_result r;
  r.plan = std::move(start.plan);
  r.method = std::move(start.method);
  const std::uint64_t g = arena_granularity(buffers);
  const std::uint64_t lower = (r.plan.peak_bytes + g - 1) / g * g;
  // A search's answer for one capacity; a plan found is kept when smaller, as `method`'s.
  const auto answer = [&](exact_search::outcome outcome, std::vector<std::uint64_t> offsets, const char* method) {
    if (outcome == exact_search::outcome::none) return fit_status::does_not_fit;
    if (outcome != exact_search::outcome::found) return fit_status::unknown;
    auto plan = make_heap_plan(buffers, std::move(offsets));
    if (plan.arena_bytes < r.plan.arena_bytes) {
      r.plan = std::move(plan);
      r.method = method;
    }
    return fit_status::fits;
  };
  std::optional<exact_search> complete;  // built on first use
  std::uint64_t window_nodes = 0;
  const auto attempt = [&](std::uint64_t capacity, search_budget& within) {
    if (!complete) complete.emplace(buffers, options.preorders);
    auto [outcome, offsets] = complete->solve(capacity, within);
    r.nodes = window_nodes + complete->nodes();
    return answer(outcome, std::move(offsets), "exact");
  };
  // The search by windows of time: incomplete, but cheap where buffers live
  // briefly (the usual graph), and a refutation is a proof. Each call gets
  // at most window_work nodes per buffer.
  std::optional<window_search> windows;  // built on first use
  const std::uint64_t items = static_cast<std::uint64_t>(std::ranges::count_if(buffers, &heap_buffer::takes_space));
  const std::uint64_t window_limit = options.window_work * std::max<std::uint64_t>(items, 1);
  const auto by_windows = [&](std::uint64_t capacity) {
    if (!windows) windows.emplace(buffers, options.preorders, options.window_items);
    search_budget part = budget.limited(window_limit);
    auto [outcome, offsets] = windows->solve(capacity, part, options.window_work);
    budget.charge(part);
    r.nodes = window_nodes = windows->nodes();
    return answer(outcome, std::move(offsets), "exact-windows");
  };
  if (options.capacity) {
    const std::uint64_t capacity = *options.capacity;
    if (r.plan.arena_bytes <= capacity) {
      r.status = fit_status::fits;
    } else if (r.plan.peak_bytes > capacity) {
      r.status = fit_status::does_not_fit;
    } else {
      r.status = options.window_items > 0 ? by_windows(capacity) : fit_status::unknown;
      if (r.status == fit_status::unknown) r.status = attempt(capacity, budget);
    }
    r.proved_optimal = r.plan.arena_bytes <= lower;
    r.stopped_by_clock = budget.clock_stopped();
    return r;
  }
  r.status = fit_status::fits;
  std::uint64_t proved = lower;
  const auto report = [&] {
    if (options.progress) {
      options.progress({.best_bytes = r.plan.arena_bytes, .bound_bytes = std::min(proved, r.plan.arena_bytes), .work = budget.used()});
    }
  };
  // First a binary search over multiples of g in [proved, best arena) by
  // windows, at most four probes.
  std::uint64_t unknown_below = proved;  // the capacities below it are refuted or unknown
  for (int probes = 0;
       options.window_items > 0 && probes < 4 && unknown_below < r.plan.arena_bytes && !budget.exhausted();
       ++probes) {
    const std::uint64_t probe =
        probes == 0 ? unknown_below : unknown_below + (r.plan.arena_bytes - unknown_below) / g / 2 * g;
    const fit_status status = by_windows(probe);
    if (status == fit_status::does_not_fit) proved = std::max(proved, probe + g);
    if (status != fit_status::fits) unknown_below = probe + g;
    report();
  }
  // Rounds of binary search over multiples of g in [proved, best arena), the
  // first probe of each at `proved` (every capacity below it is refuted).
  // Each probe gets at most `probe_work` nodes, twice as many each round,
  // so that one hard probe cannot take the whole budget: a probe that runs
  // out sends the search upwards, unrefuted, and the next round returns to
  // it with more work.
  constexpr std::uint64_t most_work = std::numeric_limits<std::uint64_t>::max() / 2;
  for (std::uint64_t probe_work = 64 * (buffers.size() + 1); proved < r.plan.arena_bytes && !budget.exhausted();
       probe_work = std::min(probe_work, most_work) * 2) {
    std::uint64_t low = proved;
    for (bool first = true; low < r.plan.arena_bytes && !budget.exhausted(); first = false) {
      const std::uint64_t probe = first ? low : low + (r.plan.arena_bytes - low) / g / 2 * g;
      search_budget part = budget.limited(probe_work);
      const fit_status status = attempt(probe, part);
      budget.charge(part);
      // No plan fits a refuted capacity, nor any below it.
      if (status == fit_status::does_not_fit) proved = std::max(proved, probe + g);
      report();
      if (status == fit_status::fits) continue;
      low = probe + g;
    }
  }
  r.proved_optimal = r.plan.arena_bytes <= proved;
  r.stopped_by_clock = budget.clock_stopped();
  return r;
}

}  // namespace detail

[[nodiscard]] inline exact_result exact_fit(std::span<const heap_buffer> buffers,
                                            const exact_fit_options& options = {}) {
  return detail::exact_fit_from(buffers, options, choose_best(buffers));
}

/// best_arena's budget by default: search nodes, and seconds as a cap.
inline constexpr std::uint64_t best_arena_work = std::uint64_t{1} << 17;
inline constexpr double best_arena_seconds = 0.5;

/// The recommended arena: choose_best, then, when its plan is above
/// max-live, exact_fit from it within a small budget (limits.work_limit, by
/// default best_arena_work nodes, capped at best_arena_seconds unless only a
/// work limit is given; the search is skipped when the buffers taking space
/// outnumber a quarter of the work, as it could not place them all). With no
/// time limit, the plan depends on the input alone. `method` says whose plan
/// it is; proved_optimal, whether no smaller arena exists (at max-live, or a
/// refutation below).
[[nodiscard]] inline exact_result best_arena(std::span<const heap_buffer> buffers, const search_limits& limits = {}) {
  heap_choice choice = choose_best(buffers);
  const std::uint64_t work = limits.work_limit.value_or(best_arena_work);
  const auto items = static_cast<std::uint64_t>(std::ranges::count_if(buffers, &heap_buffer::takes_space));
  if (choice.plan.arena_bytes > choice.plan.peak_bytes && items <= work / 4) {
    return detail::exact_fit_from(buffers,
                                  {.time_limit_seconds = limits.time_limit_or(best_arena_seconds),
                                   .work_limit = work,
                                   .stop = limits.stop,
                                   .progress = limits.progress},
                                  std::move(choice));
  }
  exact_result r;
  r.plan = std::move(choice.plan);
  r.method = std::move(choice.method);
  r.status = fit_status::fits;
  r.proved_optimal = r.plan.arena_bytes == r.plan.peak_bytes;
  return r;
}

}  // namespace memopt
