#pragma once
// A rewrite plan: a value saying how a graph changes, never the changed graph
// itself. Nodes are added (copies to recompute, triggers, swap pairs), data
// inputs of existing vertices are redirected, control edges are added. apply()
// (rewrite/apply.hpp) builds the new graph from the original and the plan;
// check_plan() (rewrite/check.hpp) says what is wrong with one. Every pass of
// the family returns a plan, so plans can be inspected, compared, combined
// (concatenated, added nodes renumbered) and evaluated before anything runs.

#include <cstddef>
#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memopt::rewrite {

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
  other        ///< anything else (accumulators and their updates)
};

[[nodiscard]] inline const char* to_string(node_role role) noexcept {
  constexpr const char* names[] = {"recomputed", "trigger", "swap_out", "swap_in", "other"};
  return names[static_cast<int>(role)];
}

struct added_output {
  std::uint64_t bytes = 0;
  std::optional<std::size_t> alias_operand;  ///< a view (or in-place result) of this data input
  bool in_place = false;
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

struct rewrite_plan {
  std::vector<added_node> nodes;
  std::vector<input_change> redirects;
  std::vector<control_change> controls;

  [[nodiscard]] bool empty() const noexcept { return nodes.empty() && redirects.empty() && controls.empty(); }
};

/// One plan after another, as one plan over the original graph: `second` was
/// made for the graph `first` produces from a graph of `vertices` vertices
/// (whose vertex vertices + i is first's node i). A redirect of an input of
/// one of first's nodes becomes that node's input; of an input first already
/// redirected, it replaces first's. O(plans log plans).
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
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> redirected;  // (vertex, operand) -> position
  for (std::size_t k = 0; k < first.redirects.size(); ++k) {
    redirected[{first.redirects[k].vertex, first.redirects[k].operand}] = k;
  }
  for (const input_change& r : second.redirects) {
    if (r.vertex < vertices) {
      const auto [it, added_now] = redirected.try_emplace({r.vertex, r.operand}, first.redirects.size());
      if (added_now) first.redirects.push_back({r.vertex, r.operand, {}});
      first.redirects[it->second].source = lift_tensor(r.source);
    } else {
      first.nodes[r.vertex - vertices].inputs.at(r.operand) = lift_tensor(r.source);
    }
  }
  for (const control_change& c : second.controls) first.controls.push_back({lift(c.from), lift(c.to)});
  return first;
}

}  // namespace memopt::rewrite
