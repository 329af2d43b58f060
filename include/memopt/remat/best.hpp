#pragma once
// rematerialize_best: the best of many plans for one budget. The eviction
// planner (remat/rematerialize.hpp) over several orders, rebuild bounds and
// eviction rules; the exact programmes where the graph is a chain or a chain
// of blocks; a plan that recomputes only what the cost floor's cheapest way
// to make room at its step copies and makers cheaper a byte; a local search
// from the best plan of each rule; and last the copies the best plans can do
// without dropped.

#include <memopt/remat/block_chain.hpp>
#include <memopt/remat/chain.hpp>
#include <memopt/remat/cost_floor.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/remat/rematerialize.hpp>
#include <memopt/remat/runs.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace memopt::remat {

namespace detail {

/// Ranks plans for `budget`: one that fits before one that does not; of
/// those that fit, the fewest extra flops; of the others, the lowest peak,
/// then the fewest flops.
[[nodiscard]] inline bool better(const remat_result& a, const remat_result& b, std::uint64_t budget) {
  const auto key = [budget](const remat_result& r) {
    const bool over = r.planned_peak > budget;
    return std::tuple(over, over ? r.planned_peak : 0, r.extra_flops);
  };
  return key(a) < key(b);
}

/// The eviction planner's runs for one target: over every order at each
/// rebuild bound of `ratios`; then, where the best plan so far costs more
/// than 1 % of the graph's flops or misses the budget, by the other rules
/// (idle weights 1, 0.5, 0, 0 counting only the bytes lacking, 0.25), and at
/// the rebuild bounds of `more_ratios` (2, 8, 1.5 and 3 times the bytes
/// freed), each while those runs stay within about 500,000 vertices and
/// edges; then, where nothing fits yet, with rebuilds walking four times as
/// deep.
class eviction_runs {
 public:
  eviction_runs(const graph_facts& f, std::size_t orders, const remat_options& options) {
    constexpr double bounded_rebuild_ratio = 4;
    ratios_.push_back(std::min(options.max_rebuild_ratio, bounded_rebuild_ratio));
    if (options.max_rebuild_ratio > bounded_rebuild_ratio) ratios_.push_back(options.max_rebuild_ratio);
    std::size_t edges = 0;
    for (const auto& operands : f.operands) edges += operands.size();
    run_work_ = orders * (f.size() + edges);
    std::size_t work = 0;
    for (const eviction_rule r : {eviction_rule{1, false}, eviction_rule{0.5, false}, eviction_rule{0, false},
                                   eviction_rule{0, true}, eviction_rule{0.25, false}}) {
      if (r == rule_of(options)) continue;
      if ((work += run_work_ * ratios_.size()) > extra_work) break;
      more_rules_.push_back(r);
    }
    work = 0;
    for (const double more : {2.0, 8.0, 1.5, 3.0}) {
      if (more >= options.max_rebuild_ratio) continue;
      if ((work += run_work_) > extra_work) break;
      more_ratios_.push_back(more);
    }
    deeper_walks_ = run_work_ <= extra_work;
    for (const double flops : f.flops) total_flops_ += flops;
  }

  /// The vertices and edges one round of runs over every order visits.
  [[nodiscard]] std::size_t run_work() const { return run_work_; }

  /// Whether `best` misses `budget` or costs more than 1 % of the graph's
  /// flops, on a graph whose runs stay within the work limit of the extras.
  [[nodiscard]] bool costly_and_small(const remat_result& best, std::uint64_t budget) const {
    return run_work_ <= extra_work && costly(best, budget);
  }

