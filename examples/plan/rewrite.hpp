#pragma once
// memopt-plan rewrite GRAPH --budget BYTES [--mode remat|recompute|swap|accumulate|all]
// memopt-plan rewrite GRAPH --curve [--svg FILE]  (graph, peak_before, floor,
//     curve: budget, peak, fits, extra_flops, extra_flops_percent,
//     extra_flops_floor_percent (the cost floor), nodes_added at eleven
//     budgets from the best peak down to the floor; --svg draws it, svg.hpp)
//     [--recompute manual|heuristic] [--scope PREFIX] [--feed NODE]... [--replay-random]
//     [--config CONFIG.json] [--work-limit N] [--rounds N] [--local-search N] [--output NEW_GRAPH.json] [--no-alias]
//     [--tf-cost-model] [--seed-plan]
// remat (the default): the budget-driven planner (remat/rematerialize.hpp) over the
// original's best schedule and its program order; random draws are kept
// unless --replay-random says the runtime replays them. The other modes are the
// memory optimizer's rewrites as plans (rewrite/). Recompute targets:
// nodes under the scope (default "gradients/") and nodes with attrs.phase
// "backward"; the hint: attrs.recompute_hint (any value but false). Swap:
// attrs.swap_to_host (input indices) and the heuristic on each device with a
// capacity (the config's memory_bytes; without a config, one device of
// --budget bytes), in a simulation that honours all of the config (a fetch
// prunes what it does not need, as in memopt-plan simulate); attrs.ref_inputs
// and ref_outputs are never swapped.
// Accumulate: sums (AddN, AccumulateNV2) on a device whose peak passes 80 %
// of its capacity. all: recompute, then rounds of accumulation and swapping
// until one changes nothing (at most --rounds, the seed's 25). The guard
// (unless --seed-plan): of the plan these modes make, only the groups that
// lower the best schedule's peak are kept (rewrite::prune_plan), so the
// result never peaks above the graph given; the JSON's "dropped" lists the
// others (targets, nodes) and "guard" says what it did (applied, peak_seed:
// the whole plan's peak, groups, kept, evaluations, complete, note). Every
// mode ends with the relaxed allocator marks on assignments. Prints one JSON
// object: graph, mode, in remat mode method (who made the plan: eviction,
// chain or blocks, then ", pruned" when needless copies were dropped;
// remat_result::method), budget, peak_before and peak_after (each the best
// schedule's peak, exact_schedule under the work limit), proved_before,
// proved_after, fits (peak_after <= budget), extra_flops, extra_flops_percent
// (of the graph's flops), swapped_bytes, nodes_added, floor (bytes, node,
// tensors: no rematerialisation goes below it; remat/floor.hpp), in remat
// mode cost_floor (extra_flops, extra_flops_percent: no plan within the
// budget adds fewer, null when none fits; node, complete;
// remat/cost_floor.hpp), out_of_reach (why, when peak_after is
// above the budget) and the plan (nodes, redirects, controls, changes,
// relaxed). A budget that cannot be met is a result. --output writes the rewritten graph in memopt-graph/1, in the
// order reaching peak_after: every original node keeps its name, attributes
// and the graph outputs (a changed one takes its new op); added nodes carry
// their sizes, flops and attrs.rewrite (their role) and attrs.copy_of;
// relaxed nodes attrs.relax_allocator_constraints. GRAPH may be a GraphDef
// in JSON (tf_like/): its marks are _recompute_hint and _swap_to_host, and
// --output writes a GraphDef with the seed's names and attributes. With
// --tf-cost-model (a GraphDef only) the passes see it as the memory optimizer
// does: memory counted as TF's cost model counts it (every output its own
// buffer, constants and variables persistent), references from TF's op
// signatures (tf_like::memory_model::tf_cost_model), swap and accumulate
// simulating as its virtual cluster runs (first ready first, not the best
// order) and an op completing 1 ns after it ends; by default memopt's
// storages and the best order. The peaks reported are the model's either way.

#include "command.hpp"
#include "simulate.hpp"
#include "svg.hpp"

#include <tf_like/rewrite.hpp>

#include <memopt/remat.hpp>
#include <memopt/rewrite.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <utility>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace memopt::plan {

