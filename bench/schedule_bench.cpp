// Each scheduling heuristic on a random DAG of 1,000,000 vertices and
// 3,000,000 edges, beside boost::topological_sort on the same graph.
//   build-bench/bench/schedule_bench
// Ratios to report: BM_<heuristic> / BM_topological_sort (target: at most 10).
// Each heuristic's time includes the compact snapshot it takes of the graph and
// the liveness evaluation of its order, as a user calling it pays them.
// BM_best_heuristic runs the seven candidates on one snapshot: compare it with
// the sum of their own rows to see what reading the graph once saves.
#include "baseline.hpp"

#include <memopt/schedule.hpp>

#include <benchmark/benchmark.h>


namespace {

using memopt::bench::shared_graph;

BENCHMARK(memopt::bench::topological_sort_baseline)
    ->Name("BM_topological_sort")
    ->Unit(benchmark::kMillisecond);

template <class Schedule>
void run(benchmark::State& state, Schedule schedule) {
  const auto& g = shared_graph();
  for (auto _ : state) {
    auto r = schedule(g);
    benchmark::DoNotOptimize(r.peak_bytes);
  }
}

void BM_list(benchmark::State& s) { run(s, [](const auto& g) { return memopt::list_schedule(g); }); }
void BM_dfs(benchmark::State& s) { run(s, [](const auto& g) { return memopt::dfs_schedule(g); }); }
void BM_post_order(benchmark::State& s) { run(s, [](const auto& g) { return memopt::post_order_schedule(g); }); }
void BM_lpmf(benchmark::State& s) { run(s, [](const auto& g) { return memopt::lpmf_schedule(g); }); }
void BM_bfs(benchmark::State& s) { run(s, [](const auto& g) { return memopt::bfs_schedule(g); }); }
void BM_dfs_size(benchmark::State& s) { run(s, [](const auto& g) { return memopt::dfs_size_schedule(g); }); }
BENCHMARK(BM_list)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_dfs)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_post_order)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_lpmf)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_bfs)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_dfs_size)->Unit(benchmark::kMillisecond);
void BM_best_heuristic(benchmark::State& s) { run(s, [](const auto& g) { return memopt::best_heuristic(g); }); }
BENCHMARK(BM_best_heuristic)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