  /// Runs the planner with `o` (o.budget the target; by rules other than
  /// o's too unless `one_rule`) and hands each plan to offer(plan); best()
  /// is the best plan so far for `budget`.
  template <class Naming, class Offer, class Best>
  void run(const graph_facts& f, const std::vector<std::vector<std::size_t>>& orders, remat_options o,
           const Naming& naming, std::uint64_t budget, Offer&& offer, Best&& best, bool one_rule = false) const {
    const auto costly = [&] { return this->costly(best(), budget); };
    const auto over_orders = [&] {
      for (const auto& order : orders) offer(rematerialize(f, order, o, naming));
    };
    const double max_ratio = o.max_rebuild_ratio;
    const eviction_rule own = rule_of(o);
    for (const double ratio : ratios_) {
      o.max_rebuild_ratio = ratio;
      over_orders();
    }
    if (costly() && !one_rule) {
      for (const eviction_rule& other : more_rules_) {
        o.idle_weight = other.idle_weight;
        o.only_bytes_lacking = other.only_bytes_lacking;
        for (const double ratio : ratios_) {
          o.max_rebuild_ratio = ratio;
          over_orders();
        }
      }
      o.idle_weight = own.idle_weight;
      o.only_bytes_lacking = own.only_bytes_lacking;
    }
    if (costly()) {
      for (const double ratio : more_ratios_) {
        o.max_rebuild_ratio = ratio;
        over_orders();
      }
    }
    // Deeper rebuilds where nothing fits yet: lower peaks, at a price.
    if (deeper_walks_ && best().planned_peak > budget) {
      o.max_rebuild_ratio = max_ratio;
      o.max_rebuild_walk = 4 * std::min(o.max_rebuild_walk, std::numeric_limits<std::size_t>::max() / 4);
      over_orders();
    }
  }

 private:
  static constexpr std::size_t extra_work = 500'000;

  [[nodiscard]] bool costly(const remat_result& best, std::uint64_t budget) const {
    return best.planned_peak > budget || best.extra_flops > total_flops_ / 100;
  }