/// The memopt-graph/1 text of a rewritten graph, nodes in `order`.
inline nlohmann::ordered_json rewritten_graph_json(const io::file_graph& original, const rewrite::rewritten_graph& g,
                                                   const rewrite::rewrite_plan& plan, const std::vector<std::size_t>& order) {
  nlohmann::ordered_json out;
  out["format"] = "memopt-graph/1";
  out["name"] = original[boost::graph_bundle].name;
  out["source"] = original[boost::graph_bundle].source + " (rewritten by memopt-plan rewrite)";
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
  const auto tensor_name = [&](std::size_t v, std::size_t port) { return g[v].name + ":" + std::to_string(port); };
  for (const std::size_t v : order) {
    const rewrite::rewritten_node& node = g[v];
    nlohmann::ordered_json j;
    j["name"] = node.name;
    j["op"] = node.op;
    auto& sizes = j["outputs"] = nlohmann::ordered_json::array();
    for (std::size_t port = 0; port < node.outputs.size(); ++port) {
      sizes.push_back(node.outputs[port].bytes);
      if (node.outputs[port].live_out) outputs.push_back(tensor_name(v, port));
    }
    nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
    nlohmann::ordered_json control = nlohmann::ordered_json::array();
    for (const auto e : boost::make_iterator_range(in_edges(v, g))) {
      const auto s = source(e, g);
      if (g[e].control) {
        control.push_back(g[s].name);
      } else {
        inputs.push_back(tensor_name(s, g[e].port));
      }
    }
    if (!inputs.empty()) j["inputs"] = std::move(inputs);
    if (!control.empty()) j["control"] = std::move(control);
    if (node.persistent) j["persistent"] = true;
    if (!node.device.empty()) j["device"] = node.device;
    if (node.flops > 0) j["flops"] = node.flops;
    if (node.scratch_bytes > 0) j["scratch_bytes"] = node.scratch_bytes;
    nlohmann::ordered_json attrs = node.origin != rewrite::no_vertex && original[node.origin].attrs.is_object()
                                       ? nlohmann::ordered_json(original[node.origin].attrs)
                                       : nlohmann::ordered_json::object();
    // Aliases as this graph has them (a redirected view follows its new source).
    attrs.erase("alias");
    attrs.erase("view");
    attrs.erase("inplace");
    nlohmann::ordered_json alias = nlohmann::ordered_json::array();
    bool aliased = false;
    bool in_place = false;
    for (const auto& o : node.outputs) {
      if (o.shares) {
        alias.push_back(tensor_name(o.shares->source.vertex, o.shares->source.port));
        aliased = true;
        in_place = in_place || o.shares->in_place;
      } else {
        alias.push_back(nullptr);
      }
    }
    if (aliased) {
      attrs["alias"] = std::move(alias);
      attrs[in_place ? "inplace" : "view"] = true;
    }
    if (node.relaxed_allocation) attrs["relax_allocator_constraints"] = true;
    if (node.added != rewrite::no_vertex) {
      const auto& added = plan.nodes[node.added];
      attrs["rewrite"] = rewrite::to_string(added.role);
      if (added.copy_of) attrs["copy_of"] = original[*added.copy_of].name;
      if (node.host_bytes > 0) attrs["host_bytes"] = node.host_bytes;
    }
    if (!attrs.empty()) j["attrs"] = std::move(attrs);
    nodes.push_back(std::move(j));
  }
  out["nodes"] = std::move(nodes);
  out["outputs"] = std::move(outputs);
  return out;
}

inline nlohmann::ordered_json plan_json(const rewrite::graph_facts& f, const rewrite::rewrite_plan& plan) {
  const auto name_of = [&](rewrite::node_ref r) { return r.added ? plan.nodes[r.index].name : f.name[r.index]; };
  const auto tensor = [&](rewrite::tensor_ref t) { return name_of(t.node) + ":" + std::to_string(t.port); };
  nlohmann::ordered_json out;
  auto& nodes = out["nodes"] = nlohmann::ordered_json::array();
  for (const auto& n : plan.nodes) {
    nlohmann::ordered_json j{{"name", n.name}, {"op", n.op}, {"role", rewrite::to_string(n.role)}};
    if (n.copy_of) j["copy_of"] = f.name[*n.copy_of];
    auto& inputs = j["inputs"] = nlohmann::ordered_json::array();
    for (const auto& t : n.inputs) inputs.push_back(tensor(t));
    auto& control = j["control"] = nlohmann::ordered_json::array();
    for (const auto& c : n.control) control.push_back(name_of(c));
    nodes.push_back(std::move(j));
  }
  auto& redirects = out["redirects"] = nlohmann::ordered_json::array();
  for (const auto& r : plan.redirects) {
    redirects.push_back({{"node", f.name[r.vertex]}, {"input", r.operand}, {"from", tensor(r.source)}});
  }
  auto& controls = out["controls"] = nlohmann::ordered_json::array();
  for (const auto& c : plan.controls) controls.push_back({{"from", name_of(c.from)}, {"to", name_of(c.to)}});
  auto& changes = out["changes"] = nlohmann::ordered_json::array();
  for (const auto& c : plan.changes) {
    nlohmann::ordered_json j{{"node", f.name[c.vertex]}, {"op", c.op}};
    auto& inputs = j["inputs"] = nlohmann::ordered_json::array();
    for (const auto& t : c.inputs) inputs.push_back(tensor(t));
    auto& control = j["control"] = nlohmann::ordered_json::array();
    for (const auto& r : c.control) control.push_back(name_of(r));
    changes.push_back(std::move(j));
  }
  auto& relaxed = out["relaxed"] = nlohmann::ordered_json::array();
  for (const auto& r : plan.relaxed_allocation) relaxed.push_back(name_of(r));
  return out;
}

/// attrs.<key> of vertex v, or null.
inline const nlohmann::json* node_attr(const io::file_graph& g, std::size_t v, const char* key) {
  const auto& attrs = g[v].attrs;
  if (!attrs.is_object()) return nullptr;
  const auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : &*it;
}

/// attrs.<key> as a list of indices: a number, or a list of numbers (else empty).
inline std::vector<std::size_t> index_attr(const io::file_graph& g, std::size_t v, const char* key) {
  const auto* value = node_attr(g, v, key);
  std::vector<std::size_t> out;
  if (value == nullptr) return out;
  if (value->is_number_unsigned()) out.push_back(value->get<std::size_t>());
  if (value->is_array()) {
    for (const auto& i : *value) {
      if (i.is_number_unsigned()) out.push_back(i.get<std::size_t>());
    }
  }
  return out;
}

