#pragma once
// How the rematerialisation planner's run (remat/run.hpp) rebuilds what a step
// reads: each input where it is held, a dropped one recomputed as a copy of
// its maker after the maker's own inputs, recursively. When a step lacks
// several, one that another's rebuild remakes comes first (the other then
// reads it), and otherwise Sethi and Ullman's order: the rebuild that holds
// the most beyond what it leaves goes first, so a residual chain's deep input
// is remade before its block's own branch, not after every block's branch
// has been made and is held.

#include <memopt/remat/run.hpp>
#include <memopt/rewrite/naming.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace memopt::remat::detail {

template <rewrite_naming Naming>
auto remat_run<Naming>::ensure_inputs(std::size_t v, bool for_copy) -> std::vector<input_ref> {
  std::vector<input_ref> inputs;
  if (for_copy && reads_shape_only(f_, v)) return inputs;
  const auto& operands = f_.operands[v];
  std::vector<std::size_t> taken(operands.size());  // operand indices, in the order taken
  std::vector<std::size_t> gone;  // the dropped ones' places in `taken`
  for (std::size_t k = 0; k < operands.size(); ++k) {
    taken[k] = k;
    if (!held(operands[k], for_copy)) gone.push_back(k);
  }
  if (gone.size() > 1) {
    const std::vector<std::size_t> rebuilt = rebuild_order(operands, gone);
    for (std::size_t j = 0; j < gone.size(); ++j) taken[gone[j]] = rebuilt[j];
  }
  inputs.resize(operands.size());
  for (const std::size_t k : taken) {
    inputs[k] = ensure(operands[k], for_copy);
    ++storages_[inputs[k].storage].pending;
  }
  return inputs;
}

template <rewrite_naming Naming>
auto remat_run<Naming>::ensure(operand t, bool for_copy) -> input_ref {
  if (const auto in = held(t, for_copy)) return *in;
  const std::size_t u = t.vertex;
  if (!recomputable_[u]) throw unrebuildable{t};  // rare: the walks at eviction missed a later drop
  const auto inputs = ensure_inputs(u, true);
  const std::size_t k = copies_[u]++;
  added_node node = rewrite::detail::recompute_copy(f_, u, k, naming_);
  for (const input_ref& in : inputs) node.inputs.push_back(in.tensor);
  if (last_run_) node.control.push_back(*last_run_);
  const node_ref copy = rewrite::added(result_.plan.nodes.size());
  result_.plan.nodes.push_back(std::move(node));
  result_.extra_flops += f_.flops[u];
  compute(u, copy, inputs, t.port);
  return {where_[t.vertex][t.port], holder_[t.vertex][t.port]};
}

template <rewrite_naming Naming>
typename remat_run<Naming>::rebuild_need remat_run<Naming>::measure_rebuild(operand t, rebuild_walk& walk) const {
  const std::pair key(t.vertex, t.port);
  if (const auto it = walk.find(key); it != walk.end()) return it->second;
  const std::size_t u = t.vertex;
  std::vector<rebuild_need> inputs;
  if (!reads_shape_only(f_, u)) {
    for (const operand& o : f_.operands[u]) {
      if (!held(o, true)) inputs.push_back(measure_rebuild(o, walk));
    }
  }
  std::ranges::stable_sort(inputs, std::greater<>(), &rebuild_need::surplus);
  rebuild_need need;
  std::uint64_t holding = 0;
  for (const rebuild_need& in : inputs) {
    need.peak = std::max(need.peak, holding + in.peak);
    holding += in.left;
  }
  for (const tensor_output& out : f_.outputs[u]) holding += out.shares || f_.persistent[u] ? 0 : out.bytes;
  need.peak = std::max(need.peak, holding);
  const operand root = root_[t.vertex][t.port];
  need.left = f_.outputs[root.vertex][root.port].bytes;
  return walk[key] = need;
}

template <rewrite_naming Naming>
std::vector<std::size_t> remat_run<Naming>::rebuild_order(const std::vector<operand>& operands, const std::vector<std::size_t>& gone) const {
  std::vector<rebuild_walk> walks(gone.size());
  std::vector<std::int64_t> surplus(gone.size());
  for (std::size_t j = 0; j < gone.size(); ++j) surplus[j] = measure_rebuild(operands[gone[j]], walks[j]).surplus();
  const auto remakes = [&](std::size_t j, std::size_t i) {  // j's rebuild remakes operand gone[i]
    const operand t = operands[gone[i]];
    return i != j && operands[gone[j]] != t && walks[j].contains({t.vertex, t.port});
  };
  std::vector<std::size_t> order;
  std::vector<bool> placed(gone.size(), false);
  while (order.size() < gone.size()) {
    std::size_t next = gone.size();
    for (std::size_t j = 0; j < gone.size(); ++j) {
      if (placed[j]) continue;
      bool waits = false;
      for (std::size_t i = 0; i < gone.size() && !waits; ++i) waits = !placed[i] && remakes(j, i);
      if (!waits && (next == gone.size() || surplus[j] > surplus[next])) next = j;
    }
    placed[next] = true;
    order.push_back(gone[next]);
  }
  return order;
}

}  // namespace memopt::remat::detail
