// schedule/: every scheduler on the hand-checked graphs, exact to the byte.
#include "../support/graph_spec.hpp"
#include "../support/named_graphs.hpp"

#include <memopt/schedule.hpp>

#include <doctest/doctest.h>

#include <boost/graph/adjacency_list.hpp>

#include <algorithm>

namespace mt = memopt::testing;

namespace {

template <class G>
std::vector<std::size_t> indices(const G& g, const std::vector<memopt::vertex_t<G>>& order) {
  const auto index = mt::index_map(g);
  std::vector<std::size_t> out;
  for (const auto v : order) out.push_back(index(v));
  return out;
}

struct named_optimum {
  const char* name;
  mt::graph_spec (*graph)();
  std::uint64_t optimum;
};

const named_optimum optima[] = {
    {"chain", mt::chain, 35},           {"diamond", mt::diamond, 12},
    {"fanout6", mt::fanout6, 10},       {"xla_counterexample", mt::xla_counterexample, 5},
    {"persistent", mt::persistent, 40}, {"outputs_dead", mt::outputs_dead, 101},
    {"control", mt::control, 21},       {"multiport", mt::multiport, 12},
    {"greedy_trap", mt::greedy_trap, 14}};

}  // namespace

#define ALL_GRAPH_TYPES mt::vec_graph, mt::list_graph, mt::bidir_graph, mt::hand_graph

TEST_CASE_TEMPLATE("exact_schedule: the optimum of every hand-checked graph, proved", G, ALL_GRAPH_TYPES) {
  for (const auto& [name, graph, optimum] : optima) {
    const auto& name_label = name;  // clang 14: INFO's lambda cannot capture a binding
    INFO(name_label);
    const auto [g, vertex] = mt::build<G>(graph());
    const auto index = mt::index_map(g);
    const auto r = memopt::exact_schedule(g, {}, index);
    CHECK(memopt::is_topological_order(g, r.order, index));
    CHECK(r.peak_bytes == optimum);
    CHECK(r.lower_bound_bytes == optimum);
    CHECK(r.proved_optimal);
    CHECK(memopt::lower_bound(g, index) <= optimum);
    CHECK(memopt::best_schedule(g, index).peak_bytes == optimum);
  }
}

TEST_CASE("lower_bound: a step unordered with u leaves its inputs or its outputs live at u") {
  // a(10) -> b(10) -> u(10) -> d(1, output) <- c(10) <- a: at u's step either c
  // has not run (a's output is live for it) or it has (its output is live for
  // d). Ancestors and descendants alone give 21 (d's step).
  const mt::graph_spec spec{{{.outputs = {10}},
                             {.outputs = {10}, .inputs = {{0, 0}}},
                             {.outputs = {10}, .inputs = {{1, 0}}},
                             {.outputs = {10}, .inputs = {{0, 0}}},
                             {.outputs = {1}, .inputs = {{2, 0}, {3, 0}}, .live_out = {0}}}};
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  CHECK(memopt::lower_bound(g) == 30);
  const auto r = memopt::exact_schedule(g);
  CHECK(r.peak_bytes == 30);
  CHECK(r.proved_optimal);
}

TEST_CASE("schedules name their method: the scheduler, the seed exact kept, or exact") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(mt::greedy_trap());
  CHECK(memopt::dfs_schedule(g).method == "dfs");
  CHECK(memopt::list_schedule(g).method == "list");
  CHECK(memopt::list_schedule(g, memopt::least_live_after_priority{}).method == "least-live-after");
  CHECK(memopt::best_of(g, memopt::list_scheduler<memopt::least_live_after_priority>{}).candidates[0].name ==
        "least-live-after");
  const auto heuristics = memopt::best_heuristic(g);
  CHECK(heuristics.method == heuristics.candidates[heuristics.chosen].name);
  const auto exact = memopt::exact_schedule(g);
  CHECK(exact.candidates.size() == heuristics.candidates.size() + 1);
  CHECK(exact.candidates.back().name == "exact");
  CHECK(exact.proved_optimal);
  // A seed already at the optimum keeps the order: the search found nothing lower.
  if (heuristics.peak_bytes == 14) {
    CHECK(exact.method == heuristics.method);
    CHECK(exact.chosen == heuristics.chosen);
  } else {
    CHECK(exact.method == "exact");
    CHECK(exact.chosen == heuristics.candidates.size());
  }
}

