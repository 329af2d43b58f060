// Budget-driven rematerialisation on generated training graphs of about
// 100,000 vertices (examples/generate: cnn-train, a ResNet-like step, and
// transformer-train, a GPT-like one; seed 1), at half and a third of their
// program order's peak, beside boost::topological_sort on the same graph in
// the same run; and the floor.
//   build-bench/bench/remat_bench
// Ratios to report: BM_rematerialize/<kind>/<budget> / BM_topological_sort/<kind>.
// Counters: peak (the planner's peak as a fraction of the program order's),
// extra_flops_percent, copies.
#include <generate/generators.hpp>
#include <memopt/io/graph_file.hpp>
#include <memopt/liveness.hpp>
#include <memopt/rewrite.hpp>

#include <benchmark/benchmark.h>
#include <boost/graph/topological_sort.hpp>

#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace rw = memopt::rewrite;

struct training_graph {
  memopt::io::file_graph graph;
  rw::graph_facts facts;
  std::vector<std::size_t> program;
  std::uint64_t peak = 0;
  double flops = 0;
};

const training_graph& shared(const std::string& kind) {
  static std::map<std::string, training_graph> graphs;
  auto [it, fresh] = graphs.try_emplace(kind);
  if (fresh) {
    std::ostringstream text;
    graph_gen::write_graph(text, graph_gen::generate(kind, 100'000, 1));
    training_graph& t = it->second;
    t.graph = memopt::io::parse_graph(text.str());
    t.facts = rw::read_facts(t.graph);
    const auto program = memopt::program_order(t.graph);
    t.program.assign(program.begin(), program.end());
    t.peak = memopt::liveness(t.graph, program).peak_bytes;
    for (const double f : t.facts.flops) t.flops += f;
  }
  return it->second;
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
  rw::remat_floor floor;
  for (auto _ : state) benchmark::DoNotOptimize(floor = rw::rematerialisation_floor(t.facts));
  state.counters["floor"] = static_cast<double>(floor.bytes) / static_cast<double>(t.peak);
}

void report(benchmark::State& state, const training_graph& t, const rw::remat_result& r) {
  state.counters["peak"] = static_cast<double>(r.planned_peak) / static_cast<double>(t.peak);
  state.counters["extra_flops_percent"] = 100 * r.extra_flops / t.flops;
  state.counters["copies"] = static_cast<double>(r.plan.nodes.size());
}

void BM_rematerialize(benchmark::State& state, const std::string& kind, double fraction) {
  const auto& t = shared(kind);
  const rw::remat_options options{.budget = static_cast<std::uint64_t>(static_cast<double>(t.peak) * fraction)};
  rw::remat_result r;
  for (auto _ : state) benchmark::DoNotOptimize(r = rw::rematerialize(t.facts, t.program, options));
  report(state, t, r);
}

void BM_rematerialize_best(benchmark::State& state, const std::string& kind, double fraction) {
  const auto& t = shared(kind);
  const rw::remat_options options{.budget = static_cast<std::uint64_t>(static_cast<double>(t.peak) * fraction)};
  rw::remat_result r;
  for (auto _ : state) benchmark::DoNotOptimize(r = rw::rematerialize_best(t.facts, {t.program}, options));
  report(state, t, r);
}

}  // namespace

BENCHMARK_CAPTURE(BM_topological_sort, cnn, std::string("cnn-train"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_floor, cnn, std::string("cnn-train"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize, cnn/half, std::string("cnn-train"), 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize, cnn/third, std::string("cnn-train"), 1.0 / 3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize_best, cnn/half, std::string("cnn-train"), 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_topological_sort, transformer, std::string("transformer-train"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_floor, transformer, std::string("transformer-train"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize, transformer/half, std::string("transformer-train"), 0.5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize, transformer/third, std::string("transformer-train"), 1.0 / 3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_rematerialize_best, transformer/half, std::string("transformer-train"), 0.5)->Unit(benchmark::kMillisecond);
