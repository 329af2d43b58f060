#pragma once
// What every family's benchmark shares: the 1,000,000-vertex random DAG, built
// once per binary, and the baseline each ratio is taken against,
// boost::topological_sort on that graph. A benchmark registers it with
//   BENCHMARK(memopt::bench::topological_sort_baseline)->Name("BM_topological_sort")...
#include "random_graph.hpp"

#include <benchmark/benchmark.h>
#include <boost/graph/topological_sort.hpp>

#include <iterator>
#include <vector>

namespace memopt::bench {

inline const graph& shared_graph() {
  static const auto g = random_graph();
  return g;
}

inline void topological_sort_baseline(benchmark::State& state) {
  const auto& g = shared_graph();
  for (auto _ : state) {
    std::vector<std::size_t> reversed;
    reversed.reserve(num_vertices(g));
    boost::topological_sort(g, std::back_inserter(reversed));
    benchmark::DoNotOptimize(reversed.data());
  }
}

}  // namespace memopt::bench