TEST_CASE_TEMPLATE("list_schedule: the least-live-after greedy gives the README's greedy column", G, ALL_GRAPH_TYPES) {
  // examples/data/small/README.md: ties by smaller step memory, then file order.
  const std::pair<mt::graph_spec (*)(), std::uint64_t> greedy[] = {
      {mt::chain, 35}, {mt::diamond, 12}, {mt::fanout6, 10}, {mt::xla_counterexample, 5},
      {mt::outputs_dead, 101}, {mt::multiport, 12}, {mt::greedy_trap, 15}};
  for (const auto& [graph, peak] : greedy) {
    const auto [g, vertex] = mt::build<G>(graph());
    const auto r = memopt::list_schedule(g, memopt::least_live_after_priority{},
                                         {.ties = memopt::tie_break::lowest_index}, mt::index_map(g));
    CHECK(r.peak_bytes == peak);
  }
}

TEST_CASE("list_schedule: XLA's priority defers B on XLA's counterexample") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(mt::xla_counterexample());
  // D and E tie; XLA's multimap takes the one queued last (E), FIFO takes D.
  const auto xla = memopt::list_schedule(g);
  CHECK(xla.order == std::vector<std::size_t>{0, 4, 3, 5, 1, 2, 6});
  CHECK(xla.peak_bytes == 5);
  const auto fifo = memopt::list_schedule(g, {}, {.ties = memopt::tie_break::earliest_ready});
  CHECK(fifo.order == std::vector<std::size_t>{0, 3, 4, 5, 1, 2, 6});
  CHECK(fifo.peak_bytes == 5);
}

TEST_CASE("list_schedule: the greedy trap catches the list scheduler, not exact") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(mt::greedy_trap());
  CHECK(memopt::list_schedule(g).peak_bytes == 15);
  CHECK(memopt::lpmf_schedule(g).peak_bytes == 15);
  CHECK(memopt::exact_schedule(g).peak_bytes == 14);
}

TEST_CASE("list_schedule: the diamond runs one branch to its end first") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(mt::diamond());
  const auto r = memopt::list_schedule(g);
  CHECK(r.peak_bytes == 12);
  CHECK(memopt::dfs_schedule(g).peak_bytes == 12);
  CHECK(memopt::post_order_schedule(g).peak_bytes == 12);
  CHECK(memopt::lpmf_schedule(g).peak_bytes == 12);
  CHECK(memopt::dfs_size_schedule(g).peak_bytes == 12);
  // BFS runs both big branch ops before their readers, like the file does.
  CHECK(memopt::bfs_schedule(g).peak_bytes == 21);
}

// A priority of the user's own, run through the same loop: the ready op with
// the smallest outputs first (ties: the one that frees more).
struct smallest_outputs_first {
  static constexpr memopt::key_dependency depends_on = memopt::key_dependency::bytes_freed;
  auto operator()(const memopt::list_state& s, std::size_t v) const {
    return std::pair{~s.bytes_defined(v), s.bytes_freed(v)};
  }
};
static_assert(memopt::schedule_priority<smallest_outputs_first>);

TEST_CASE("list_schedule: a user's own priority in a few lines") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(mt::fanout6());
  const auto r = memopt::list_schedule(g, smallest_outputs_first{}, {.ties = memopt::tie_break::lowest_index});
  CHECK(memopt::is_topological_order(g, r.order));
  // x, then each small c_k as soon as its b_k ran: b1 c1 b2 c2 ...
  CHECK(r.order == std::vector<std::size_t>{0, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11, 6, 12, 13});
  CHECK(r.peak_bytes == 10);
}

