// schedule/, heap/ and share/ registries: every name runs, and runs what
// calling the algorithm directly runs; unknown names say which ones exist.
#include "support/graph_spec.hpp"
#include "support/named_graphs.hpp"

#include <memopt/heap.hpp>
#include <memopt/schedule.hpp>
#include <memopt/share.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

namespace mt = memopt::testing;

namespace {

/// The names memopt-plan's --algo flags accept (docs/cli.md).
const std::vector<std::string> cli_schedulers = {"program", "list", "dfs", "post-order", "xla",
                                                 "lpmf", "bfs", "dfs-size", "exact", "best"};
const std::vector<std::string> cli_heap = {"first-fit", "best-fit", "xla-size", "xla-area",
                                           "greedy-size", "greedy-breadth", "best", "exact"};

bool lists(const std::vector<std::string>& names, const std::string& name) {
  return std::ranges::find(names, name) != names.end();
}

template <class F>
void check_unknown(F&& lookup, const std::string& family, const std::vector<std::string>& known) {
  try {
    (void)lookup("magic");
    FAIL("no error");
  } catch (const memopt::unknown_algorithm_error& e) {
    CHECK(e.family == family);
    CHECK(e.name == "magic");
    CHECK(e.known == known);
    for (const auto& name : known) CHECK(std::string(e.what()).find(name) != std::string::npos);
  }
}

}  // namespace

