// Rematerialisation on chains, exactly: the dynamic programme against an
// exhaustive search over every schedule on small heterogeneous chains,
// Chen's sqrt(n) point on long uniform ones, the validator, and the plan it
// gives a chain-shaped training graph.
#include <memopt/io/graph_file.hpp>
#include <memopt/liveness.hpp>
#include <memopt/remat.hpp>
#include <memopt/rewrite.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace rw = memopt::rewrite;
namespace remat = memopt::remat;

namespace {

/// The least forward flops of any schedule within `budget`, by Dijkstra over
/// states (activations held, backward stages left): a step runs forward
/// stage i from a held a_(i-1), or the next backward stage; any held
/// activation may be dropped between steps, and a step's inputs and output
/// are live with everything held. Infinity when none fits.
double exhaustive(const remat::chain_problem& p, std::uint64_t budget) {
  const std::size_t n = p.stages();
  using state = std::pair<unsigned, std::size_t>;  // held activations (bit i: a_i), next backward stage
  std::map<state, double> best;
  std::priority_queue<std::tuple<double, unsigned, std::size_t>, std::vector<std::tuple<double, unsigned, std::size_t>>,
                      std::greater<>> queue;
  const auto push = [&](double cost, unsigned held, std::size_t next) {
    const auto [it, fresh] = best.try_emplace({held, next}, cost);
    if (!fresh && it->second <= cost) return;
    it->second = cost;
    queue.emplace(cost, held, next);
  };
  const auto gradient = [&](std::size_t next) { return next == n + 1 ? std::uint64_t{0} : p.gradient[next]; };
  push(0, 1u, n + 1);
  while (!queue.empty()) {
    const auto [cost, held, next] = queue.top();
    queue.pop();
    if (best[{held, next}] < cost) continue;
    if (next == 0) return cost;
    std::uint64_t live = gradient(next);
    for (std::size_t i = 0; i <= n; ++i) live += (held >> i & 1u) ? p.activation[i] : 0;
    for (std::size_t i = 1; i <= n; ++i) {  // a drop, then nothing else this step
      if ((held >> i & 1u) != 0) push(cost, held & ~(1u << i), next);
    }
    for (std::size_t i = 1; i < next && i <= n; ++i) {  // forward stage i
      if ((held >> (i - 1) & 1u) == 0 || (held >> i & 1u) != 0) continue;
      if (live + p.activation[i] <= budget) push(cost + p.forward_flops[i - 1], held | 1u << i, next);
    }
    if ((held >> (next - 1) & 1u) != 0 && live + p.gradient[next - 1] <= budget) {
      // The backward stage (or the loss) consumes a_(next-1) unless a later one still needs it: it does not.
      push(cost, held & ~(next - 1 == 0 ? 0u : 1u << (next - 1)), next - 1);
    }
  }
  return std::numeric_limits<double>::infinity();
}

/// x -> f1 .. fn -> loss -> bn .. b1 as a graph, with a weight per stage.
memopt::io::file_graph chain_graph(const remat::chain_problem& p) {
  const std::size_t n = p.stages();
  const auto act = [](std::size_t i) { return i == 0 ? std::string("x") : "f" + std::to_string(i); };
  std::string nodes = R"([{"name": "x", "op": "input", "outputs": [)" + std::to_string(p.activation[0]) + "]}";
  for (std::size_t i = 1; i <= n; ++i) {
    nodes += R"(, {"name": "w)" + std::to_string(i) + R"(", "op": "parameter", "persistent": true, "outputs": [8]})";
    nodes += R"(, {"name": ")" + act(i) + R"(", "op": "layer", "outputs": [)" + std::to_string(p.activation[i]) +
             R"(], "flops": )" + std::to_string(p.forward_flops[i - 1]) + R"(, "inputs": [")" + act(i - 1) +
             R"(:0", "w)" + std::to_string(i) + R"(:0"]})";
  }
  nodes += R"(, {"name": "loss", "op": "loss", "outputs": [)" + std::to_string(p.gradient[n]) + R"(], "inputs": [")" +
           act(n) + R"(:0"]})";
  std::string grad = "loss";
  for (std::size_t i = n; i >= 1; --i) {
    const std::string b = "b" + std::to_string(i);
    nodes += R"(, {"name": ")" + b + R"(", "op": "grad", "outputs": [)" + std::to_string(p.gradient[i - 1]) +
             R"(], "inputs": [")" + act(i - 1) + R"(:0", ")" + grad + R"(:0"]})";
    grad = b;
  }
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "chain", "nodes": )" + nodes +
                                 R"(], "outputs": ["b1:0"]})");
}

