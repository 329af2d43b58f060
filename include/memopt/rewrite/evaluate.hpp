#pragma once
// evaluate: what a plan does to a graph's memory and compute, from the
// schedule family: the best schedule's peak before and after (exact_schedule
// under the same options, a work limit by default so the figures repeat),
// the flops the copies add, the bytes swapped to host, the nodes added. A
// plan that raises the peak says so: peak_after is what the rewritten graph
// needs, whatever the pass hoped.

#include <memopt/rewrite/apply.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/graph/topology.hpp>
#include <memopt/schedule/exact.hpp>

#include <cstddef>
#include <span>
#include <cstdint>
#include <vector>

namespace memopt::rewrite {

struct rewrite_report {
  std::uint64_t peak_before = 0;        ///< the original graph's best schedule
  std::uint64_t peak_after = 0;         ///< the rewritten graph's best schedule
  bool proved_before = false;           ///< each peak proved optimal by the search
  bool proved_after = false;
  double extra_flops = 0;               ///< of the recomputed copies
  std::uint64_t swapped_bytes = 0;      ///< held in host memory by swap-outs
  std::size_t nodes_added = 0;
  rewritten_graph graph;                ///< the plan applied
  std::vector<std::size_t> order_after; ///< the schedule reaching peak_after (vertices of graph)
};

/// The default search: deterministic (a work limit, no clock).
inline exact_options default_evaluation_search() {
  return {.time_limit_seconds = std::nullopt, .work_limit = 200'000};
}

/// `start`, when given, is an order of the rewritten graph (the one a
/// planner meant it to run in): the search also starts from it, and
/// peak_after is the lower of the two searches'.
[[nodiscard]] inline rewrite_report evaluate(const graph_facts& f, const rewrite_plan& p,
                                             const exact_options& search = default_evaluation_search(),
                                             std::span<const node_ref> start = {}) {
  rewrite_report r;
  r.graph = apply(f, p);
  // The original is the rewritten graph of the empty plan.
  const auto before = exact_schedule(apply(f, rewrite_plan{}), search);
  const auto after = exact_schedule(r.graph, search);
  r.peak_before = before.peak_bytes;
  r.proved_before = before.proved_optimal;
  r.peak_after = after.peak_bytes;
  r.proved_after = after.proved_optimal;
  r.order_after.assign(after.order.begin(), after.order.end());
  if (!start.empty()) {
    std::vector<std::size_t> order;
    for (const node_ref ref : start) order.push_back(ref.added ? f.size() + ref.index : ref.index);
    if (!is_topological_order(r.graph, order)) throw bad_plan_error({"evaluate: the start order is not an order of the rewritten graph"});
    const auto found = exact_order(make_compact_graph(r.graph), order, search);
    if (found.peak_bytes < r.peak_after) {
      r.peak_after = found.peak_bytes;
      r.proved_after = found.proved_optimal;
      r.order_after = found.order;
    }
  }
  for (const added_node& node : p.nodes) {
    if (node.role == node_role::recomputed) r.extra_flops += node.flops;
    if (node.on_host) {
      for (const added_output& out : node.outputs) r.swapped_bytes += out.bytes;
    }
  }
  r.nodes_added = p.nodes.size();
  return r;
}

}  // namespace memopt::rewrite
