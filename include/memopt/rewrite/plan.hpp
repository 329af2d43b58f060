#pragma once
// A rewrite plan: a value saying how a graph changes, never the changed graph
// itself. Nodes are added (copies to recompute, triggers, swap pairs), data
// inputs of existing vertices are redirected, control edges are added. apply()
// (rewrite/apply.hpp) builds the new graph from the original and the plan;
// check_plan() (rewrite/check.hpp) says what is wrong with one. Every pass of
// the family returns a plan, so plans can be inspected, compared, combined
// (concatenated, added nodes renumbered) and evaluated before anything runs.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
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

}  // namespace memopt::rewrite
