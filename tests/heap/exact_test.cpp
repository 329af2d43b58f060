// heap/exact.hpp: the exact packer, minimising and deciding; its search by
// windows of time; best_arena, the recommended arena.
#include "../support/random_dag.hpp"
#include "../support/random_heap.hpp"

#include <memopt/heap/check.hpp>
#include <memopt/heap/exact.hpp>
#include <memopt/heap/lifetimes.hpp>
#include <memopt/heap/registry.hpp>
#include <memopt/io/minimalloc_csv.hpp>
#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

// t0: a 2, b 2; t1: b 2, c 3. Max-live 5: b at the bottom, a and c above it.
const std::vector<memopt::heap_buffer> survivor = {{0, 1, 2}, {0, 2, 2}, {1, 2, 3}};

}  // namespace

TEST_CASE("exact_fit: reaches max-live and proves it") {
  const auto r = memopt::exact_fit(survivor);
  CHECK(r.status == memopt::fit_status::fits);
  CHECK(r.proved_optimal);
  CHECK(r.plan.arena_bytes == 5);
  CHECK(r.plan.peak_bytes == 5);
  CHECK(memopt::check_heap_plan(survivor, r.plan).empty());
}

TEST_CASE("exact_fit: MiniMalloc's README example packs into 12") {
  const std::vector<memopt::heap_buffer> example = {{0, 3, 4}, {3, 9, 4}, {0, 9, 4}, {9, 21, 4}, {0, 21, 4}};
  const auto r = memopt::exact_fit(example, {.capacity = 12});
  CHECK(r.status == memopt::fit_status::fits);
  CHECK(r.plan.arena_bytes == 12);
  CHECK(memopt::check_heap_plan(example, r.plan, 12).empty());
}

TEST_CASE("exact_fit: a capacity below max-live does not fit, without an error") {
  const auto r = memopt::exact_fit(survivor, {.capacity = 4});
  CHECK(r.status == memopt::fit_status::does_not_fit);
  CHECK_FALSE(r.plan.offsets.empty());  // the best heuristic plan, for what it is worth
}

TEST_CASE("exact_fit: empty, zero-length, zero-size and equal lifetimes") {
  CHECK(memopt::exact_fit({}).plan.arena_bytes == 0);
  CHECK(memopt::exact_fit({}).proved_optimal);
  const std::vector<memopt::heap_buffer> odd = {{3, 3, 50}, {0, 4, 0}, {1, 3, 7}, {1, 3, 7}, {1, 3, 7}};
  const auto r = memopt::exact_fit(odd, {.capacity = 21});
  CHECK(r.status == memopt::fit_status::fits);
  CHECK(r.plan.arena_bytes == 21);
  CHECK(memopt::check_heap_plan(odd, r.plan, 21).empty());
}

TEST_CASE("exact_fit: a single huge buffer") {
  const std::uint64_t huge = std::uint64_t{1} << 62;
  const std::vector<memopt::heap_buffer> one = {{0, 1, huge}};
  const auto r = memopt::exact_fit(one);
  CHECK(r.plan.arena_bytes == huge);
  CHECK(r.proved_optimal);
  CHECK(memopt::exact_fit(one, {.capacity = huge - 1}).status == memopt::fit_status::does_not_fit);
}

TEST_CASE("exact_fit: alignment") {
  std::vector<memopt::heap_buffer> buffers = {{0, 2, 3}, {1, 3, 4}, {0, 3, 1}};
  for (auto& b : buffers) b.alignment = 4;
  const auto r = memopt::exact_fit(buffers);
  CHECK(memopt::check_heap_plan(buffers, r.plan).empty());
  CHECK(r.plan.arena_bytes == 9);  // all three live at t1: slots 0, 4, 8, the 1-byte one on top
  CHECK(r.proved_optimal);
}

TEST_CASE("exact_fit: a time limit of zero returns a valid plan and proves nothing it has not") {
  const auto r = memopt::exact_fit(survivor, {.time_limit_seconds = 0.0});
  CHECK(memopt::check_heap_plan(survivor, r.plan).empty());
  CHECK(r.plan.arena_bytes >= 5);
  CHECK(r.proved_optimal == (r.plan.arena_bytes == 5));
}

namespace {

// Max-live 8 (a, b, e at t3), but every heuristic needs 9: greedy-size puts d,
// a at 0, b at 4, c at 3, and e finds no hole of 2 below b.
//   a {1, 4, 3}  b {3, 6, 3}  c {1, 3, 2}  d {5, 6, 4}  e {3, 5, 2}
// At 8: a 0, c 3, e 3, b 5, d 0.
const std::vector<memopt::heap_buffer> missed = {{1, 4, 3}, {3, 6, 3}, {1, 3, 2}, {5, 6, 4}, {3, 5, 2}};

using outcome = memopt::detail::exact_search::outcome;

}  // namespace

