#pragma once
// check_plan: what is wrong with a rewrite plan for a graph, empty when
// nothing is. A valid plan
// - names only nodes and ports that exist, and gives every node a name no
//   other node has;
// - redirects each data input at most once, to a tensor holding the same
//   value: the old one, a recomputed copy of it, or a swap-in of it;
// - recomputes faithfully: a copy runs the original's op on tensors holding
//   the original's inputs, with outputs of the same sizes (or on no input,
//   for an op that reads only its inputs' shapes: graph_facts::shape_only);
// - swaps faithfully: a swap-out reads one tensor (no reference an added node
//   makes) into host memory, a swap-in reads one swap-out back, each the
//   size of what it copies;
// - accumulates faithfully: a vertex it changes reads one accumulator (a
//   buffer of its output's size) after every add into it, and those adds read
//   exactly the vertex's old data inputs (or tensors holding their values);
//   nothing else reads the accumulator, which holds partial sums until then;
// - changes each vertex at most once, and redirects no input of one it changes;
// - leaves the graph acyclic (graph outputs stay as they were: added nodes
//   have none).
// O(V + E + plan) plus the cycle check.

#include <memopt/error.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace memopt::rewrite {

namespace detail {

/// The name of a node of the plan's graph, for messages.
inline std::string name_of(const graph_facts& f, const rewrite_plan& p, node_ref r) {
  if (r.added) return r.index < p.nodes.size() ? "'" + p.nodes[r.index].name + "'" : "added node " + std::to_string(r.index);
  return r.index < f.size() ? "'" + f.name[r.index] + "'" : "vertex " + std::to_string(r.index);
}

/// Outputs of a node of the plan's graph (0 for a reference out of range).
inline std::size_t outputs_of(const graph_facts& f, const rewrite_plan& p, node_ref r) {
  if (r.added) return r.index < p.nodes.size() ? p.nodes[r.index].outputs.size() : 0;
  return r.index < f.size() ? f.outputs[r.index].size() : 0;
}

inline std::uint64_t bytes_of(const graph_facts& f, const rewrite_plan& p, tensor_ref t) {
  return t.node.added ? p.nodes[t.node.index].outputs[t.port].bytes : f.outputs[t.node.index][t.port].bytes;
}

/// `t` is an accumulator's output.
inline bool is_accumulator(const rewrite_plan& p, tensor_ref t) {
  return t.node.added && t.port == 0 && p.nodes[t.node.index].role == node_role::accumulator;
}

/// `t` holds the value of original tensor `value`: it is it, a recomputed copy, or a swap-in of it.
inline bool holds(const graph_facts& f, const rewrite_plan& p, tensor_ref t, operand value) {
  if (!t.node.added) return t.node.index == value.vertex && t.port == value.port;
  const added_node& a = p.nodes[t.node.index];
  if (a.role == node_role::recomputed) return a.copy_of == value.vertex && t.port == value.port;
  if (a.role == node_role::swap_in && a.inputs.size() == 1 && a.inputs[0].node.added) {
    const added_node& out = p.nodes[a.inputs[0].node.index];
    return out.role == node_role::swap_out && out.inputs.size() == 1 && holds(f, p, out.inputs[0], value);
  }
  return false;
}

}  // namespace detail

