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
