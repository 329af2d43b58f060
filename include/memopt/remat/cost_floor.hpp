#pragma once
// The cost floor of rematerialisation: extra flops no plan within a budget
// goes below (with what remat_options lets copies remake), so a user knows
// how far a plan can be from the cheapest one, on graphs of any size.
//
// Take a step v of any plan that runs the graph's vertices once each, in a
// topological order, copies anywhere (the premise of floor.hpp). Live
// at v are the floor's storages (step_measure::live_at); every other storage
// made by an ancestor of v and read by a descendant of v is either live at v
// too, or remade after v by a copy of its maker, which needs its own inputs
// the same way. A copy after v is an extra run: the maker of a storage needed
// before v also ran before it. So, with cap = budget - floor(v), the plan
// adds at least
//     min flops(R)  over kept storages K and remade makers R, closed as
//     above, with bytes(K) <= cap.
// For any lambda >= 0, min flops(R) + lambda bytes(K) - lambda cap is below
// that: a minimum cut (node per storage "available after v", node per maker
// "copied after v"; keeping a storage cuts lambda x its bytes, copying a
// maker cuts its flops, reading needs availability: infinite). The best
// lambda is found by intersecting the lines of the cuts at two lambdas
// (the function is concave and piecewise linear); every lambda tried is a
// valid bound. Capacities are rounded down to integers (a bound still).
// Where the best lambda leaves a gap (the cuts on either side of the cap keep
// too much or pay for much more than the cap asks: one large tensor or five
// of a quarter its size at the same flops per byte), a branch and bound over
// the makers closes it: a maker forced copied or kept, each branch bounded by
// its own best lambda, the cheapest closure within the cap found so far
// above; what it proves is the least bound of the branches left open.
// Storages are counted by root, views free; a storage that a random draw or
// a fed vertex writes is never remade. The bound takes the best step among
// those tried: all of them within the work limit, most bytes live in one
// topological order first; then the branch and bound, with a work limit of
// its own, at the steps whose bound may still rise above the best.

#include <memopt/remat/cost_cut.hpp>
#include <memopt/remat/floor.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace memopt::remat {

namespace detail {

/// By step: the transient bytes made before it and read after it in the
/// measure's topological order (what is live there when nothing is
/// recomputed). O(V + E).
inline std::vector<std::uint64_t> bytes_across(const graph_facts& f, const step_measure& m) {
  const std::size_t n = f.size();
  std::vector<std::vector<std::size_t>> last_read;  // by root tensor: position of its last reader
  last_read.reserve(n);
  for (const auto& outputs : f.outputs) last_read.emplace_back(outputs.size(), 0);
  for (std::size_t w = 0; w < n; ++w) {
    for (const operand& o : f.operands[w]) {
      const operand r = m.root()[o.vertex][o.port];
      last_read[r.vertex][r.port] = std::max(last_read[r.vertex][r.port], m.position()[w]);
    }
  }
  std::vector<std::int64_t> delta(n + 1, 0);
  for (std::size_t v = 0; v < n; ++v) {
    for (std::size_t port = 0; port < f.outputs[v].size() && !f.persistent[v]; ++port) {
      if (last_read[v][port] <= m.position()[v]) continue;
      delta[m.position()[v]] += static_cast<std::int64_t>(f.outputs[v][port].bytes);
      delta[last_read[v][port]] -= static_cast<std::int64_t>(f.outputs[v][port].bytes);
    }
  }
  std::vector<std::uint64_t> across(n);
  std::int64_t live = 0;
  for (std::size_t k = 0; k < n; ++k) across[m.order()[k]] = static_cast<std::uint64_t>(live += delta[k]);
  return across;
}

}  // namespace detail