namespace detail {

/// The faults of p's vertex changes and of reads of partial sums (see the
/// header comment); tensor_ok(t, where) says whether t exists, else adds a fault.
template <class TensorOk>
void check_changes(const graph_facts& f, const rewrite_plan& p, TensorOk tensor_ok, std::vector<std::string>& faults) {
  const std::size_t n = f.size();
  // Adds into each accumulator (by added node), and who else reads one.
  std::map<std::size_t, std::vector<std::size_t>> adds;
  for (std::size_t a = 0; a < p.nodes.size(); ++a) {
    const added_node& node = p.nodes[a];
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const tensor_ref t = node.inputs[k];
      if (!t.node.added || t.node.index >= p.nodes.size()) continue;
      const node_role role = p.nodes[t.node.index].role;
      if (role != node_role::accumulator && role != node_role::accumulate) continue;
      if (node.role == node_role::accumulate && node.inputs.size() == 2 && k == 0 && role == node_role::accumulator) {
        adds[t.node.index].push_back(a);
      } else {
        faults.push_back("added node '" + node.name + "' reads the partial sums of " + name_of(f, p, t.node));
      }
    }
  }
  std::map<std::size_t, std::size_t> changed;
  for (const node_change& c : p.changes) {
    if (c.vertex >= n) {
      faults.push_back("a change names " + name_of(f, p, original(c.vertex)) + ", which does not exist");
      continue;
    }
    const std::size_t v = c.vertex;
    const std::string where = "the change of '" + f.name[v] + "'";
    if (++changed[v] == 2) faults.push_back("'" + f.name[v] + "' is changed twice");
    bool inputs_ok = true;
    for (const tensor_ref& t : c.inputs) inputs_ok = tensor_ok(t, where) && inputs_ok;
    for (const node_ref& r : c.control) {
      if (r.added ? r.index >= p.nodes.size() : r.index >= n) {
        faults.push_back(where + " waits for " + name_of(f, p, r) + ", which does not exist");
        inputs_ok = false;
      }
    }
    if (!inputs_ok) continue;
    if (c.aliases.size() != f.outputs[v].size() ||
        std::ranges::any_of(c.aliases, [&](const auto& a) { return a && *a >= c.inputs.size(); })) {
      faults.push_back(where + " must give each of its " + std::to_string(f.outputs[v].size()) +
                       " outputs a view of one of its data inputs or none");
    }
    if (c.inputs.size() != 1 || !is_accumulator(p, c.inputs[0]) || f.outputs[v].size() != 1 ||
        bytes_of(f, p, c.inputs[0]) != f.outputs[v][0].bytes) {
      faults.push_back(where + " must read one accumulator of its output's size");
      continue;
    }
    // The adds must read exactly v's old inputs, each once, and all run before v.
    std::vector<bool> summed(f.operands[v].size(), false);
    bool exact = true;
    for (const std::size_t a : adds[c.inputs[0].node.index]) {
      const added_node& add = p.nodes[a];
      const bool waited = std::ranges::find(c.control, added(a)) != c.control.end() ||
                          std::ranges::any_of(p.controls, [&](const control_change& e) {
                            return e.from == added(a) && e.to == original(v);
                          });
      if (!waited) faults.push_back(where + " must wait for '" + add.name + "'");
      bool matched = false;
      for (std::size_t k = 0; k < summed.size() && !matched; ++k) {
        if (!summed[k] && holds(f, p, add.inputs[1], f.operands[v][k])) summed[k] = matched = true;
      }
      exact = exact && matched;
    }
    if (!exact || std::ranges::find(summed, false) != summed.end()) {
      faults.push_back(where + ": its accumulator does not sum exactly its old data inputs");
    }
  }
  for (const input_change& r : p.redirects) {
    if (changed.contains(r.vertex)) faults.push_back("'" + f.name[r.vertex] + "' is both changed and redirected");
  }
}

}  // namespace detail

