// The planner against the optimum on tiny graphs. On small random training
// graphs (tests/support/random_training.hpp) an exhaustive search finds the
// fewest extra flops any plan needs to fit a budget when the graph's own
// nodes run in program order and copies run anywhere (Checkmate's setting).
// The planner's plans are checked against it, and the mean and worst ratios
// of their extra flops are reported; so is the cost floor
// (remat/cost_floor.hpp), which no plan goes below.
#include "../support/fewest_extra_flops.hpp"
#include "../support/random_training.hpp"

#include <memopt/io/graph_file.hpp>
#include <memopt/liveness.hpp>
#include <memopt/remat.hpp>
#include <memopt/rewrite.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

namespace rw = memopt::rewrite;
namespace remat = memopt::remat;


TEST_CASE("remat: the planner's extra flops and the cost floor against the optimum on 300 small random training graphs") {
  std::mt19937_64 rng(20261125);
  std::size_t compared = 0, optimal = 0, missed = 0, needless = 0, ratios = 0;
  double sum = 0, worst = 1;
  std::size_t floors = 0, floors_exact = 0, floors_zero = 0;
  double floor_sum = 0;
  for (int trial = 0; trial < 300; ++trial) {
    INFO("trial " << trial);
    const auto [g, facts, program, budget] = memopt::testing::budgeted_training_graph(rng, 3 + static_cast<std::size_t>(trial % 4));
    const double exact = memopt::testing::fewest_extra_flops(facts, budget);
    const double cost_floor = remat::rematerialisation_cost_floor(facts, budget).extra_flops;
    CHECK(cost_floor <= exact * (1 + 1e-9));
    if (exact > 0 && exact < std::numeric_limits<double>::infinity()) {
      ++floors;
      floors_exact += cost_floor >= exact * (1 - 1e-9);
      floors_zero += cost_floor == 0;
      floor_sum += cost_floor / exact;
    }
    const auto r = remat::rematerialize_best(facts, {program}, {.budget = budget});
    // No plan beats the optimum; no plan fits where the search finds none.
    if (exact == std::numeric_limits<double>::infinity()) {
      CHECK(r.planned_peak > budget);
      continue;
    }
    if (r.planned_peak > budget) {
      ++missed;
      continue;
    }
    CHECK(r.extra_flops >= exact);
    CHECK_FALSE(r.method.starts_with("runs"));  // says which planner made it, even once pruned
    ++compared;
    optimal += r.extra_flops == exact;
    if (exact == 0) {
      needless += r.extra_flops > 0;
      continue;
    }
    ++ratios;
    sum += r.extra_flops / exact;
    worst = std::max(worst, r.extra_flops / exact);
  }
  const double mean = sum / static_cast<double>(std::max<std::size_t>(ratios, 1));
  MESSAGE(compared << " plans that fit: " << optimal << " optimal; where copies are needed (" << ratios
                   << "), extra flops " << mean << " times the optimum on average, " << worst << " at worst; "
                   << needless << " recompute where nothing needs to; " << missed << " miss a budget a plan meets");
  MESSAGE("cost floor where copies are needed (" << floors << "): " << floor_sum / static_cast<double>(std::max<std::size_t>(floors, 1))
                                                 << " of the optimum on average, equal to it " << floors_exact << " times, 0 "
                                                 << floors_zero << " times");
  // Measured (2026-11-27, later; g++ and clang++ draw the same graphs): 1.0006
  // and 1.105, issue 35's targets. Before the moves and idle weights, 1.036 and 4.
  CHECK(mean <= 1.02);
  CHECK(worst <= 1.25);
  // The cost floor: 0.946 of the optimum on average and equal to it 159 times
  // in 191 since its branch and bound (the best lambda alone: 0.51 and 21).
  CHECK(floor_sum > 0.9 * static_cast<double>(floors));
  CHECK(floors_exact >= 150);
  CHECK(floors_zero * 10 < floors);
  CHECK(compared > 150);
  CHECK(missed * 10 < compared);
}


TEST_CASE("remat: plans recomputing the cost floor's copies and cheaper makers, on 300 small random training graphs") {
  // Without the local search, so that the copies the cost floor names are
  // what changes the plan: never worse with them, cheaper on some graphs.
  std::mt19937_64 rng(20261128);
  std::size_t cheaper = 0, at_floor = 0, floors_handed_back = 0;
  for (int trial = 0; trial < 300; ++trial) {
    INFO("trial " << trial);
    const auto [g, facts, program, budget] = memopt::testing::budgeted_training_graph(rng, 3 + static_cast<std::size_t>(trial % 4));
    remat::remat_options options{.budget = budget};
    options.local_search_trials = 0;
    const auto with = remat::rematerialize_best(facts, {program}, options);
    if (with.cost_floor) {  // the floor it computed is the one a caller would
      ++floors_handed_back;
      const auto floor = remat::rematerialisation_cost_floor(facts, options.budget, options);
      CHECK(with.cost_floor->extra_flops == floor.extra_flops);
      CHECK(with.cost_floor->cheapest_copies == floor.cheapest_copies);
    }
    options.cost_floor_copies = false;
    const auto without = remat::rematerialize_best(facts, {program}, options);
    CHECK_FALSE(without.cost_floor);
    CHECK_FALSE(remat::detail::better(without, with, options.budget));
    if (with.planned_peak > options.budget) continue;
    CHECK(rw::check_plan(facts, with.plan).empty());
    if (!remat::detail::better(with, without, options.budget)) continue;
    CHECK(with.method.find("the cost floor's copies and cheaper") != std::string::npos);
    ++cheaper;
    at_floor += with.extra_flops <= remat::rematerialisation_cost_floor(facts, options.budget).extra_flops * (1 + 1e-9);
  }
  MESSAGE(cheaper << " plans cheaper with the cost floor's copies, " << at_floor << " of them at the cost floor (so optimal)");
  CHECK(cheaper > 0);
  CHECK(floors_handed_back > cheaper);
}
