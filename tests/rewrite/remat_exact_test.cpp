// The planner against the optimum. On small random training graphs (a
// random forward DAG with skip connections, a loss, and a backward node per
// forward node reading that node's inputs and the gradients of its readers),
// an exhaustive search finds the fewest extra flops any plan needs to fit a
// budget when the graph's own nodes run in program order and copies run
// anywhere (Checkmate's setting: a Dijkstra over the tensors held and the
// originals run). The planner's plans are checked against it, and the mean
// and worst ratios of their extra flops are reported.
#include <memopt/io/graph_file.hpp>
#include <memopt/liveness.hpp>
#include <memopt/rewrite.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace rw = memopt::rewrite;

namespace {

/// A random training graph: x, forward f1..fk (each reads one or two earlier
/// tensors), loss, then b_k..b_1 (b_i reads f_i's inputs and the gradient
/// from each reader of f_i, the loss's for f_k); the graph's output is b_1's.
memopt::io::file_graph training_graph(std::mt19937_64& rng, std::size_t k) {
  std::uniform_int_distribution<int> bytes(1, 8);
  std::uniform_int_distribution<int> flops(1, 20);
  std::vector<std::vector<std::size_t>> inputs(k + 1);  // forward i reads these (0 = x)
  for (std::size_t i = 1; i <= k; ++i) {
    inputs[i].push_back(i - 1);
    if (i >= 2 && std::bernoulli_distribution(0.4)(rng)) inputs[i].push_back(std::uniform_int_distribution<std::size_t>(0, i - 2)(rng));
  }
  const auto f = [](std::size_t i) { return i == 0 ? std::string("x") : "f" + std::to_string(i); };
  std::string nodes = R"([{"name": "x", "op": "input", "outputs": [)" + std::to_string(bytes(rng)) + "]}";
  for (std::size_t i = 1; i <= k; ++i) {
    nodes += R"(, {"name": ")" + f(i) + R"(", "op": "layer", "outputs": [)" + std::to_string(bytes(rng)) +
             R"(], "flops": )" + std::to_string(flops(rng)) + R"(, "inputs": [)";
    for (std::size_t j = 0; j < inputs[i].size(); ++j) nodes += (j ? ", \"" : "\"") + f(inputs[i][j]) + ":0\"";
    nodes += "]}";
  }
  nodes += R"(, {"name": "loss", "op": "loss", "outputs": [1], "inputs": [")" + f(k) + R"(:0"]})";
  for (std::size_t i = k; i >= 1; --i) {
    std::string reads;
    for (const std::size_t j : inputs[i]) reads += ", \"" + f(j) + ":0\"";
    if (i == k) reads += R"(, "loss:0")";
    for (std::size_t c = i + 1; c <= k; ++c) {
      if (std::ranges::find(inputs[c], i) != inputs[c].end()) reads += ", \"b" + std::to_string(c) + ":0\"";
    }
    nodes += R"(, {"name": "b)" + std::to_string(i) + R"(", "op": "grad", "outputs": [)" + std::to_string(bytes(rng)) +
             R"(], "inputs": [)" + reads.substr(2) + "]}";
  }
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "training", "nodes": )" + nodes +
                                 R"(], "outputs": ["b1:0"]})");
}

/// The fewest extra flops of any plan within `budget` that runs the graph's
/// nodes in index order and copies of nodes already run anywhere: a step's
/// inputs and output are live with everything held; anything held but a graph
/// output may be dropped between steps; sources are not recomputed.
/// Infinity when none fits. One output per node, no views.
double fewest_extra_flops(const rw::graph_facts& f, std::uint64_t budget) {
  const std::size_t n = f.size();
  using state = std::pair<std::size_t, unsigned>;  // originals run, tensors held
  std::map<state, double> best;
  std::priority_queue<std::tuple<double, std::size_t, unsigned>, std::vector<std::tuple<double, std::size_t, unsigned>>,
                      std::greater<>> queue;
  const auto push = [&](double cost, std::size_t run, unsigned held) {
    const auto [it, fresh] = best.try_emplace({run, held}, cost);
    if (!fresh && it->second <= cost) return;
    it->second = cost;
    queue.emplace(cost, run, held);
  };
  const auto ready = [&](std::size_t v, unsigned held) {
    return std::ranges::all_of(f.operands[v], [&](rw::operand o) { return (held >> o.vertex & 1u) != 0; });
  };
  push(0, 0, 0);
  while (!queue.empty()) {
    const auto [cost, run, held] = queue.top();
    queue.pop();
    if (best[{run, held}] < cost) continue;
    if (run == n) return cost;
    std::uint64_t live = 0;
    for (std::size_t v = 0; v < n; ++v) live += (held >> v & 1u) ? f.outputs[v][0].bytes : 0;
    for (std::size_t v = 0; v < n; ++v) {
      if ((held >> v & 1u) != 0 && !f.outputs[v][0].live_out) push(cost, run, held & ~(1u << v));
    }
    if (ready(run, held) && live + f.outputs[run][0].bytes <= budget) push(cost, run + 1, held | 1u << run);
    for (std::size_t u = 0; u < run; ++u) {
      if ((held >> u & 1u) != 0 || f.operands[u].empty() || !ready(u, held)) continue;
      if (live + f.outputs[u][0].bytes <= budget) push(cost + f.flops[u], run, held | 1u << u);
    }
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace

TEST_CASE("remat: the planner's extra flops against the optimum on 300 small random training graphs") {
  std::mt19937_64 rng(20261125);
  std::size_t compared = 0, optimal = 0, missed = 0, needless = 0, ratios = 0;
  double sum = 0, worst = 1;
  for (int trial = 0; trial < 300; ++trial) {
    INFO("trial " << trial);
    const auto g = training_graph(rng, 3 + static_cast<std::size_t>(trial % 4));
    const auto facts = rw::read_facts(g);
    std::vector<std::size_t> program(facts.size());
    for (std::size_t v = 0; v < program.size(); ++v) program[v] = v;
    const auto before = memopt::liveness(g, std::span<const std::size_t>(program)).peak_bytes;
    const auto floor = rw::rematerialisation_floor(facts).bytes;
    const std::uint64_t budget = std::uniform_int_distribution<std::uint64_t>(floor, before)(rng);
    const double exact = fewest_extra_flops(facts, budget);
    const auto r = rw::rematerialize_best(facts, {program}, {.budget = budget});
    // No plan beats the optimum; no plan fits where the search finds none.
    if (exact == std::numeric_limits<double>::infinity()) {
      CHECK(r.planned_peak > budget);
      continue;
    }
    if (r.planned_peak > budget) {
      ++missed;
      continue;
    }
    CHECK(r.extra_flops >= exact);
    ++compared;
    optimal += r.extra_flops == exact;
    if (exact == 0) {
      needless += r.extra_flops > 0;
      continue;
    }
    ++ratios;
    sum += r.extra_flops / exact;
    worst = std::max(worst, r.extra_flops / exact);
  }
  const double mean = sum / static_cast<double>(std::max<std::size_t>(ratios, 1));
  MESSAGE(compared << " plans that fit: " << optimal << " optimal; where copies are needed (" << ratios
                   << "), extra flops " << mean << " times the optimum on average, " << worst << " at worst; "
                   << needless << " recompute where nothing needs to; " << missed << " miss a budget a plan meets");
  CHECK(mean < 1.5);
  CHECK(compared > 150);
  CHECK(missed * 10 < compared);
}
