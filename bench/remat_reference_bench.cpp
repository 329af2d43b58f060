// The rematerialisation planner against Checkmate's mixed-integer programme
// (tests/support/checkmate.hpp, solved with CBC) on a generated CNN training
// graph of about 150 vertices (examples/generate: cnn-train, seed 1) and a
// random one of about 80 (tests/support/random_training.hpp), at 0.7 and 0.5
// of the program order's peak: the planner's time beside the solver's, and
// how far the planner's extra flops are from the best plan the solver finds
// and from its lower bound. The solver stops after 60 s or 20,000
// branch-and-bound nodes, starting from the planner's plan. (On the
// generated transformer of the same size CBC spends more than ten minutes
// checking that start, in a simplex its time limit does not reach: out of
// its reach.)
//   build-bench/bench/remat_reference_bench
// Counters, extra flops as percent of the graph's flops: planner, milp (the
// solver's best plan), bound (no plan needs fewer), proved (1 when the
// solver proved its plan optimal), fits (1 when the planner's plan meets the
// budget; the solver's numbers mean nothing for a budget it proves
// infeasible: infeasible 1).
#include "training_graph.hpp"

#include <support/checkmate.hpp>
#include <support/random_training.hpp>

#include <memopt/remat.hpp>
#include <memopt/rewrite.hpp>

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

namespace {

namespace rw = memopt::rewrite;
namespace remat = memopt::remat;

using memopt::bench::training_graph;

const training_graph& shared(const std::string& kind) {
  return memopt::bench::cached(kind, [&] {
    if (kind != "random") return memopt::bench::generated_training_graph(kind, 150);
    std::mt19937_64 rng(1);
    return memopt::bench::make_training_graph(memopt::testing::training_graph(rng, 40));
  });
}

std::uint64_t budget_of(const training_graph& t, double fraction) {
  return static_cast<std::uint64_t>(static_cast<double>(t.peak) * fraction);
}

void BM_planner(benchmark::State& state, const std::string& kind, double fraction) {
  const auto& t = shared(kind);
  const std::uint64_t budget = budget_of(t, fraction);
  remat::remat_result r;
  for (auto _ : state) benchmark::DoNotOptimize(r = remat::rematerialize_best(t.facts, {t.program}, {.budget = budget}));
  state.counters["planner"] = 100 * r.extra_flops / t.flops;
  state.counters["fits"] = r.planned_peak <= budget;
  state.counters["vertices"] = static_cast<double>(t.facts.size());
}

void BM_checkmate(benchmark::State& state, const std::string& kind, double fraction) {
  const auto& t = shared(kind);
  const std::uint64_t budget = budget_of(t, fraction);
  const auto r = remat::rematerialize_best(t.facts, {t.program}, {.budget = budget});
  const auto start = r.planned_peak <= budget ? remat::runs_of(r) : std::vector<std::size_t>{};
  const auto recomputable = remat::detail::recomputable_vertices(t.facts, {});
  memopt::testing::checkmate_result c;
  for (auto _ : state) {
    c = memopt::testing::checkmate(t.facts, t.program, recomputable, budget, {.seconds = 60, .nodes = 20'000}, start);
  }
  using outcome = memopt::testing::checkmate_result::outcome;
  state.counters["planner"] = 100 * r.extra_flops / t.flops;
  state.counters["milp"] = 100 * c.extra_flops / t.flops;
  state.counters["bound"] = 100 * c.bound / t.flops;
  state.counters["proved"] = c.status == outcome::optimal;
  state.counters["infeasible"] = c.status == outcome::infeasible;
}

}  // namespace

#define MEMOPT_REFERENCE(name, kind, fraction)                                                                        \
  BENCHMARK_CAPTURE(BM_planner, name, std::string(kind), fraction)->Unit(benchmark::kMillisecond);                   \
  BENCHMARK_CAPTURE(BM_checkmate, name, std::string(kind), fraction)->Unit(benchmark::kMillisecond)->Iterations(1)

MEMOPT_REFERENCE(random/0.7, "random", 0.7);
MEMOPT_REFERENCE(random/0.5, "random", 0.5);
MEMOPT_REFERENCE(cnn/0.7, "cnn-train", 0.7);
MEMOPT_REFERENCE(cnn/0.5, "cnn-train", 0.5);