TEST_CASE("exact_search: fixed buffers are obstacles the others go around") {
  // c is fixed at [1, 3); a (live with it) cannot go at 0, so goes at 3; b,
  // live after c, goes at 0.
  const std::vector<memopt::heap_buffer> buffers = {{0, 2, 2}, {2, 3, 2}, {0, 2, 2}};
  const std::vector<std::uint64_t> fixed = {memopt::detail::no_offset, memopt::detail::no_offset, 1};
  memopt::detail::exact_search search(buffers, {"WAT"}, fixed);
  memopt::detail::search_budget budget;
  const auto [fits, offsets] = search.solve(5, budget);
  CHECK(fits == outcome::found);
  CHECK(offsets[0] == 3);
  CHECK(offsets[1] == 0);
  auto [refuted, none] = search.solve(4, budget);  // 3 + 2 > 4, and [0, 2) meets c
  CHECK(refuted == outcome::none);
  CHECK(none.empty());
}

TEST_CASE("window_search: one buffer a window places them all, or proves the capacity too small") {
  memopt::detail::window_search windows(missed, {"WAT", "TAW", "TWA"}, 1);
  CHECK(windows.windows() > 1);
  memopt::detail::search_budget budget;
  auto [fits, offsets] = windows.solve(8, budget, 64);
  REQUIRE(fits == outcome::found);
  const auto plan = memopt::make_heap_plan(missed, offsets);
  CHECK(plan.arena_bytes == 8);
  CHECK(memopt::check_heap_plan(missed, plan, 8).empty());
  CHECK(windows.solve(7, budget, 64).first == outcome::none);  // below max-live
}

TEST_CASE("best_arena: reaches max-live where every heuristic misses it, and says so") {
  const auto choice = memopt::choose_best(missed);
  REQUIRE(choice.plan.arena_bytes == 9);
  const auto r = memopt::best_arena(missed);
  CHECK(r.plan.arena_bytes == 8);
  CHECK(r.plan.peak_bytes == 8);
  CHECK(r.proved_optimal);
  CHECK(r.method == "exact-windows");
  CHECK(r.nodes > 0);
  CHECK(memopt::check_heap_plan(missed, r.plan).empty());
  const auto named = memopt::heap::by_name("best")(missed);
  CHECK(named.plan.offsets == r.plan.offsets);
  CHECK(named.method == "exact-windows");
  CHECK(named.proved_optimal);
  CHECK(memopt::heap::by_name("best")(missed, {}, 8).status == memopt::fit_status::fits);
  // Deciding 8 by exact_fit: the windows find it before the complete search.
  const auto decided = memopt::exact_fit(missed, {.capacity = 8});
  CHECK(decided.status == memopt::fit_status::fits);
  CHECK(decided.method == "exact-windows");
  const auto without = memopt::exact_fit(missed, {.capacity = 8, .window_items = 0});
  CHECK(without.status == memopt::fit_status::fits);
  CHECK(without.method == "exact");
}

TEST_CASE("best_arena: a heuristic at max-live is kept, unsearched") {
  const auto r = memopt::best_arena(survivor);
  CHECK(r.plan.arena_bytes == 5);
  CHECK(r.method == memopt::choose_best(survivor).method);
  CHECK(r.nodes == 0);
  CHECK(r.proved_optimal);
  CHECK(memopt::best_arena({}).plan.arena_bytes == 0);
}

TEST_CASE("best_arena: a work limit too small for the buffers skips the search") {
  const auto r = memopt::best_arena(missed, {.work_limit = 4 * 5 - 1});
  CHECK(r.plan.arena_bytes == 9);
  CHECK(r.nodes == 0);
  CHECK_FALSE(r.proved_optimal);
  CHECK(memopt::best_arena(missed, {.work_limit = 4 * 5}).plan.arena_bytes == 8);
}

