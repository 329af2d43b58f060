// Property tests over thousands of seeded random arena problems and random
// DAG schedules: every plan valid, never below max-live, exact never above a
// heuristic and equal to brute force on tiny problems.
#include "../support/random_dag.hpp"
#include "../support/random_heap.hpp"

#include <memopt/io/minimalloc_csv.hpp>

#include <memopt/heap.hpp>
#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <random>
#include <thread>
#include <string>
#include <vector>

namespace mt = memopt::testing;

namespace {

using heuristic = std::function<memopt::heap_plan(std::span<const memopt::heap_buffer>)>;

const std::vector<std::pair<const char*, heuristic>> heuristics = {
    {"first_fit", [](auto b) { return memopt::plan_heap(b, memopt::first_fit{}); }},
    {"best_fit", [](auto b) { return memopt::plan_heap(b, memopt::best_fit{}); }},
    {"xla_size_fit", [](auto b) { return memopt::plan_heap(b, memopt::xla_size_fit{}); }},
    {"xla_area_fit", [](auto b) { return memopt::plan_heap(b, memopt::xla_area_fit{}); }},
    {"greedy_by_size", [](auto b) { return memopt::plan_heap(b, memopt::greedy_by_size{}); }},
    {"greedy_by_breadth", [](auto b) { return memopt::plan_heap(b, memopt::greedy_by_breadth{}); }},
    {"choose_best", [](auto b) { return memopt::choose_best(b).plan; }},
};

}  // namespace

TEST_CASE("property: every heuristic's plan is valid and never below max-live") {
  std::mt19937_64 rng(20261122);
  for (int trial = 0; trial < 1200; ++trial) {
    const auto buffers = mt::random_heap(rng, {.alignments = trial % 3 == 0});
    const std::uint64_t max_live = mt::brute_force_max_live(buffers);
    INFO("trial " << trial);
    REQUIRE(memopt::max_live_bytes(buffers) == max_live);
    for (const auto& [name, run] : heuristics) {
      const auto& name_label = name;  // clang 14: INFO's lambda cannot capture a binding
      INFO(name_label);
      const auto plan = run(buffers);
      CHECK(memopt::check_heap_plan(buffers, plan).empty());
      CHECK(plan.peak_bytes == max_live);
      CHECK(plan.arena_bytes >= max_live);
    }
  }
}

TEST_CASE("property: first_fit and best_fit place every buffer as their definitions do") {
  std::mt19937_64 rng(20261127);
  for (int trial = 0; trial < 1500; ++trial) {
    const auto buffers = mt::random_heap(
        rng, {.max_buffers = 60, .max_time = 40, .alignments = trial % 3 == 0, .spread_sizes = trial % 2 == 0});
    INFO("trial " << trial);
    CHECK(memopt::plan_heap(buffers, memopt::first_fit{}).offsets == mt::brute_force_online_fit(buffers, false));
    CHECK(memopt::plan_heap(buffers, memopt::best_fit{}).offsets == mt::brute_force_online_fit(buffers, true));
  }
}

// Proving an optimum above max-live is exponential: beyond ~15 buffers of
// random sizes a proof may take seconds, so these problems stay small.
TEST_CASE("property: exact is valid, never above a heuristic, and proves its optimum") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 700; ++trial) {
    const auto buffers = mt::random_heap(rng, {.max_buffers = 12, .alignments = trial % 4 == 0});
    INFO("trial " << trial);
    const auto r = memopt::exact_fit(buffers, {.time_limit_seconds = 5.0});
    CHECK(r.status == memopt::fit_status::fits);
    CHECK(memopt::check_heap_plan(buffers, r.plan).empty());
    CHECK(r.plan.arena_bytes >= r.plan.peak_bytes);
    CHECK(r.proved_optimal);
    for (const auto& [name, run] : heuristics) CHECK(r.plan.arena_bytes <= run(buffers).arena_bytes);
    // Deciding: the optimum fits, one byte less does not.
    const auto at = memopt::exact_fit(buffers, {.capacity = r.plan.arena_bytes});
    CHECK(at.status == memopt::fit_status::fits);
    CHECK(memopt::check_heap_plan(buffers, at.plan, r.plan.arena_bytes).empty());
    if (r.plan.arena_bytes > 0) {
      CHECK(memopt::exact_fit(buffers, {.capacity = r.plan.arena_bytes - 1}).status ==
            memopt::fit_status::does_not_fit);
    }
  }
}