/// The seed's recomputation with memopt-graph/1's marks: attrs.phase
/// "backward" for targets, attrs.recompute_hint (not false) for the hint.
inline rewrite::rewrite_plan recompute_plan(const io::file_graph& g, const rewrite::graph_facts& facts,
                                            const std::string& mode, const std::string& scope,
                                            const std::vector<std::size_t>& feed) {
  rewrite::recompute_options options;
  options.mode = mode == "manual" ? rewrite::recompute_mode::manual : rewrite::recompute_mode::heuristic;
  options.target_scope = scope;
  options.is_target = [&g](std::size_t v) {
    const auto* phase = node_attr(g, v, "phase");
    return phase != nullptr && *phase == "backward";
  };
  options.has_hint = [&g](std::size_t v) {
    const auto* hint = node_attr(g, v, "recompute_hint");
    return hint != nullptr && *hint != false;
  };
  options.feed = feed;
  return rewrite::recompute(facts, options);
}

/// The graph `before` makes of g, simulated in the best schedule's order (the
/// order the peaks are reported for), or with `seed_scheduler` as the seed's
/// virtual cluster runs it (first ready first, ties by name), on the config's
/// machine, with its fetch, feed and accounting; copies run where their
/// originals do.
struct simulated_rewrite {
  rewrite::rewritten_graph graph;
  rewrite::graph_facts facts;
  sim::simulation_result run;
};

inline simulated_rewrite simulate_rewritten(const io::file_graph& g, const rewrite::graph_facts& facts,
                                            const rewrite::rewrite_plan& before, const simulation_config& config,
                                            const exact_options& search, bool seed_scheduler = false) {
  simulated_rewrite s{.graph = rewrite::apply(facts, before)};
  const rewrite::rewritten_graph& h = s.graph;
  s.facts = rewrite::read_facts(h);
  std::vector<double> rank(num_vertices(h));
  if (!seed_scheduler) {
    const auto best = exact_schedule(h, search);
    for (std::size_t k = 0; k < best.order.size(); ++k) rank[best.order[k]] = static_cast<double>(k);
  }
  const auto by_rank = [&rank](const sim::task& t, double) { return rank[t.vertex]; };
  const auto original_placement = simulation_placement(g, config, "");
  // An added node runs where the original it copies runs, else where the
  // originals of its device run, else with its first input.
  std::map<std::string, std::size_t> by_device;
  for (std::size_t v = facts.size(); v-- > 0;) {
    if (!facts.device[v].empty()) by_device[facts.device[v]] = original_placement[v];
  }
  const auto position = rewrite::detail::topological_positions(s.facts);
  std::vector<std::size_t> order(position.size());
  for (std::size_t v = 0; v < position.size(); ++v) order[position[v]] = v;
  std::vector<std::size_t> placement(num_vertices(h), 0);
  for (const std::size_t v : order) {
    const auto& node = h[v];
    const auto copy_of = node.added == rewrite::no_vertex ? std::optional<std::size_t>(v) : before.nodes[node.added].copy_of;
    if (copy_of) {
      placement[v] = original_placement[*copy_of];
    } else if (const auto it = by_device.find(node.device); it != by_device.end()) {
      placement[v] = it->second;
    } else if (const auto in = rewrite::detail::inputs_of(s.facts, v); !in.empty()) {
      placement[v] = placement[in.front()];
    }
  }
  const auto options = simulation_options_for(g, config);
  s.run = seed_scheduler ? sim::simulate(h, config.machine, placement, config.cost, sim::first_ready{}, options)
                         : sim::simulate(h, config.machine, placement, config.cost, sim::priority(by_rank), options);
  return s;
}

/// The seed's accumulation on the graph `before` makes of g: the sums its
/// rule picks on each device with a capacity (original vertices: a plan
/// changes no node an earlier pass added); `seed_scheduler` as in
/// simulate_rewritten.
inline rewrite::rewrite_plan accumulate_plan(const io::file_graph& g, const rewrite::graph_facts& facts,
                                             const rewrite::rewrite_plan& before, const simulation_config& config,
                                             const exact_options& search, bool seed_scheduler = false) {
  const auto s = simulate_rewritten(g, facts, before, config, search, seed_scheduler);
  std::vector<std::size_t> sums;
  for (std::size_t d = 0; d < config.machine.devices.size(); ++d) {
    for (const std::size_t v : rewrite::choose_accumulations(s.facts, s.run, d, config.machine.devices[d].memory_bytes)) {
      if (v < facts.size()) sums.push_back(v);
    }
  }
  return rewrite::then(before, rewrite::accumulate(s.facts, sums), facts.size());
}

