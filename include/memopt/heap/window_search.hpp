#pragma once
// exact_fit's incomplete search by windows of time (detail::window_search):
// the lifetimes cut where few buffers cross, each window decided by
// exact_search with the buffers of earlier windows fixed, a failing window
// merged with those before it (see heap/exact.hpp).

#include <memopt/detail/budget.hpp>
#include <memopt/heap/exact_search.hpp>
#include <memopt/heap/problem.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memopt::detail {

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

}  // namespace memopt::detail