[[nodiscard]] inline std::vector<std::string> check_plan(const graph_facts& f, const rewrite_plan& p) {
  using detail::name_of;
  std::vector<std::string> faults;
  const std::size_t n = f.size();
  const auto exists = [&](node_ref r) { return r.added ? r.index < p.nodes.size() : r.index < n; };
  const auto tensor_ok = [&](tensor_ref t, const std::string& where) {
    if (!exists(t.node)) {
      faults.push_back(where + " reads " + name_of(f, p, t.node) + ", which does not exist");
      return false;
    }
    if (t.port >= detail::outputs_of(f, p, t.node)) {
      faults.push_back(where + " reads port " + std::to_string(t.port) + " of " + name_of(f, p, t.node) +
                       ", which has " + std::to_string(detail::outputs_of(f, p, t.node)));
      return false;
    }
    return true;
  };

  std::unordered_set<std::string> names(f.name.begin(), f.name.end());
  for (std::size_t a = 0; a < p.nodes.size(); ++a) {
    const added_node& node = p.nodes[a];
    const std::string where = "added node '" + node.name + "'";
    if (!names.insert(node.name).second) faults.push_back(where + ": the name is taken");
    bool inputs_ok = true;
    for (const tensor_ref& t : node.inputs) inputs_ok = tensor_ok(t, where) && inputs_ok;
    for (const node_ref& c : node.control) {
      if (!exists(c)) faults.push_back(where + " waits for " + name_of(f, p, c) + ", which does not exist");
    }
    for (const added_output& out : node.outputs) {
      if (out.alias_operand && *out.alias_operand >= node.inputs.size()) {
        faults.push_back(where + ": an output aliases data input " + std::to_string(*out.alias_operand) +
                         ", which it lacks");
      }
    }
    if (!inputs_ok) continue;
    switch (node.role) {
      case node_role::recomputed: {
        if (!node.copy_of || *node.copy_of >= n) {
          faults.push_back(where + " recomputes no vertex of the graph");
          break;
        }
        const std::size_t v = *node.copy_of;
        // A copy of an op reading only its inputs' shapes may read none of them.
        const bool reads_nothing = node.inputs.empty() && reads_shape_only(f, v);
        bool same = node.op == f.op[v] && (node.inputs.size() == f.operands[v].size() || reads_nothing) &&
                    node.outputs.size() == f.outputs[v].size();
        for (std::size_t k = 0; same && k < node.inputs.size(); ++k) {
          same = detail::holds(f, p, node.inputs[k], f.operands[v][k]);
        }
        for (std::size_t k = 0; same && k < node.outputs.size(); ++k) same = node.outputs[k].bytes == f.outputs[v][k].bytes;
        if (!same) faults.push_back(where + " is not '" + f.name[v] + "' on the same input values");
        break;
      }
      case node_role::swap_out:
        if (node.inputs.size() != 1 || !node.on_host || node.outputs.size() != 1 ||
            node.outputs[0].bytes != detail::bytes_of(f, p, node.inputs[0])) {
          faults.push_back(where + " must copy one tensor to host memory, of its size");
        } else if (node.inputs[0].node.added && p.nodes[node.inputs[0].node.index].outputs[node.inputs[0].port].reference) {
          faults.push_back(where + " swaps a reference");
        }
        break;
      case node_role::swap_in:
        if (node.inputs.size() != 1 || node.on_host || !node.inputs[0].node.added ||
            p.nodes[node.inputs[0].node.index].role != node_role::swap_out || node.outputs.size() != 1 ||
            node.outputs[0].bytes != detail::bytes_of(f, p, node.inputs[0])) {
          faults.push_back(where + " must copy one swap-out back to the device, of its size");
        }
        break;
      case node_role::trigger:
        if (!node.inputs.empty() || !node.outputs.empty()) faults.push_back(where + " must only order (no data)");
        break;
      case node_role::accumulator:
        if (node.inputs.empty() || node.on_host || node.outputs.size() != 1 || node.outputs[0].alias_operand != 0 ||
            node.outputs[0].bytes != detail::bytes_of(f, p, node.inputs[0])) {
          faults.push_back(where + " must be a view of its data input 0, a buffer of its size");
        }
        break;
      case node_role::accumulate:
        if (node.inputs.size() != 2 || !detail::is_accumulator(p, node.inputs[0]) || node.on_host ||
            node.outputs.size() != 1 || node.outputs[0].alias_operand != 0 ||
            node.outputs[0].bytes != detail::bytes_of(f, p, node.inputs[0]) ||
            detail::bytes_of(f, p, node.inputs[1]) != node.outputs[0].bytes) {
          faults.push_back(where + " must add one tensor of an accumulator's size into that accumulator");
        }
        break;
      case node_role::other:
        break;
    }
  }

  std::map<std::pair<std::size_t, std::size_t>, std::size_t> redirected;
  for (const input_change& r : p.redirects) {
    if (r.vertex >= n || r.operand >= f.operands[r.vertex].size()) {
      faults.push_back("a redirect names data input " + std::to_string(r.operand) + " of " +
                       name_of(f, p, original(r.vertex)) + ", which it lacks");
      continue;
    }
    const std::string where = "data input " + std::to_string(r.operand) + " of '" + f.name[r.vertex] + "'";
    if (++redirected[{r.vertex, r.operand}] == 2) faults.push_back(where + " is redirected twice");
    if (!tensor_ok(r.source, where)) continue;
    if (!detail::holds(f, p, r.source, f.operands[r.vertex][r.operand])) {
      faults.push_back(where + " would read " + name_of(f, p, r.source.node) + ", which does not hold its value");
    }
  }
  for (const control_change& c : p.controls) {
    if (!exists(c.from) || !exists(c.to)) {
      faults.push_back("a control edge names " + name_of(f, p, exists(c.from) ? c.to : c.from) +
                       ", which does not exist");
    }
  }
  for (const node_ref& r : p.relaxed_allocation) {
    if (!exists(r)) faults.push_back("a relaxed allocation names " + name_of(f, p, r) + ", which does not exist");
  }
  if (faults.empty()) detail::check_changes(f, p, tensor_ok, faults);  // needs every reference valid
  if (!faults.empty()) return faults;

  // Acyclic: Kahn's walk over the rewritten edges.
  const std::size_t total = n + p.nodes.size();
  const auto id = [&](node_ref r) { return r.added ? n + r.index : r.index; };
  std::vector<std::vector<std::size_t>> successors(total);
  std::vector<std::size_t> waiting(total, 0);
  const auto arc = [&](std::size_t from, std::size_t to) {
    successors[from].push_back(to);
    ++waiting[to];
  };
  std::map<std::pair<std::size_t, std::size_t>, tensor_ref> new_source;
  for (const input_change& r : p.redirects) new_source[{r.vertex, r.operand}] = r.source;
  std::vector<const node_change*> change_of(n, nullptr);
  for (const node_change& c : p.changes) change_of[c.vertex] = &c;
  for (std::size_t v = 0; v < n; ++v) {
    if (change_of[v] != nullptr) {
      for (const tensor_ref& t : change_of[v]->inputs) arc(id(t.node), v);
      for (const node_ref& c : change_of[v]->control) arc(id(c), v);
      continue;
    }
    for (std::size_t k = 0; k < f.operands[v].size(); ++k) {
      const auto it = new_source.find({v, k});
      arc(it == new_source.end() ? f.operands[v][k].vertex : id(it->second.node), v);
    }
    for (const std::size_t c : f.control[v]) arc(c, v);
  }
  for (std::size_t a = 0; a < p.nodes.size(); ++a) {
    for (const tensor_ref& t : p.nodes[a].inputs) arc(id(t.node), n + a);
    for (const node_ref& c : p.nodes[a].control) arc(id(c), n + a);
  }
  for (const control_change& c : p.controls) arc(id(c.from), id(c.to));
  std::vector<std::size_t> ready;
  for (std::size_t v = 0; v < total; ++v) {
    if (waiting[v] == 0) ready.push_back(v);
  }
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::size_t v = ready.back();
    ready.pop_back();
    ++done;
    for (const std::size_t s : successors[v]) {
      if (--waiting[s] == 0) ready.push_back(s);
    }
  }
  if (done < total) {
    for (std::size_t v = 0; v < total; ++v) {
      if (waiting[v] > 0) {
        faults.push_back("the plan makes a cycle, which blocks " +
                         name_of(f, p, v < n ? original(v) : added(v - n)));
        break;
      }
    }
  }
  return faults;
}

}  // namespace memopt::rewrite
