#pragma once
// recompute: the memory optimizer's recomputation pass as a plan. Targets are
// the nodes under a name scope ("gradients/" by default: a name starting with
// it or containing "/" + it) or marked by the caller (memopt-graph/1's
// attrs.phase = "backward"). A node may be recomputed when it is no target,
// is not fed, and carries the recompute hint (manual mode) or has a cheap op
// type or the hint (heuristic mode). Candidates feed a target directly and
// read no target; each grows into the connected group of recomputable nodes
// around it; only the part of a group that feeds targets is copied
// (Recomputed/<node>), its targets read the copies, and each copy waits for a
// trigger (RecomputeTrigger/<node>, a NoOp) chained and tied to the targets'
// other inputs exactly as the seed places them, so that the copy runs as late
// as possible. Where the seed iterates hash sets we go by topological order,
// so the plan is the same on every run.
//
// Four differences from the seed, all for correctness: a copy reads the
// copies of its recomputed inputs on every port (the seed only renames an
// input written without a port); a copy of an in-place op writes a new
// tensor (written in place it would overwrite a tensor others still read);
// a node reading a storage some op overwrites in place is recomputed only
// with that input (its value would be gone by the time a copy ran); and a
// target whose output aliases an input in such a storage (a view of it, or
// an in-place write over it) keeps reading the original there.
// O((V + E) log V).

#include <memopt/rewrite/copy.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <deque>
#include <functional>
#include <set>
#include <utility>
#include <string>
#include <unordered_set>
#include <vector>

