#pragma once
// A rewrite plan: a value saying how a graph changes, never the changed graph
// itself. Nodes are added (copies to recompute, triggers, swap pairs,
// accumulators), data inputs of existing vertices are redirected, control
// edges are added, a vertex may become another op (the sum an accumulation
// replaces becomes the read of its accumulator), and vertices may be marked
// as needing no host-pinned memory for their outputs. apply()
// (rewrite/apply.hpp) builds the new graph from the original and the plan;
// check_plan() (rewrite/check.hpp) says what is wrong with one. Every pass of
// the family returns a plan, so plans can be inspected, compared, combined
// (concatenated, added nodes renumbered) and evaluated before anything runs.

#include <memopt/error.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace memopt::rewrite {

/// A plan that check_plan refuses (or then() cannot compose); `problems` lists every fault found.
class bad_plan_error : public error {
 public:
  explicit bad_plan_error(std::vector<std::string> faults)
      : error("bad rewrite plan: " + faults.front() +
              (faults.size() > 1 ? " (and " + std::to_string(faults.size() - 1) + " more)" : "")),
        problems(std::move(faults)) {}
  std::vector<std::string> problems;
  [[nodiscard]] std::string describe(const vertex_namer&) const override { return what(); }
};


/// A vertex of the original graph (by index) or a node the plan adds (by position).
struct node_ref {
  std::size_t index = 0;
  bool added = false;
  friend bool operator==(const node_ref&, const node_ref&) = default;
};

[[nodiscard]] inline node_ref original(std::size_t vertex) { return {vertex, false}; }
[[nodiscard]] inline node_ref added(std::size_t position) { return {position, true}; }

/// One output of a node.
struct tensor_ref {
  node_ref node;
  std::size_t port = 0;
  friend bool operator==(const tensor_ref&, const tensor_ref&) = default;
};

/// What an added node is for; the validator checks each role's promise.
enum class node_role : unsigned char {
  recomputed,  ///< a copy of copy_of computing the same value from the same inputs (or their copies)
  trigger,     ///< a no-op that only orders (control edges)
  swap_out,    ///< copies its one input to host memory
  swap_in,     ///< copies a swap_out's output back to the device
  accumulator, ///< a buffer holding zeros (of its data input 0's storage) that accumulate nodes add into
  accumulate,  ///< adds its data input 1 into the accumulator its data input 0 reads
  other        ///< anything else (the accumulator's buffer and zeros)
};

[[nodiscard]] inline const char* to_string(node_role role) noexcept {
  constexpr const char* names[] = {"recomputed", "trigger", "swap_out", "swap_in", "accumulator", "accumulate", "other"};
  return names[static_cast<int>(role)];
}

struct added_output {
  std::uint64_t bytes = 0;
  std::optional<std::size_t> alias_operand;  ///< a view (or in-place result) of this data input
  bool in_place = false;
  bool reference = false;  ///< a reference to mutable state (an accumulator): never swapped
};

struct added_node {
  std::string name;
  std::string op;
  std::string device;
  node_role role = node_role::other;
  std::optional<std::size_t> copy_of;  ///< recomputed: the original vertex
  std::vector<added_output> outputs;
  double flops = 0;
  bool on_host = false;                ///< its outputs live in host memory, not the device's
  std::vector<tensor_ref> inputs;      ///< data inputs, operand order
  std::vector<node_ref> control;       ///< control predecessors
};

/// Data input `operand` of original vertex `vertex` reads `source` instead.
struct input_change {
  std::size_t vertex = 0;
  std::size_t operand = 0;
  tensor_ref source;
};

/// A control edge from `from` to `to` (either may be added).
struct control_change {
  node_ref from;
  node_ref to;
};

/// Original vertex `vertex` runs `op` on other inputs, keeping its name, its
/// outputs' sizes and graph outputs: the validator admits it as the read of an
/// accumulator that sums exactly the vertex's old data inputs.
struct node_change {
  std::size_t vertex = 0;
  std::string op;
  double flops = 0;
  std::vector<tensor_ref> inputs;   ///< its data inputs now, operand order
  std::vector<node_ref> control;    ///< its control predecessors now
  std::vector<std::optional<std::size_t>> aliases;  ///< by output: a view of this data input
};

