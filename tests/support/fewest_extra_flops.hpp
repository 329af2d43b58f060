#pragma once
// An exhaustive reference for rematerialisation on tiny graphs: a Dijkstra
// over the tensors held and the originals run, in Checkmate's setting (the
// graph's own nodes in program order, copies anywhere).

#include <memopt/rewrite/graph.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

namespace memopt::testing {

/// The fewest extra flops of any plan within `budget` that runs the graph's
/// nodes in index order and copies of nodes already run anywhere: a step's
/// inputs and output are live with everything held; anything held but a graph
/// output may be dropped between steps; sources are not recomputed.
/// Infinity when none fits. One output per node, no views.
inline double fewest_extra_flops(const rewrite::graph_facts& f, std::uint64_t budget) {
  const std::size_t n = f.size();
  using state = std::pair<std::size_t, unsigned>;  // originals run, tensors held
  std::map<state, double> best;
  std::priority_queue<std::tuple<double, std::size_t, unsigned>, std::vector<std::tuple<double, std::size_t, unsigned>>,
                      std::greater<>> queue;
  const auto push = [&](double cost, std::size_t run, unsigned held) {
    const auto [it, fresh] = best.try_emplace({run, held}, cost);
    if (!fresh && it->second <= cost) return;
    it->second = cost;
    queue.emplace(cost, run, held);
  };
  const auto ready = [&](std::size_t v, unsigned held) {
    return std::ranges::all_of(f.operands[v], [&](rewrite::operand o) { return (held >> o.vertex & 1u) != 0; });
  };
  push(0, 0, 0);
  while (!queue.empty()) {
    const auto [cost, run, held] = queue.top();
    queue.pop();
    if (best[{run, held}] < cost) continue;
    if (run == n) return cost;
    std::uint64_t live = 0;
    for (std::size_t v = 0; v < n; ++v) live += (held >> v & 1u) ? f.outputs[v][0].bytes : 0;
    for (std::size_t v = 0; v < n; ++v) {
      if ((held >> v & 1u) != 0 && !f.outputs[v][0].live_out) push(cost, run, held & ~(1u << v));
    }
    if (ready(run, held) && live + f.outputs[run][0].bytes <= budget) push(cost, run + 1, held | 1u << run);
    for (std::size_t u = 0; u < run; ++u) {
      if ((held >> u & 1u) != 0 || f.operands[u].empty() || !ready(u, held)) continue;
      if (live + f.outputs[u][0].bytes <= budget) push(cost + f.flops[u], run, held | 1u << u);
    }
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace memopt::testing
