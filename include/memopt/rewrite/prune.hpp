#pragma once
// prune_plan: the guard of the seed's passes. A plan of the memory
// optimizer's passes is made of independent parts: one recomputed group
// (its triggers, its copies and the targets' redirects), one swapped tensor
// (its swap pair, its redirect and the controls on it), one accumulated sum
// (its buffer, adds and change). plan_parts finds them with no help from the
// passes: the added nodes joined by the references between them, with the
// redirects, controls, changes and marks touching them. prune_plan measures
// the best schedule's peak of the graph with the whole plan, with none of it
// (the graph as given) and with parts left out, and keeps only the parts
// that help: a part goes when the plan without it peaks no higher (no
// lower: it does not help). The parts are taken in the plan's order, a
// window at a time: a window whose absence leaves the peak where it is goes
// whole, and the next window is twice as wide; one whose absence moves the
// peak is halved until single parts are tried. If what is left peaks no
// lower than the graph given, it goes too. The peak never rises along the
// way, so the plan returned never peaks above the graph given, nor above
// the whole plan, and is empty when nothing helped; kept parts
// keep the pass's own nodes, names and structure (added nodes renumbered).
// What belongs to no part (a mark or a control between original vertices:
// the passes make only marks of that kind) is kept as it is, and counts as
// the graph given.
//
// Deterministic: every peak is exact_schedule's under the options' search
// (a work limit, no clock, by default), and the pruning stops once the
// evaluations have cost `work_limit` (the vertices and edges of each graph
// measured and the states its search expanded); the parts not decided by
// then are kept and the result says so (complete = false). Each evaluation
// is apply() and exact_schedule: P + 2 of them for P parts that all move the
// peak, O(log P) when none does, about k log(P / k) + 2 when k do.

#include <memopt/rewrite/apply.hpp>
#include <memopt/rewrite/check.hpp>
#include <memopt/rewrite/evaluate.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/progress.hpp>
#include <memopt/schedule/exact.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memopt::rewrite {

/// What a plan keeps or drops as one: positions in the plan's lists.
struct plan_part {
  std::vector<std::size_t> nodes;      ///< in plan.nodes, ascending
  std::vector<std::size_t> redirects;  ///< in plan.redirects
  std::vector<std::size_t> controls;   ///< in plan.controls
  std::vector<std::size_t> changes;    ///< in plan.changes
  std::vector<std::size_t> relaxed;    ///< in plan.relaxed_allocation
  std::vector<std::size_t> targets;    ///< original vertices it redirects or changes, ascending
};

/// The parts of `p`, by their first added node. O(plan α(plan)).
[[nodiscard]] inline std::vector<plan_part> plan_parts(const rewrite_plan& p) {
  const std::size_t n = p.nodes.size();
  std::vector<std::size_t> parent(n);
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  const auto find = [&](std::size_t a) {
    while (parent[a] != a) a = parent[a] = parent[parent[a]];
    return a;
  };
  const auto join = [&](std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);  // the root is the set's first node
  };
  // The first added node a list of references names (n: none), joining the others to it.
  const auto join_all = [&](const std::vector<node_ref>& refs) {
    std::size_t first = n;
    for (const node_ref r : refs) {
      if (!r.added || r.index >= n) continue;
      if (first == n) {
        first = r.index;
      } else {
        join(first, r.index);
      }
    }
    return first;
  };
  std::vector<node_ref> refs;
  for (std::size_t i = 0; i < n; ++i) {
    refs.assign(1, added(i));
    for (const tensor_ref& t : p.nodes[i].inputs) refs.push_back(t.node);
    refs.insert(refs.end(), p.nodes[i].control.begin(), p.nodes[i].control.end());
    join_all(refs);
  }
  std::vector<std::size_t> redirect_node(p.redirects.size()), control_node(p.controls.size()),
      change_node(p.changes.size()), relaxed_node(p.relaxed_allocation.size());
  for (std::size_t k = 0; k < p.redirects.size(); ++k) redirect_node[k] = join_all({p.redirects[k].source.node});
  for (std::size_t k = 0; k < p.controls.size(); ++k) control_node[k] = join_all({p.controls[k].from, p.controls[k].to});
  for (std::size_t k = 0; k < p.changes.size(); ++k) {
    refs.clear();
    for (const tensor_ref& t : p.changes[k].inputs) refs.push_back(t.node);
    refs.insert(refs.end(), p.changes[k].control.begin(), p.changes[k].control.end());
    change_node[k] = join_all(refs);
  }
  for (std::size_t k = 0; k < p.relaxed_allocation.size(); ++k) relaxed_node[k] = join_all({p.relaxed_allocation[k]});

  std::vector<std::size_t> part_of(n, n);
  std::vector<plan_part> parts;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t root = find(i);
    if (part_of[root] == n) {
      part_of[root] = parts.size();
      parts.emplace_back();
    }
    parts[part_of[root]].nodes.push_back(i);
  }
  const auto attach = [&](const std::vector<std::size_t>& node_of, std::vector<std::size_t> plan_part::*list) {
    for (std::size_t k = 0; k < node_of.size(); ++k) {
      if (node_of[k] != n) (parts[part_of[find(node_of[k])]].*list).push_back(k);
    }
  };
  attach(redirect_node, &plan_part::redirects);
  attach(control_node, &plan_part::controls);
  attach(change_node, &plan_part::changes);
  attach(relaxed_node, &plan_part::relaxed);
  for (plan_part& part : parts) {
    for (const std::size_t k : part.redirects) part.targets.push_back(p.redirects[k].vertex);
    for (const std::size_t k : part.changes) part.targets.push_back(p.changes[k].vertex);
    std::ranges::sort(part.targets);
    part.targets.erase(std::unique(part.targets.begin(), part.targets.end()), part.targets.end());
  }
  return parts;
}