/// The seed's swapping on the graph `before` makes of g: the manual requests
/// (attrs.swap_to_host) and, on each device with a capacity, the heuristic's,
/// with completion times and memory from the simulation. With
/// `tf_cost_model`, as the seed runs it: simulated as its virtual cluster
/// does, each op completing 1 ns after it ends.
inline rewrite::rewrite_plan swap_plan(const io::file_graph& g, const rewrite::graph_facts& facts,
                                       const rewrite::rewrite_plan& before, const simulation_config& config,
                                       const exact_options& search, bool tf_cost_model = false) {
  const std::size_t n = facts.size();
  const auto s = simulate_rewritten(g, facts, before, config, search, tf_cost_model);
  rewrite::swap_options options;
  if (tf_cost_model) options.completion_delay_us = 0.001;
  options.is_reference_input = [&](std::size_t v, std::size_t k) {
    return v < n && std::ranges::count(index_attr(g, v, "ref_inputs"), k) > 0;
  };
  options.is_reference_output = rewrite::plan_references(before, n, [&](std::size_t v, std::size_t port) {
    return std::ranges::count(index_attr(g, v, "ref_outputs"), port) > 0;
  });
  std::vector<rewrite::swap_request> requests;
  for (std::size_t d = 0; d < config.machine.devices.size(); ++d) {
    const std::uint64_t capacity = config.machine.devices[d].memory_bytes;
    if (capacity == 0) continue;
    const auto chosen = rewrite::choose_swaps(s.facts, s.run, d, capacity, options);
    requests.insert(requests.end(), chosen.begin(), chosen.end());
  }
  for (std::size_t v = 0; v < n; ++v) {
    const auto inputs = index_attr(g, v, "swap_to_host");
    if (!inputs.empty()) requests.push_back({v, inputs});
  }
  const auto swaps = rewrite::swap(s.facts, requests, rewrite::completion_times(s.run, num_vertices(s.graph)), options);
  return rewrite::then(before, swaps, n);
}

/// The seed's passes' plan and what the guard kept of it.
struct seed_guard {
  rewrite::rewrite_plan seed;
  rewrite::pruned_plan pruned;
};

/// The parts the guard dropped: the original vertices each redirected or
/// changed (targets) and the nodes it added (nodes), by name.
inline nlohmann::ordered_json dropped_json(const rewrite::graph_facts& facts, const seed_guard& guard) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& part : guard.pruned.dropped) {
    nlohmann::ordered_json targets = nlohmann::ordered_json::array();
    for (const std::size_t v : part.targets) targets.push_back(facts.name[v]);
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    for (const std::size_t i : part.nodes) nodes.push_back(guard.seed.nodes[i].name);
    out.push_back({{"targets", std::move(targets)}, {"nodes", std::move(nodes)}});
  }
  return out;
}

/// What the guard did, in figures and in a sentence (null fields: no guard, --seed-plan).
inline nlohmann::ordered_json guard_json(const std::optional<seed_guard>& guard) {
  if (!guard) {
    return {{"applied", false}, {"note", "--seed-plan: the seed's plan whole, whatever it does to the peak"}};
  }
  const auto& r = guard->pruned;
  const std::size_t groups = r.kept.size() + r.dropped.size();
  std::string note;
  const std::string seed_peak = r.peak_given > r.peak_before
                                    ? "raised the peak from " + std::to_string(r.peak_before) + " to " + std::to_string(r.peak_given)
                                    : "left the peak at " + std::to_string(r.peak_before);
  if (groups == 0) {
    note = "the seed's passes added nothing";
  } else if (r.kept.empty() && !r.complete) {
    note = "the seed's plan " + seed_peak + "; the work limit ended the pruning after " + std::to_string(r.evaluations) +
           " evaluations with what was left of it no lower than the graph, so none of its " + std::to_string(groups) +
           " groups is kept and the plan is empty";
  } else if (r.kept.empty()) {
    note = "nothing helped: the seed's plan " + seed_peak + ", so none of its " + std::to_string(groups) +
           " groups is kept and the plan is empty";
  } else if (r.dropped.empty()) {
    note = "every group helps: the seed's plan is kept whole";
  } else {
    note = "kept " + std::to_string(r.kept.size()) + " of " + std::to_string(groups) + " groups, the peak " +
           std::to_string(r.peak_after) + " (the seed's whole plan: " + std::to_string(r.peak_given) +
           "); dropped " + std::to_string(r.dropped.size()) + " that did not lower it";
  }
  if (!r.complete && !r.kept.empty()) {
    note += "; the work limit ended the pruning after " + std::to_string(r.evaluations) +
            " evaluations, and the groups not decided by then are kept";
  }
  return {{"applied", true},
          {"peak_seed", r.peak_given},
          {"groups", groups},
          {"kept", r.kept.size()},
          {"evaluations", r.evaluations},
          {"complete", r.complete},
          {"note", std::move(note)}};
}

/// The passes of `mode` as the seed runs them: recomputation once; then
/// rounds of accumulation and swapping until a round changes nothing (at most
/// `rounds`); then, when `guard` is given, only the groups of that plan that
/// lower the best schedule's peak (rewrite::prune_plan, under `search`; what
/// it kept and dropped in *guard); then the relaxed allocator marks on the
/// result. `tf_cost_model`: accumulation and swapping simulate as the seed
/// does (swap_plan).
inline rewrite::rewrite_plan rewrite_passes(const io::file_graph& g, const rewrite::graph_facts& facts,
                                            const std::string& mode, const std::string& recompute_mode,
                                            const std::string& scope, const std::vector<std::size_t>& feed,
                                            const simulation_config& config, const exact_options& search,
                                            std::size_t rounds, bool tf_cost_model = false,
                                            std::optional<seed_guard>* guard = nullptr) {
  const bool all = mode == "all";
  rewrite::rewrite_plan p;
  if (all || mode == "recompute") p = recompute_plan(g, facts, recompute_mode, scope, feed);
  for (std::size_t round = 0; round < rounds && !(search.stop != nullptr && *search.stop); ++round) {
    const std::size_t size_before = p.nodes.size();
    if (all || mode == "accumulate") p = accumulate_plan(g, facts, p, config, search, tf_cost_model);
    if (all || mode == "swap") p = swap_plan(g, facts, p, config, search, tf_cost_model);
    if (p.nodes.size() == size_before) break;
  }
  if (guard != nullptr) {
    auto pruned = rewrite::prune_plan(facts, p, {.search = search});
    *guard = seed_guard{.seed = std::move(p), .pruned = std::move(pruned)};
    p = (*guard)->pruned.plan;
  }
  const auto result = rewrite::read_facts(rewrite::apply(facts, p));
  return rewrite::then(p, rewrite::relax_allocator_constraints(result), facts.size());
}