remat::chain_problem uniform(std::size_t n, std::uint64_t bytes = 100, double flops = 10) {
  return {std::vector<std::uint64_t>(n + 1, bytes), std::vector<std::uint64_t>(n + 1, bytes), std::vector<double>(n, flops)};
}

}  // namespace

TEST_CASE("chain: the programme's schedule costs what an exhaustive search finds on 600 small chains (equal sizes: always)") {
  std::mt19937_64 rng(20261125);
  std::size_t feasible = 0, recomputing = 0, above = 0;
  for (int trial = 0; trial < 600; ++trial) {
    INFO("trial " << trial);
    const std::size_t n = 1 + trial % 6;
    const bool equal = trial % 2 == 0;
    std::uniform_int_distribution<std::uint64_t> size(equal ? 2 : 1, equal ? 2 : 6);
    std::uniform_int_distribution<int> flops(1, 9);
    remat::chain_problem p;
    for (std::size_t i = 0; i <= n; ++i) p.activation.push_back(size(rng));
    for (std::size_t i = 0; i <= n; ++i) p.gradient.push_back(size(rng));
    for (std::size_t i = 0; i < n; ++i) p.forward_flops.push_back(flops(rng));
    std::uint64_t all = 0;
    for (const auto b : p.activation) all += b;
    const std::uint64_t budget = std::uniform_int_distribution<std::uint64_t>(1, all + 12)(rng);
    const double expected = exhaustive(p, budget);
    const auto s = remat::solve_chain(p, budget);
    REQUIRE(s.exact);
    REQUIRE(s.feasible == (expected != std::numeric_limits<double>::infinity()));
    if (!s.feasible) continue;
    ++feasible;
    double once = 0;
    for (const double f : p.forward_flops) once += f;
    // Exact on equal sizes; on others, a schedule that drops a checkpoint and
    // remakes it later from an earlier one can be cheaper (the programme keeps
    // its checkpoints, as Revolve's and Rotor's do).
    if (equal) CHECK(s.extra_flops == doctest::Approx(expected - once));
    CHECK(s.extra_flops >= doctest::Approx(expected - once));
    above += s.extra_flops > expected - once + 1e-9;
    CHECK(s.peak <= budget);
    CHECK(s.bytes == remat::chain_memory(p, s.steps));
    recomputing += s.extra_flops > 0;
  }
  MESSAGE(feasible << " feasible chains, " << recomputing << " recomputing; the programme above the optimum on " << above);
  CHECK(feasible > 250);
  CHECK(recomputing > 50);
  CHECK(above * 20 < feasible);
}

TEST_CASE("chain: n equal layers in about 2 sqrt(n) activations for at most one more forward pass (Chen's point)") {
  for (const std::size_t n : {16, 64, 100}) {
    INFO("n = " << n);
    const auto p = uniform(n);
    // 2 sqrt(n) activations, and the step's own tensors.
    const auto budget = static_cast<std::uint64_t>(2 * std::sqrt(static_cast<double>(n)) + 3) * 100;
    const auto s = remat::solve_chain(p, budget);
    REQUIRE(s.feasible);
    CHECK(s.peak <= budget);
    CHECK(s.extra_flops <= 10.0 * static_cast<double>(n));
    // With all activations there is nothing to recompute; with three there is no schedule.
    CHECK(remat::solve_chain(p, (n + 3) * 100).extra_flops == 0);
    CHECK_FALSE(remat::solve_chain(p, 299).feasible);
  }
}

