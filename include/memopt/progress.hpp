#pragma once
// What an anytime search (exact_schedule, exact_fit) reports while it runs,
// for a caller that shows progress: the best result so far and the lower
// bound proved so far, in bytes, and the work spent. The search calls the
// callback on its own thread at its milestones (a segment or a window
// searched, a capacity probed), so it must be quick; the search's result
// never depends on it.

#include <cstdint>
#include <functional>

namespace memopt {

struct search_progress {
  std::uint64_t best_bytes = 0;   ///< the best result so far (a peak, an arena)
  std::uint64_t bound_bytes = 0;  ///< no result is below this
  std::uint64_t work = 0;         ///< units of work spent (states expanded, search nodes)
};

using progress_callback = std::function<void(const search_progress&)>;

}  // namespace memopt