/// The orders the budget-driven planner starts from: the best schedule of
/// the original graph (its peak in *best_peak, when given) and its program order.
inline std::vector<std::vector<std::size_t>> remat_orders(const io::file_graph& g, const exact_options& search,
                                                          std::uint64_t* best_peak = nullptr) {
  const auto best = exact_schedule(g, search);
  if (best_peak != nullptr) *best_peak = best.peak_bytes;
  const auto program = program_order(g);
  return {std::vector<std::size_t>(best.order.begin(), best.order.end()), std::vector<std::size_t>(program.begin(), program.end())};
}

/// The budget-driven planner over remat_orders (whichever plans better): the
/// plan and the order it is meant to run in.
inline remat::remat_result remat_plan(const io::file_graph& g, const rewrite::graph_facts& facts,
                                        const remat::remat_options& options, const exact_options& search) {
  return remat::rematerialize_best(facts, remat_orders(g, search), options);
}

/// The planner at a range of budgets (remat_curve_points).
struct remat_curve {
  struct point {
    std::uint64_t budget = 0;
    std::uint64_t peak = 0;  ///< liveness of the rewritten graph in the planner's order
    double extra_flops = 0;
    double extra_flops_percent = 0;
    double extra_flops_floor_percent = 0;  ///< the cost floor at the budget (infinite: no plan fits)
    std::size_t nodes_added = 0;
  };
  std::string graph;
  std::uint64_t peak_before = 0;
  remat::remat_floor floor;
  std::vector<point> points;
};

/// A storage by its root tensor: "node:port", or "node" for port 0.
inline std::string storage_name(const rewrite::graph_facts& facts, rewrite::operand t) {
  return t.port == 0 ? facts.name[t.vertex] : facts.name[t.vertex] + ":" + std::to_string(t.port);
}

/// The floor as JSON: bytes, the step (node) and the tensors live there.
inline nlohmann::ordered_json floor_json(const rewrite::graph_facts& facts, const remat::remat_floor& floor) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const auto& t : floor.storages) tensors.push_back(storage_name(facts, t));
  return {{"bytes", floor.bytes},
          {"node", floor.vertex == rewrite::no_vertex ? "" : facts.name[floor.vertex]},
          {"tensors", std::move(tensors)}};
}

/// The cost floor as JSON: extra flops no plan within the budget goes below
/// (null when no plan fits), as a percentage of the graph's flops, the step
/// that shows it, and whether every step was measured.
inline nlohmann::ordered_json cost_floor_json(const rewrite::graph_facts& facts, const remat::remat_cost_floor& floor,
                                              double total_flops) {
  const bool reachable = std::isfinite(floor.extra_flops);
  return {{"extra_flops", reachable ? nlohmann::ordered_json(floor.extra_flops) : nullptr},
          {"extra_flops_percent", reachable ? nlohmann::ordered_json(total_flops > 0 ? 100 * floor.extra_flops / total_flops : 0.0) : nullptr},
          {"node", floor.vertex == rewrite::no_vertex ? "" : facts.name[floor.vertex]},
          {"complete", floor.complete}};
}

/// The trade-off curve: the planner at eleven budgets from the best peak down
/// to the floor, each point the peak of the planner's own order (liveness of
/// the rewritten graph) and the flops it adds. Eleven plans: the local search
/// makes at most 16 trials from each start (48 for one plan).
inline remat_curve remat_curve_points(const io::file_graph& g, const rewrite::graph_facts& facts,
                                      remat::remat_options options, const exact_options& search) {
  constexpr std::size_t curve_trials = 16;
  options.local_search_trials = std::min(options.local_search_trials, curve_trials);
  remat_curve c;
  c.graph = g[boost::graph_bundle].name;
  const auto orders = remat_orders(g, search, &c.peak_before);
  c.floor = remat::rematerialisation_floor(facts, options);
  double total_flops = 0;
  for (const double flops : facts.flops) total_flops += flops;
  const double high = static_cast<double>(c.peak_before);
  const double low = static_cast<double>(std::min(c.floor.bytes, c.peak_before));
  c.points.reserve(11);
  for (int k = 0; k <= 10; ++k) {
    options.budget = static_cast<std::uint64_t>(high - (high - low) * k / 10);
    const auto remat = remat::rematerialize_best(facts, orders, options);
    const double cost_floor =
        (remat.cost_floor ? *remat.cost_floor : remat::rematerialisation_cost_floor(facts, options.budget, options)).extra_flops;
    const auto h = rewrite::apply(facts, remat.plan);
    std::vector<std::size_t> order;
    order.reserve(remat.order.size());
    for (const auto ref : remat.order) order.push_back(ref.added ? facts.size() + ref.index : ref.index);
    const auto peak = liveness(h, std::span<const std::size_t>(order)).peak_bytes;
    c.points.push_back({.budget = options.budget,
                        .peak = peak,
                        .extra_flops = remat.extra_flops,
                        .extra_flops_percent = total_flops > 0 ? 100 * remat.extra_flops / total_flops : 0.0,
                        .extra_flops_floor_percent = total_flops > 0 ? 100 * cost_floor / total_flops : 0.0,
                        .nodes_added = remat.plan.nodes.size()});
  }
  return c;
}