/// `p` with only the parts `keep` marks (parts as plan_parts(p) gives them)
/// and whatever belongs to no part, in p's order, added nodes renumbered.
[[nodiscard]] inline rewrite_plan plan_with_parts(const rewrite_plan& p, std::span<const plan_part> parts,
                                                  const std::vector<bool>& keep) {
  std::vector<bool> nodes(p.nodes.size(), true), redirects(p.redirects.size(), true),
      controls(p.controls.size(), true), changes(p.changes.size(), true), relaxed(p.relaxed_allocation.size(), true);
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (keep[k]) continue;
    for (const std::size_t i : parts[k].nodes) nodes[i] = false;
    for (const std::size_t i : parts[k].redirects) redirects[i] = false;
    for (const std::size_t i : parts[k].controls) controls[i] = false;
    for (const std::size_t i : parts[k].changes) changes[i] = false;
    for (const std::size_t i : parts[k].relaxed) relaxed[i] = false;
  }
  std::vector<std::size_t> position(p.nodes.size());
  std::size_t next = 0;
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    if (nodes[i]) position[i] = next++;
  }
  const auto ref = [&](node_ref r) { return r.added ? added(position[r.index]) : r; };
  const auto tensor = [&](tensor_ref t) { return tensor_ref{ref(t.node), t.port}; };
  rewrite_plan out;
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    if (!nodes[i]) continue;
    added_node node = p.nodes[i];
    for (tensor_ref& t : node.inputs) t = tensor(t);
    for (node_ref& c : node.control) c = ref(c);
    out.nodes.push_back(std::move(node));
  }
  for (std::size_t k = 0; k < p.redirects.size(); ++k) {
    if (redirects[k]) out.redirects.push_back({p.redirects[k].vertex, p.redirects[k].operand, tensor(p.redirects[k].source)});
  }
  for (std::size_t k = 0; k < p.controls.size(); ++k) {
    if (controls[k]) out.controls.push_back({ref(p.controls[k].from), ref(p.controls[k].to)});
  }
  for (std::size_t k = 0; k < p.changes.size(); ++k) {
    if (!changes[k]) continue;
    node_change c = p.changes[k];
    for (tensor_ref& t : c.inputs) t = tensor(t);
    for (node_ref& r : c.control) r = ref(r);
    out.changes.push_back(std::move(c));
  }
  for (std::size_t k = 0; k < p.relaxed_allocation.size(); ++k) {
    if (relaxed[k]) out.relaxed_allocation.push_back(ref(p.relaxed_allocation[k]));
  }
  return out;
}

