#pragma once
// A rematerialisation schedule written as the vertices it runs, in order:
// the first run of a vertex is the vertex itself, each later run a copy of
// it (Recomputed/<node>, then Recomputed_<k>/<node>), and every run reads
// the latest run of each of its inputs. plan_of_runs turns such a sequence
// (an exact solver's answer, a checkpointing library's schedule) into a
// rewrite plan and the order to run it in, as the planners return, with the
// peak measured by the liveness model on the rewritten graph. Each copy
// waits (a control edge) for the run before it, so it runs where the
// sequence puts it; an original reading a copy also waits for its own
// producer, so the originals keep a topological order of the graph.

#include <memopt/liveness.hpp>
#include <memopt/rewrite/apply.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/rewrite/remat_options.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace memopt::rewrite {

namespace detail {

/// The k-th copy (from 0) of vertex u, without its inputs and control: the
/// original's op and flops, a view output wherever the original's is a view
/// (an in-place result becomes a new tensor: writing into the copy's input
/// would clobber what the original's readers still read).
template <rewrite_naming Naming>
added_node recompute_copy(const graph_facts& f, std::size_t u, std::size_t k, const Naming& naming) {
  added_node node{.name = k == 0 ? naming.recomputed(f.name[u]) : "Recomputed_" + std::to_string(k) + "/" + f.name[u],
                  .op = f.op[u],
                  .device = f.device[u],
                  .role = node_role::recomputed,
                  .copy_of = u,
                  .flops = f.flops[u]};
  for (const tensor_output& out : f.outputs[u]) {
    added_output copy{.bytes = out.bytes};
    if (out.shares && !out.shares->in_place) {
      copy.alias_operand = static_cast<std::size_t>(std::ranges::find(f.operands[u], out.shares->source) - f.operands[u].begin());
    }
    node.outputs.push_back(copy);
  }
  return node;
}

/// The liveness peak and timeline of the plan run in `order`, into r.
inline void measure_planned_run(const graph_facts& f, remat_result& r) {
  const rewritten_graph g = apply(f, r.plan);
  std::vector<std::size_t> order;
  order.reserve(r.order.size());
  for (const node_ref ref : r.order) order.push_back(ref.added ? f.size() + ref.index : ref.index);
  auto live = liveness(g, std::span<const std::size_t>(order));
  r.planned_peak = live.peak_bytes;
  r.planned_bytes = std::move(live.timeline);
}

}  // namespace detail

/// The plan and order of `runs` (see the header comment); planned_peak and
/// planned_bytes from the liveness model. Throws bad_plan_error naming the
/// run that reads a vertex not run yet, a vertex out of range, or a vertex
/// never run; liveness' errors for an order that breaks the graph's edges.
/// O(runs + E + the plan's apply).
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] remat_result plan_of_runs(const graph_facts& f, std::span<const std::size_t> runs, const Naming& naming = {}) {
  const std::size_t n = f.size();
  remat_result r;
  std::vector<std::size_t> times_run(n, 0);
  std::vector<node_ref> latest(n);  // by vertex: its latest run
  r.order.reserve(runs.size());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const std::size_t v = runs[k];
    if (v >= n) throw bad_plan_error({"run " + std::to_string(k) + ": vertex " + std::to_string(v) + " does not exist"});
    std::vector<tensor_ref> inputs;
    for (const operand& o : f.operands[v]) {
      if (times_run[o.vertex] == 0) {
        throw bad_plan_error({"run " + std::to_string(k) + " of '" + f.name[v] + "' reads '" + f.name[o.vertex] +
                              "', not run yet"});
      }
      inputs.push_back({latest[o.vertex], o.port});
    }
    if (times_run[v]++ == 0) {
      latest[v] = original(v);
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].node.added) continue;
        r.plan.redirects.push_back({v, i, inputs[i]});
        const control_change wait{original(f.operands[v][i].vertex), original(v)};
        if (r.plan.controls.empty() || r.plan.controls.back().from != wait.from || r.plan.controls.back().to != wait.to) {
          r.plan.controls.push_back(wait);
        }
      }
    } else {
      added_node copy = detail::recompute_copy(f, v, times_run[v] - 2, naming);
      copy.inputs = std::move(inputs);
      copy.control.push_back(r.order.back());
      latest[v] = added(r.plan.nodes.size());
      r.plan.nodes.push_back(std::move(copy));
      r.extra_flops += f.flops[v];
    }
    r.order.push_back(latest[v]);
  }
  if (const auto never = std::ranges::find(times_run, std::size_t{0}); never != times_run.end()) {
    throw bad_plan_error({"'" + f.name[static_cast<std::size_t>(never - times_run.begin())] + "' never runs"});
  }
  detail::measure_planned_run(f, r);
  return r;
}

}  // namespace memopt::rewrite