inline void write_curve_svg(std::ostream& out, const rewrite::graph_facts& facts, const remat_curve& c) {
  std::vector<svg::curve_point> points;
  points.reserve(c.points.size());
  for (const auto& p : c.points) points.push_back({p.budget, p.peak, p.extra_flops_percent});
  svg::write_remat_curve(out, c.graph, c.peak_before, c.floor.bytes,
                         c.floor.vertex == rewrite::no_vertex ? "" : facts.name[c.floor.vertex], points);
}

inline nlohmann::ordered_json remat_curve_json(const rewrite::graph_facts& facts, const remat_curve& c) {
  nlohmann::ordered_json out;
  out["graph"] = c.graph;
  out["peak_before"] = c.peak_before;
  out["floor"] = floor_json(facts, c.floor);
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& p : c.points) {
    points.push_back({{"budget", p.budget},
                      {"peak", p.peak},
                      {"fits", p.peak <= p.budget},
                      {"extra_flops", p.extra_flops},
                      {"extra_flops_percent", p.extra_flops_percent},
                      {"extra_flops_floor_percent", std::isfinite(p.extra_flops_floor_percent)
                                                        ? nlohmann::ordered_json(p.extra_flops_floor_percent)
                                                        : nullptr},
                      {"nodes_added", p.nodes_added}});
  }
  out["curve"] = std::move(points);
  return out;
}

/// Why the budget was not met: the floor when it is above the budget (no
/// plan fits), the cost floor's step when it shows no plan fits (remat
/// mode), else what the passes reached.
inline std::string out_of_reach(const rewrite::graph_facts& facts, const remat::remat_floor& floor,
                                const remat::remat_cost_floor* cost_floor, std::uint64_t reached,
                                std::uint64_t budget) {
  if (floor.bytes > budget) {
    std::string largest;
    for (std::size_t k = 0; k < std::min<std::size_t>(3, floor.storages.size()); ++k) {
      largest += (k > 0 ? ", " : "") + storage_name(facts, floor.storages[k]);
    }
    return "no plan fits: at step '" + facts.name[floor.vertex] + "' " + std::to_string(floor.storages.size()) +
           " tensors are live whatever is recomputed (largest: " + largest + "), " + std::to_string(floor.bytes) +
           " bytes, above the budget of " + std::to_string(budget);
  }
  if (cost_floor != nullptr && std::isinf(cost_floor->extra_flops)) {
    return "no plan fits: at step '" + facts.name[cost_floor->vertex] + "' what every plan holds there and the fewest " +
           "bytes that keep its later steps' inputs in reach, whatever is recomputed, exceed the budget of " +
           std::to_string(budget) + " (the lowest peak reached is " + std::to_string(reached) + ", the floor " +
           std::to_string(floor.bytes) + ")";
  }
  return "the lowest peak reached is " + std::to_string(reached) + " bytes, above the budget of " +
         std::to_string(budget) + " (the floor is " + std::to_string(floor.bytes) + ")";
}

/// GRAPH as memopt-graph/1, and the GraphDef document when it is one (JSON
/// without "format"; tf_like/rewrite.hpp maps its marks), its memory counted
/// as `memory` says. Throws cli_error when TF's cost model is asked of a
/// graph that is no GraphDef.
inline std::pair<io::file_graph, std::optional<nlohmann::json>> load_rewrite_graph(
    graph_argument arg, tf_like::memory_model memory = tf_like::memory_model::storage_aware) {
  // The rewrite families do not plan for in-place reuse (docs/memory-model.md):
  // every count, before and after, is the one without it.
  if (arg.in_place) throw cli_error("rewrite plans without in-place reuse: --in-place is not taken here");
  arg.no_in_place = true;
  const bool tf_cost_model = memory == tf_like::memory_model::tf_cost_model;
  const auto no_graph_def = [&] {
    if (tf_cost_model) {
      throw cli_error("--tf-cost-model counts a GraphDef's memory as TF does: " + arg.path + " is no GraphDef");
    }
  };
  if (is_onnx(arg) || !arg.dims.empty()) {
    no_graph_def();
    return {load_graph(arg), std::nullopt};  // load_graph refuses --dim elsewhere
  }
  check_memory_for(arg.path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(io::detail::read_file(arg.path));
  } catch (const nlohmann::json::exception&) {
    no_graph_def();
    return {load_graph(arg), std::nullopt};  // says what is wrong with it
  } catch (const error& e) {
    throw cli_error(arg.path + ": " + e.what());
  }
  if (!doc.is_object() || doc.contains("format")) {
    no_graph_def();
    doc = nullptr;  // the document goes before the graph is read from the file: never both in memory
    return {load_graph(arg), std::nullopt};
  }
  try {
    auto graph_def = tf_like::read_graph_def(doc);
    graph_def[boost::graph_bundle] = doc.value("name", std::string("graphdef"));
    auto g = tf_like::to_file_graph(graph_def, doc, {.memory = memory});
    if (arg.no_alias) {
      for (const auto v : boost::make_iterator_range(vertices(g))) {
        for (auto& out : g[v].outputs) out.shares.reset();
      }
    }
    return {std::move(g), std::move(doc)};
  } catch (const error& e) {
    throw cli_error(arg.path + ": " + e.what());
  }
}

