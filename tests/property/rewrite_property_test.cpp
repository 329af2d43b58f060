// Property tests of the rewrite family over thousands of seeded random DAGs
// (views and in-place ops included) with random targets and hints: every
// recompute plan passes the validator, applies to an acyclic graph with the
// same graph outputs, and its claimed peak is the liveness module's peak of
// the rewritten graph's schedule; the validator refuses broken plans.
#include "../support/random_dag.hpp"

#include <memopt/rewrite.hpp>
#include <memopt/simulate.hpp>

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

TEST_CASE("property: swap plans (manual and heuristic, alone and after recompute) are valid and evaluate exactly") {
  std::mt19937_64 rng(20261128);
  std::size_t swapped = 0;
  const memopt::exact_options search{.time_limit_seconds = std::nullopt, .work_limit = 2000};
  for (int trial = 0; trial < 1000; ++trial) {
    INFO("trial " << trial);
    const auto spec = mt::random_dag(rng, {.min_nodes = 2, .max_nodes = 25, .alias_probability = trial % 2 ? 0.3 : 0.0});
    const mt::built<mt::vec_graph> b(spec);
    const std::size_t n = spec.nodes.size();
    const auto facts = rw::read_facts(b.g);
    rw::rewrite_plan first;
    if (trial % 2 == 0) {
      rw::recompute_options options;
      options.target_scope.clear();
      options.is_target = [n](std::size_t v) { return v >= n / 2; };
      options.cheap_ops = {""};
      first = rw::recompute(facts, options);
    }
    const auto h = rw::apply(facts, first);
    const auto now = rw::read_facts(h);
    const memopt::sim::machine m;
    const auto run = memopt::sim::simulate(h, m, memopt::sim::one_device(h), memopt::sim::fixed_cost{2000},
                                           memopt::sim::program{});
    const std::uint64_t peak = run.devices[0].peak_bytes();
    auto requests = rw::choose_swaps(now, run, 0, peak / 2);
    for (std::size_t v = 0; v < num_vertices(h); ++v) {  // and some manual ones
      if (!now.operands[v].empty() && std::bernoulli_distribution(0.2)(rng)) requests.push_back({v, {0}});
    }
    const auto done = rw::completion_times(run, num_vertices(h));
    const auto swaps = rw::swap(now, requests, done);
    REQUIRE(rw::check_plan(now, swaps).empty());
    const auto plan = rw::then(first, swaps, n);
    const auto faults = rw::check_plan(facts, plan);
    INFO((faults.empty() ? std::string() : faults.front()));
    REQUIRE(faults.empty());
    const auto report = rw::evaluate(facts, plan, search);
    swapped += report.swapped_bytes > 0;
    CHECK(memopt::liveness(report.graph, report.order_after).peak_bytes == report.peak_after);
    // Running the manual requests again on the result swaps nothing twice.
    const auto again = rw::read_facts(rw::apply(now, swaps));
    const auto twice = rw::swap(again, requests, std::vector<double>(again.size(), 1.0));
    for (const auto& node : twice.nodes) {
      CHECK(std::ranges::find(again.name, node.name) == again.name.end());
    }
  }
  CHECK(swapped > 100);
}