  std::vector<double> ratios_;
  std::vector<eviction_rule> more_rules_;  // for plans that cost much or do not fit, within a work limit
  std::vector<double> more_ratios_;        // the same
  std::size_t run_work_ = 0;
  bool deeper_walks_ = false;
  double total_flops_ = 0;
};

/// rematerialize_best's local search from `start`, a plan that fits, in at
/// most `trials_left` trials: while a trial beats the plan, makes one more
/// move (of a round's trials, the best) on one of the vertices the plan
/// recomputes, most flops recomputed first: keep it from being recomputed,
/// retain it for its consumers' rebuilds, retain what it reads for its own,
/// or keep it from drops until the plan first rebuilt it. A trial is the
/// eviction runs by the plan's rule with the moves made so far and its own,
/// its best plan pruned within a small work limit. Returns the plans it moved to, first to last.
template <rewrite_naming Naming>
[[nodiscard]] std::vector<remat_result> local_search(const graph_facts& f,
                                                     const std::vector<std::vector<std::size_t>>& orders,
                                                     const remat_options& options, const Naming& naming,
                                                     const eviction_runs& runs, const remat_result& start,
                                                     std::size_t trials_left) {
  if (trials_left == 0) return {};
  // Trials are ranked once pruned, within a tenth of the final pruning's work.
  const auto pruned = [&](remat_result r) {
    const std::size_t pruning_trials = std::max<std::size_t>(4, 100'000 / (r.order.size() + f.size() + 1));
    return without_needless_copies(f, std::move(r), options.budget, naming, pruning_trials);
  };
  const remat_result start_pruned = pruned(start);
  std::vector<remat_result> moves;
  // A move keeps a vertex from being recomputed (kept), keeps its outputs
  // resident for the rebuilds of its consumers (retained) or those of its
  // producers for its own, or keeps them from being dropped before the plan
  // first rebuilt them (deferred: the original vertex that copy ran for).
  std::vector<bool> kept(f.size(), false), retained(f.size(), false);
  std::vector<std::size_t> deferred(f.size(), no_vertex);
  const remat_result* current = &start_pruned;
  enum class move_kind { keep, retain, retain_inputs, defer };
  while (trials_left > 0) {
    std::vector<double> recomputed_flops(f.size(), -1);  // -1: not recomputed
    std::vector<std::size_t> first_rebuilt_for(f.size(), no_vertex);
    std::vector<std::size_t> waiting;  // copies since the last original
    for (const node_ref& step : current->order) {
      if (step.added) {
        if (const auto v = current->plan.nodes[step.index].copy_of) waiting.push_back(*v);
        continue;
      }
      for (const std::size_t v : waiting) {
        if (first_rebuilt_for[v] == no_vertex) first_rebuilt_for[v] = step.index;
      }
      waiting.clear();
    }
    for (const added_node& node : current->plan.nodes) {
      if (node.copy_of) recomputed_flops[*node.copy_of] = std::max(recomputed_flops[*node.copy_of], 0.0) + node.flops;
    }
    std::vector<std::size_t> recomputed;
    for (std::size_t v = 0; v < f.size(); ++v) {
      if (recomputed_flops[v] >= 0) recomputed.push_back(v);
    }
    std::ranges::stable_sort(recomputed, std::ranges::greater{}, [&](std::size_t v) { return recomputed_flops[v]; });
    std::optional<remat_result> round_best;
    move_kind round_kind = move_kind::keep;
    std::size_t round_vertex = 0;
    const auto apply = [&](move_kind kind, std::size_t v) {
      switch (kind) {
        case move_kind::keep: kept[v] = true; break;
        case move_kind::retain: retained[v] = true; break;
        case move_kind::retain_inputs:
          for (const operand& o : f.operands[v]) retained[o.vertex] = true;
          break;
        case move_kind::defer: deferred[v] = first_rebuilt_for[v]; break;
      }
    };
    const auto inputs_retained = [&](std::size_t v) {
      return std::ranges::all_of(f.operands[v], [&](const operand& o) { return retained[o.vertex]; });
    };
    for (const move_kind kind : {move_kind::keep, move_kind::retain, move_kind::retain_inputs, move_kind::defer}) {
      for (const std::size_t v : recomputed) {
        if (trials_left == 0 || (kind == move_kind::retain && retained[v]) ||
            (kind == move_kind::retain_inputs && inputs_retained(v)) ||
            (kind == move_kind::defer && (first_rebuilt_for[v] == no_vertex || deferred[v] == first_rebuilt_for[v]))) {
          continue;
        }
        --trials_left;
        const auto was_kept = kept;
        const auto was_retained = retained;
        const auto was_deferred = deferred;
        apply(kind, v);
        remat_options o = options;
        o.may_recompute = [&kept, &options](std::size_t u) {
          return !kept[u] && (!options.may_recompute || options.may_recompute(u));
        };
        o.retain = [&retained, &options](std::size_t u) { return retained[u] || (options.retain && options.retain(u)); };
        o.kept_until = [&deferred](std::size_t u) { return deferred[u]; };
        o.idle_weight = current->idle_weight;  // trials refine the plan's own rule
        o.only_bytes_lacking = current->only_bytes_lacking;
        std::optional<remat_result> trial;
        const auto offer = [&](remat_result r) {
          if (!trial || better(r, *trial, options.budget)) trial = std::move(r);
        };
        try {
          runs.run(f, orders, o, naming, options.budget, offer, [&]() -> const remat_result& { return *trial; }, true);
        } catch (const bad_plan_error&) {  // a tensor the trial's runs cannot do without: no trial
          trial.reset();
        }
        kept = was_kept;
        retained = was_retained;
        deferred = was_deferred;
        if (!trial) continue;
        const std::size_t made = moves.size() + 1;
        trial->method += ", local search (" + std::to_string(made) + (made == 1 ? " move)" : " moves)");
        remat_result candidate = pruned(std::move(*trial));
        if (better(candidate, round_best ? *round_best : *current, options.budget)) {
          round_best = std::move(candidate);
          round_kind = kind;
          round_vertex = v;
        }
      }
    }
    if (!round_best) break;
    apply(round_kind, round_vertex);
    moves.push_back(std::move(*round_best));
    current = &moves.back();
  }
  return moves;
}

/// The local search's work limit: its trials times the vertices and edges of
/// a round of runs.
inline constexpr std::size_t local_search_work = 200'000;

/// The best of the plans (rematerialize_best).
template <rewrite_naming Naming>
[[nodiscard]] remat_result best_plan(const graph_facts& f, const std::vector<std::vector<std::size_t>>& orders,
                                     const remat_options& options, const Naming& naming) {
  const eviction_runs runs(f, orders.size(), options);
  // The best plans, best first: pruning can rank them another way.
  constexpr std::size_t leaders_kept = 4;
  std::vector<remat_result> leaders;
  std::vector<remat_result> starts;  // the local search's: the best plan of each rule
  const auto offer = [&](remat_result r, std::uint64_t budget) {
    const auto start = std::ranges::find_if(starts, [&](const remat_result& s) { return rule_of(s) == rule_of(r); });
    if (start == starts.end()) {
      starts.push_back(r);
    } else if (better(r, *start, budget)) {
      *start = r;
    }
    const auto at = std::ranges::find_if(leaders, [&](const remat_result& l) { return better(r, l, budget); });
    if (static_cast<std::size_t>(at - leaders.begin()) >= leaders_kept) return;
    leaders.insert(at, std::move(r));
    if (leaders.size() > leaders_kept) leaders.pop_back();
  };
  const auto best_for = [&](std::uint64_t target, std::uint64_t budget) {
    remat_options o = options;
    o.budget = target;
    runs.run(f, orders, o, naming, budget, [&](remat_result r) { offer(std::move(r), budget); },
             [&]() -> const remat_result& { return leaders.front(); });
  };
  best_for(options.budget, options.budget);
  // A chain is solved exactly, when its forward stages may be recomputed.
  if (const auto chain = chain_of(f)) {
    const auto recomputable = detail::recomputable_vertices(f, options);
    if (std::ranges::all_of(chain->forward, [&](std::size_t v) { return recomputable[v]; })) {
      if (auto exact = rematerialize_chain(f, *chain, options.budget, naming)) offer(std::move(*exact), options.budget);
    }
  }
  // A block chain by Rotor's programme over its stages.
  if (const auto blocks = block_chain_of(f, orders.front(), options)) {
    try {
      const remat_result& best = leaders.front();
      const double beat = best.planned_peak <= options.budget ? best.extra_flops : std::numeric_limits<double>::infinity();
      if (auto r = rematerialize_blocks(f, *blocks, options.budget, naming, 8, beat)) offer(std::move(*r), options.budget);
    } catch (const bad_plan_error&) {  // a rerun would read a storage in another state (in-place writes)
    }
  }
  // What the cost floor's cheapest way to make room at its step copies, and
  // whatever costs fewer flops a byte than the dearest of those (the price
  // that closure paid; views cost nothing): the other steps make room from
  // those, and at the floor's cost no plan is cheaper. Where the local search
  // affords a trial, whenever the plan is above the floor, by every rule;
  // on larger graphs where it is costly, by its own rule.
  const bool searchable = runs.run_work() <= local_search_work;
  std::optional<remat_cost_floor> floor;  // handed back with the result
  if (options.cost_floor_copies && (searchable || runs.costly_and_small(leaders.front(), options.budget))) {
    floor = rematerialisation_cost_floor(f, options.budget, options);
  }
  if (floor && (leaders.front().planned_peak > options.budget || leaders.front().extra_flops > floor->extra_flops)) {
    const auto flops_per_byte = [&f](std::size_t v) {
      const std::uint64_t bytes = bytes_made(f, v);
      return bytes == 0 ? std::numeric_limits<double>::infinity() : f.flops[v] / static_cast<double>(bytes);
    };
    std::vector<bool> copied(f.size(), false);
    double price = 0;
    for (const std::size_t v : floor->cheapest_copies) {
      copied[v] = true;
      price = std::max(price, flops_per_byte(v));
    }
    remat_options o = options;
    o.may_recompute = [&](std::size_t v) {
      return (copied[v] || f.flops[v] == 0 || flops_per_byte(v) < price) && (!options.may_recompute || options.may_recompute(v));
    };
    std::optional<remat_result> guided_best;  // drives the runs' extras (deeper rebuilds where none fits)
    const auto guided = [&](remat_result r) {
      r.method += ", the cost floor's copies and cheaper";
      if (!guided_best || better(r, *guided_best, options.budget)) guided_best = r;
      offer(std::move(r), options.budget);
    };
    if (!floor->cheapest_copies.empty()) {
      runs.run(f, orders, o, naming, options.budget, guided, [&]() -> const remat_result& { return *guided_best; }, !searchable);
    }
  }
  // Then the best plans that fit `bound` without the copies they can do
  // without, each within a work limit of about a million steps of plan
  // building; the cheapest.
  const auto pruned = [&](std::uint64_t bound) {
    std::optional<remat_result> cheapest;
    for (remat_result& r : leaders) {
      if (cheapest && (r.planned_peak > bound || r.plan.nodes.empty())) break;
      const std::size_t trials = std::max<std::size_t>(4, 1'000'000 / (r.order.size() + f.size()));
      auto p = detail::without_needless_copies(f, std::move(r), bound, naming, trials);
      if (!cheapest || better(p, *cheapest, bound)) cheapest = std::move(p);
    }
    cheapest->cost_floor = std::move(floor);
    return std::move(*cheapest);
  };
  if (leaders.front().planned_peak <= options.budget) {
    // The local search from the best plan of each rule that fits,
    // best first. Its plans join the leaders (none drops out), so the pruned
    // result is never worse than without it.
    std::erase_if(starts, [&](const remat_result& r) { return r.planned_peak > options.budget; });
    std::ranges::stable_sort(starts, [&](const remat_result& a, const remat_result& b) { return better(a, b, options.budget); });
    const std::size_t trials = std::min(options.local_search_trials, local_search_work / std::max<std::size_t>(1, runs.run_work()));
    for (const remat_result& start : starts) {
      for (remat_result& r : local_search(f, orders, options, naming, runs, start, trials)) {
        leaders.insert(std::ranges::find_if(leaders, [&](const remat_result& l) { return better(r, l, options.budget); }),
                       std::move(r));
      }
    }
    return pruned(options.budget);
  }
  for (const double lower : {0.9, 0.8, 0.67, 0.5}) best_for(static_cast<std::uint64_t>(static_cast<double>(options.budget) * lower), options.budget);
  const std::uint64_t reached = leaders.front().planned_peak;
  // Aiming at the lowest peak reached, the plans are ranked against it.
  std::vector<remat_result> before = std::move(leaders);
  leaders.clear();
  for (remat_result& r : before) offer(std::move(r), reached);
  best_for(reached, reached);
  return pruned(reached);
}

}  // namespace detail

/// The best of the plans over several orders and rebuild bounds (at most four
/// times the bytes a drop frees, then the caller's bound; then, when the plan
/// costs more than 1 % of the graph's flops or does not fit, by the other
/// eviction rules (eviction_runs) and at 2, 8, 1.5 and 3 times, within about
/// 500,000 vertices and edges: on tight budgets the planner's result moves
/// erratically with the bound and the rule), then, where no plan fits,
/// rebuilds walking four times as deep (within the same work limit); of the
/// exact schedule when the graph is a chain (chain.hpp) and of the block
/// programme's when it is a chain of blocks (block_chain.hpp); where the plan
/// costs more than the cost floor (on graphs the local search affords) or
/// still more than 1 % or misses (within the same work limit), of the runs
/// allowed to recompute only the makers of the cost floor's cheapest closure
/// at its step and those cheaper a byte than its dearest (cost_floor.hpp; at
/// the floor's cost such a plan is the cheapest there is): one that fits
/// the budget before one that does not; of those that fit, the fewest extra
/// flops; of the others, the lowest peak, then the fewest flops.
/// When none fits, the planner also aims lower (a run that misses its target
/// can land above a run aiming lower) and then runs again aiming at the
/// lowest peak reached, so that steps which could not fit anyway no longer
/// drive evictions elsewhere: the same peak, usually for fewer flops. Last,
/// the four best plans lose the copies they can do without (runs.hpp), which
/// can rank them another way, and the cheapest is kept.
/// When the plan fits, a local search (local_search above) runs before the
/// pruning from the best plan of each rule that fits, each within
/// options.local_search_trials trials (fewer on large graphs: the trials
/// times the vertices and edges of the graph times the orders stay within
/// 200,000, so RandWire's 3,446 vertices get eleven over two orders and 10^5
/// vertices none). The plans it moves to join the four, so the result is
/// never worse for it: the greedy online rule, kept from a drop, made to
/// keep what a later rebuild reads, or kept from dropping a tensor it must
/// rebuild before its next drop, often finds a cheaper plan.
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] remat_result rematerialize_best(const graph_facts& f, const std::vector<std::vector<std::size_t>>& orders,
                                              const remat_options& options, const Naming& naming = {}) {
  if (orders.empty()) throw bad_plan_error({"rematerialize_best needs at least one order"});
  return detail::best_plan(f, orders, options, naming);
}

}  // namespace memopt::remat