/// The names --mode and --recompute take.
inline const std::vector<std::string>& rewrite_modes() {
  static const std::vector<std::string> names = {"remat", "recompute", "swap", "accumulate", "all"};
  return names;
}
inline const std::vector<std::string>& recompute_modes() {
  static const std::vector<std::string> names = {"manual", "heuristic"};
  return names;
}

/// What `memopt-plan rewrite` does with a graph (see the header comment).
struct rewrite_request {
  std::uint64_t budget = 0;
  std::string mode = "remat";
  std::string recompute = "heuristic";
  std::string scope = "gradients/";
  std::vector<std::string> feed;
  std::optional<simulation_config> config;  ///< none: one device of `budget` bytes
  std::uint64_t work_limit = 200'000;
  std::size_t rounds = 25;
  std::size_t local_search_trials = remat::remat_options{}.local_search_trials;
  bool replay_random = false;
  bool tf_cost_model = false;  ///< a GraphDef's memory as TF's cost model counts it
  bool seed_plan = false;      ///< the seed's passes' plan whole, unguarded (rewrite::prune_plan not run)
  const std::atomic<bool>* stop = nullptr;
};

/// A request in the library's terms: g's facts, the planner's options, the schedule search.
struct rewrite_setting {
  rewrite::graph_facts facts;
  remat::remat_options remat;
  exact_options search;
};

inline rewrite_setting rewrite_setting_for(const io::file_graph& g, const rewrite_request& request) {
  rewrite_setting s{.facts = rewrite::read_facts(g),
                    .remat = {.budget = request.budget, .feed = vertices_named(g, request.feed, "--feed")},
                    .search = {.time_limit_seconds = std::nullopt, .work_limit = request.work_limit, .stop = request.stop}};
  if (request.replay_random) s.remat.unrepeatable_ops.clear();
  s.remat.local_search_trials = request.local_search_trials;
  return s;
}

/// The JSON of `memopt-plan rewrite`, and what --output writes: the plan and the graph it makes.
struct rewrite_answer {
  nlohmann::ordered_json json;
  rewrite_setting setting;
  rewrite::rewrite_plan plan;
  rewrite::rewrite_report report;
};

inline rewrite_answer rewrite_json(const io::file_graph& g, const rewrite_request& request) {
  rewrite_answer a{.setting = rewrite_setting_for(g, request)};
  const auto& facts = a.setting.facts;
  const auto& remat = a.setting.remat;
  const auto& search = a.setting.search;
  const std::uint64_t budget = request.budget;
  auto config = request.config.value_or(simulation_config{});
  if (!request.config) config.machine.devices[0].memory_bytes = budget;
  std::string method;  // remat: who made the plan
  std::optional<remat::remat_cost_floor> cost_floor;  // remat: the planner's, when it computed one
  std::optional<seed_guard> guard;  // the seed's passes, unless request.seed_plan
  if (request.mode == "remat") {
    auto planned = remat_plan(g, facts, remat, search);
    method = planned.method;
    cost_floor = std::move(planned.cost_floor);
    a.report = rewrite::evaluate(facts, planned.plan, search, planned.order);
    a.plan = std::move(planned.plan);
  } else {
    a.plan = rewrite_passes(g, facts, request.mode, request.recompute, request.scope, remat.feed, config, search,
                            request.rounds, request.tf_cost_model, request.seed_plan ? nullptr : &guard);
    a.report = rewrite::evaluate(facts, a.plan, search);
  }
  const auto& report = a.report;
  double total_flops = 0;
  for (const double flops : facts.flops) total_flops += flops;
  auto& out = a.json;
  out["graph"] = g[boost::graph_bundle].name;
  out["mode"] = request.mode;
  if (request.mode == "remat") out["method"] = method;
  out["recompute"] = request.recompute;
  out["budget"] = budget;
  out["peak_before"] = report.peak_before;
  out["peak_after"] = report.peak_after;
  out["proved_before"] = report.proved_before;
  out["proved_after"] = report.proved_after;
  out["fits"] = report.peak_after <= budget;
  out["extra_flops"] = report.extra_flops;
  out["extra_flops_percent"] = total_flops > 0 ? 100 * report.extra_flops / total_flops : 0.0;
  out["swapped_bytes"] = report.swapped_bytes;
  out["nodes_added"] = report.nodes_added;
  const auto floor = remat::rematerialisation_floor(facts, remat);
  out["floor"] = floor_json(facts, floor);
  if (request.mode == "remat") {
    if (!cost_floor) cost_floor = remat::rematerialisation_cost_floor(facts, budget, remat);
    out["cost_floor"] = cost_floor_json(facts, *cost_floor, total_flops);
  }
  if (report.peak_after > budget) {
    out["out_of_reach"] = out_of_reach(facts, floor, cost_floor ? &*cost_floor : nullptr, report.peak_after, budget);
  }
  out["plan"] = plan_json(facts, a.plan);
  if (request.mode != "remat") {
    out["dropped"] = guard ? dropped_json(facts, *guard) : nlohmann::ordered_json::array();
    out["guard"] = guard_json(guard);
  }
  if (request.stop != nullptr && *request.stop) out["interrupted"] = true;
  return a;
}

