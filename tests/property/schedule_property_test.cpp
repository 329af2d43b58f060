// Property tests over thousands of seeded random DAGs: every scheduler gives a
// topological order whose claimed peak is the memory model's; exact is never
// above a heuristic and equals the true optimum on small graphs, found by an
// independent dynamic program over sets of vertices (and, on the smallest, by
// trying every permutation).
#include "../support/random_dag.hpp"

#include <memopt/schedule.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <random>
#include <thread>

namespace mt = memopt::testing;

namespace {

/// Minimum peak over all topological orders (in-place orders kept): DP over
/// sets of run vertices. The live bytes after a set are those of storages made
/// in it that a vertex outside it reads or defines, or that hold graph outputs;
/// a step adds the new vertex's storages.
std::uint64_t optimum_by_subsets(const mt::graph_spec& spec) {
  const std::size_t n = spec.nodes.size();
  const auto preds = mt::predecessors(spec);
  const auto root = mt::storage_roots(spec);
  const auto live_after = [&](std::uint32_t set) {
    std::uint64_t live = 0;
    for (std::size_t v = 0; v < n; ++v) {
      if (!(set >> v & 1U) || spec.nodes[v].persistent) continue;
      for (std::size_t port = 0; port < spec.nodes[v].outputs.size(); ++port) {
        if (root[v][port] != mt::tensor{v, port}) continue;
        if (mt::storage_needed(spec, root, {v, port}, [&](std::size_t u) { return (set >> u & 1U) != 0; })) {
          live += spec.nodes[v].outputs[port];
        }
      }
    }
    return live;
  };
  constexpr std::uint64_t unreachable = UINT64_MAX;
  std::vector<std::uint64_t> best(std::size_t{1} << n, unreachable);
  best[0] = 0;
  for (std::uint32_t set = 0; set < (1U << n); ++set) {
    if (best[set] == unreachable) continue;
    const std::uint64_t live = live_after(set);
    for (std::size_t v = 0; v < n; ++v) {
      if (set >> v & 1U) continue;
      if (!std::ranges::all_of(preds[v], [&](auto p) { return (set >> p & 1U) != 0; })) continue;
      std::uint64_t step = live;
      if (!spec.nodes[v].persistent) {
        for (std::size_t port = 0; port < spec.nodes[v].outputs.size(); ++port) {
          if (root[v][port] == mt::tensor{v, port}) step += spec.nodes[v].outputs[port];
        }
      }
      const std::uint32_t next = set | (1U << v);
      best[next] = std::min(best[next], std::max(best[set], step));
    }
  }
  return best.back();
}

/// Minimum peak_of(spec, order) over every permutation that is a topological order.
std::uint64_t optimum_by_permutations(const mt::graph_spec& spec,
                                      std::uint64_t (*peak_of)(const mt::graph_spec&, const std::vector<std::size_t>&) =
                                          mt::brute_force_peak) {
  std::vector<std::size_t> order(spec.nodes.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::uint64_t best = UINT64_MAX;
  do {
    if (mt::brute_force_is_topological(spec, order)) best = std::min(best, peak_of(spec, order));
  } while (std::ranges::next_permutation(order).found);
  return best;
}

template <class R>
void check_order(const mt::graph_spec& spec, const mt::vec_graph& g, const R& r) {
  CHECK(memopt::is_topological_order(g, r.order));
  CHECK(mt::brute_force_is_topological(spec, r.order));  // in-place orders included
  CHECK(r.peak_bytes == memopt::liveness(g, r.order).peak_bytes);
}

/// exact_schedule with `options` against the optimum over all orders on
/// `trials` random DAGs, options_of(trial) shaping each.
template <class DagOptions>
void check_exact_is_optimal(std::uint64_t seed, int trials, DagOptions options_of,
                            const memopt::exact_options& options = {}) {
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    const auto spec = mt::random_dag(rng, options_of(trial));
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    INFO("trial " << trial);
    const auto optimum = optimum_by_subsets(spec);
    const auto exact = memopt::exact_schedule(g, options);
    check_order(spec, g, exact);
    CHECK(exact.peak_bytes == optimum);
    CHECK(exact.proved_optimal);
    CHECK(memopt::lower_bound(g) <= optimum);
    if (spec.nodes.size() <= 6) CHECK(optimum_by_permutations(spec) == optimum);
  }
}

}  // namespace