namespace memopt::rewrite {

/// The seed's cheap op types and their ATen equivalents.
[[nodiscard]] inline std::vector<std::string> default_cheap_ops() {
  return {// TensorFlow (the seed's list)
          "Add", "AddN", "BiasAdd", "Cast", "Fill", "FloorDiv", "FloorMod", "FusedBatchNorm", "Mul", "Neg",
          "RealDiv", "Reciprocal", "Relu", "Relu6", "Reshape", "Rsqrt", "Sigmoid", "Sqrt", "Square",
          "SquaredDifference", "Sub", "Tile", "Transpose",
          // ATen
          "add", "add_", "_to_copy", "fill", "fill_", "full", "floor_divide", "remainder", "native_batch_norm",
          "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "mul", "mul_", "neg", "div",
          "div_", "reciprocal", "relu", "relu_", "hardtanh", "hardtanh_", "view", "reshape", "_reshape_alias",
          "_unsafe_view", "rsqrt", "sigmoid", "sqrt", "square", "sub", "sub_", "repeat", "expand", "transpose",
          "t", "permute"};
}

enum class recompute_mode { manual, heuristic };

struct recompute_options {
  recompute_mode mode = recompute_mode::heuristic;
  std::string target_scope = "gradients/";
  std::function<bool(std::size_t)> is_target;  ///< more targets (vertex index), e.g. backward-phase nodes
  std::function<bool(std::size_t)> has_hint;   ///< the recompute hint (vertex index)
  std::vector<std::string> cheap_ops = default_cheap_ops();
  std::vector<std::size_t> feed;               ///< fed vertices: never recomputed
};

/// The plan (see the header comment). Throws bad_plan_error for a fed vertex that does not exist.
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] rewrite_plan recompute(const graph_facts& f, const recompute_options& options = {},
                                     const Naming& naming = {}) {
  const std::size_t n = f.size();
  const std::string& scope = options.target_scope;
  std::vector<bool> target(n, false);
  std::vector<bool> recomputable(n, false);
  std::vector<bool> fed(n, false);
  for (const std::size_t v : options.feed) {
    if (v >= n) throw bad_plan_error({"recompute: fed vertex " + std::to_string(v) + " does not exist"});
    fed[v] = true;
  }
  const std::unordered_set<std::string> cheap(options.cheap_ops.begin(), options.cheap_ops.end());
  const std::vector<std::size_t> position = detail::topological_positions(f);
  std::vector<std::size_t> topological(n);
  for (std::size_t v = 0; v < n; ++v) topological[position[v]] = v;
  const auto overwritten = detail::overwritten_storages(f);
  for (const std::size_t v : topological) {
    target[v] = (!scope.empty() && (f.name[v].starts_with(scope) || f.name[v].find("/" + scope) != std::string::npos)) ||
                (options.is_target && options.is_target(v));
    const bool hinted = options.has_hint && options.has_hint(v);
    recomputable[v] = !target[v] && !fed[v] &&
                      (hinted || (options.mode == recompute_mode::heuristic && cheap.contains(f.op[v]))) &&
                      std::ranges::all_of(f.operands[v], [&](operand o) {
                        return !overwritten[o.vertex][o.port] || recomputable[o.vertex];
                      });
  }
  // The seed's component numbers: later in topological order, smaller.
  const auto component = [&](std::size_t v) { return static_cast<long long>(n - position[v] - 1); };
  const auto feeds_target = [&](std::size_t v) {
    return std::ranges::any_of(f.consumers[v], [&](std::size_t c) { return target[c]; });
  };

  rewrite_plan plan;
  std::vector<bool> visited(n, false);
  std::set<std::pair<std::size_t, std::size_t>> redirected;  // (target, operand) done by earlier groups
  for (const std::size_t candidate : topological) {
    if (visited[candidate] || !recomputable[candidate] || !feeds_target(candidate)) continue;
    const auto inputs = detail::inputs_of(f, candidate);
    if (std::ranges::any_of(inputs, [&](std::size_t u) { return target[u]; })) continue;

    // The connected group of recomputable nodes around the candidate.
    std::vector<bool> in_group(n, false);
    std::vector<std::size_t> group;
    std::deque<std::size_t> to_visit{candidate};
    while (!to_visit.empty()) {
      const std::size_t v = to_visit.front();
      to_visit.pop_front();
      if (in_group[v]) continue;
      in_group[v] = true;
      group.push_back(v);
      for (const std::size_t u : detail::inputs_of(f, v)) {
        if (!in_group[u] && recomputable[u]) to_visit.push_back(u);
      }
      for (const std::size_t c : f.consumers[v]) {
        if (!in_group[c] && recomputable[c]) to_visit.push_back(c);
      }
    }
    for (const std::size_t v : group) visited[v] = true;
    // Sources: members feeding a target, and the members they read.
    std::vector<bool> source(n, false);
    std::set<std::size_t> targets;
    std::deque<std::size_t> sources_to_visit;
    for (const std::size_t v : group) {
      for (const std::size_t c : f.consumers[v]) {
        if (!target[c]) continue;
        targets.insert(c);
        sources_to_visit.push_back(v);
      }
    }
    if (targets.empty()) continue;
    while (!sources_to_visit.empty()) {
      const std::size_t v = sources_to_visit.front();
      sources_to_visit.pop_front();
      if (source[v]) continue;
      source[v] = true;
      for (const std::size_t u : detail::inputs_of(f, v)) {
        if (in_group[u] && !source[u]) sources_to_visit.push_back(u);
      }
    }
    std::vector<std::size_t> sources;  // topological order
    for (const std::size_t v : topological) {
      if (source[v]) sources.push_back(v);
    }

    // Each source's largest component among the targets it feeds, directly
    // or through the sources it feeds (children first: later, smaller).
    std::vector<long long> feed_component(n, -1);
    for (auto it = sources.rbegin(); it != sources.rend(); ++it) {
      const std::size_t v = *it;
      for (const std::size_t c : f.consumers[v]) {
        if (targets.contains(c) || source[c]) feed_component[v] = std::max(feed_component[v], targets.contains(c) ? component(c) : feed_component[c]);
      }
    }
    // Triggers: sources by feed component, largest first (ties by name, larger
    // first), chained, each also waiting for the targets' other inputs that
    // come before its earliest target.
    std::vector<std::size_t> by_feed = sources;
    std::ranges::sort(by_feed, [&](std::size_t a, std::size_t b) {
      return feed_component[a] != feed_component[b] ? feed_component[a] > feed_component[b] : f.name[a] > f.name[b];
    });
    std::vector<std::size_t> target_inputs;
    for (const std::size_t t : targets) {
      for (std::size_t k = 0; k < f.operands[t].size(); ++k) {
        const std::size_t u = f.operands[t][k].vertex;
        if (!source[u] && !redirected.contains({t, k}) && u != t) target_inputs.push_back(u);
      }
      for (const std::size_t u : f.control[t]) {
        if (!source[u] && u != t) target_inputs.push_back(u);
      }
    }
    std::ranges::sort(target_inputs, [&](std::size_t a, std::size_t b) { return component(a) > component(b); });
    target_inputs.erase(std::unique(target_inputs.begin(), target_inputs.end()), target_inputs.end());

    const std::size_t first_trigger = plan.nodes.size();
    std::vector<std::size_t> trigger_of(n);
    auto next_input = target_inputs.begin();
    for (std::size_t k = 0; k < by_feed.size(); ++k) {
      const std::size_t v = by_feed[k];
      added_node trigger{.name = naming.trigger(f.name[v]), .op = "NoOp", .device = f.device[v], .role = node_role::trigger};
      if (k > 0) trigger.control.push_back(added(first_trigger + k - 1));
      for (; next_input != target_inputs.end() && component(*next_input) > feed_component[v]; ++next_input) {
        trigger.control.push_back(original(*next_input));
      }
      trigger_of[v] = plan.nodes.size();
      plan.nodes.push_back(std::move(trigger));
    }
    std::vector<std::size_t> copy_of(n);
    for (std::size_t k = 0; k < sources.size(); ++k) copy_of[sources[k]] = plan.nodes.size() + k;
    for (const std::size_t v : sources) {
      added_node copy = detail::recompute_copy(f, v, 0, naming);
      for (const operand& o : f.operands[v]) {
        copy.inputs.push_back({source[o.vertex] ? added(copy_of[o.vertex]) : original(o.vertex), o.port});
      }
      for (const std::size_t c : f.control[v]) copy.control.push_back(original(c));
      copy.control.push_back(added(trigger_of[v]));
      plan.nodes.push_back(std::move(copy));
    }
    for (const std::size_t t : targets) {
      for (std::size_t k = 0; k < f.operands[t].size(); ++k) {
        const operand o = f.operands[t][k];
        const auto aliases = [&](const tensor_output& out) { return out.shares && out.shares->source == o; };
        // A target aliasing an input whose storage is written in place keeps
        // the original: the write would land in the copy, under the feet of
        // the other copies reading it.
        if (!source[o.vertex] || (overwritten[o.vertex][o.port] && std::ranges::any_of(f.outputs[t], aliases))) {
          continue;
        }
        plan.redirects.push_back({t, k, {added(copy_of[o.vertex]), o.port}});
        redirected.insert({t, k});
      }
    }
  }
  return plan;
}

}  // namespace memopt::rewrite
