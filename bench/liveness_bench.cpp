// The memory model on one order of a random DAG of 1,000,000 vertices and
// 3,000,000 edges, beside boost::topological_sort on the same graph; and on
// the same graph with a third of the vertices' first outputs views or
// in-place results (storages resolved, in-place orders derived and checked).
//   build-bench/bench/liveness_bench
// Ratios to report: BM_liveness / BM_topological_sort (target: at most 3),
// BM_liveness_storages / BM_topological_sort.
#include "baseline.hpp"

#include <memopt/liveness.hpp>

#include <benchmark/benchmark.h>

#include <vector>

namespace {

using memopt::bench::shared_graph;

BENCHMARK(memopt::bench::topological_sort_baseline)
    ->Name("BM_topological_sort")
    ->Unit(benchmark::kMillisecond);

void BM_liveness(benchmark::State& state) {
  const auto& g = shared_graph();
  const auto order = memopt::program_order(g);
  for (auto _ : state) {
    auto r = memopt::liveness(g, order);
    benchmark::DoNotOptimize(r.peak_bytes);
  }
}
BENCHMARK(BM_liveness)->Unit(benchmark::kMillisecond);

void BM_liveness_storages(benchmark::State& state) {
  static const auto g = memopt::bench::random_graph({.alias_probability = 1.0 / 3});
  const auto order = memopt::program_order(g);
  for (auto _ : state) {
    auto r = memopt::liveness(g, order);
    benchmark::DoNotOptimize(r.peak_bytes);
  }
}
BENCHMARK(BM_liveness_storages)->Unit(benchmark::kMillisecond);

}  // namespace
