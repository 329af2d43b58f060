#pragma once
// Kahn's algorithm over a CSR snapshot (compact_graph or anything with
// num_vertices(), successors[v] and predecessors.size(v)). ready_tracker is
// its bookkeeping, for walks that choose the next ready vertex themselves
// (the list schedulers, the sharing pass's depth-first walk); kahn_order is
// the plain walk, in the order vertices become ready.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memopt::detail {

/// The predecessors each vertex still waits for.
template <class Graph>
class ready_tracker {
 public:
  explicit ready_tracker(const Graph& g) : g_(g), waiting_(g.num_vertices()) {}

  /// Calls on_ready(v) for every vertex with no predecessor, in index order.
  template <class OnReady>
  void start(OnReady&& on_ready) {
    for (std::size_t v = 0; v < waiting_.size(); ++v) {
      waiting_[v] = static_cast<std::uint32_t>(g_.predecessors.size(v));
      if (waiting_[v] == 0) on_ready(v);
    }
  }
  /// Records that v ran; calls on_ready(s) for each successor s now ready.
  template <class OnReady>
  void ran(std::size_t v, OnReady&& on_ready) {
    for (const std::size_t s : g_.successors[v]) {
      if (arrived(s)) on_ready(s);
    }
  }
  /// Records that one predecessor of s ran; true when it was the last.
  bool arrived(std::size_t s) { return --waiting_[s] == 0; }
  [[nodiscard]] bool waits(std::size_t v) const { return waiting_[v] != 0; }

 private:
  const Graph& g_;
  std::vector<std::uint32_t> waiting_;  ///< 32 bits, as snapshots number vertices: a smaller array to miss in
};

/// A topological order of g, or fewer than V vertices when g is cyclic (the
/// ones left out are exactly those on or behind a cycle).
template <class Graph>
[[nodiscard]] std::vector<std::size_t> kahn_order(const Graph& g) {
  std::vector<std::size_t> order;
  order.reserve(g.num_vertices());
  ready_tracker tracker(g);
  const auto push = [&order](std::size_t v) { order.push_back(v); };
  tracker.start(push);
  for (std::size_t k = 0; k < order.size(); ++k) tracker.ran(order[k], push);
  return order;
}

}  // namespace memopt::detail
