// The planner and the exhaustive search against Checkmate's mixed-integer
// programme solved with CBC (tests/support/checkmate.hpp): on tiny graphs the
// programme's optimum must be the search's, which checks the formulation; on
// larger ones the planner's extra flops are measured against the programme's
// best plan and bound. Built only where CBC is installed.
#include "../support/checkmate.hpp"
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

namespace {

using memopt::testing::checkmate_result;

std::vector<std::size_t> program_order(const rw::graph_facts& f) {
  std::vector<std::size_t> order(f.size());
  for (std::size_t v = 0; v < order.size(); ++v) order[v] = v;
  return order;
}

/// The Checkmate plan's runs as a plan: it passes the validator, fits the
/// budget in the liveness model and costs what the programme says.
void check_checkmate_plan(const rw::graph_facts& f, const checkmate_result& c, std::uint64_t budget) {
  const auto plan = remat::plan_of_runs(f, c.runs);
  REQUIRE(rw::check_plan(f, plan.plan).empty());
  CHECK(plan.planned_peak <= budget);
  CHECK(plan.extra_flops == doctest::Approx(c.extra_flops));
}

}  // namespace

TEST_CASE("checkmate: the programme's optimum is the exhaustive search's on 100 small training graphs") {
  std::mt19937_64 rng(4711);
  std::size_t equal = 0, solved = 0;
  for (int trial = 0; trial < 100; ++trial) {
    INFO("trial " << trial);
    const auto [g, facts, program, budget] = memopt::testing::budgeted_training_graph(rng, 3 + static_cast<std::size_t>(trial % 3));
    const double exact = memopt::testing::fewest_extra_flops(facts, budget);
    const auto c = memopt::testing::checkmate(facts, program, remat::detail::recomputable_vertices(facts, {}), budget);
    REQUIRE(c.status != checkmate_result::outcome::unknown);
    REQUIRE(c.status != checkmate_result::outcome::feasible);  // small: always proved
    // Checkmate recomputes in a stage in program order and holds values
    // between stages as wholes: its plans are plans the search considers.
    if (exact == std::numeric_limits<double>::infinity()) {
      CHECK(c.status == checkmate_result::outcome::infeasible);
      continue;
    }
    if (c.status == checkmate_result::outcome::infeasible) continue;
    ++solved;
    CHECK(c.extra_flops >= exact - 1e-6);
    equal += c.extra_flops <= exact + 1e-6;
    check_checkmate_plan(facts, c, budget);
  }
  MESSAGE(solved << " budgets solved by the programme; its optimum is the search's on " << equal);
  CHECK(solved > 50);
  CHECK(equal == solved);
}

TEST_CASE("remat: the planner against Checkmate's optimum on training graphs of 18 to 26 vertices") {
  std::mt19937_64 rng(1125);
  std::size_t compared = 0, optimal = 0, proved = 0, missed = 0, needless = 0, ratios = 0;
  double sum = 0, worst = 1;
  for (int trial = 0; trial < 9; ++trial) {
    INFO("trial " << trial);
    const auto g = memopt::testing::training_graph(rng, 8 + static_cast<std::size_t>(trial % 3) * 2);
    const auto facts = rw::read_facts(g);
    const auto program = program_order(facts);
    const auto before = memopt::liveness(g, std::span<const std::size_t>(program)).peak_bytes;
    const auto floor = remat::rematerialisation_floor(facts).bytes;
    const std::uint64_t budget = floor + (before - floor) * static_cast<std::uint64_t>(1 + trial % 3) / 4;
    const auto r = remat::rematerialize_best(facts, {program}, {.budget = budget});
    const auto c = memopt::testing::checkmate(facts, program, remat::detail::recomputable_vertices(facts, {}), budget,
                                              {.seconds = 600, .nodes = 20000}, remat::runs_of(r));
    if (c.status == checkmate_result::outcome::infeasible) {
      CHECK(r.planned_peak > budget);
      continue;
    }
    REQUIRE(c.status != checkmate_result::outcome::unknown);
    check_checkmate_plan(facts, c, budget);
    proved += c.status == checkmate_result::outcome::optimal;
    if (r.planned_peak > budget) {
      ++missed;
      continue;
    }
    CHECK(r.extra_flops >= c.bound - 1e-6);
    ++compared;
    optimal += r.extra_flops <= c.extra_flops + 1e-6;
    if (c.extra_flops == 0) {
      needless += r.extra_flops > 0;
      continue;
    }
    ++ratios;
    sum += r.extra_flops / c.extra_flops;
    worst = std::max(worst, r.extra_flops / c.extra_flops);
  }
  MESSAGE(compared << " plans that fit (" << proved << " references proved optimal): " << optimal
                   << " as cheap as Checkmate's; where copies are needed (" << ratios << "), extra flops "
                   << sum / static_cast<double>(std::max<std::size_t>(ratios, 1)) << " times Checkmate's on average, "
                   << worst << " at worst; " << needless << " recompute where nothing needs to; " << missed
                   << " missed");
  CHECK(compared >= 6);
}