inline command add_rewrite_command(CLI::App& app) {
  struct options {
    graph_argument graph;
    std::optional<std::uint64_t> budget;
    rewrite_request request;
    std::string config;
    std::string output;
    bool curve = false;
    std::string svg;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("rewrite", "graph rewrites that lower the memory peak (recompute, swap, accumulate), as JSON");
  add_graph_argument(cmd, opts->graph);
  cmd->add_option("--budget", opts->budget, "the device's memory in bytes (remat and swap aim under it; fits says whether peak_after is)")
      ->check(whole_number());
  cmd->add_flag("--curve", opts->curve, "the trade-off curve instead: remat at budgets from the best peak down to the floor");
  cmd->add_option("--svg", opts->svg, "with --curve: also draw it (extra flops against the peak reached) in this SVG file");
  cmd->add_option("--mode", opts->request.mode,
                  "remat (the budget-driven planner, default), or the seed's passes: recompute, swap, accumulate or all "
                  "(recompute, then accumulate and swap)")
      ->check(CLI::IsMember(rewrite_modes()));
  cmd->add_option("--recompute", opts->request.recompute, "manual (hinted nodes) or heuristic (cheap op types too)")
      ->check(CLI::IsMember(recompute_modes()));
  cmd->add_option("--scope", opts->request.scope, "name scope of the targets (default gradients/)");
  cmd->add_option("--feed", opts->request.feed, "a fed node (never recomputed); repeat for more");
  cmd->add_flag("--replay-random", opts->request.replay_random,
                "remat may recompute random draws (dropout masks): the runtime replays the generator's state, "
                "as torch.utils.checkpoint does");
  cmd->add_flag("--tf-cost-model", opts->request.tf_cost_model,
                "a GraphDef's memory as TF's cost model counts it, as the memory optimizer sees it: every output its "
                "own buffer (no views), constants and variables persistent, references from TF's op signatures "
                "(never swapped)");
  cmd->add_flag("--seed-plan", opts->request.seed_plan,
                "recompute, swap, accumulate, all: the seed's plan whole, even where parts of it raise the peak "
                "(by default only the groups that lower the best schedule's peak are kept: the guard)");
  cmd->add_option("--config", opts->config,
                  "memopt-plan simulate's config: the swap and accumulate passes simulate on its devices, with its "
                  "links, costs, placement, fetch, feed and accounting");
  cmd->add_option("--work-limit", opts->request.work_limit, "states the schedule search may expand for each peak")
      ->check(whole_number());
  cmd->add_option("--rounds", opts->request.rounds, "at most this many rounds of accumulation and swapping (the seed: 25)")
      ->check(whole_number(1, 1000));
  cmd->add_option("--local-search", opts->request.local_search_trials,
                  "remat: at most this many trials of the planner's local search (fewer on large graphs; 0: none)")
      ->capture_default_str()
      ->check(whole_number(0, 100'000));
  cmd->add_option("--output", opts->output, "write the rewritten graph (memopt-graph/1)");
  return {cmd, [opts] {
            if (!opts->curve && !opts->budget) throw cli_error("--budget is required (or --curve)");
            if (!opts->curve && !opts->svg.empty()) throw cli_error("--svg draws the curve: it needs --curve");
            auto request = opts->request;
            request.budget = opts->budget.value_or(0);
            request.stop = &interrupted;
            if (!opts->config.empty()) request.config = read_simulation_config(opts->config);
            const auto loaded = load_rewrite_graph(opts->graph, request.tf_cost_model ? tf_like::memory_model::tf_cost_model
                                                                                      : tf_like::memory_model::storage_aware);
            const io::file_graph& g = loaded.first;
            const std::optional<nlohmann::json>& graph_def = loaded.second;
            const auto& path = opts->graph.path;
            if (opts->curve) {
              const auto setting = naming_nodes(g, path, [&] { return rewrite_setting_for(g, request); });
              const auto curve = naming_nodes(g, path, [&] {
                return remat_curve_points(g, setting.facts, setting.remat, setting.search);
              });
              if (!opts->svg.empty()) {
                std::ofstream file(opts->svg);
                if (!file) throw cli_error("cannot write the curve to " + opts->svg);
                write_curve_svg(file, setting.facts, curve);
              }
              std::cout << remat_curve_json(setting.facts, curve).dump() << '\n';
              return;
            }
            const auto answer = naming_nodes(g, path, [&] { return rewrite_json(g, request); });
            if (!opts->output.empty()) {
              std::ofstream file(opts->output);
              if (!file) throw cli_error("cannot write the rewritten graph to " + opts->output);
              if (graph_def) {
                file << tf_like::rewritten_graph_def(*graph_def, answer.setting.facts, answer.plan).dump(1) << '\n';
              } else {
                file << rewritten_graph_json(g, answer.report.graph, answer.plan, answer.report.order_after).dump(1) << '\n';
              }
            }
            std::cout << answer.json.dump() << '\n';
          }};
}

}  // namespace memopt::plan
