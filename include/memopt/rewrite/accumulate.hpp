#pragma once
// In-place accumulation, as the memory optimizer's scheduling pass does it,
// as a plan. A sum of many tensors (AddN, AccumulateNV2) needs all of them at
// once; accumulated, each input can go as soon as it is added. The sum of
// <s> becomes:
//   <s>/tmp_var              TemporaryVariable, a buffer of the sum's size,
//                            made after the input computed first (and the
//                            control inputs of <s> that run before that);
//   <s>/tmp_var_zeros        ZerosLike of that input;
//   <s>/tmp_var_initializer  Assign of the zeros to the buffer (the accumulator);
//   <s>/tmp_var_accum_<i>    AssignAdd of data input i into the accumulator;
//   <s>                      DestroyTemporaryVariable: reads the accumulator
//                            after every add and hands its buffer on (a view),
//                            keeping the name, size and graph outputs of <s>.
// "The input computed first" is the seed's: the one finished first by a
// depth-first walk back from <s> that explores a node's last input first.
//
// The buffer, the accumulator and the adds' outputs are references (TF's
// ref tensors): swapping never moves them (plan_references in swap.hpp).
// The adds write the accumulator in place, but the plan's graph declares
// them as views of it: the plan's own edges order them (the accumulator
// before every add, every add before the read) and nothing else reads the
// accumulator (check_plan enforces it), while memopt's in-place hazards
// follow the graph's vertex order, which puts the read (an original vertex)
// before the nodes the plan adds. The memory is the same either way.
//
// choose_accumulations is the seed's rule: on a device whose simulated peak
// exceeds memory_fraction of its memory, every sum (of more than two data
// inputs) one of whose inputs, made on the sum's device, is live at the peak.
// Left alone: sums whose inputs differ in size from the output, already
// accumulated sums (<s>/tmp_var exists), sums of no data input, and sums
// that read, or make, a storage some op overwrites in place (the adds would
// read it at other times than the sum did).

#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/simulate/result.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace memopt::rewrite {

struct accumulation_options {
  std::vector<std::string> sum_ops = {"AddN", "AccumulateNV2"};
  double memory_fraction = 0.8;  ///< the seed accumulates when a device's peak exceeds this share of its memory
};

namespace detail {

/// Post-order positions of a depth-first walk back from `from` over data and
/// control inputs, the last input explored first (by vertex; max() where not reached).
inline std::vector<std::size_t> reverse_dfs_finish(const graph_facts& f, std::size_t from) {
  constexpr std::size_t unseen = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> finish(f.size(), unseen);
  std::vector<bool> entered(f.size(), false);
  std::vector<std::pair<std::size_t, bool>> stack{{from, false}};  // (vertex, inputs pushed)
  std::size_t next = 0;
  while (!stack.empty()) {
    const auto [v, expanded] = stack.back();
    stack.pop_back();
    if (expanded) {
      finish[v] = next++;
      continue;
    }
    if (entered[v]) continue;
    entered[v] = true;
    stack.emplace_back(v, true);
    for (const operand& o : f.operands[v]) stack.emplace_back(o.vertex, false);
    for (const std::size_t c : f.control[v]) stack.emplace_back(c, false);
  }
  return finish;
}

}  // namespace detail

/// A sum the pass may accumulate: a sum op of more than two data inputs.
[[nodiscard]] inline bool is_accumulable_sum(const graph_facts& f, std::size_t v, const accumulation_options& options = {}) {
  return f.operands[v].size() > 2 && std::ranges::find(options.sum_ops, f.op[v]) != options.sum_ops.end();
}

/// The seed's choice on one device of a simulation of the graph: sorted vertices.
[[nodiscard]] inline std::vector<std::size_t> choose_accumulations(const graph_facts& f, const sim::simulation_result& r,
                                                                   std::size_t device, std::uint64_t capacity,
                                                                   const accumulation_options& options = {}) {
  const auto peak = static_cast<double>(r.devices.at(device).peak_bytes());
  if (capacity == 0 || peak <= options.memory_fraction * static_cast<double>(capacity)) return {};
  std::vector<std::size_t> sums;
  for (const sim::peak_tensor& live : sim::tensors_at_peak(r, device)) {
    const operand t{live.vertex, live.port};
    for (const std::size_t s : f.consumers[t.vertex]) {
      if (is_accumulable_sum(f, s, options) && f.device[s] == f.device[t.vertex] &&
          std::ranges::find(f.operands[s], t) != f.operands[s].end()) {
        sums.push_back(s);
      }
    }
  }
  std::ranges::sort(sums);
  sums.erase(std::unique(sums.begin(), sums.end()), sums.end());
  return sums;
}

