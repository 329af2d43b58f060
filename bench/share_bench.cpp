// Buffer sharing on a random DAG of 1,000,000 vertices and 3,000,000 edges,
// beside boost::topological_sort on the same graph.
//   build-bench/bench/share_bench
// Ratio to report: BM_dag_share / BM_topological_sort (target: at most 20).
#include "baseline.hpp"

#include <memopt/share.hpp>

#include <benchmark/benchmark.h>

#include <vector>

namespace {

using memopt::bench::shared_graph;

BENCHMARK(memopt::bench::topological_sort_baseline)
    ->Name("BM_topological_sort")
    ->Unit(benchmark::kMillisecond);

// A pass allocates about 1 GB on this graph; Google Benchmark times a
// multi-second function once, so a first untimed run keeps the process's
// first page faults out of the figure (the baseline runs several times).
void BM_dag_share(benchmark::State& state) {
  const auto& g = shared_graph();
  benchmark::DoNotOptimize(memopt::dag_share(g).total_bytes);
  for (auto _ : state) {
    auto plan = memopt::dag_share(g);
    benchmark::DoNotOptimize(plan.total_bytes);
    state.counters["storages"] = static_cast<double>(plan.num_storages());
  }
}
BENCHMARK(BM_dag_share)->Unit(benchmark::kMillisecond);

// Graphs of the same kind at sizes up to the limit of exact answers
// (share_options::exact_precedence_vertices, 16,384) and one vertex past it,
// where blocks of exact answers and the walk's between them take over: the
// time and the bytes of each plan.
void BM_dag_share_near_exact_limit(benchmark::State& state) {
  const auto vertices = static_cast<std::size_t>(state.range(0));
  const auto g = memopt::bench::random_graph({.vertices = vertices, .edges = 3 * vertices});
  for (auto _ : state) {
    auto plan = memopt::dag_share(g);
    benchmark::DoNotOptimize(plan.total_bytes);
    state.counters["storages"] = static_cast<double>(plan.num_storages());
    state.counters["GB"] = static_cast<double>(plan.total_bytes) / 1e9;
  }
}
BENCHMARK(BM_dag_share_near_exact_limit)->Arg(4096)->Arg(8192)->Arg(16384)->Arg(16385)->Unit(benchmark::kMillisecond);

template <class Policy>
void BM_linear_share(benchmark::State& state) {
  const auto& g = shared_graph();
  const auto order = memopt::program_order(g);
  const std::span<const std::size_t> steps(order);
  benchmark::DoNotOptimize(memopt::linear_share(g, steps, Policy{}).total_bytes);
  for (auto _ : state) {
    auto plan = memopt::linear_share(g, steps, Policy{});
    benchmark::DoNotOptimize(plan.total_bytes);
    state.counters["storages"] = static_cast<double>(plan.num_storages());
  }
}
BENCHMARK(BM_linear_share<memopt::lifo_reuse>)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_linear_share<memopt::best_fit_reuse>)->Unit(benchmark::kMillisecond);

}  // namespace
