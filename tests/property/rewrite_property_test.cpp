// Property tests of the rewrite family over thousands of seeded random DAGs
// (views and in-place ops included) with random targets and hints: every
// recompute plan passes the validator, applies to an acyclic graph with the
// same graph outputs, and its claimed peak is the liveness module's peak of
// the rewritten graph's schedule; the validator refuses broken plans.
#include "../support/random_dag.hpp"

#include <memopt/rewrite.hpp>

#include <doctest/doctest.h>

#include <random>

namespace mt = memopt::testing;
namespace rw = memopt::rewrite;

TEST_CASE("property: recompute plans are valid, apply cleanly and evaluate to the liveness peak") {
  std::mt19937_64 rng(20261127);
  std::size_t copied = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    INFO("trial " << trial);
    const auto spec = mt::random_dag(rng, {.min_nodes = 2, .max_nodes = 30, .alias_probability = trial % 2 ? 0.3 : 0.0});
    const mt::built<mt::vec_graph> b(spec);
    const std::size_t n = spec.nodes.size();
    std::vector<bool> target(n), hint(n);
    for (std::size_t v = 0; v < n; ++v) {
      target[v] = v >= n / 2 && std::bernoulli_distribution(0.5)(rng);
      hint[v] = std::bernoulli_distribution(0.4)(rng);
    }
    rw::recompute_options options;
    options.mode = trial % 3 == 0 ? rw::recompute_mode::manual : rw::recompute_mode::heuristic;
    options.target_scope.clear();
    options.is_target = [&](std::size_t v) { return target[v]; };
    options.has_hint = [&](std::size_t v) { return hint[v]; };
    options.cheap_ops = {""};  // unnamed ops: the heuristic takes every non-target
    const auto facts = rw::read_facts(b.g);
    const auto plan = rw::recompute(facts, options);
    REQUIRE(rw::check_plan(facts, plan).empty());
    const auto report = rw::evaluate(facts, plan, {.time_limit_seconds = std::nullopt, .work_limit = 2000});
    copied += plan.nodes.size();
    CHECK(memopt::is_topological_order(report.graph, report.order_after));
    CHECK(memopt::liveness(report.graph, report.order_after).peak_bytes == report.peak_after);
    CHECK(report.peak_before == memopt::exact_schedule(b.g, {.time_limit_seconds = std::nullopt, .work_limit = 2000}).peak_bytes);
    for (std::size_t v = 0; v < n; ++v) {
      for (std::size_t port = 0; port < spec.nodes[v].outputs.size(); ++port) {
        CHECK(report.graph[v].outputs[port].live_out == b.g[v].outputs[port].live_out);
      }
    }
    for (std::size_t v = n; v < num_vertices(report.graph); ++v) {
      for (const auto& out : report.graph[v].outputs) CHECK_FALSE(out.live_out);
    }
  }
  CHECK(copied > 1000);  // the passes do recompute
}