struct prune_options {
  exact_options search = default_evaluation_search();  ///< each peak (evaluate's default: a work limit, no clock)
  /// All evaluations together: the vertices and edges of each graph measured
  /// and the states its search expanded. The first two (the graph as given,
  /// the whole plan) always run; then the pruning stops once this is spent.
  std::uint64_t work_limit = 2'000'000;
};

struct pruned_plan {
  rewrite_plan plan;                ///< the parts kept and what belongs to no part
  std::vector<plan_part> kept;      ///< parts of the plan given (positions in it)
  std::vector<plan_part> dropped;   ///< the same, dropped: the plan peaks no higher without them
  std::uint64_t peak_before = 0;    ///< the graph as given (no part kept)
  std::uint64_t peak_given = 0;     ///< the whole plan given
  std::uint64_t peak_after = 0;     ///< `plan`: never above peak_before nor peak_given
  std::size_t evaluations = 0;      ///< peaks measured
  std::uint64_t work = 0;           ///< what they cost: vertices, edges and search states
  bool complete = true;             ///< every part decided (the work limit did not end the pruning)
};

/// Keeps the parts of `p` that help (see the header comment). Throws
/// bad_plan_error with check_plan's faults when `p` is no plan, and when what
/// belongs to no part of it is no plan alone.
[[nodiscard]] inline pruned_plan prune_plan(const graph_facts& f, const rewrite_plan& p,
                                            const prune_options& options = {}) {
  const std::vector<plan_part> parts = plan_parts(p);
  pruned_plan r;
  // The peak with the parts `keep` marks; nullopt when that plan is no plan
  // (never seen for the passes' parts, which are independent: a safeguard).
  exact_options search = options.search;
  std::uint64_t states = 0;  // the last search's work
  search.progress = [&](const search_progress& progress) {
    states = progress.work;
    if (options.search.progress) options.search.progress(progress);
  };
  const auto peak_of = [&](const std::vector<bool>& keep) -> std::optional<std::uint64_t> {
    rewritten_graph g;
    try {
      g = apply(f, plan_with_parts(p, parts, keep));
    } catch (const bad_plan_error&) {
      return std::nullopt;
    }
    states = 0;
    const std::uint64_t peak = exact_schedule(g, search).peak_bytes;
    r.work += num_vertices(g) + num_edges(g) + states;
    ++r.evaluations;
    return peak;
  };
  if (auto faults = check_plan(f, p); !faults.empty()) throw bad_plan_error(std::move(faults));
  std::vector<bool> keep(parts.size(), false);
  const auto before = peak_of(keep);
  if (!before) {
    throw bad_plan_error({"prune_plan: what belongs to no part of the plan (controls between original vertices) is "
                          "no plan alone"});
  }
  r.peak_before = *before;
  keep.assign(parts.size(), true);
  if (parts.empty()) {
    r.peak_given = r.peak_after = r.peak_before;
  } else {
    r.peak_given = *peak_of(keep);
    std::uint64_t current = r.peak_given;
    // The parts in the plan's order, a window of them at a time: a window
    // the plan peaks the same without goes whole, and the next is twice as
    // wide; one whose absence moves the peak is halved and tried again, down
    // to one part, which goes unless the plan peaks higher without it.
    std::size_t width = 1;
    for (std::size_t k = 0; k < parts.size() && parts.size() > 1;) {
      if (r.work >= options.work_limit || (options.search.stop != nullptr && *options.search.stop)) {
        r.complete = false;
        break;
      }
      const std::size_t end = std::min(parts.size(), k + width);
      for (std::size_t i = k; i < end; ++i) keep[i] = false;
      const auto peak = peak_of(keep);
      if (peak && (*peak == current || (end - k == 1 && *peak < current))) {
        current = *peak;
        k = end;
        width *= 2;
        continue;
      }
      for (std::size_t i = k; i < end; ++i) keep[i] = true;
      if (end - k == 1) {
        ++k;  // needed
      } else {
        width = (end - k) / 2;
      }
    }
    if (r.peak_before <= current) {
      // What is left does not help either: the graph as given peaks no higher.
      keep.assign(parts.size(), false);
      current = r.peak_before;
    }
    r.peak_after = current;
  }
  r.plan = plan_with_parts(p, parts, keep);
  for (std::size_t k = 0; k < parts.size(); ++k) (keep[k] ? r.kept : r.dropped).push_back(parts[k]);
  return r;
}

}  // namespace memopt::rewrite
