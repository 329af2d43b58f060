// Budget-driven rematerialisation on generated training graphs of about
// 100,000 vertices (examples/generate: cnn-train, a ResNet-like step, and
// transformer-train, a GPT-like one; seed 1), at half and a third of their
// program order's peak, beside boost::topological_sort on the same graph in
// the same run; the floor; and the cost floor at half the peak under its
// default work limit (steps_measured of the graph's, and the bound as a
// percentage of the graph's flops, beside the planner's extra_flops_percent).
//   build-bench/bench/remat_bench
// Ratios to report: BM_rematerialize/<kind>/<budget> / BM_topological_sort/<kind>
// (and the same for BM_rematerialize_best and BM_rematerialize_blocks).
// Counters: peak (the planner's peak as a fraction of the program order's),
// extra_flops_percent, copies.
#include "training_graph.hpp"

#include <memopt/remat.hpp>
#include <memopt/rewrite.hpp>

#include <benchmark/benchmark.h>
#include <boost/graph/topological_sort.hpp>

#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace rw = memopt::rewrite;
namespace remat = memopt::remat;

using memopt::bench::training_graph;

const training_graph& shared(const std::string& kind) {
  return memopt::bench::cached(kind, [&] { return memopt::bench::generated_training_graph(kind, 100'000); });
}

void BM_topological_sort(benchmark::State& state, const std::string& kind) {
  const auto& g = shared(kind).graph;
  for (auto _ : state) {
    std::vector<std::size_t> reversed;
    reversed.reserve(num_vertices(g));
    boost::topological_sort(g, std::back_inserter(reversed));
    benchmark::DoNotOptimize(reversed.data());
  }
  state.counters["vertices"] = static_cast<double>(num_vertices(g));
}

void BM_floor(benchmark::State& state, const std::string& kind) {
  const auto& t = shared(kind);
  remat::remat_floor floor;
  for (auto _ : state) benchmark::DoNotOptimize(floor = remat::rematerialisation_floor(t.facts));
  state.counters["floor"] = static_cast<double>(floor.bytes) / static_cast<double>(t.peak);
}

void BM_cost_floor(benchmark::State& state, const std::string& kind, double fraction) {
  const auto& t = shared(kind);
  const auto budget = static_cast<std::uint64_t>(static_cast<double>(t.peak) * fraction);
  remat::remat_cost_floor floor;
  for (auto _ : state) benchmark::DoNotOptimize(floor = remat::rematerialisation_cost_floor(t.facts, budget));
  state.counters["floor_flops_percent"] = 100 * floor.extra_flops / t.flops;
  state.counters["steps_measured"] = static_cast<double>(floor.steps_measured);
}

void report(benchmark::State& state, const training_graph& t, const remat::remat_result& r) {
  state.counters["peak"] = static_cast<double>(r.planned_peak) / static_cast<double>(t.peak);
  state.counters["extra_flops_percent"] = 100 * r.extra_flops / t.flops;
  state.counters["copies"] = static_cast<double>(r.plan.nodes.size());
}

void BM_rematerialize(benchmark::State& state, const std::string& kind, double fraction) {
  const auto& t = shared(kind);
  const remat::remat_options options{.budget = static_cast<std::uint64_t>(static_cast<double>(t.peak) * fraction)};
  remat::remat_result r;
  for (auto _ : state) benchmark::DoNotOptimize(r = remat::rematerialize(t.facts, t.program, options));
  report(state, t, r);
}

void BM_rematerialize_best(benchmark::State& state, const std::string& kind, double fraction) {
  const auto& t = shared(kind);
  const remat::remat_options options{.budget = static_cast<std::uint64_t>(static_cast<double>(t.peak) * fraction)};
  remat::remat_result r;
  for (auto _ : state) benchmark::DoNotOptimize(r = remat::rematerialize_best(t.facts, {t.program}, options));
  report(state, t, r);
}

// Rotor's programme over the chain of blocks (remat/block_chain.hpp): the
// chain found, then the plan searched for (its default eight budgets), as
// rematerialize_best runs it when nothing cheaper is at hand. Counter:
// stages.
void BM_rematerialize_blocks(benchmark::State& state, const std::string& kind, double fraction) {
  const auto& t = shared(kind);
  const auto budget = static_cast<std::uint64_t>(static_cast<double>(t.peak) * fraction);
  std::optional<remat::remat_result> r;
  std::size_t stages = 0;
  for (auto _ : state) {
    const auto chain = remat::block_chain_of(t.facts, t.program, {});
    if (!chain) {
      state.SkipWithError("not a chain of blocks");
      return;
    }
    stages = chain->stages.size();
    benchmark::DoNotOptimize(r = remat::rematerialize_blocks(t.facts, *chain, budget));
  }
  if (r) report(state, t, *r);
  state.counters["stages"] = static_cast<double>(stages);
}

}  // namespace

BENCHMARK_CAPTURE(BM_topological_sort, cnn, std::string("cnn-train"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_floor, cnn, std::string("cnn-train"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_cost_floor, cnn/half, std::string("cnn-train"), 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize, cnn/half, std::string("cnn-train"), 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize, cnn/third, std::string("cnn-train"), 1.0 / 3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize_best, cnn/half, std::string("cnn-train"), 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize_blocks, cnn/half, std::string("cnn-train"), 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_topological_sort, transformer, std::string("transformer-train"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_floor, transformer, std::string("transformer-train"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_cost_floor, transformer/half, std::string("transformer-train"), 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize, transformer/half, std::string("transformer-train"), 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize, transformer/third, std::string("transformer-train"), 1.0 / 3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize_best, transformer/half, std::string("transformer-train"), 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize_blocks, transformer/half, std::string("transformer-train"), 0.5)->Unit(benchmark::kMillisecond);