TEST_CASE("list_schedule: tie-break options are deterministic and differ") {
  mt::graph_spec spec{{{.outputs = {1}}, {.outputs = {1}}, {.outputs = {1}}}};
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  using memopt::tie_break;
  CHECK(memopt::list_schedule(g, {}, {.ties = tie_break::latest_ready}).order == std::vector<std::size_t>{2, 1, 0});
  CHECK(memopt::list_schedule(g, {}, {.ties = tie_break::earliest_ready}).order == std::vector<std::size_t>{0, 1, 2});
  CHECK(memopt::list_schedule(g, {}, {.ties = tie_break::lowest_index}).order == std::vector<std::size_t>{0, 1, 2});
}

/// Whether best_of(g, args...) is a valid call.
template <class G, class... Args>
concept best_of_takes = requires(const G& g, const Args&... args) { memopt::best_of(g, args...); };
static_assert(best_of_takes<mt::vec_graph, memopt::dfs_scheduler, memopt::list_scheduler<>>);
static_assert(best_of_takes<mt::vec_graph, memopt::dfs_scheduler, memopt::list_scheduler<>, memopt::identity_index>);
static_assert(!best_of_takes<mt::vec_graph, memopt::identity_index, memopt::dfs_scheduler>);  // the index map is last
static_assert(!best_of_takes<mt::list_graph, memopt::dfs_scheduler>);  // listS vertices need one

TEST_CASE("balance_key (list's and lpmf's keys) orders as (gain - loss, count), at the ends of 64-bit counts") {
  const std::uint64_t top = std::uint64_t{1} << 63;
  const std::vector<std::uint64_t> bytes = {0, 1, 2, 3, 1000, top - 1, top, top + 1, UINT64_MAX - 1, UINT64_MAX};
  const std::vector<std::size_t> counts = {0, 1, 0xFFFFFFFE};
  struct keyed {
    memopt::balance_key key;
    std::pair<memopt::byte_balance, std::size_t> expected;
  };
  std::vector<keyed> keys;
  for (const auto gain : bytes) {
    for (const auto loss : bytes) {
      for (const auto count : counts) {
        keys.push_back({memopt::balance_key::of(gain, loss, count), {memopt::byte_balance::of(gain, loss), count}});
        CHECK(keys.back().key.count() == count);
        CHECK(keys.back().key < memopt::balance_key{});  // the default is none, above all
      }
    }
  }
  for (const auto& a : keys) {
    for (const auto& b : keys) {
      CHECK((a.key < b.key) == (a.expected < b.expected));
      CHECK((a.key == b.key) == (a.expected == b.expected));
    }
  }
}

TEST_CASE_TEMPLATE("best_of: the index map comes last, without it the vertices are their own index", G, mt::list_graph,
                   mt::hand_graph) {
  const auto [reference, rv] = mt::build<mt::vec_graph>(mt::diamond());
  const auto [g, vertex] = mt::build<G>(mt::diamond());
  const auto expected = memopt::best_of(reference, memopt::bfs_scheduler{}, memopt::list_scheduler<>{});
  CHECK(expected.peak_bytes == 12);
  const auto identity =
      memopt::best_of(reference, memopt::bfs_scheduler{}, memopt::list_scheduler<>{}, memopt::identity_index{});
  CHECK(identity.order == expected.order);
  CHECK(identity.chosen == expected.chosen);
  const auto r = memopt::best_of(g, memopt::bfs_scheduler{}, memopt::list_scheduler<>{}, mt::index_map(g));
  CHECK(indices(g, r.order) == expected.order);
  CHECK(r.peak_bytes == expected.peak_bytes);
  CHECK(r.chosen == 1);
  REQUIRE(r.candidates.size() == 2);
  CHECK(r.candidates[0].peak_bytes == 21);
  CHECK(memopt::xla_schedule(g, mt::index_map(g)).peak_bytes == memopt::xla_schedule(reference).peak_bytes);
}