TEST_CASE("best_arena: NASNet's cells at max-live under the default budget (issue 16)") {
  // The lifetimes of examples/data/nasnet_like_infer_b32.json under a best
  // schedule; every heuristic leaves 18.75 % (3 of 16 units of 8830976 B).
  const std::string here = __FILE__;
  const auto problem =
      memopt::io::read_minimalloc_csv(here.substr(0, here.rfind('/')) + "/data/nasnet_like_infer_b32.arena.csv");
  const auto& buffers = problem.buffers;
  REQUIRE(memopt::choose_best(buffers).plan.arena_bytes == 19 * std::uint64_t{8830976});
  const auto r = memopt::best_arena(buffers, {.work_limit = memopt::best_arena_work});
  CHECK(r.plan.arena_bytes == 16 * std::uint64_t{8830976});
  CHECK(r.plan.arena_bytes == r.plan.peak_bytes);
  CHECK(r.proved_optimal);
  CHECK(r.method == "exact-windows");
  CHECK(r.nodes < memopt::best_arena_work / 4);
  CHECK(memopt::check_heap_plan(buffers, r.plan).empty());
  CHECK(memopt::best_arena(buffers, {.work_limit = memopt::best_arena_work}).plan.offsets == r.plan.offsets);
}

// Windows of one to three buffers make every window meet fixed buffers and
// many fail and merge: the refutations must still be proofs.
TEST_CASE("property: the search by windows never refutes a capacity that fits, nor returns a bad plan") {
  std::mt19937_64 rng(1616);
  for (int trial = 0; trial < 600; ++trial) {
    const auto buffers = memopt::testing::random_heap(rng, {.max_buffers = 12, .alignments = trial % 4 == 0});
    INFO("trial " << trial);
    const auto complete = memopt::exact_fit(buffers, {.window_items = 0});
    REQUIRE(complete.proved_optimal);
    const std::uint64_t optimum = complete.plan.arena_bytes;
    for (const std::size_t size : {1, 2, 3}) {
      INFO("window_items " << size);
      const auto r = memopt::exact_fit(buffers, {.window_items = size});
      CHECK(r.plan.arena_bytes == optimum);
      CHECK(r.proved_optimal);
      CHECK(memopt::check_heap_plan(buffers, r.plan).empty());
      memopt::detail::window_search windows(buffers, {"WAT", "TAW", "TWA"}, size);
      for (const std::uint64_t capacity : {optimum, optimum + 1, optimum + optimum / 4}) {
        memopt::detail::search_budget budget;
        const auto [result, offsets] = windows.solve(capacity, budget, 64);
        CHECK(result != outcome::none);
        if (result == outcome::found) {
          CHECK(memopt::check_heap_plan(buffers, memopt::make_heap_plan(buffers, offsets), capacity).empty());
        }
      }
      if (optimum > 0) {
        memopt::detail::search_budget budget;
        CHECK(windows.solve(optimum - 1, budget, 64).first != outcome::found);
      }
    }
  }
}

TEST_CASE("property: best_arena is valid, never above the heuristics, repeatable, and proves only optima") {
  std::mt19937_64 rng(2016);
  for (int trial = 0; trial < 500; ++trial) {
    const auto buffers = memopt::testing::random_heap(rng, {.max_buffers = 12, .alignments = trial % 4 == 0});
    INFO("trial " << trial);
    const auto choice = memopt::choose_best(buffers);
    const auto r = memopt::best_arena(buffers, {.work_limit = 4000});
    CHECK(memopt::check_heap_plan(buffers, r.plan).empty());
    CHECK(r.plan.arena_bytes <= choice.plan.arena_bytes);
    CHECK(r.plan.arena_bytes >= r.plan.peak_bytes);
    CHECK(r.nodes <= 4000 + 64);
    CHECK((r.method == choice.method) == (r.plan.arena_bytes == choice.plan.arena_bytes));
    CHECK((r.method == choice.method || r.method == "exact-windows" || r.method == "exact"));
    if (r.proved_optimal) CHECK(r.plan.arena_bytes == memopt::exact_fit(buffers).plan.arena_bytes);
    const auto again = memopt::best_arena(buffers, {.work_limit = 4000});
    CHECK(again.plan.offsets == r.plan.offsets);
    CHECK(again.method == r.method);
    CHECK(again.nodes == r.nodes);
  }
  // Larger problems from random DAG schedules: valid, no worse, repeatable.
  namespace mt = memopt::testing;
  for (int trial = 0; trial < 40; ++trial) {
    const auto spec = mt::random_dag(rng, {.min_nodes = 60, .max_nodes = 120});
    const auto order = mt::random_topological_order(spec, rng);
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const auto buffers = memopt::heap_buffers_of(memopt::liveness(g, mt::to_vertices<mt::vec_graph>(vertex, order)));
    INFO("dag trial " << trial);
    const auto r = memopt::best_arena(buffers, {.work_limit = 20'000});
    CHECK(memopt::check_heap_plan(buffers, r.plan).empty());
    CHECK(r.plan.arena_bytes <= memopt::choose_best(buffers).plan.arena_bytes);
    CHECK(memopt::best_arena(buffers, {.work_limit = 20'000}).plan.offsets == r.plan.offsets);
  }
}