/// The accumulation of each vertex of `sums` (see the header comment).
/// Throws bad_plan_error for a vertex that does not exist.
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] rewrite_plan accumulate(const graph_facts& f, const std::vector<std::size_t>& sums, const Naming& naming = {}) {
  rewrite_plan plan;
  const std::unordered_set<std::string> names(f.name.begin(), f.name.end());
  for (const std::size_t s : sums) {
    if (s >= f.size()) throw bad_plan_error({"accumulate names vertex " + std::to_string(s) + ", which does not exist"});
  }
  const auto overwritten = detail::overwritten_storages(f);
  std::unordered_set<std::size_t> done;
  for (const std::size_t s : sums) {
    if (!done.insert(s).second || f.operands[s].empty() || f.outputs[s].size() != 1 ||
        overwritten[s][0] || names.contains(naming.accumulator_buffer(f.name[s]))) {
      continue;
    }
    const std::uint64_t bytes = f.outputs[s][0].bytes;
    if (std::ranges::any_of(f.operands[s], [&](operand o) {
          return f.outputs[o.vertex][o.port].bytes != bytes || overwritten[o.vertex][o.port];
        })) {
      continue;
    }

    const auto finish = detail::reverse_dfs_finish(f, s);
    std::size_t first = 0;
    for (std::size_t k = 1; k < f.operands[s].size(); ++k) {
      if (finish[f.operands[s][k].vertex] < finish[f.operands[s][first].vertex]) first = k;
    }
    const operand first_input = f.operands[s][first];
    std::vector<node_ref> before;  // control inputs that run before the first input, and after
    std::vector<node_ref> after;
    for (auto c = f.control[s].rbegin(); c != f.control[s].rend(); ++c) {
      (finish[*c] < finish[first_input.vertex] ? before : after).push_back(original(*c));
    }
    before.push_back(original(first_input.vertex));

    const std::string& device = f.device[s];
    const std::size_t buffer = plan.nodes.size();
    plan.nodes.push_back({.name = naming.accumulator_buffer(f.name[s]), .op = "TemporaryVariable", .device = device,
                          .outputs = {{.bytes = bytes, .reference = true}}, .control = std::move(before)});
    plan.nodes.push_back({.name = naming.accumulator_zeros(f.name[s]), .op = "ZerosLike", .device = device,
                          .outputs = {{.bytes = bytes}}, .inputs = {{original(first_input.vertex), first_input.port}}});
    const std::size_t accumulator = plan.nodes.size();
    plan.nodes.push_back({.name = naming.accumulator(f.name[s]), .op = "Assign", .device = device,
                          .role = node_role::accumulator, .outputs = {{.bytes = bytes, .alias_operand = 0, .reference = true}},
                          .inputs = {{added(buffer), 0}, {added(buffer + 1), 0}}});
    node_change read{.vertex = s, .op = "DestroyTemporaryVariable", .inputs = {{added(accumulator), 0}}, .aliases = {0}};
    const double flops = f.flops[s] / static_cast<double>(f.operands[s].size());
    for (std::size_t k = 0; k < f.operands[s].size(); ++k) {
      read.control.push_back(added(plan.nodes.size()));
      plan.nodes.push_back({.name = naming.accumulate(f.name[s], k), .op = "AssignAdd", .device = device,
                            .role = node_role::accumulate, .outputs = {{.bytes = bytes, .alias_operand = 0, .reference = true}},
                            .flops = flops,
                            .inputs = {{added(accumulator), 0}, {original(f.operands[s][k].vertex), f.operands[s][k].port}}});
    }
    read.control.insert(read.control.end(), after.begin(), after.end());
    plan.changes.push_back(std::move(read));
  }
  return plan;
}

}  // namespace memopt::rewrite