TEST_CASE("property: every scheduler gives a topological order with the model's peak") {
  std::mt19937_64 rng(404);
  int searches_won = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    const auto spec = mt::random_dag(rng, {.max_nodes = 40, .alias_probability = trial % 2 == 0 ? 0.0 : 0.3});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    INFO("trial " << trial);
    check_order(spec, g, memopt::list_schedule(g));
    check_order(spec, g, memopt::list_schedule(g, {}, {.ties = memopt::tie_break::lowest_index}));
    check_order(spec, g, memopt::dfs_schedule(g));
    check_order(spec, g, memopt::post_order_schedule(g));
    check_order(spec, g, memopt::lpmf_schedule(g));
    check_order(spec, g, memopt::bfs_schedule(g));
    check_order(spec, g, memopt::dfs_size_schedule(g));
    const auto exact = memopt::exact_schedule(g, {.time_limit_seconds = 0.01, .state_limit = 5000});
    check_order(spec, g, exact);
    for (const auto& c : exact.candidates) CHECK(exact.peak_bytes <= c.peak_bytes);
    // The result names what produced its order: the search only when it beat every seed.
    REQUIRE(exact.candidates.back().name == "exact");
    CHECK(exact.method == exact.candidates[exact.chosen].name);
    CHECK(exact.peak_bytes == exact.candidates[exact.chosen].peak_bytes);
    const bool search_won = exact.chosen + 1 == exact.candidates.size();
    for (std::size_t k = 0; k + 1 < exact.candidates.size(); ++k) {
      CHECK((search_won ? exact.peak_bytes < exact.candidates[k].peak_bytes
                        : exact.peak_bytes <= exact.candidates[k].peak_bytes));
    }
    searches_won += search_won ? 1 : 0;
    CHECK(exact.lower_bound_bytes <= exact.peak_bytes);
    CHECK(memopt::lower_bound(g) <= exact.lower_bound_bytes);
  }
  CHECK(searches_won > 10);  // both outcomes occur
}

TEST_CASE("property: exact equals the optimum over all orders on graphs of up to 9 nodes") {
  check_exact_is_optimal(9, 3000, [](int trial) {
    return mt::random_dag_options{.max_nodes = 9, .max_inputs = 3, .alias_probability = trial % 2 == 0 ? 0.0 : 0.4};
  });
}

TEST_CASE("property: under in-place reuse, every scheduler reports its order's peak and exact the optimum") {
  std::mt19937_64 rng(33);
  int reuse_lowered_optimum = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const auto spec = mt::random_dag(rng, {.max_nodes = 6, .max_inputs = 3, .alias_probability = trial % 2 == 0 ? 0.0 : 0.3,
                                           .may_alias_probability = 0.7});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    INFO("trial " << trial);
    check_order(spec, g, memopt::list_schedule(g));
    check_order(spec, g, memopt::dfs_schedule(g));
    check_order(spec, g, memopt::lpmf_schedule(g));
    const auto optimum = optimum_by_permutations(spec, mt::brute_force_reuse_peak);
    const auto exact = memopt::exact_schedule(g, {.time_limit_seconds = std::nullopt, .work_limit = 1'000'000,
                                                  .state_limit = trial % 3 == 0 ? std::size_t{16} : std::size_t{2'000'000}});
    check_order(spec, g, exact);
    CHECK(exact.peak_bytes == optimum);
    CHECK(exact.proved_optimal);
    CHECK(memopt::lower_bound(g) <= optimum);
    reuse_lowered_optimum += optimum < optimum_by_permutations(spec) ? 1 : 0;
  }
  CHECK(reuse_lowered_optimum > 15);  // 23 of 400: graph inputs, a third of these nodes, are never taken over
}

TEST_CASE("property: exact equals the optimum where weights feed side chains of views") {
  // Many weights, and views of what is made from them only: vertices that
  // float to their first reader (segments.hpp) and cut vertices beside them.
  check_exact_is_optimal(31, 3000, [](int) {
    return mt::random_dag_options{
        .max_nodes = 9, .max_inputs = 2, .persistent_probability = 0.4, .alias_probability = 0.6};
  });
}

TEST_CASE("property: with almost no room for states, exact's depth-first probes still reach and prove the optimum") {
  // A* stops at once; the probes halve the distance between bound and peak,
  // forgetting their dead ends whenever more than 16 are stored.
  check_exact_is_optimal(
      57, 400,
      [](int trial) {
        return mt::random_dag_options{
            .max_nodes = 8, .max_inputs = 3, .alias_probability = trial % 2 == 0 ? 0.0 : 0.4};
      },
      {.time_limit_seconds = std::nullopt, .work_limit = 50'000'000, .state_limit = 16});
}

