#pragma once
// improve_by_windows: the exact scheduler's large-neighbourhood search for
// segments too wide to solve: windows of consecutive ops around the peak are
// reordered exactly (segment_search) with everything else fixed, each
// candidate put back together by assemble (assemble.hpp). The exact
// scheduler's last stage (exact.hpp).

#include <memopt/detail/budget.hpp>
#include <memopt/progress.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/schedule/assemble.hpp>
#include <memopt/schedule/segment_search.hpp>
#include <memopt/schedule/segments.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memopt::detail {

/// Large-neighbourhood search where the segments are too wide to solve:
/// reorder a window of consecutive vertices around the peak exactly, everything
/// else fixed, with growing windows, while that lowers the peak and time lasts.
/// `guidance` is the windows' probes' (segment_search). `progress`, when set,
/// hears each peak reached.
inline std::vector<std::size_t> improve_by_windows(const compact_graph& g, std::vector<std::size_t> order,
                                                   const std::vector<vertex_role>& role, std::uint64_t lower_bound,
                                                   search_budget& budget, std::size_t state_limit,
                                                   probe_guidance guidance, const progress_callback& progress = {}) {
  constexpr std::size_t widths[] = {16, 32, 64, 128, 256};
  while (!budget.exhausted()) {
    // Where the peak is, as a position among the normal vertices.
    auto segments = split_into_segments(g, order, role);
    std::uint64_t peak = 0;
    std::size_t peak_position = 0;
    for (std::size_t s = 0, first = 0; s < segments.size(); first += segments[s++].size()) {
      const auto [p, at] = segments[s].profile(identity_orders({segments[s]}).front());
      if (p > peak) {
        peak = p;
        peak_position = first + at;
      }
    }
    if (progress) progress({.best_bytes = peak, .bound_bytes = lower_bound, .work = budget.used()});
    if (peak <= lower_bound) break;
    bool improved = false;
    for (const std::size_t width : widths) {
      for (const std::size_t offset : {width / 2, width / 4, 3 * width / 4}) {
        const std::size_t a = peak_position > offset ? peak_position - offset : 0;
        segments = split_into_segments(g, order, role, {a, a + width});
        std::size_t w = 0;
        std::uint64_t elsewhere = lower_bound;
        for (std::size_t s = 0, first = 0; s < segments.size(); first += segments[s++].size()) {
          if (first <= peak_position && peak_position < first + segments[s].size()) {
            w = s;
          } else {
            elsewhere = std::max(elsewhere, segments[s].peak_of(identity_orders({segments[s]}).front()));
          }
        }
        auto locals = identity_orders(segments);
        // A slice of what is left (at least half a second of the time, so
        // that a loaded machine still finishes windows).
        segment_search search(segments[w], budget.slice(1.0 / 6, std::chrono::milliseconds(500)), state_limit,
                              segment_search::default_restart_work, guidance);
        auto found = search.run(locals[w], elsewhere);
        budget.charge(search.budget());
        if (found.peak < segments[w].peak_of(locals[w])) {
          locals[w] = std::move(found.order);
          order = assemble(g, order, role, segments, locals);
          improved = true;
          break;
        }
        if (budget.exhausted()) return order;
      }
      if (improved) break;
    }
    if (!improved) break;
  }
  return order;
}

}  // namespace memopt::detail
