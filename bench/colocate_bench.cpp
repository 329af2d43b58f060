// Colocation on n vertices with 3n random colocation constraints (n up to
// 1,000,000), beside a plain union-find loop (boost::disjoint_sets, union by
// rank and path compression) on the same pairs, in the same run.
//   build-bench/bench/colocate_bench
// - BM_disjoint_sets: the baseline, 3n union_set calls.
// - BM_colocation_graph: the same 3n merges through colocation_graph, each
//   checked against kernel types (8 ops with overlapping kernels, some pairs
//   refused) and device names (2% of the vertices request a device);
//   _with_setup also times building and initialising the n members.
// - BM_place: place() on a DAG of n vertices and 3n edges (8% reference
//   edges), 3n group memberships by name (each vertex names 3 of n/3 groups),
//   with soft placement; everything from the graph's traits to the placement.
// Ratios to report: BM_colocation_graph / BM_disjoint_sets and the complexity fits.
#include <memopt/colocate.hpp>

#include <benchmark/benchmark.h>
#include <boost/graph/adjacency_list.hpp>
#include <boost/pending/disjoint_sets.hpp>

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace {

using pairs = std::vector<std::pair<std::size_t, std::size_t>>;

const pairs& constraints(std::size_t n) {
  static std::map<std::size_t, pairs> cache;
  auto& p = cache[n];
  if (p.empty()) {
    std::mt19937_64 rng(n);
    std::uniform_int_distribution<std::size_t> any(0, n - 1);
    for (std::size_t k = 0; k < 3 * n; ++k) p.push_back({any(rng), any(rng)});  // braces: drawn in order
  }
  return p;
}

const memopt::device_set& devices() {
  static const memopt::device_set d = [] {
    std::vector<std::string> names;
    for (int i = 0; i < 8; ++i) {
      names.push_back("/job:w/replica:0/task:0/device:CPU:" + std::to_string(i));
      names.push_back("/job:w/replica:0/task:0/device:GPU:" + std::to_string(i));
      names.push_back("/job:w/replica:0/task:0/device:TPU:" + std::to_string(i));
    }
    return memopt::device_set(names, {"TPU", "GPU", "CPU"});
  }();
  return d;
}

/// op0..op7: every non-empty subset of {CPU, GPU, TPU} but one, some with priorities.
const memopt::kernel_registry& kernels() {
  static const memopt::kernel_registry k = [] {
    memopt::kernel_registry r;
    const char* types[] = {"CPU", "GPU", "TPU"};
    for (int op = 0; op < 8; ++op) {
      auto& list = r.kernels["op" + std::to_string(op)];
      for (int t = 0; t < 3; ++t) {
        if (((op + 1) >> t & 1) != 0 || op == 7) list.push_back({types[t], op == 5 && t == 0 ? 2 : 0});
      }
    }
    return r;
  }();
  return k;
}

std::string op_of(std::size_t v) { return "op" + std::to_string(v % 8 == 0 ? 7 : v % 8); }
std::string request_of(std::size_t v) {
  return v % 100 == 0 ? "/job:w/replica:0" : v % 100 == 50 ? "/device:GPU" : "";
}

void BM_disjoint_sets(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& p = constraints(n);
  for (auto _ : state) {
    std::vector<std::size_t> rank(n), parent(n);
    boost::disjoint_sets<std::size_t*, std::size_t*> sets(rank.data(), parent.data());
    for (std::size_t v = 0; v < n; ++v) sets.make_set(v);
    for (const auto& [u, v] : p) sets.union_set(u, v);
    benchmark::DoNotOptimize(sets.find_set(0));
  }
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_disjoint_sets)->Arg(250'000)->Arg(500'000)->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)->Complexity(benchmark::oN);

/// 3n checked merges on n initialised vertices; with `timed_setup`, the
/// construction and initialisation (kernel look-up per op) are timed too.
void colocate_pairs(benchmark::State& state, bool timed_setup) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto& p = constraints(n);
  std::vector<std::string> ops(n), requests(n);
  for (std::size_t v = 0; v < n; ++v) {
    ops[v] = op_of(v);
    requests[v] = request_of(v);
  }
  std::size_t refused = 0;
  for (auto _ : state) {
    if (!timed_setup) state.PauseTiming();
    memopt::colocation_graph groups(n, devices(), kernels());
    for (std::size_t v = 0; v < n; ++v) groups.initialize(v, ops[v], requests[v], "");
    if (!timed_setup) state.ResumeTiming();
    refused = 0;
    for (const auto& [u, v] : p) refused += groups.try_colocate(u, v) ? 1 : 0;
    benchmark::DoNotOptimize(groups.find(0));
  }
  state.counters["refused"] = static_cast<double>(refused);
  state.SetComplexityN(state.range(0));
}

void BM_colocation_graph(benchmark::State& state) { colocate_pairs(state, false); }
BENCHMARK(BM_colocation_graph)->Arg(250'000)->Arg(500'000)->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)->Complexity(benchmark::oN);

void BM_colocation_graph_with_setup(benchmark::State& state) { colocate_pairs(state, true); }
BENCHMARK(BM_colocation_graph_with_setup)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

using placement_graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                              memopt::placement_node, memopt::placement_edge>;

placement_graph random_placement_graph(std::size_t n) {
  std::mt19937_64 rng(n + 1);
  placement_graph g(n);
  for (std::size_t v = 0; v < n; ++v) {
    auto& node = g[v];
    node.name = "n" + std::to_string(v);
    node.op = op_of(v);
    node.device = request_of(v);
    for (int k = 0; k < 3; ++k) node.colocation.push_back("g" + std::to_string(rng() % (n / 3)));
  }
  for (std::size_t e = 0; e < 3 * n; ++e) {
    const std::size_t to = 1 + rng() % (n - 1);
    // References join op7 vertices only (kernels for every type), so none conflicts.
    const bool reference = to % 8 == 0 && to >= 64 && rng() % 3 != 0;
    const std::size_t from = reference ? to - 8 * (1 + rng() % 8) : to - 1 - rng() % std::min<std::size_t>(to, 64);
    add_edge(from, to, memopt::placement_edge{.control = false, .reference = reference}, g);
  }
  return g;
}

void BM_place(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto g = random_placement_graph(n);
  std::size_t groups = 0, ignored = 0;
  for (auto _ : state) {
    const auto r = memopt::place(g, devices(), kernels(), {.soft_placement = true});
    groups = r.num_groups;
    ignored = r.ignored.size();
    benchmark::DoNotOptimize(r.device.data());
  }
  state.counters["groups"] = static_cast<double>(groups);
  state.counters["ignored"] = static_cast<double>(ignored);
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_place)->Arg(250'000)->Arg(500'000)->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)->Complexity(benchmark::oN);

}  // namespace