struct rewrite_plan {
  std::vector<added_node> nodes;
  std::vector<input_change> redirects;
  std::vector<control_change> controls;
  std::vector<node_change> changes;
  /// Outputs that need no host-pinned memory (grappler's
  /// _grappler_relax_allocator_constraints); a mark for the runtime, no change
  /// to the memory the plan's graph needs.
  std::vector<node_ref> relaxed_allocation;

  [[nodiscard]] bool empty() const noexcept {
    return nodes.empty() && redirects.empty() && controls.empty() && changes.empty() && relaxed_allocation.empty();
  }
};

/// One plan after another, as one plan over the original graph: `second` was
/// made for the graph `first` produces from a graph of `vertices` vertices
/// (whose vertex vertices + i is first's node i). A redirect of an input of
/// one of first's nodes becomes that node's input; of an input first already
/// redirected, it replaces first's; likewise for a change of a vertex first
/// changed. A change of one of first's nodes throws bad_plan_error (a plan
/// changes original vertices only). O(plans log plans).
[[nodiscard]] inline rewrite_plan then(rewrite_plan first, const rewrite_plan& second, std::size_t vertices) {
  const std::size_t shift = first.nodes.size();
  const auto lift = [&](node_ref r) {
    if (r.added) return added(r.index + shift);
    return r.index < vertices ? r : added(r.index - vertices);
  };
  const auto lift_tensor = [&](tensor_ref t) { return tensor_ref{lift(t.node), t.port}; };
  for (added_node node : second.nodes) {
    for (tensor_ref& t : node.inputs) t = lift_tensor(t);
    for (node_ref& c : node.control) c = lift(c);
    first.nodes.push_back(std::move(node));
  }
  std::map<std::size_t, std::size_t> changed;  // vertex -> position in first.changes
  for (std::size_t k = 0; k < first.changes.size(); ++k) changed[first.changes[k].vertex] = k;
  std::set<std::size_t> changed_by_second;
  for (node_change c : second.changes) {
    if (c.vertex >= vertices) {
      throw bad_plan_error({"the second plan changes '" + first.nodes[c.vertex - vertices].name +
                            "', which the first added; only original vertices can be changed"});
    }
    for (tensor_ref& t : c.inputs) t = lift_tensor(t);
    for (node_ref& r : c.control) r = lift(r);
    changed_by_second.insert(c.vertex);
    const auto [it, added_now] = changed.try_emplace(c.vertex, first.changes.size());
    if (added_now) first.changes.emplace_back();
    first.changes[it->second] = std::move(c);
  }
  // A change made on first's graph already reads what first redirected to it and ordered before it.
  std::erase_if(first.redirects, [&](const input_change& r) { return changed_by_second.contains(r.vertex); });
  std::erase_if(first.controls, [&](const control_change& c) { return !c.to.added && changed_by_second.contains(c.to.index); });
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> redirected;  // (vertex, operand) -> position
  for (std::size_t k = 0; k < first.redirects.size(); ++k) {
    redirected[{first.redirects[k].vertex, first.redirects[k].operand}] = k;
  }
  for (const input_change& r : second.redirects) {
    if (const auto change = changed.find(r.vertex); change != changed.end()) {
      first.changes[change->second].inputs.at(r.operand) = lift_tensor(r.source);
    } else if (r.vertex < vertices) {
      const auto [it, added_now] = redirected.try_emplace({r.vertex, r.operand}, first.redirects.size());
      if (added_now) first.redirects.push_back({r.vertex, r.operand, {}});
      first.redirects[it->second].source = lift_tensor(r.source);
    } else {
      first.nodes[r.vertex - vertices].inputs.at(r.operand) = lift_tensor(r.source);
    }
  }
  for (const control_change& c : second.controls) first.controls.push_back({lift(c.from), lift(c.to)});
  for (const node_ref r : second.relaxed_allocation) first.relaxed_allocation.push_back(lift(r));
  return first;
}

}  // namespace memopt::rewrite