TEST_CASE("property: the lower bound holds on wide graphs the search cannot finish") {
  std::mt19937_64 rng(77);
  for (int trial = 0; trial < 40; ++trial) {
    const auto spec = mt::random_dag(
        rng, {.min_nodes = 150, .max_nodes = 200, .max_inputs = 2, .alias_probability = trial % 2 == 0 ? 0.0 : 0.2});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const auto r = memopt::exact_schedule(g, {.time_limit_seconds = 0.05, .state_limit = 20000});
    check_order(spec, g, r);
    CHECK(r.lower_bound_bytes <= r.peak_bytes);
    for (const auto& c : r.candidates) CHECK(r.peak_bytes <= c.peak_bytes);
  }
}

TEST_CASE("property: exact's progress reports are bounds that close in on its result") {
  std::mt19937_64 rng(1126);
  for (int trial = 0; trial < 40; ++trial) {
    INFO("trial " << trial);
    const auto spec = mt::random_dag(
        rng, {.min_nodes = 20, .max_nodes = 160, .max_inputs = 2, .alias_probability = trial % 2 == 0 ? 0.0 : 0.2});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    std::vector<memopt::search_progress> reports;
    const auto r = memopt::exact_schedule(g, {.time_limit_seconds = std::nullopt, .work_limit = 3000,
                                              .progress = [&](const memopt::search_progress& p) { reports.push_back(p); }});
    REQUIRE(reports.size() >= 2);  // before the search and at its end
    for (std::size_t k = 0; k < reports.size(); ++k) {
      CHECK(reports[k].bound_bytes <= reports[k].best_bytes);
      CHECK(reports[k].bound_bytes <= r.peak_bytes);  // a bound on every order, the result's too
      if (k > 0) {
        CHECK(reports[k].best_bytes <= reports[k - 1].best_bytes);
        CHECK(reports[k].bound_bytes >= reports[k - 1].bound_bytes);
        CHECK(reports[k].work >= reports[k - 1].work);
      }
    }
    CHECK(reports.back().best_bytes == r.peak_bytes);
    CHECK(reports.back().bound_bytes == r.lower_bound_bytes);
  }
}

TEST_CASE("property: with a work limit and no time limit, exact gives the same order under load") {
  std::mt19937_64 rng(31);
  std::atomic<bool> stop = false;
  std::thread load([&] {  // another core's worth of work while the second runs go
    volatile std::uint64_t x = 0;
    while (!stop) x = x + 1;
  });
  for (int trial = 0; trial < 20; ++trial) {
    const auto spec = mt::random_dag(
        rng, {.min_nodes = 120, .max_nodes = 160, .max_inputs = 2, .alias_probability = trial % 2 == 0 ? 0.0 : 0.2});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const memopt::exact_options deterministic{.time_limit_seconds = std::nullopt, .work_limit = 3000};
    const auto first = memopt::exact_schedule(g, deterministic);
    const auto again = memopt::exact_schedule(g, deterministic);
    INFO("trial " << trial);
    CHECK(first.order == again.order);
    CHECK(first.lower_bound_bytes == again.lower_bound_bytes);
    CHECK(first.method == again.method);
    check_order(spec, g, first);
  }
  stop = true;
  load.join();
}

TEST_CASE("property: a vertex's users are its successors reading a storage it owns, with and without views") {
  std::mt19937_64 rng(20261207);
  for (int trial = 0; trial < 2000; ++trial) {
    const auto spec = mt::random_dag(rng, {.max_nodes = 30, .alias_probability = trial % 2 == 0 ? 0.0 : 0.3});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const auto c = memopt::make_compact_graph(g);
    INFO("trial " << trial);
    std::vector<memopt::compact_index> expected(c.num_vertices(), 0);
    for (std::size_t v = 0; v < c.num_vertices(); ++v) {
      for (const auto r : c.successors[v]) {
        const auto reads = c.reads[r];
        expected[v] += std::ranges::any_of(reads, [&](auto b) { return c.buffers.owner[b] == v; }) ? 1 : 0;
      }
    }
    CHECK(memopt::detail::count_users(c) == expected);
  }
}