TEST_CASE("chain: the validator refuses schedules that read what is not made or run the backward out of turn") {
  const auto p = uniform(2);
  using remat::chain_op;
  const std::vector<remat::chain_step> good{{chain_op::forward, 1}, {chain_op::forward, 2}, {chain_op::loss, 3},
                                         {chain_op::backward, 2}, {chain_op::backward, 1}};
  // x, a1 and a2 (read by b2), the loss's gradient, then b2's, then b1's kept to the end.
  CHECK(remat::chain_memory(p, good) == std::vector<std::uint64_t>{200, 300, 400, 400, 300});
  CHECK_THROWS_WITH_AS((void)remat::chain_memory(p, {{chain_op::forward, 2}}), "bad rewrite plan: chain step 0: a_1 is not made yet",
                       rw::bad_plan_error);
  CHECK_THROWS_WITH_AS((void)remat::chain_memory(p, {{chain_op::forward, 1}, {chain_op::forward, 2}, {chain_op::backward, 2}}),
                       "bad rewrite plan: chain step 2: backward stage 2 out of turn", rw::bad_plan_error);
  CHECK_THROWS_WITH_AS((void)remat::chain_memory(p, {{chain_op::forward, 1}, {chain_op::forward, 2}, {chain_op::loss, 3}}),
                       "bad rewrite plan: chain step 3: backward stage 2 never runs", rw::bad_plan_error);
  CHECK_THROWS_AS((void)remat::solve_chain({{1, 2}, {1}, {1.0}}, 10), rw::bad_plan_error);
}

TEST_CASE("chain: a chain-shaped training graph is found, and its exact plan fits at the liveness peak it promises") {
  std::mt19937_64 rng(7);
  for (const std::size_t n : {3, 8, 20}) {
    INFO("n = " << n);
    remat::chain_problem p;
    for (std::size_t i = 0; i <= n; ++i) p.activation.push_back(std::uniform_int_distribution<std::uint64_t>(50, 150)(rng));
    for (std::size_t i = 0; i <= n; ++i) p.gradient.push_back(std::uniform_int_distribution<std::uint64_t>(50, 150)(rng));
    for (std::size_t i = 0; i < n; ++i) p.forward_flops.push_back(std::uniform_int_distribution<int>(1, 100)(rng));
    const auto g = chain_graph(p);
    const auto facts = rw::read_facts(g);
    const auto c = remat::chain_of(facts);
    REQUIRE(c.has_value());
    CHECK(c->forward.size() == n);
    CHECK(c->others.size() == n);  // the weights
    CHECK(remat::chain_sizes(facts, *c).activation == p.activation);
    std::uint64_t all = 0;
    for (const auto b : p.activation) all += b;
    for (const std::uint64_t budget : {all + 300, all / 2 + 300, all / 3 + 300}) {
      INFO("budget " << budget);
      const auto s = remat::solve_chain(p, budget);
      const auto r = remat::rematerialize_chain(facts, *c, budget);
      REQUIRE(r.has_value() == s.feasible);
      if (!r) continue;
      REQUIRE(rw::check_plan(facts, r->plan).empty());
      const auto h = rw::apply(facts, r->plan);
      std::vector<std::size_t> order;
      for (const auto& ref : r->order) order.push_back(ref.added ? facts.size() + ref.index : ref.index);
      REQUIRE(memopt::is_topological_order(h, order));
      CHECK(memopt::liveness(h, order).peak_bytes == s.peak);
      CHECK(r->planned_peak == s.peak);
      CHECK(r->method == "chain");
      CHECK(r->planned_bytes.size() == order.size());
      CHECK(r->extra_flops == doctest::Approx(s.extra_flops));
      // The planner takes the exact schedule on a chain: no heuristic plan is cheaper.
      std::vector<std::size_t> program(facts.size());
      for (std::size_t v = 0; v < program.size(); ++v) program[v] = v;
      const auto best = remat::rematerialize_best(facts, {program}, {.budget = budget});
      CHECK(best.extra_flops <= s.extra_flops);
      CHECK(best.planned_peak <= budget);
    }
  }
  // Not chains: a vertex with two readers in the forward, a graph with a view.
  CHECK_FALSE(remat::chain_of(rw::read_facts(memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "fork", "nodes": [
    {"name": "x", "op": "input", "outputs": [1]}, {"name": "a", "op": "f", "outputs": [1], "inputs": ["x:0"]},
    {"name": "b", "op": "f", "outputs": [1], "inputs": ["x:0"]}, {"name": "c", "op": "g", "outputs": [1], "inputs": ["a:0", "b:0"]}],
    "outputs": ["c:0"]})"))).has_value());
}
