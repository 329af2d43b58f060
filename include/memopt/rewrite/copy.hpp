#pragma once
// A copy of a vertex as the recomputation passes add it (recompute.hpp, the
// rematerialisation planners): the original's op, device, flops and outputs,
// named by the naming policy, marked as what it copies.

#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <string>

namespace memopt::rewrite::detail {

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
      const auto source = std::ranges::find(f.operands[u], out.shares->source);
      if (source != f.operands[u].end()) copy.alias_operand = static_cast<std::size_t>(source - f.operands[u].begin());
    }
    node.outputs.push_back(copy);
  }
  return node;
}

}  // namespace memopt::rewrite::detail