// mt::hand_graph is the archetype: exactly what dag and tensor_graph ask for.
TEST_CASE_TEMPLATE("schedule registry: every scheduler runs as its direct call", G, mt::vec_graph, mt::list_graph,
                   mt::hand_graph) {
  const auto built = mt::build<G>(mt::greedy_trap());  // members, not a binding: clang 14 lambdas cannot capture those
  const auto& g = built.g;
  const auto index = mt::index_map(g);
  const memopt::search_limits limits{.work_limit = 10'000};
  const memopt::exact_options search{.time_limit_seconds = std::nullopt, .work_limit = 10'000};
  const auto direct = [&](const std::string& name) -> memopt::schedule_result<G> {
    if (name == "program") return memopt::program_schedule(g, index);
    if (name == "list") return memopt::list_schedule(g, memopt::bytes_freed_priority{}, {}, index);
    if (name == "least-live-after") return memopt::list_schedule(g, memopt::least_live_after_priority{}, {}, index);
    if (name == "dfs") return memopt::dfs_schedule(g, index);
    if (name == "post-order") return memopt::post_order_schedule(g, index);
    if (name == "xla") return memopt::xla_schedule(g, index);
    if (name == "lpmf") return memopt::lpmf_schedule(g, index);
    if (name == "bfs") return memopt::bfs_schedule(g, index);
    if (name == "dfs-size") return memopt::dfs_size_schedule(g, index);
    return memopt::exact_schedule(g, search, index);  // exact, best
  };
  for (const auto& e : memopt::schedule::entries()) {
    INFO(e.name);
    CHECK(!e.description.empty());
    const auto r = memopt::schedule::by_name(e.name)(g, limits, index);
    const auto d = direct(std::string(e.name));
    CHECK(r.method == d.method);
    CHECK(r.order == d.order);
    CHECK(r.peak_bytes == d.peak_bytes);
    CHECK(r.lower_bound_bytes == d.lower_bound_bytes);
    CHECK(r.proved_optimal == d.proved_optimal);
    CHECK(memopt::is_topological_order(g, r.order, index));
  }
  CHECK(memopt::schedule::by_name("program")(g, {}, index).method == "program");
  CHECK(memopt::schedule::by_name("least-live-after")(g, {}, index).method == "least-live-after");
}

TEST_CASE("schedule registry: names, and the searches' time limits") {
  const auto names = memopt::schedule::names();
  for (const auto& name : cli_schedulers) CHECK(lists(names, name));
  CHECK(lists(names, "least-live-after"));
  CHECK(memopt::schedule::by_name("exact").default_seconds == 60.0);
  CHECK(memopt::schedule::by_name("best").default_seconds == 3.0);
  CHECK(!memopt::schedule::by_name("xla").default_seconds);
  const memopt::search_limits none, work{.work_limit = 5}, time{.time_limit_seconds = 1.5, .work_limit = 5};
  CHECK(none.time_limit_or(3.0) == 3.0);
  CHECK(!work.time_limit_or(3.0));  // a work limit alone: repeatable
  CHECK(time.time_limit_or(3.0) == 1.5);
  check_unknown([](auto name) { return memopt::schedule::by_name(name); }, "scheduler", names);
}

TEST_CASE("heap registry: every algorithm runs as its direct call") {
  const std::vector<memopt::heap_buffer> buffers = {{0, 3, 1}, {0, 1, 1}, {0, 3, 1}, {2, 3, 2}};
  CHECK(memopt::heap::names() == cli_heap);
  const auto plan_of = [&](const std::string& name) -> memopt::heap_plan {
    if (name == "first-fit") return memopt::plan_heap(buffers, memopt::first_fit{});
    if (name == "best-fit") return memopt::plan_heap(buffers, memopt::best_fit{});
    if (name == "xla-size") return memopt::plan_heap(buffers, memopt::xla_size_fit{});
    if (name == "xla-area") return memopt::plan_heap(buffers, memopt::xla_area_fit{});
    if (name == "greedy-size") return memopt::plan_heap(buffers, memopt::greedy_by_size{});
    if (name == "greedy-breadth") return memopt::plan_heap(buffers, memopt::greedy_by_breadth{});
    if (name == "best") return memopt::choose_best(buffers).plan;
    return memopt::exact_fit(buffers, {.work_limit = 10'000}).plan;
  };
  for (const auto& e : memopt::heap::entries()) {
    INFO(e.name);
    CHECK(!e.description.empty());
    const auto r = e(buffers, {.work_limit = 10'000});
    const auto direct = plan_of(std::string(e.name));
    CHECK(r.plan.offsets == direct.offsets);
    CHECK(r.plan.arena_bytes == direct.arena_bytes);
    CHECK(r.proved_optimal == (e.name == "exact" || r.plan.arena_bytes == r.plan.peak_bytes));
    CHECK(r.status == memopt::fit_status::fits);
    CHECK((e.name == "best" ? r.method == memopt::choose_best(buffers).method : r.method == e.name));
  }
  CHECK(memopt::heap::by_name("first-fit")(buffers, {}, 3).status == memopt::fit_status::does_not_fit);
  CHECK(memopt::heap::by_name("exact")(buffers, {}, 4).status == memopt::fit_status::fits);
  check_unknown([](auto name) { return memopt::heap::by_name(name); }, "heap algorithm", cli_heap);
}

TEST_CASE("choose_best: every candidate's name and arena") {
  const std::vector<memopt::heap_buffer> buffers = {{0, 3, 1}, {0, 1, 1}, {0, 3, 1}, {2, 3, 2}};
  const auto choice = memopt::choose_best(buffers);
  const std::vector<std::string> order = {"greedy-size", "xla-size", "xla-area", "greedy-breadth", "best-fit",
                                          "first-fit"};
  REQUIRE(choice.candidates.size() == order.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    CHECK(choice.candidates[k].name == order[k]);
    CHECK(choice.candidates[k].arena_bytes == memopt::heap::by_name(order[k])(buffers).plan.arena_bytes);
  }
  CHECK(choice.method == choice.candidates[choice.chosen].name);
  CHECK(choice.plan.arena_bytes == choice.candidates[choice.chosen].arena_bytes);
}

TEST_CASE_TEMPLATE("share registry: every pass and policy runs as its direct call", G, mt::vec_graph,
                   mt::list_graph, mt::hand_graph) {
  const auto [g, vertex] = mt::build<G>(mt::diamond());
  const auto index = mt::index_map(g);
  const auto order = memopt::program_order(g);
  const std::span<const memopt::vertex_t<G>> steps(order);
  CHECK(memopt::share::names() == std::vector<std::string>{"linear", "dag"});
  CHECK(memopt::share::policy_names() == std::vector<std::string>{"lifo", "best-fit", "caffe2"});
  const auto same = [](const memopt::sharing_plan& a, const memopt::sharing_plan& b) {
    CHECK(a.storage_of == b.storage_of);
    CHECK(a.storage_bytes == b.storage_bytes);
    CHECK(a.total_bytes == b.total_bytes);
  };
  const auto& linear = memopt::share::by_name("linear");
  const auto& dag = memopt::share::by_name("dag");
  same(linear(g, steps, "", {}, index), memopt::linear_share(g, steps, memopt::lifo_reuse{}, {}, index));
  same(dag(g, steps, "", {}, index), memopt::dag_share(g, memopt::best_fit_reuse{}, {}, index));
  same(linear(g, steps, "best-fit", {}, index), memopt::linear_share(g, steps, memopt::best_fit_reuse{}, {}, index));
  same(linear(g, steps, "caffe2", {}, index),
       memopt::linear_share(g, steps, memopt::caffe2_size_aware_reuse{}, {}, index));
  same(dag(g, {}, "lifo", {}, index), memopt::dag_share(g, memopt::lifo_reuse{}, {}, index));
  same(dag(g, {}, "caffe2", {}, index), memopt::dag_share(g, memopt::caffe2_size_aware_reuse{}, {}, index));
  CHECK(!linear.every_order);
  CHECK(dag.every_order);
  check_unknown([](auto name) { return memopt::share::by_name(name); }, "sharing pass",
                memopt::share::names());
  check_unknown([](auto name) { return memopt::share::policy_by_name(name); }, "reuse policy",
                memopt::share::policy_names());
  CHECK_THROWS_AS((void)linear(g, steps, "magic", {}, index), memopt::unknown_algorithm_error);
}
