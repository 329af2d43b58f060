// Simulating a random DAG of 1,000,000 vertices and 3,000,000 edges on four
// devices (vertices placed round-robin by blocks of 1,000, so most edges stay
// on a device and the rest cross), under each ready policy, beside
// boost::topological_sort on the same graph. Each run builds the task graph
// (sends and receives), runs the event loop and takes every device's memory.
//   build-bench/bench/simulate_bench
// Ratio to report: BM_simulate/<policy> / BM_topological_sort.
#include "baseline.hpp"

#include <memopt/simulate.hpp>

#include <benchmark/benchmark.h>

#include <vector>

namespace {

using memopt::bench::shared_graph;

BENCHMARK(memopt::bench::topological_sort_baseline)
    ->Name("BM_topological_sort")
    ->Unit(benchmark::kMillisecond);

const memopt::sim::machine& four_devices() {
  static const memopt::sim::machine m = [] {
    memopt::sim::machine four;
    four.devices = {{.name = "gpu0"}, {.name = "gpu1"}, {.name = "gpu2"}, {.name = "gpu3"}};
    return four;
  }();
  return m;
}

const std::vector<std::size_t>& block_placement() {
  static const std::vector<std::size_t> placement = [] {
    std::vector<std::size_t> p(num_vertices(shared_graph()));
    for (std::size_t v = 0; v < p.size(); ++v) p[v] = (v / 1000) % 4;
    return p;
  }();
  return placement;
}

template <class Policy>
void BM_simulate(benchmark::State& state) {
  const auto& g = shared_graph();
  std::size_t transfers = 0;
  for (auto _ : state) {
    auto r = memopt::sim::simulate(g, four_devices(), block_placement(), memopt::sim::sum_cost{}, Policy{});
    transfers = r.graph.transfers;
    benchmark::DoNotOptimize(r.makespan_us);
  }
  state.counters["transfers"] = static_cast<double>(transfers);
}
BENCHMARK(BM_simulate<memopt::sim::fifo>)->Name("BM_simulate/fifo")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_simulate<memopt::sim::lifo>)->Name("BM_simulate/lifo")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_simulate<memopt::sim::first_ready>)->Name("BM_simulate/first-ready")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_simulate<memopt::sim::composite>)->Name("BM_simulate/composite")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_simulate<memopt::sim::program>)->Name("BM_simulate/program")->Unit(benchmark::kMillisecond);

}  // namespace
