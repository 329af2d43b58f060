// Each family's main algorithms from 10^3 to 10^6 vertices (three edges a
// vertex, random_graph.hpp), beside boost::topological_sort on the same graphs
// in the same run, with the library's own peak heap use per vertex.
// docs/performance.md's table and log-log slopes come from two runs of it
// (interleaved repetitions, the heap kept and not) read by scripts/scaling.py,
// whose docstring has the commands.
// Counters: bytes_per_vertex is the largest amount of heap the call held at
// once beyond what it started with, over the vertices, and
// allocated_per_vertex all it asked for (the two differ by what growing
// vectors copy and what is freed on the way), counted by this binary's
// operator new and delete in the usable sizes of glibc's blocks; the graph
// itself is built before.
#include "random_graph.hpp"

#include <memopt/heap.hpp>
#include <memopt/liveness.hpp>
#include <memopt/schedule.hpp>
#include <memopt/share.hpp>
#include <memopt/simulate.hpp>

#include <benchmark/benchmark.h>
#include <boost/graph/topological_sort.hpp>

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <iterator>
#include <new>
#include <span>
#include <vector>

namespace {

// Every benchmark runs on one thread, which alone allocates while it runs:
// relaxed loads and stores count without the locked instruction a
// read-modify-write costs on every allocation (atomics still, so that a stray
// thread of the library cannot make it a data race).
std::atomic<std::size_t> live_bytes{0}, peak_bytes{0}, allocated_bytes{0};

void add_to(std::atomic<std::size_t>& counter, std::size_t bytes) {
  counter.store(counter.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
}
void take_from(std::atomic<std::size_t>& counter, std::size_t bytes) {
  counter.store(counter.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
}

void note_allocation(std::size_t bytes) {
  add_to(allocated_bytes, bytes);
  add_to(live_bytes, bytes);
  const std::size_t now = live_bytes.load(std::memory_order_relaxed);
  if (now > peak_bytes.load(std::memory_order_relaxed)) peak_bytes.store(now, std::memory_order_relaxed);
}

}  // namespace

// Blocks are counted by their usable size, asked of glibc both ways, so that
// a block is laid out as in any program: a size kept in front of each would
// spread the graph's small blocks (one per edge bundle) half as wide again.
// (GCC 12 takes the free of a block our operator new made for a mismatch.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t bytes) {
  void* block = std::malloc(bytes);
  if (block == nullptr) throw std::bad_alloc();
  note_allocation(malloc_usable_size(block));
  return block;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  take_from(live_bytes, malloc_usable_size(p));
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
#pragma GCC diagnostic pop

namespace {

using memopt::bench::graph;

// Built once a size, in place: adjacency_list has no move constructor.
template <std::size_t Vertices>
const graph& graph_of() {
  static const graph g = memopt::bench::random_graph({.vertices = Vertices, .edges = 3 * Vertices});
  return g;
}

const graph& graph_of(std::size_t vertices) {
  switch (vertices) {
    case 1000: return graph_of<1000>();
    case 10'000: return graph_of<10'000>();
    case 100'000: return graph_of<100'000>();
    default: return graph_of<1'000'000>();
  }
}

template <class F>
void scaled(benchmark::State& state, F run) {
  const auto vertices = static_cast<std::size_t>(state.range(0));
  const graph& g = graph_of(vertices);
  std::size_t held = 0, allocated = 0;
  for (auto _ : state) {
    const std::size_t before = live_bytes.load(), allocated_before = allocated_bytes.load();
    peak_bytes.store(before);
    run(g);
    held = std::max(held, peak_bytes.load() - before);
    allocated = std::max(allocated, allocated_bytes.load() - allocated_before);
  }
  state.counters["vertices"] = static_cast<double>(vertices);
  state.counters["bytes_per_vertex"] = static_cast<double>(held) / static_cast<double>(vertices);
  state.counters["allocated_per_vertex"] = static_cast<double>(allocated) / static_cast<double>(vertices);
}

void BM_topological_sort(benchmark::State& s) {
  scaled(s, [](const graph& g) {
    std::vector<std::size_t> reversed;
    boost::topological_sort(g, std::back_inserter(reversed));
    benchmark::DoNotOptimize(reversed.data());
  });
}
// What every memopt algorithm reads of the graph and the sort does not: each
// edge's bundle (port, control), which adjacency_list keeps in a heap block
// of its own per edge. A reference row, not a memopt algorithm.
void BM_read_edge_bundles(benchmark::State& s) {
  scaled(s, [](const graph& g) {
    std::size_t sum = 0;
    for (const auto v : boost::make_iterator_range(vertices(g))) {
      for (const auto e : boost::make_iterator_range(out_edges(v, g))) sum += g[e].port + (g[e].control ? 1 : 0);
    }
    benchmark::DoNotOptimize(sum);
  });
}
// What fresh memory costs on this machine: 256 bytes a vertex (about what a
// scheduler holds), allocated and written once. glibc maps a block this large
// anew and unmaps it on free, so each call pays a page fault per 4 KiB page;
// with the heap kept (GLIBC_TUNABLES in docs/performance.md) only the writes
// are left. A reference row, not a memopt algorithm.
void BM_fresh_memory(benchmark::State& s) {
  scaled(s, [](const graph& g) {
    std::vector<std::byte> block(256 * num_vertices(g));
    benchmark::DoNotOptimize(block.data());
  });
}
void BM_liveness(benchmark::State& s) {
  scaled(s, [](const graph& g) { benchmark::DoNotOptimize(memopt::liveness(g, memopt::program_order(g)).peak_bytes); });
}
void BM_list_schedule(benchmark::State& s) {
  scaled(s, [](const graph& g) { benchmark::DoNotOptimize(memopt::list_schedule(g).peak_bytes); });
}
void BM_dfs_schedule(benchmark::State& s) {
  scaled(s, [](const graph& g) { benchmark::DoNotOptimize(memopt::dfs_schedule(g).peak_bytes); });
}
void BM_post_order_schedule(benchmark::State& s) {
  scaled(s, [](const graph& g) { benchmark::DoNotOptimize(memopt::post_order_schedule(g).peak_bytes); });
}
void BM_bfs_schedule(benchmark::State& s) {
  scaled(s, [](const graph& g) { benchmark::DoNotOptimize(memopt::bfs_schedule(g).peak_bytes); });
}
void BM_dfs_size_schedule(benchmark::State& s) {
  scaled(s, [](const graph& g) { benchmark::DoNotOptimize(memopt::dfs_size_schedule(g).peak_bytes); });
}
void BM_lpmf_schedule(benchmark::State& s) {
  scaled(s, [](const graph& g) { benchmark::DoNotOptimize(memopt::lpmf_schedule(g).peak_bytes); });
}
void BM_arena_best_fit(benchmark::State& s) {
  scaled(s, [](const graph& g) {
    const auto order = memopt::program_order(g);
    benchmark::DoNotOptimize(memopt::plan_arena(g, std::span<const std::size_t>(order), memopt::best_fit{}).plan.arena_bytes);
  });
}
void BM_dag_share(benchmark::State& s) {
  scaled(s, [](const graph& g) { benchmark::DoNotOptimize(memopt::dag_share(g).total_bytes); });
}

// Four devices, vertices placed round-robin by blocks of 1,000 (most edges stay
// on a device, the rest become send/receive pairs), under the seed's default
// ready policy and under FIFO; each run builds the task graph, runs it and
// takes every device's memory.
template <class Policy>
void simulate_on_four(const graph& g) {
  memopt::sim::machine four;
  four.devices = {{.name = "gpu0"}, {.name = "gpu1"}, {.name = "gpu2"}, {.name = "gpu3"}};
  std::vector<std::size_t> placement(num_vertices(g));
  for (std::size_t v = 0; v < placement.size(); ++v) placement[v] = (v / 1000) % 4;
  benchmark::DoNotOptimize(
      memopt::sim::simulate(g, four, placement, memopt::sim::sum_cost{}, Policy{}).makespan_us);
}
void BM_simulate_composite(benchmark::State& s) { scaled(s, simulate_on_four<memopt::sim::composite>); }
void BM_simulate_fifo(benchmark::State& s) { scaled(s, simulate_on_four<memopt::sim::fifo>); }

#define MEMOPT_SCALING(name) BENCHMARK(name)->RangeMultiplier(10)->Range(1000, 1'000'000)->Unit(benchmark::kMillisecond)
MEMOPT_SCALING(BM_topological_sort);
MEMOPT_SCALING(BM_read_edge_bundles);
MEMOPT_SCALING(BM_fresh_memory);
MEMOPT_SCALING(BM_liveness);
MEMOPT_SCALING(BM_list_schedule);
MEMOPT_SCALING(BM_dfs_schedule);
MEMOPT_SCALING(BM_post_order_schedule);
MEMOPT_SCALING(BM_bfs_schedule);
MEMOPT_SCALING(BM_dfs_size_schedule);
MEMOPT_SCALING(BM_lpmf_schedule);
MEMOPT_SCALING(BM_arena_best_fit);
MEMOPT_SCALING(BM_dag_share);
MEMOPT_SCALING(BM_simulate_composite);
MEMOPT_SCALING(BM_simulate_fifo);

}  // namespace
