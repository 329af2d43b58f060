// Arena offsets on the buffers of one schedule (program order) of a random DAG
// of 1,000,000 vertices (about 1.25 million buffers), beside std::sort of the
// same buffers by size in the same run; and the exact packer on MiniMalloc's
// 11 challenging files at capacity 2^20.
//   build-bench/bench/heap_bench
// Ratios to report: each heuristic / BM_sort_by_size on the same graph.
//
// Two graphs: the default random DAG, where 5 % of edges reach anywhere back,
// so about 45,000 buffers are live at once; and the same DAG with reads only
// within 64 steps (about 45 live at once, as in real networks). The global
// best-fit packers (XLA's, TFLite's) cost O(n log n + overlapping pairs), so
// they run on the second only: on the first they face 5e10 pairs.
#include "random_graph.hpp"

#include <memopt/io/minimalloc_csv.hpp>

#include <memopt/heap.hpp>
#include <memopt/liveness.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

std::vector<memopt::heap_buffer> schedule_buffers(double long_edge_probability) {
  const auto g = memopt::bench::random_graph({.long_edge_probability = long_edge_probability});
  return memopt::heap_buffers_of(memopt::liveness(g, memopt::program_order(g)));
}

const std::vector<memopt::heap_buffer>& far_reads() {
  static const auto buffers = schedule_buffers(0.05);
  return buffers;
}

const std::vector<memopt::heap_buffer>& near_reads() {
  static const auto buffers = schedule_buffers(0.0);
  return buffers;
}

template <const std::vector<memopt::heap_buffer>& (*Buffers)()>
void BM_sort_by_size(benchmark::State& state) {
  const auto& buffers = Buffers();
  for (auto _ : state) {
    auto sorted = buffers;
    std::ranges::sort(sorted, [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    benchmark::DoNotOptimize(sorted.data());
  }
  state.counters["buffers"] = static_cast<double>(buffers.size());
}

template <const std::vector<memopt::heap_buffer>& (*Buffers)(), class Algorithm>
void BM_heuristic(benchmark::State& state) {
  const auto& buffers = Buffers();
  memopt::heap_plan plan;
  for (auto _ : state) {
    plan = memopt::plan_heap(buffers, Algorithm{});
    benchmark::DoNotOptimize(plan.arena_bytes);
  }
  state.counters["arena/max-live"] = static_cast<double>(plan.arena_bytes) / static_cast<double>(plan.peak_bytes);
}

BENCHMARK(BM_sort_by_size<far_reads>)->Name("far_reads/sort_by_size")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_heuristic<far_reads, memopt::first_fit>)->Name("far_reads/first_fit")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_heuristic<far_reads, memopt::best_fit>)->Name("far_reads/best_fit")->Unit(benchmark::kMillisecond);

BENCHMARK(BM_sort_by_size<near_reads>)->Name("near_reads/sort_by_size")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_heuristic<near_reads, memopt::first_fit>)->Name("near_reads/first_fit")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_heuristic<near_reads, memopt::best_fit>)->Name("near_reads/best_fit")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_heuristic<near_reads, memopt::xla_size_fit>)->Name("near_reads/xla_size_fit")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_heuristic<near_reads, memopt::xla_area_fit>)->Name("near_reads/xla_area_fit")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_heuristic<near_reads, memopt::greedy_by_size>)->Name("near_reads/greedy_by_size")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_heuristic<near_reads, memopt::greedy_by_breadth>)->Name("near_reads/greedy_by_breadth")->Unit(benchmark::kMillisecond);

void BM_exact_challenging(benchmark::State& state, const std::string& file) {
  const auto problem = memopt::io::read_minimalloc_csv(std::string(MEMOPT_DATA_DIR) + "/minimalloc/challenging/" + file);
  for (auto _ : state) {
    const auto r = memopt::exact_fit(problem.buffers, {.capacity = 1048576});
    if (r.status != memopt::fit_status::fits ||
        !memopt::check_heap_plan(problem.buffers, r.plan, 1048576).empty()) {
      state.SkipWithError("no valid plan within 2^20");
    }
  }
}

const int challenging = [] {
  for (const char* name : {"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K"}) {
    const std::string file = std::string(name) + ".1048576.csv";
    benchmark::RegisterBenchmark(("exact_challenging/" + file).c_str(), BM_exact_challenging, file)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  return 0;
}();

}  // namespace
