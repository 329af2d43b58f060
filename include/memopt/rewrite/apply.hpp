#pragma once
// apply: the rewritten graph of a plan, built new; the caller's graph is
// never touched. Vertex i < n is original vertex i (same name, op, outputs,
// graph outputs), then the plan's nodes in order. A redirected input reads
// its new source, and an output aliasing a redirected input aliases the new
// source (a view of a recomputed tensor is a view of the copy); a changed
// vertex runs its new op on its new inputs, its outputs keeping their sizes
// and graph outputs but aliasing as the change says. A node on the
// host (a swap-out) keeps its bytes in host_bytes and takes none on the
// device. Takes the graph as read_facts(g, index) reads it. Throws
// bad_plan_error with check_plan's faults. O(V + E + plan).

#include <memopt/rewrite/check.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace memopt::rewrite {

[[nodiscard]] inline rewritten_graph apply(const graph_facts& f, const rewrite_plan& p) {
  if (auto faults = check_plan(f, p); !faults.empty()) throw bad_plan_error(std::move(faults));
  const std::size_t n = f.size();
  const auto id = [&](node_ref r) { return r.added ? n + r.index : r.index; };
  std::map<std::pair<std::size_t, std::size_t>, tensor_ref> new_source;
  for (const input_change& r : p.redirects) new_source[{r.vertex, r.operand}] = r.source;
  std::vector<std::vector<node_ref>> extra_control(n + p.nodes.size());
  for (const control_change& c : p.controls) extra_control[id(c.to)].push_back(c.from);

  rewritten_graph g(n + p.nodes.size());
  // Data inputs of each vertex, operand order, as (vertex, port) of the new graph.
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> inputs(n + p.nodes.size());
  std::vector<std::vector<std::size_t>> control(n + p.nodes.size());
  for (const node_change& c : p.changes) {
    rewritten_node& node = g[c.vertex];
    node.op = c.op;
    node.flops = c.flops;
    node.changed = true;
    for (const tensor_ref& t : c.inputs) inputs[c.vertex].emplace_back(id(t.node), t.port);
    for (const node_ref& r : c.control) control[c.vertex].push_back(id(r));
    for (std::size_t port = 0; port < f.outputs[c.vertex].size(); ++port) {
      tensor_output out{.bytes = f.outputs[c.vertex][port].bytes, .live_out = f.outputs[c.vertex][port].live_out};
      if (const auto k = c.aliases[port]) {
        out.shares = shared_storage<std::size_t>{{inputs[c.vertex][*k].first, inputs[c.vertex][*k].second}, false};
      }
      node.outputs.push_back(out);
    }
  }
  for (std::size_t v = 0; v < n; ++v) {
    rewritten_node& node = g[v];
    node.name = f.name[v];
    node.device = f.device[v];
    node.persistent = f.persistent[v];
    node.scratch_bytes = f.scratch[v];
    node.origin = v;
    if (node.changed) continue;
    node.op = f.op[v];
    node.flops = f.flops[v];
    node.outputs = f.outputs[v];
    for (std::size_t k = 0; k < f.operands[v].size(); ++k) {
      const auto it = new_source.find({v, k});
      const operand old = f.operands[v][k];
      inputs[v].emplace_back(it == new_source.end() ? old.vertex : id(it->second.node),
                             it == new_source.end() ? old.port : it->second.port);
      if (it == new_source.end()) continue;
      for (tensor_output& out : node.outputs) {
        if (out.shares && out.shares->source == old) out.shares->source = {inputs[v][k].first, inputs[v][k].second};
      }
    }
    control[v] = f.control[v];
  }
  for (std::size_t a = 0; a < p.nodes.size(); ++a) {
    const added_node& added_node = p.nodes[a];
    rewritten_node& node = g[n + a];
    node.name = added_node.name;
    node.op = added_node.op;
    node.device = added_node.device;
    node.flops = added_node.flops;
    node.added = a;
    if (added_node.copy_of) node.scratch_bytes = f.scratch[*added_node.copy_of];  // a recomputation runs the op again
    for (const tensor_ref& t : added_node.inputs) inputs[n + a].emplace_back(id(t.node), t.port);
    for (const node_ref& c : added_node.control) control[n + a].push_back(id(c));
    for (const added_output& out : added_node.outputs) {
      tensor_output o{.bytes = added_node.on_host ? 0 : out.bytes};
      if (added_node.on_host) node.host_bytes += out.bytes;
      if (out.alias_operand) {
        const auto [source, port] = inputs[n + a][*out.alias_operand];
        o.shares = shared_storage<std::size_t>{{source, port}, out.in_place};
      }
      node.outputs.push_back(o);
    }
  }
  for (const node_ref& r : p.relaxed_allocation) g[id(r)].relaxed_allocation = true;
  for (std::size_t v = 0; v < n + p.nodes.size(); ++v) {
    for (const auto& [source, port] : inputs[v]) add_edge(source, v, tensor_edge{.port = port}, g);
    for (const std::size_t c : control[v]) add_edge(c, v, tensor_edge{.control = true}, g);
    for (const node_ref& c : extra_control[v]) add_edge(id(c), v, tensor_edge{.control = true}, g);
  }
  return g;
}

}  // namespace memopt::rewrite