TEST_CASE("property: exact's progress reports are bounds that close in on its arena") {
  std::mt19937_64 rng(1127);
  std::size_t searched = 0;
  for (int trial = 0; trial < 300; ++trial) {
    INFO("trial " << trial);
    const auto buffers = mt::random_heap(rng, {.max_buffers = 12, .alignments = trial % 4 == 0});
    std::vector<memopt::search_progress> reports;
    const auto r = memopt::exact_fit(buffers, {.work_limit = 100'000,
                                               .progress = [&](const memopt::search_progress& p) { reports.push_back(p); }});
    searched += !reports.empty();
    for (std::size_t k = 0; k < reports.size(); ++k) {
      CHECK(reports[k].bound_bytes <= reports[k].best_bytes);
      CHECK(reports[k].bound_bytes <= r.plan.arena_bytes);
      if (k > 0) {
        CHECK(reports[k].best_bytes <= reports[k - 1].best_bytes);
        CHECK(reports[k].bound_bytes >= reports[k - 1].bound_bytes);
      }
    }
    if (!reports.empty()) {
      CHECK(reports.back().best_bytes == r.plan.arena_bytes);
      CHECK((reports.back().bound_bytes == r.plan.arena_bytes) == r.proved_optimal);
    }
  }
  CHECK(searched > 20);  // the heuristics miss the optimum often enough to search
}

TEST_CASE("property: exact equals brute force on tiny problems") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 1500; ++trial) {
    const auto buffers =
        mt::random_heap(rng, {.max_buffers = 6, .max_time = 6, .max_bytes = 8, .alignments = trial % 2 == 0});
    INFO("trial " << trial);
    const auto r = memopt::exact_fit(buffers);
    CHECK(r.plan.arena_bytes == mt::brute_force_min_arena(buffers));
    CHECK(r.proved_optimal);
  }
}

TEST_CASE("property: plans of random DAG schedules are valid and start from the liveness peak") {
  std::mt19937_64 rng(77);
  for (int trial = 0; trial < 300; ++trial) {
    const auto spec = mt::random_dag(rng, {.alias_probability = trial % 2 == 0 ? 0.0 : 0.3});
    const auto order = mt::random_topological_order(spec, rng);
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const auto live = memopt::liveness(g, mt::to_vertices<mt::vec_graph>(vertex, order));
    const auto buffers = memopt::heap_buffers_of(live);
    const std::span<const memopt::buffer_id> storage(live.buffers.storage);
    INFO("trial " << trial);
    CHECK(memopt::max_live_bytes(buffers) == live.peak_bytes);
    auto best = memopt::choose_best(buffers).plan;
    memopt::share_offsets(best, storage);
    CHECK(memopt::check_heap_plan(buffers, best, std::nullopt, storage).empty());
    auto exact = memopt::exact_fit(buffers, {.time_limit_seconds = 0.02});
    memopt::share_offsets(exact.plan, storage);
    CHECK(memopt::check_heap_plan(buffers, exact.plan, std::nullopt, storage).empty());
    CHECK(exact.plan.arena_bytes <= best.arena_bytes);
    CHECK(exact.plan.arena_bytes >= live.peak_bytes);
  }
}

TEST_CASE("exact_fit: a challenging MiniMalloc file fits 2^20") {
  const auto problem = memopt::io::read_minimalloc_csv(std::string(MEMOPT_DATA_DIR) + "/minimalloc/challenging/J.1048576.csv");
  REQUIRE(problem.buffers.size() == 409);
  const auto r = memopt::exact_fit(problem.buffers, {.capacity = 1048576});
  CHECK(r.status == memopt::fit_status::fits);
  CHECK(memopt::check_heap_plan(problem.buffers, r.plan, 1048576).empty());
}

TEST_CASE("property: with a work limit and no time limit, exact_fit gives the same plan under load") {
  std::mt19937_64 rng(32);
  std::atomic<bool> stop = false;
  std::thread load([&] {
    volatile std::uint64_t x = 0;
    while (!stop) x = x + 1;
  });
  for (int trial = 0; trial < 20; ++trial) {
    const auto spec = mt::random_dag(rng, {.min_nodes = 60, .max_nodes = 80});
    const auto order = mt::random_topological_order(spec, rng);
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const auto buffers = memopt::heap_buffers_of(memopt::liveness(g, mt::to_vertices<mt::vec_graph>(vertex, order)));
    const memopt::exact_fit_options deterministic{.work_limit = 2000};
    const auto first = memopt::exact_fit(buffers, deterministic);
    const auto again = memopt::exact_fit(buffers, deterministic);
    INFO("trial " << trial);
    CHECK(first.plan.offsets == again.plan.offsets);
    CHECK(first.nodes == again.nodes);
    CHECK(first.nodes <= 2000 + 64);  // the limit, give or take the searches it ends
    CHECK(memopt::check_heap_plan(buffers, first.plan).empty());
  }
  stop = true;
  load.join();
}