TEST_CASE_TEMPLATE("schedulers: the same order on every graph type", G, mt::list_graph, mt::bidir_graph, mt::hand_graph) {
  for (const auto& [name, graph, optimum] : optima) {
    const auto& name_label = name;  // clang 14: INFO's lambda cannot capture a binding
    INFO(name_label);
    const auto [reference, rv] = mt::build<mt::vec_graph>(graph());
    const auto [g, vertex] = mt::build<G>(graph());
    const auto index = mt::index_map(g);
    CHECK(indices(g, memopt::list_schedule(g, {}, {}, index).order) == memopt::list_schedule(reference).order);
    CHECK(indices(g, memopt::dfs_schedule(g, index).order) == memopt::dfs_schedule(reference).order);
    // Post-order follows operand order, which only bidirectional graphs keep.
    if constexpr (!memopt::bidirectional_dag<G>) {
      CHECK(indices(g, memopt::post_order_schedule(g, index).order) == memopt::post_order_schedule(reference).order);
    }
    CHECK(indices(g, memopt::lpmf_schedule(g, index).order) == memopt::lpmf_schedule(reference).order);
    CHECK(indices(g, memopt::bfs_schedule(g, index).order) == memopt::bfs_schedule(reference).order);
    CHECK(indices(g, memopt::dfs_size_schedule(g, index).order) == memopt::dfs_size_schedule(reference).order);
  }
}

TEST_CASE("best_of: keeps the lowest peak and reports every candidate") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(mt::diamond());
  const auto r = memopt::best_of(g, memopt::bfs_scheduler{}, memopt::list_scheduler<>{}, memopt::dfs_scheduler{});
  REQUIRE(r.candidates.size() == 3);
  CHECK(r.candidates[0].name == "bfs");
  CHECK(r.candidates[0].peak_bytes == 21);
  CHECK(r.candidates[1].name == "list");
  CHECK(r.candidates[1].peak_bytes == 12);
  CHECK(r.chosen == 1);  // the first of equal peaks
  CHECK(r.peak_bytes == 12);
  const auto xla = memopt::xla_schedule(g);
  CHECK(xla.candidates.size() == 3);
  CHECK(xla.peak_bytes == 12);
  const auto heuristics = memopt::best_heuristic(g);
  CHECK(heuristics.candidates.front().name == "program");
  CHECK(heuristics.candidates.front().peak_bytes == 21);
  CHECK(heuristics.candidates.size() == 7);
}

TEST_CASE("schedulers: a cyclic graph is refused with its cycle") {
  auto built = mt::build<mt::vec_graph>(mt::diamond());  // members, not a binding: clang 14 lambdas cannot capture those
  auto& g = built.g;
  add_edge(5, 1, memopt::tensor_edge{.control = true}, g);  // j -> l1 closes l1 -> l2 -> j
  const auto check_cycle = [](auto&& schedule) {
    try {
      schedule();
      FAIL("no cycle_error");
    } catch (const memopt::cycle_error& e) {
      std::vector<std::size_t> cycle = e.cycle;
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
      CHECK(cycle == std::vector<std::size_t>{1, 3, 5});
    }
  };
  check_cycle([&] { (void)memopt::list_schedule(g); });
  check_cycle([&] { (void)memopt::dfs_schedule(g); });
  check_cycle([&] { (void)memopt::post_order_schedule(g); });
  check_cycle([&] { (void)memopt::lpmf_schedule(g); });
  check_cycle([&] { (void)memopt::bfs_schedule(g); });
  check_cycle([&] { (void)memopt::dfs_size_schedule(g); });
  check_cycle([&] { (void)memopt::exact_schedule(g); });
}

TEST_CASE("exact_schedule: with no time left it keeps the best heuristic and a valid bound") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(mt::greedy_trap());
  const auto r = memopt::exact_schedule(g, {.time_limit_seconds = 0, .state_limit = 0});
  CHECK(memopt::is_topological_order(g, r.order));
  CHECK(r.peak_bytes == memopt::best_heuristic(g).peak_bytes);
  CHECK(r.lower_bound_bytes <= 14);
  CHECK(r.proved_optimal == (r.lower_bound_bytes == r.peak_bytes));
}
