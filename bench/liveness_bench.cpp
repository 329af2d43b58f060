// The memory model on one order of a random DAG of 1,000,000 vertices and
// 3,000,000 edges, beside boost::topological_sort on the same graph.
//   build-bench/bench/liveness_bench
// Ratio to report: BM_liveness / BM_topological_sort (target: at most 3).
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

}  // namespace
