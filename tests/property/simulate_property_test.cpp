// Property tests of the simulation family over thousands of seeded random
// DAGs (views and in-place ops included) on up to three devices, under every
// ready policy: every task runs once, after its inputs; a device or link runs
// one task at a time; values cross devices once per (producer, port,
// device); each device's order is a schedule the arena family accepts; on one
// device the program policy gives exactly the liveness module's peak.
#include "../support/random_dag.hpp"

#include <memopt/heap.hpp>
#include <memopt/simulate.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

namespace mt = memopt::testing;
namespace sim = memopt::sim;

namespace {

/// The run's invariants, whatever the policy.
void check_run(const sim::simulation_result& r, const sim::machine& m) {
  const sim::task_graph& tg = r.graph;
  REQUIRE(r.not_run.empty());
  REQUIRE(r.runs.size() == tg.tasks.size());
  std::vector<const sim::task_run*> run_of(tg.tasks.size(), nullptr);
  for (const auto& run : r.runs) {
    CHECK(run_of[run.task] == nullptr);
    run_of[run.task] = &run;
  }
  for (std::size_t t = 0; t < tg.tasks.size(); ++t) {
    for (const std::size_t s : tg.successors[t]) CHECK(run_of[s]->start_us >= run_of[t]->end_us);
  }
  std::map<std::size_t, std::vector<std::pair<double, double>>> by_resource;
  for (const auto& run : r.runs) by_resource[run.resource].emplace_back(run.start_us, run.end_us);
  for (auto& [resource, spans] : by_resource) {
    std::ranges::sort(spans);
    for (std::size_t k = 1; k < spans.size(); ++k) CHECK(spans[k - 1].second <= spans[k].first);
  }
  // One transfer per (producer, port, destination), and only across devices.
  std::set<std::tuple<std::size_t, std::ptrdiff_t, std::size_t>> pairs;
  for (const auto& t : tg.tasks) {
    if (t.kind != sim::task_kind::send) continue;
    CHECK(t.device != t.to_device);
    CHECK(pairs.emplace(t.vertex, t.port, t.to_device).second);
  }
  CHECK(pairs.size() == tg.transfers);
  // Each device's steps are a schedule the arena family packs validly.
  for (std::size_t d = 0; d < m.devices.size(); ++d) {
    const auto& live = r.devices[d].memory;
    const auto buffers = memopt::heap_buffers_of(live);
    auto choice = memopt::choose_best(buffers);
    memopt::share_offsets(choice.plan, live.buffers.storage);
    CHECK(memopt::check_heap_plan(buffers, choice.plan, std::nullopt, live.buffers.storage).empty());
    CHECK(choice.plan.arena_bytes >= live.peak_bytes);
    CHECK(choice.plan.peak_bytes == live.peak_bytes);
  }
}

}  // namespace

TEST_CASE("property: simulated runs keep dependencies, one task per resource at a time, and valid memory") {
  std::mt19937_64 rng(20261125);
  sim::machine m;
  m.devices = {{.name = "d0"}, {.name = "d1"}, {.name = "d2"}};
  m.links = {{.from = 0, .to = 1, .bytes_per_s = 1e9, .latency_us = 1}};
  for (int trial = 0; trial < 1500; ++trial) {
    INFO("trial " << trial);
    const auto spec = mt::random_dag(
        rng, {.alias_probability = trial % 2 == 0 ? 0.3 : 0.0, .may_alias_probability = trial % 3 == 0 ? 0.4 : 0.0});
    const mt::built<mt::vec_graph> b(spec);
    std::vector<std::size_t> placement(spec.nodes.size());
    const std::size_t devices = 1 + trial % 3;
    for (auto& d : placement) d = std::uniform_int_distribution<std::size_t>(0, devices - 1)(rng);
    sim::simulation_options options;
    options.tasks.control_token_bytes = trial % 4 == 0 ? 4 : 0;
    const sim::sum_cost cost;
    switch (trial % 5) {
      case 0: check_run(sim::simulate(b.g, m, placement, cost, sim::fifo{}, options), m); break;
      case 1: check_run(sim::simulate(b.g, m, placement, cost, sim::lifo{}, options), m); break;
      case 2: check_run(sim::simulate(b.g, m, placement, cost, sim::first_ready{}, options), m); break;
      case 3: check_run(sim::simulate(b.g, m, placement, cost, sim::composite{}, options), m); break;
      default: check_run(sim::simulate(b.g, m, placement, cost, sim::program{}, options), m); break;
    }
  }
}

TEST_CASE("property: on one device the program policy runs the program's order with the liveness peak") {
  std::mt19937_64 rng(20261126);
  const sim::machine m;
  for (int trial = 0; trial < 1500; ++trial) {
    INFO("trial " << trial);
    const auto spec = mt::random_dag(rng, {.alias_probability = 0.3, .may_alias_probability = trial % 2 == 0 ? 0.0 : 0.5});
    const mt::built<mt::vec_graph> b(spec);
    const auto r = sim::simulate(b.g, m, sim::one_device(b.g), sim::sum_cost{}, sim::program{});
    std::vector<std::size_t> ran;
    for (const auto& run : r.runs) ran.push_back(r.graph.tasks[run.task].vertex);
    std::vector<std::size_t> program(spec.nodes.size());
    std::iota(program.begin(), program.end(), std::size_t{0});
    CHECK(ran == program);
    const auto live = memopt::liveness(b.g, memopt::program_order(b.g));
    CHECK(r.devices[0].peak_bytes() == live.peak_bytes);
    CHECK(r.devices[0].memory.timeline == live.timeline);
    CHECK(r.devices[0].persistent_bytes() == live.persistent_bytes);
  }
}