/// The cost floor at `budget` (see the header comment): extra flops no plan
/// within it adds; infinite when no plan fits (a budget below the floor of
/// floor.hpp, or a step whose fewest kept bytes exceed it). Steps are
/// tried until the work (vertices and operands visited per step, network
/// edges per cut) reaches `work_limit` (0: no limit); the first step is
/// always tried. The branch and bound then has `work_limit` of its own.
/// Throws bad_plan_error for a cyclic graph or a fed vertex that does not
/// exist.
[[nodiscard]] inline remat_cost_floor rematerialisation_cost_floor(const graph_facts& f, std::uint64_t budget,
                                                                   const remat_options& options = {},
                                                                   std::size_t work_limit = 10'000'000) {
  detail::step_measure measure(f, options);
  const std::size_t n = f.size();
  // The steps by bytes live across them in one topological order, most first.
  const auto across = detail::bytes_across(f, measure);
  std::vector<std::size_t> steps(n);
  for (std::size_t v = 0; v < n; ++v) steps[v] = v;
  std::ranges::stable_sort(steps, std::greater<>(), [&](std::size_t v) { return across[v]; });

  std::size_t step_work = n;  // measuring a step visits every vertex and operand
  for (const auto& operands : f.operands) step_work += operands.size();
  remat_cost_floor floor;
  std::size_t work = 0;
  // By root: available at every step without being counted (persistent, or empty).
  std::vector<std::vector<bool>> always_free(n);
  for (std::size_t u = 0; u < n; ++u) {
    for (const tensor_output& out : f.outputs[u]) always_free[u].push_back(f.persistent[u] || out.bytes == 0);
  }
  std::vector<std::vector<bool>> free;
  // Step v's network, with the live bytes every plan holds there (`base`);
  // none when what it needs fits, or when the base alone exceeds the budget.
  // Built in place: the network's edges point into it.
  const auto network_at = [&](std::size_t v, std::uint64_t& base, std::optional<detail::cost_cut>& network) {
    network.reset();
    const std::vector<operand> live = measure.live_at(v);
    base = 0;
    free = always_free;
    for (const operand& r : live) {
      base += measure.bytes_of(r);
      free[r.vertex][r.port] = true;
    }
    if (base > budget) return;
    // Storages made before v (by an ancestor) and read after it (by a descendant).
    std::vector<operand> needed;
    std::uint64_t needed_bytes = 0;
    for (std::size_t w = 0; w < n; ++w) {
      if (!measure.descendant(w)) continue;
      for (const operand& o : f.operands[w]) {
        const operand r = measure.root()[o.vertex][o.port];
        if (free[r.vertex][r.port] || !measure.ancestor(r.vertex)) continue;
        free[r.vertex][r.port] = true;  // listed once
        needed.push_back(r);
        needed_bytes += measure.bytes_of(r);
      }
    }
    for (const operand& r : needed) free[r.vertex][r.port] = false;
    if (base + needed_bytes <= budget) return;  // all of it fits: nothing to remake here
    network.emplace(f, measure, needed, free);
  };
  struct step_bounds {
    std::size_t vertex;
    double bound;
    double cheapest;  ///< the flops of the cheapest closure a cut found
  };
  std::vector<step_bounds> measured;
  std::optional<detail::cost_cut> network;
  // A step's bound: the floor's when above it (or its step's, with a cheaper closure).
  const auto record = [&](std::size_t v, double bound, const detail::closure& cheapest) {
    const bool same_step = v == floor.vertex && bound == floor.extra_flops;
    if (!(bound > floor.extra_flops) && !(same_step && cheapest.flops < floor.cheapest_copies_flops)) return;
    floor.extra_flops = bound;
    floor.vertex = v;
    floor.cheapest_copies.clear();
    floor.cheapest_copies_flops = cheapest.flops;
    for (std::size_t k = 0; k < cheapest.copied.size(); ++k) {
      if (cheapest.copied[k]) floor.cheapest_copies.push_back(network->maker(k));
    }
  };
  for (const std::size_t v : steps) {
    if (work_limit != 0 && work >= work_limit) {
      floor.complete = false;
      break;
    }
    ++floor.steps_measured;
    work += step_work;
    std::uint64_t base = 0;
    network_at(v, base, network);
    if (base > budget) return {std::numeric_limits<double>::infinity(), v, floor.steps_measured, floor.complete};
    if (!network) continue;
    const auto cuts = detail::best_lambda(*network, static_cast<double>(budget - base), work);
    measured.push_back({v, cuts.bound, cuts.cheapest.flops});
    record(v, cuts.bound, cuts.cheapest);
  }
  // The branch and bound, at the steps whose bound may still rise above the
  // best (their cheapest closure is above it), highest bound first.
  std::ranges::stable_sort(measured, std::greater<>(), &step_bounds::bound);
  std::size_t closing_work = 0;
  for (const step_bounds& step : measured) {
    if (std::isinf(floor.extra_flops) || (work_limit != 0 && closing_work >= work_limit)) break;
    if (step.cheapest <= floor.extra_flops) continue;
    closing_work += step_work;
    std::uint64_t base = 0;
    network_at(step.vertex, base, network);
    const double cap = static_cast<double>(budget - base);
    auto root = detail::best_lambda(*network, cap, closing_work);
    detail::closure cheapest;
    const double bound = detail::closed_bound(*network, cap, std::move(root), cheapest, closing_work,
                                              work_limit == 0 ? std::numeric_limits<std::size_t>::max() : work_limit);
    record(step.vertex, bound, cheapest);
  }
  return floor;
}

}  // namespace memopt::remat
