// Buffer sharing on a random DAG of 1,000,000 vertices and 3,000,000 edges,
// beside boost::topological_sort on the same graph.
//   build-bench/bench/share_bench
// Ratio to report: BM_dag_share / BM_topological_sort (target: at most 20).
#include "random_graph.hpp"

#include <memopt/share.hpp>

#include <benchmark/benchmark.h>
#include <boost/graph/topological_sort.hpp>

#include <iterator>
#include <vector>

namespace {

const memopt::bench::graph& shared_graph() {
  static const auto g = memopt::bench::random_graph();
  return g;
}

void BM_topological_sort(benchmark::State& state) {
  const auto& g = shared_graph();
  for (auto _ : state) {
    std::vector<std::size_t> reversed;
    reversed.reserve(num_vertices(g));
    boost::topological_sort(g, std::back_inserter(reversed));
    benchmark::DoNotOptimize(reversed.data());
  }
}
BENCHMARK(BM_topological_sort)->Unit(benchmark::kMillisecond);

void BM_dag_share(benchmark::State& state) {
  const auto& g = shared_graph();
  for (auto _ : state) {
    auto plan = memopt::dag_share(g);
    benchmark::DoNotOptimize(plan.total_bytes);
    state.counters["storages"] = static_cast<double>(plan.num_storages());
  }
}
BENCHMARK(BM_dag_share)->Unit(benchmark::kMillisecond);

void BM_linear_share(benchmark::State& state) {
  const auto& g = shared_graph();
  const auto order = memopt::program_order(g);
  const std::span<const std::size_t> steps(order);
  for (auto _ : state) {
    auto plan = memopt::linear_share(g, steps);
    benchmark::DoNotOptimize(plan.total_bytes);
    state.counters["storages"] = static_cast<double>(plan.num_storages());
  }
}
BENCHMARK(BM_linear_share)->Unit(benchmark::kMillisecond);

void BM_linear_share_best_fit(benchmark::State& state) {
  const auto& g = shared_graph();
  const auto order = memopt::program_order(g);
  const std::span<const std::size_t> steps(order);
  for (auto _ : state) {
    auto plan = memopt::linear_share(g, steps, memopt::best_fit_reuse{});
    benchmark::DoNotOptimize(plan.total_bytes);
  }
}
BENCHMARK(BM_linear_share_best_fit)->Unit(benchmark::kMillisecond);

}  // namespace
