// Budget-driven rematerialisation: chains of n equal layers (forward and
// backward, built here) in about 2 sqrt(n) activations for at most one more
// forward pass; the floor; plans that fit and say what they cost.
#include "../rewrite/edges.hpp"
#include "../support/fewest_extra_flops.hpp"

#include <memopt/io/graph_file.hpp>
#include <memopt/remat.hpp>
#include <memopt/rewrite.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace rw = memopt::rewrite;
namespace remat = memopt::remat;

namespace {

/// x -> f1 .. fn -> loss -> bn .. b1: each layer's output `bytes`, its
/// forward `flops`; b_i reads f_(i-1)'s output (x for b_1) and b_(i+1)'s.
memopt::io::file_graph chain(std::size_t n, std::uint64_t bytes = 100, double flops = 10) {
  std::string nodes = R"([{"name": "x", "op": "input", "outputs": [)" + std::to_string(bytes) + "]}";
  const auto out = [](std::size_t i) { return i == 0 ? std::string("x") : "f" + std::to_string(i); };
  for (std::size_t i = 1; i <= n; ++i) {
    nodes += R"(, {"name": "f)" + std::to_string(i) + R"(", "op": "layer", "outputs": [)" + std::to_string(bytes) +
             R"(], "flops": )" + std::to_string(flops) + R"(, "inputs": [")" + out(i - 1) + R"(:0"]})";
  }
  nodes += R"(, {"name": "loss", "op": "loss", "outputs": [)" + std::to_string(bytes) + R"(], "inputs": ["f)" +
           std::to_string(n) + R"(:0"]})";
  std::string grad = "loss";
  for (std::size_t i = n; i >= 1; --i) {
    const std::string b = "b" + std::to_string(i);
    nodes += R"(, {"name": ")" + b + R"(", "op": "grad", "outputs": [)" + std::to_string(bytes) +
             R"(], "flops": )" + std::to_string(2 * flops) + R"(, "inputs": [")" + out(i - 1) + R"(:0", ")" + grad + R"(:0"]})";
    grad = b;
  }
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "chain", "nodes": )" + nodes +
                                 R"(], "outputs": [")" + grad + R"(:0"]})");
}

std::vector<std::size_t> program(std::size_t n) {
  std::vector<std::size_t> order(n);
  for (std::size_t v = 0; v < n; ++v) order[v] = v;
  return order;
}

}  // namespace

TEST_CASE("remat: a chain of n layers in about 2 sqrt(n) activations for at most one more forward pass") {
  for (const std::size_t n : {16, 64, 100}) {
    INFO("n = " << n);
    const auto g = chain(n);
    const auto facts = rw::read_facts(g);
    const auto budget = static_cast<std::uint64_t>(2 * std::sqrt(static_cast<double>(n)) + 4) * 100;
    const auto r = remat::rematerialize(facts, program(facts.size()), {.budget = budget});
    CHECK(r.method == "eviction");
    CHECK(rw::check_plan(facts, r.plan).empty());
    const auto h = rw::apply(facts, r.plan);
    std::vector<std::size_t> order;
    for (const auto& ref : r.order) order.push_back(ref.added ? facts.size() + ref.index : ref.index);
    REQUIRE(memopt::is_topological_order(h, order));
    const auto peak = memopt::liveness(h, order).peak_bytes;
    CHECK(peak <= budget);
    CHECK(peak <= r.planned_peak);
    MESSAGE("n " << n << ": budget " << budget << " peak " << peak << " extra flops " << r.extra_flops << " of "
                 << 10.0 * static_cast<double>(n) << " forward");
    CHECK(r.extra_flops <= 10.0 * static_cast<double>(n));
  }
}

TEST_CASE("remat: the floor is the step with the most bytes live in every order, whatever is recomputed") {
  // b_i (i >= 2) reads f_(i-1) and the gradient, writes its own, and the input
  // x stays for b_1: 400. f_i and the other activations can be recomputed.
  const auto facts = rw::read_facts(chain(8));
  const auto floor = remat::rematerialisation_floor(facts);
  CHECK(floor.bytes == 400);
  CHECK(facts.name[floor.vertex] == "b8");
  std::vector<std::string> names;
  for (const auto& t : floor.storages) names.push_back(facts.name[t.vertex]);
  CHECK(names == std::vector<std::string>{"f7", "loss", "b8", "x"});
}

TEST_CASE("remat: the cost floor is what keeping the fewest activations costs at the step that needs most") {
  // chain(8) in 500 bytes. At b8 the floor's 400 bytes are live (f7, loss,
  // b8, x), so one more tensor fits, and f1 .. f6 are read later: keeping
  // one and remaking the other five costs 50 flops at least (loss and f8
  // give 50 too, the other steps less). The programme's schedule costs more.
  const auto facts = rw::read_facts(chain(8));
  const auto floor = remat::rematerialisation_cost_floor(facts, 500);
  CHECK(floor.extra_flops == doctest::Approx(50).epsilon(1e-9));
  CHECK(floor.complete);
  CHECK(floor.steps_measured == facts.size());
  const auto dp = remat::solve_chain(remat::chain_sizes(facts, *remat::chain_of(facts)), 500);
  REQUIRE(dp.feasible);
  CHECK(dp.extra_flops >= floor.extra_flops);
  MESSAGE("chain(8) in 500 bytes: cost floor " << floor.extra_flops << ", the programme's schedule " << dp.extra_flops);
  // Room for everything: nothing to remake. Below the floor: no plan at all.
  CHECK(remat::rematerialisation_cost_floor(facts, 1100).extra_flops == 0);
  CHECK(remat::rematerialisation_cost_floor(facts, 1100).vertex == rw::no_vertex);
  CHECK(remat::rematerialisation_cost_floor(facts, 399).extra_flops == std::numeric_limits<double>::infinity());
  // One more slot (600 bytes): keep two, remake four.
  CHECK(remat::rematerialisation_cost_floor(facts, 600).extra_flops == doctest::Approx(40).epsilon(1e-9));
  // A work limit stops after the first step (the one most bytes cross).
  const auto first = remat::rematerialisation_cost_floor(facts, 500, {}, 1);
  CHECK_FALSE(first.complete);
  CHECK(first.steps_measured == 1);
  CHECK(first.extra_flops <= floor.extra_flops);
}

TEST_CASE("remat: the cost floor's branch and bound pays for a whole tensor where the best lambda pays for part") {
  // At g (and h) the live bytes are 171 (g 170, loss 1), so 159 of the 330
  // remain for a (300 bytes) and b (100), both read later: 241 bytes must go.
  // Both are remade at a flop a byte, so every lambda bounds the step at 241
  // flops at best, but no closure frees 241 bytes for less than remaking a
  // (300). The floor is 300; the optimum (b dropped at a, a at g, each
  // remade for its gradient) is 400.
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "knapsack", "nodes": [
    {"name": "x", "op": "parameter", "outputs": [1], "persistent": true},
    {"name": "b", "op": "layer", "outputs": [100], "flops": 100, "inputs": ["x:0"]},
    {"name": "sb", "op": "sum", "outputs": [1], "inputs": ["b:0"]},
    {"name": "a", "op": "layer", "outputs": [300], "flops": 300, "inputs": ["x:0"]},
    {"name": "sa", "op": "sum", "outputs": [1], "inputs": ["a:0"]},
    {"name": "loss", "op": "loss", "outputs": [1], "inputs": ["sa:0", "sb:0"]},
    {"name": "g", "op": "grad", "outputs": [170], "inputs": ["loss:0"]},
    {"name": "h", "op": "grad", "outputs": [1], "inputs": ["g:0"]},
    {"name": "ga", "op": "grad", "outputs": [1], "inputs": ["h:0", "a:0"]},
    {"name": "gb", "op": "grad", "outputs": [1], "inputs": ["ga:0", "b:0"]}], "outputs": ["gb:0"]})");
  const auto facts = rw::read_facts(g);
  const auto floor = remat::rematerialisation_cost_floor(facts, 330);
  CHECK(floor.extra_flops == doctest::Approx(300).epsilon(1e-9));
  CHECK((facts.name[floor.vertex] == "g" || facts.name[floor.vertex] == "h"));
  CHECK(memopt::testing::fewest_extra_flops(facts, 330) == 400);
  const auto r = remat::rematerialize_best(facts, {program(facts.size())}, {.budget = 330});
  CHECK(r.planned_peak <= 330);
  CHECK(r.extra_flops == 400);
  // Stopped after one step and the root of the branch and bound: the best lambda's.
  CHECK(remat::rematerialisation_cost_floor(facts, 330, {}, 1).extra_flops == doctest::Approx(241).epsilon(1e-9));
}

TEST_CASE("remat: no plan on a shipped training graph adds less than the cost floor, views, in-place ops and random draws included") {
  // The transformer's dropout masks are bernoulli_ draws written in place,
  // and its activations are viewed (the CLI's curve test checks ResNet-18 at eleven budgets).
  std::size_t compared = 0;
  for (const char* name : {"transformer_train_b32"}) {
    const auto g = memopt::io::read_graph(std::string(MEMOPT_DATA_DIR) + "/" + name + ".json");
    const auto facts = rw::read_facts(g);
    const auto order = program(facts.size());
    const auto before = memopt::liveness(g, order).peak_bytes;
    for (const bool replay : {false, true}) {
      remat::remat_options options;
      options.local_search_trials = 0;  // the bound holds for every plan; this keeps the test quick
      if (replay) options.unrepeatable_ops.clear();
      const auto floor = remat::rematerialisation_floor(facts, options).bytes;
      for (int k = 1; k <= 3; ++k) {
        options.budget = before - (before - floor) * static_cast<std::uint64_t>(k) / 3;
        INFO(name << (replay ? " replayed" : "") << " at " << options.budget);
        const auto r = remat::rematerialize_best(facts, {order}, options);
        const auto h = rw::apply(facts, r.plan);
        std::vector<std::size_t> steps;
        for (const auto& ref : r.order) steps.push_back(ref.added ? facts.size() + ref.index : ref.index);
        if (memopt::liveness(h, steps).peak_bytes > options.budget) continue;
        const auto cost_floor = remat::rematerialisation_cost_floor(facts, options.budget, options);
        CHECK(r.extra_flops >= cost_floor.extra_flops * (1 - 1e-9));
        compared += cost_floor.extra_flops > 0;
      }
    }
  }
  MESSAGE(compared << " plans compared with a cost floor above 0");
  CHECK(compared >= 3);
}

TEST_CASE("remat: where no plan fits, rematerialize_best tries rebuilds deeper than max_rebuild_walk") {
  // The transformer's kept dropout masks leave too little room at 0.37 of
  // its best peak (969346052) for its layer outputs: they must go and be
  // remade from the layer before, a rebuild of more than 32 vertices.
  const auto g = memopt::io::read_graph(std::string(MEMOPT_DATA_DIR) + "/transformer_train_b32.json");
  const auto facts = rw::read_facts(g);
  const auto order = program(facts.size());
  remat::remat_options options{.budget = 969346052ULL * 37 / 100, .local_search_trials = 0};
  for (const double ratio : {4.0, std::numeric_limits<double>::infinity()}) {
    options.max_rebuild_ratio = ratio;
    CHECK(remat::rematerialize(facts, order, options).planned_peak > options.budget);
  }
  options.max_rebuild_ratio = std::numeric_limits<double>::infinity();
  const auto r = remat::rematerialize_best(facts, {order}, options);
  CHECK(r.planned_peak <= options.budget);
  CHECK(rw::check_plan(facts, r.plan).empty());
  const auto h = rw::apply(facts, r.plan);
  std::vector<std::size_t> steps;
  for (const auto& ref : r.order) steps.push_back(ref.added ? facts.size() + ref.index : ref.index);
  CHECK(memopt::liveness(h, steps).peak_bytes == r.planned_peak);
}

TEST_CASE("remat: rematerialize_best keeps what the greedy rule drops when a smaller drop suffices") {
  // Program order peaks at 19 bytes twice: at `loss` (x f1 f2 f3 f4 f5 loss)
  // and at b4 (x f1 f2 f3 b5 b4). Dropping f2 (6 bytes, 3 flops) frees the
  // most per flop, and the greedy rule takes it: 3 flops to rebuild it for
  // b3. Dropping f1 (1 byte, 1 flop) from f2 to b2 is enough for 18 bytes:
  // 1 flop, the optimum (tests/support/fewest_extra_flops.hpp). The rule
  // counting only the byte lacking takes f1; the local search from the rule
  // at weight 1 (keeping f2) finds it too.
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "greedy", "nodes": [
    {"name": "x", "op": "input", "outputs": [4]},
    {"name": "f1", "op": "layer", "outputs": [1], "flops": 1, "inputs": ["x:0"]},
    {"name": "f2", "op": "layer", "outputs": [6], "flops": 3, "inputs": ["f1:0"]},
    {"name": "f3", "op": "layer", "outputs": [1], "flops": 12, "inputs": ["f2:0"]},
    {"name": "f4", "op": "layer", "outputs": [1], "flops": 13, "inputs": ["f3:0", "x:0"]},
    {"name": "f5", "op": "layer", "outputs": [5], "flops": 20, "inputs": ["f4:0"]},
    {"name": "loss", "op": "loss", "outputs": [1], "inputs": ["f5:0"]},
    {"name": "b5", "op": "grad", "outputs": [3], "inputs": ["f4:0", "loss:0"]},
    {"name": "b4", "op": "grad", "outputs": [4], "inputs": ["f3:0", "x:0", "b5:0"]},
    {"name": "b3", "op": "grad", "outputs": [3], "inputs": ["f2:0", "b4:0"]},
    {"name": "b2", "op": "grad", "outputs": [2], "inputs": ["f1:0", "b3:0"]},
    {"name": "b1", "op": "grad", "outputs": [6], "inputs": ["x:0", "b2:0"]}], "outputs": ["b1:0"]})");
  const auto facts = rw::read_facts(g);
  const auto order = program(facts.size());
  const remat::remat_options options{.budget = 18};
  const auto greedy = remat::rematerialize(facts, order, options);
  REQUIRE(greedy.plan.nodes.size() == 1);
  CHECK(greedy.plan.nodes[0].name == "Recomputed/f2");
  CHECK(greedy.extra_flops == 3);

  const auto r = remat::rematerialize_best(facts, {order}, options);
  REQUIRE(r.plan.nodes.size() == 1);
  CHECK(r.plan.nodes[0].name == "Recomputed/f1");
  CHECK(r.extra_flops == 1);
  CHECK(r.planned_peak == 18);
  CHECK(r.method == "eviction, idle weight 0, only bytes lacking");
  CHECK(rw::check_plan(facts, r.plan).empty());
  remat::remat_options keeping = options;  // the local search's move
  keeping.may_recompute = [](std::size_t v) { return v != 2; };
  CHECK(remat::rematerialize(facts, order, keeping).extra_flops == 1);
  const auto h = rw::apply(facts, r.plan);
  std::vector<std::size_t> steps;
  for (const auto& ref : r.order) steps.push_back(ref.added ? facts.size() + ref.index : ref.index);
  CHECK(memopt::liveness(h, steps).peak_bytes == 18);
}

namespace {

/// The order's names, copies by their own.
std::vector<std::string> steps_of(const rw::graph_facts& facts, const remat::remat_result& r) {
  std::vector<std::string> names;
  for (const auto& ref : r.order) names.push_back(ref.added ? r.plan.nodes[ref.index].name : facts.name[ref.index]);
  return names;
}

/// r passes the validator and fits `budget`: its order's liveness peak is
/// at most the planned one, which fits.
void check_runs(const rw::graph_facts& facts, const remat::remat_result& r, std::uint64_t budget) {
  CHECK(rw::check_plan(facts, r.plan).empty());
  const auto h = rw::apply(facts, r.plan);
  std::vector<std::size_t> steps;
  for (const auto& ref : r.order) steps.push_back(ref.added ? facts.size() + ref.index : ref.index);
  CHECK(memopt::liveness(h, steps).peak_bytes <= r.planned_peak);
  CHECK(r.planned_peak <= budget);
}

}  // namespace

TEST_CASE("remat: a retained vertex keeps a later rebuild short, and the local search finds it") {
  // Program order peaks at 23 bytes at b2 (x f1 b3 b4 b2); the budget is 22.
  // By then f3 and loss, which b4 reads, are gone, and f2 with them: the
  // greedy rule drops b4 and rebuilds f2, f3, f4, loss and b4 for b1 (46
  // flops). Keeping f2 and loss (a byte each) past their last reads makes
  // the rebuild f3 and b4 alone: 9 flops, the optimum
  // (tests/support/fewest_extra_flops.hpp).
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "retain", "nodes": [
    {"name": "x", "op": "input", "outputs": [1]},
    {"name": "f1", "op": "layer", "outputs": [5], "flops": 17, "inputs": ["x:0"]},
    {"name": "f2", "op": "layer", "outputs": [1], "flops": 17, "inputs": ["f1:0"]},
    {"name": "f3", "op": "layer", "outputs": [4], "flops": 9, "inputs": ["f2:0"]},
    {"name": "f4", "op": "layer", "outputs": [5], "flops": 20, "inputs": ["f3:0", "f1:0"]},
    {"name": "loss", "op": "loss", "outputs": [1], "inputs": ["f4:0"]},
    {"name": "b4", "op": "grad", "outputs": [4], "inputs": ["f3:0", "f1:0", "loss:0"]},
    {"name": "b3", "op": "grad", "outputs": [7], "inputs": ["f2:0", "b4:0"]},
    {"name": "b2", "op": "grad", "outputs": [6], "inputs": ["f1:0", "b3:0"]},
    {"name": "b1", "op": "grad", "outputs": [1], "inputs": ["x:0", "b2:0", "b4:0"]}], "outputs": ["b1:0"]})");
  const auto facts = rw::read_facts(g);
  const auto order = program(facts.size());
  const remat::remat_options options{.budget = 22};
  const auto greedy = remat::rematerialize(facts, order, options);
  CHECK(greedy.extra_flops == 46);
  CHECK(greedy.plan.nodes.size() == 5);

  remat::remat_options retaining = options;
  retaining.retain = [](std::size_t v) { return v == 2 || v == 5; };  // f2, loss
  const auto retained = remat::rematerialize(facts, order, retaining);
  CHECK(retained.extra_flops == 9);
  CHECK(retained.planned_peak == 22);
  CHECK(steps_of(facts, retained) == std::vector<std::string>{"x", "f1", "f2", "f3", "f4", "loss", "b4", "b3", "b2",
                                                               "Recomputed/f3", "Recomputed/b4", "b1"});
  check_runs(facts, retained, 22);

  const auto r = remat::rematerialize_best(facts, {order}, options);
  CHECK(r.extra_flops == 9);
  CHECK(r.method == "eviction, local search (1 move), pruned");
  check_runs(facts, r, 22);
}

TEST_CASE("remat: a vertex kept from drops until a later step is rebuilt once, not twice") {
  // Budget 18. The greedy rule drops f2 at f5, then f1 at loss (its score
  // is lower than f4's), so f1 is rebuilt for f2's rebuild at b3, dropped
  // again there and rebuilt for b2: 17 + 9 + 17 = 43 flops. Kept until b3,
  // f1 stays while f4 goes (6 flops): 9 + 6 + 17 = 32, the optimum.
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "defer", "nodes": [
    {"name": "x", "op": "input", "outputs": [1]},
    {"name": "f1", "op": "layer", "outputs": [4], "flops": 17, "inputs": ["x:0"]},
    {"name": "f2", "op": "layer", "outputs": [7], "flops": 9, "inputs": ["f1:0"]},
    {"name": "f3", "op": "layer", "outputs": [6], "flops": 10, "inputs": ["f2:0"]},
    {"name": "f4", "op": "layer", "outputs": [3], "flops": 6, "inputs": ["f3:0"]},
    {"name": "f5", "op": "layer", "outputs": [4], "flops": 2, "inputs": ["f4:0", "f3:0"]},
    {"name": "loss", "op": "loss", "outputs": [1], "inputs": ["f5:0"]},
    {"name": "b5", "op": "grad", "outputs": [1], "inputs": ["f4:0", "f3:0", "loss:0"]},
    {"name": "b4", "op": "grad", "outputs": [3], "inputs": ["f3:0", "b5:0"]},
    {"name": "b3", "op": "grad", "outputs": [6], "inputs": ["f2:0", "b4:0", "b5:0"]},
    {"name": "b2", "op": "grad", "outputs": [6], "inputs": ["f1:0", "b3:0"]},
    {"name": "b1", "op": "grad", "outputs": [4], "inputs": ["x:0", "b2:0"]}], "outputs": ["b1:0"]})");
  const auto facts = rw::read_facts(g);
  const auto order = program(facts.size());
  const remat::remat_options options{.budget = 18};
  const auto greedy = remat::rematerialize(facts, order, options);
  CHECK(greedy.extra_flops == 43);
  CHECK(steps_of(facts, greedy) == std::vector<std::string>{"x", "f1", "f2", "f3", "f4", "f5", "loss", "b5", "b4",
                                                             "Recomputed/f1", "Recomputed/f2", "b3",
                                                             "Recomputed_1/f1", "b2", "b1"});

  remat::remat_options deferring = options;
  deferring.kept_until = [](std::size_t v) { return v == 1 ? std::size_t{9} : remat::no_vertex; };  // f1 until b3
  const auto deferred = remat::rematerialize(facts, order, deferring);
  CHECK(deferred.extra_flops == 32);
  CHECK(deferred.planned_peak == 18);
  CHECK(steps_of(facts, deferred) == std::vector<std::string>{"x", "f1", "f2", "f3", "f4", "f5", "loss",
                                                               "Recomputed/f4", "b5", "b4", "Recomputed/f2", "b3",
                                                               "Recomputed/f1", "b2", "b1"});
  check_runs(facts, deferred, 18);

  // rematerialize_best finds it too, here first by the rule at idle weight 0.5.
  const auto r = remat::rematerialize_best(facts, {order}, options);
  CHECK(r.extra_flops == 32);
  CHECK(r.method == "eviction, idle weight 0.5");
  CHECK(r.idle_weight == 0.5);
  check_runs(facts, r, 18);
}

TEST_CASE("remat: an input the step has not yet taken may go while another is rebuilt") {
  // Budget 28. At the loss (39 bytes) f2 and f3 go (1 and 2 flops). At b4,
  // f3 is rebuilt from f2, rebuilt from f1 and x (27 bytes with b5 and b6):
  // f3 would pass the budget unless f1, which b4 reads too, goes meanwhile;
  // it is rebuilt from x (10) once f2 has gone, and f2 again for b3 (1):
  // 14 flops, the optimum. Were b4's inputs out of reach, the rule would
  // drop b6 and rebuild it through f4, f5, f6 and the loss: 41.
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "input", "nodes": [
    {"name": "x", "op": "input", "outputs": [7]},
    {"name": "f1", "op": "layer", "outputs": [6], "flops": 10, "inputs": ["x:0"]},
    {"name": "f2", "op": "layer", "outputs": [6], "flops": 1, "inputs": ["f1:0", "x:0"]},
    {"name": "f3", "op": "layer", "outputs": [6], "flops": 2, "inputs": ["f2:0", "x:0"]},
    {"name": "f4", "op": "layer", "outputs": [4], "flops": 20, "inputs": ["f3:0", "f1:0"]},
    {"name": "f5", "op": "layer", "outputs": [4], "flops": 20, "inputs": ["f4:0"]},
    {"name": "f6", "op": "layer", "outputs": [5], "flops": 19, "inputs": ["f5:0", "f1:0"]},
    {"name": "loss", "op": "loss", "outputs": [1], "inputs": ["f6:0"]},
    {"name": "b6", "op": "grad", "outputs": [2], "inputs": ["f5:0", "f1:0", "loss:0"]},
    {"name": "b5", "op": "grad", "outputs": [6], "inputs": ["f4:0", "b6:0"]},
    {"name": "b4", "op": "grad", "outputs": [1], "inputs": ["f3:0", "f1:0", "b5:0"]},
    {"name": "b3", "op": "grad", "outputs": [5], "inputs": ["f2:0", "x:0", "b4:0"]},
    {"name": "b2", "op": "grad", "outputs": [1], "inputs": ["f1:0", "x:0", "b3:0"]},
    {"name": "b1", "op": "grad", "outputs": [4], "inputs": ["x:0", "b2:0", "b4:0", "b6:0"]}], "outputs": ["b1:0"]})");
  const auto facts = rw::read_facts(g);
  const auto order = program(facts.size());
  const auto r = remat::rematerialize(facts, order, {.budget = 28});
  CHECK(r.extra_flops == 14);
  CHECK(r.planned_peak == 28);
  CHECK(steps_of(facts, r) == std::vector<std::string>{"x", "f1", "f2", "f3", "f4", "f5", "f6", "loss", "b6", "b5",
                                                       "Recomputed/f2", "Recomputed/f3", "Recomputed/f1", "b4",
                                                       "Recomputed_1/f2", "b3", "b2", "b1"});
  check_runs(facts, r, 28);
}

TEST_CASE("remat: a dropped residual chain is rebuilt deepest input first, as Sethi and Ullman order it") {
  // Three residual blocks t_k = add(n_k, t_k-1), n_k = bn(c_k); the
  // convolutions c_k (100 flops) stay: only the n and t may be recomputed.
  // At g, x, c1..c3 (8 bytes), t3, loss and g's 6 bytes make 17: t3 goes (the
  // other n and t went at their last reads). h3 reads it again: rebuilt in
  // operand order, n3, n2 and n1 would be made before any add, holding 8 + gs
  // + n3 + n2 + n1 + t1 = 17. The deeper input first (t2 before n3, t1 before
  // n2) holds at most three of them: 15, the budget, for 6 flops, the least a
  // plan can add (t3 cannot stay at g, and its rebuild needs all six).
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "residual", "nodes": [
    {"name": "x", "op": "input", "outputs": [2]},
    {"name": "c1", "op": "conv", "outputs": [2], "flops": 100, "inputs": ["x:0"]},
    {"name": "n1", "op": "bn", "outputs": [2], "flops": 1, "inputs": ["c1:0"]},
    {"name": "t1", "op": "add", "outputs": [2], "flops": 1, "inputs": ["n1:0", "x:0"]},
    {"name": "c2", "op": "conv", "outputs": [2], "flops": 100, "inputs": ["t1:0"]},
    {"name": "n2", "op": "bn", "outputs": [2], "flops": 1, "inputs": ["c2:0"]},
    {"name": "t2", "op": "add", "outputs": [2], "flops": 1, "inputs": ["n2:0", "t1:0"]},
    {"name": "c3", "op": "conv", "outputs": [2], "flops": 100, "inputs": ["t2:0"]},
    {"name": "n3", "op": "bn", "outputs": [2], "flops": 1, "inputs": ["c3:0"]},
    {"name": "t3", "op": "add", "outputs": [2], "flops": 1, "inputs": ["n3:0", "t2:0"]},
    {"name": "loss", "op": "loss", "outputs": [1], "inputs": ["c3:0"]},
    {"name": "g", "op": "grad", "outputs": [6], "inputs": ["loss:0"]},
    {"name": "gs", "op": "grad", "outputs": [1], "inputs": ["g:0"]},
    {"name": "h3", "op": "grad", "outputs": [2], "inputs": ["gs:0", "t3:0"]},
    {"name": "h2", "op": "grad", "outputs": [2], "inputs": ["h3:0", "c3:0"]},
    {"name": "h1", "op": "grad", "outputs": [2], "inputs": ["h2:0", "c2:0"]},
    {"name": "h0", "op": "grad", "outputs": [2], "inputs": ["h1:0", "c1:0", "x:0"]}], "outputs": ["h0:0"]})");
  const auto facts = rw::read_facts(g);
  remat::remat_options options{.budget = 15};
  options.may_recompute = [&](std::size_t v) { return facts.op[v] == "bn" || facts.op[v] == "add"; };
  const auto r = remat::rematerialize(facts, program(facts.size()), options);
  CHECK(r.extra_flops == 6);
  CHECK(r.planned_peak == 15);
  CHECK(steps_of(facts, r) == std::vector<std::string>{"x", "c1", "n1", "t1", "c2", "n2", "t2", "c3", "n3", "t3", "loss", "g", "gs",
                                                       "Recomputed/n1", "Recomputed/t1", "Recomputed/n2", "Recomputed/t2",
                                                       "Recomputed/n3", "Recomputed/t3", "h3", "h2", "h1", "h0"});
  check_runs(facts, r, 15);
}

TEST_CASE("remat: a rule that counts only the bytes a step lacks drops less") {
  // Budget 36; b6 needs 37 bytes: one is lacking. By flops per byte f1
  // goes ((6 + 1) / 3 against f3's (3 + 1) / 1), and so at idle weight 1
  // (read last, at b2): 6 flops. Counting the one byte lacking, f3 costs 4
  // against f1's 7: f3 goes and is rebuilt from f2 for b4, 3 flops, the optimum.
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "lacking", "nodes": [
    {"name": "x", "op": "input", "outputs": [6]},
    {"name": "f1", "op": "layer", "outputs": [3], "flops": 6, "inputs": ["x:0"]},
    {"name": "f2", "op": "layer", "outputs": [5], "flops": 17, "inputs": ["f1:0"]},
    {"name": "f3", "op": "layer", "outputs": [1], "flops": 3, "inputs": ["f2:0"]},
    {"name": "f4", "op": "layer", "outputs": [6], "flops": 4, "inputs": ["f3:0", "x:0"]},
    {"name": "f5", "op": "layer", "outputs": [7], "flops": 4, "inputs": ["f4:0"]},
    {"name": "f6", "op": "layer", "outputs": [6], "flops": 8, "inputs": ["f5:0", "f4:0"]},
    {"name": "loss", "op": "loss", "outputs": [1], "inputs": ["f6:0"]},
    {"name": "b6", "op": "grad", "outputs": [8], "inputs": ["f5:0", "f4:0", "loss:0"]},
    {"name": "b5", "op": "grad", "outputs": [6], "inputs": ["f4:0", "b6:0"]},
    {"name": "b4", "op": "grad", "outputs": [6], "inputs": ["f3:0", "x:0", "b5:0", "b6:0"]},
    {"name": "b3", "op": "grad", "outputs": [4], "inputs": ["f2:0", "b4:0"]},
    {"name": "b2", "op": "grad", "outputs": [3], "inputs": ["f1:0", "b3:0"]},
    {"name": "b1", "op": "grad", "outputs": [4], "inputs": ["x:0", "b2:0"]}], "outputs": ["b1:0"]})");
  const auto facts = rw::read_facts(g);
  const auto order = program(facts.size());
  const auto by_idleness = remat::rematerialize(facts, order, {.budget = 36});
  CHECK(by_idleness.extra_flops == 6);
  CHECK(steps_of(facts, by_idleness)[12] == "Recomputed/f1");
  CHECK(remat::rematerialize(facts, order, {.budget = 36, .idle_weight = 0}).extra_flops == 6);
  const auto r = remat::rematerialize(facts, order, {.budget = 36, .idle_weight = 0, .only_bytes_lacking = true});
  CHECK(r.extra_flops == 3);
  CHECK(r.planned_peak == 36);
  CHECK(steps_of(facts, r) == std::vector<std::string>{"x", "f1", "f2", "f3", "f4", "f5", "f6", "loss", "b6", "b5",
                                                       "Recomputed/f3", "b4", "b3", "b2", "b1"});
  check_runs(facts, r, 36);
  CHECK(r.method == "eviction, idle weight 0, only bytes lacking");
  CHECK(remat::rematerialize_best(facts, {order}, {.budget = 36}).method == r.method);
}

TEST_CASE("remat: what a dropped gradient is rebuilt from is retained, and the local search finds it in one move") {
  // Budget 26. At b2 (x f1 b3 b2 and b5, which b1 reads: 28 bytes) b5 must
  // go, but what it is made from (f4, the loss) went after its last read:
  // the best greedy plan costs 26 flops. Retaining f4 and the loss (a byte
  // each) makes b5's rebuild free: f1 twice and f2 once, 12 flops, the
  // optimum. Retaining either alone costs 26 or more, so the move retains
  // all that b5 reads at once.
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "retain inputs", "nodes": [
    {"name": "x", "op": "input", "outputs": [3]},
    {"name": "f1", "op": "layer", "outputs": [8], "flops": 4, "inputs": ["x:0"]},
    {"name": "f2", "op": "layer", "outputs": [5], "flops": 4, "inputs": ["f1:0", "x:0"]},
    {"name": "f3", "op": "layer", "outputs": [5], "flops": 19, "inputs": ["f2:0"]},
    {"name": "f4", "op": "layer", "outputs": [1], "flops": 19, "inputs": ["f3:0"]},
    {"name": "f5", "op": "layer", "outputs": [2], "flops": 18, "inputs": ["f4:0", "f1:0"]},
    {"name": "loss", "op": "loss", "outputs": [1], "inputs": ["f5:0"]},
    {"name": "b5", "op": "grad", "outputs": [5], "inputs": ["f4:0", "f1:0", "loss:0"]},
    {"name": "b4", "op": "grad", "outputs": [4], "inputs": ["f3:0", "b5:0"]},
    {"name": "b3", "op": "grad", "outputs": [6], "inputs": ["f2:0", "b4:0"]},
    {"name": "b2", "op": "grad", "outputs": [6], "inputs": ["f1:0", "x:0", "b3:0"]},
    {"name": "b1", "op": "grad", "outputs": [7], "inputs": ["x:0", "b2:0", "b5:0"]}], "outputs": ["b1:0"]})");
  const auto facts = rw::read_facts(g);
  const auto order = program(facts.size());
  const auto greedy = remat::rematerialize_best(facts, {order}, {.budget = 26, .local_search_trials = 0});
  CHECK(greedy.extra_flops == 26);
  remat::remat_options retaining{.budget = 26};
  retaining.retain = [](std::size_t v) { return v == 4 || v == 6; };  // f4, loss
  const auto retained = remat::rematerialize(facts, order, retaining);
  CHECK(retained.extra_flops == 12);
  CHECK(steps_of(facts, retained) == std::vector<std::string>{"x", "f1", "f2", "f3", "f4", "f5", "loss", "b5", "b4",
                                                               "Recomputed/f1", "Recomputed/f2", "b3", "Recomputed_1/f1",
                                                               "b2", "Recomputed/b5", "b1"});
  check_runs(facts, retained, 26);
  const auto r = remat::rematerialize_best(facts, {order}, {.budget = 26});
  CHECK(r.extra_flops == 12);
  CHECK(r.method == "eviction, local search (1 move)");
  check_runs(facts, r, 26);
}

TEST_CASE("remat: random draws and graph outputs made before a step stay live across it") {
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "dropout", "nodes": [
    {"name": "x", "op": "input", "outputs": [100]},
    {"name": "f1", "op": "layer", "outputs": [50], "inputs": ["x:0"], "flops": 10},
    {"name": "mask", "op": "bernoulli", "outputs": [300], "inputs": ["f1:0"], "flops": 1},
    {"name": "f2", "op": "mul", "outputs": [50], "inputs": ["f1:0", "mask:0"], "flops": 1},
    {"name": "big", "op": "layer", "outputs": [400], "inputs": ["f2:0"], "flops": 10},
    {"name": "loss", "op": "loss", "outputs": [10], "inputs": ["big:0"]},
    {"name": "gl", "op": "grad", "outputs": [10], "inputs": ["loss:0"]},
    {"name": "b2", "op": "grad", "outputs": [100], "inputs": ["mask:0", "gl:0"]},
    {"name": "b1", "op": "grad", "outputs": [100], "inputs": ["x:0", "b2:0"]}],
    "outputs": ["loss:0", "b1:0"]})");
  const auto facts = rw::read_facts(g);
  // At big: f2 and big, the mask (read by b2) and x (read by b1).
  auto floor = remat::rematerialisation_floor(facts);
  CHECK(floor.bytes == 850);
  CHECK(facts.name[floor.vertex] == "big");
  std::vector<std::string> names;
  for (const auto& t : floor.storages) names.push_back(facts.name[t.vertex]);
  CHECK(names == std::vector<std::string>{"big", "mask", "x", "f2"});
  // Replaying the generator makes the mask recomputable; at b2 the loss, an
  // output made before it, stays: 520 there, 550 at big.
  remat::remat_options replay;
  replay.unrepeatable_ops.clear();
  floor = remat::rematerialisation_floor(facts, replay);
  CHECK(floor.bytes == 550);
  CHECK(facts.name[floor.vertex] == "big");
  CHECK_THROWS_AS((void)remat::rematerialisation_floor(facts, {.feed = {9}}), rw::bad_plan_error);
}

TEST_CASE("remat: a copy of an in-place op writes into its input's copy, declared a view") {
  // conv -> batch norm -> relu_ (in place over the batch norm's output); the
  // backward reads the relu's output and the conv's. At 400 bytes the planner
  // drops the relu's storage and the conv's output after the forward and
  // remakes them: the relu_ copy writes over the batch norm copy, as relu_
  // does, instead of taking 100 more bytes.
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "bn_relu_inplace", "nodes": [
    {"name": "x", "op": "input", "outputs": [100]},
    {"name": "c1", "op": "convolution", "outputs": [100], "inputs": ["x:0"], "flops": 1000},
    {"name": "b1", "op": "native_batch_norm", "outputs": [100], "inputs": ["c1:0"], "flops": 10},
    {"name": "r1", "op": "relu_", "outputs": [100], "inputs": ["b1:0"], "flops": 1, "attrs": {"alias": "b1:0", "inplace": true}},
    {"name": "c2", "op": "convolution", "outputs": [100], "inputs": ["r1:0"], "flops": 1000},
    {"name": "loss", "op": "sum", "outputs": [100], "inputs": ["c2:0"]},
    {"name": "g_c2", "op": "convolution_backward", "outputs": [100], "inputs": ["loss:0", "r1:0"]},
    {"name": "g_r1", "op": "threshold_backward", "outputs": [100], "inputs": ["g_c2:0", "r1:0"]},
    {"name": "g_b1", "op": "native_batch_norm_backward", "outputs": [100], "inputs": ["g_r1:0", "c1:0"]},
    {"name": "g_c1", "op": "convolution_backward", "outputs": [10], "inputs": ["g_b1:0", "x:0"]}],
    "outputs": ["g_c1:0"]})");
  const auto facts = rw::read_facts(g);
  CHECK(remat::rematerialisation_floor(facts).bytes == 400);  // at g_c2: loss, r1, g_c2 and x
  const auto r = remat::rematerialize(facts, program(facts.size()), {.budget = 400});
  REQUIRE(rw::check_plan(facts, r.plan).empty());
  CHECK(r.planned_peak == 400);
  CHECK(r.extra_flops == 1011);  // b1 and r1 once, c1 once
  const auto relu = std::ranges::find_if(r.plan.nodes, [](const rw::added_node& n) { return n.name == "Recomputed/r1"; });
  REQUIRE(relu != r.plan.nodes.end());
  CHECK(relu->outputs[0].alias_operand == std::optional<std::size_t>(0));
  CHECK_FALSE(relu->outputs[0].in_place);
  const auto h = rw::apply(facts, r.plan);
  std::vector<std::size_t> order;
  for (const auto& ref : r.order) order.push_back(ref.added ? facts.size() + ref.index : ref.index);
  REQUIRE(memopt::is_topological_order(h, order));
  CHECK(memopt::liveness(h, order).peak_bytes == 400);
}

TEST_CASE("remat: a copy of empty_like reads nothing, so a replayed mask is cheap to remake") {
  // h -> m = empty_like(h) -> d = bernoulli_(m) in place -> y = mul(h, d);
  // the backward reads the mask d last, and h is gone after y (x, an input,
  // with it). At 300 bytes the loss's step (310) needs the mask dropped: a
  // copy of m needs only h's shape, so d comes back for 2 flops (m and d).
  // Were m's copy to read h, h could not come back (x is gone), d could not
  // go, and nothing would fit.
  const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "dropout_mask", "nodes": [
    {"name": "x", "op": "input", "outputs": [100]},
    {"name": "h", "op": "layer", "outputs": [100], "inputs": ["x:0"], "flops": 1000},
    {"name": "m", "op": "empty_like", "outputs": [100], "inputs": ["h:0"], "flops": 1},
    {"name": "d", "op": "bernoulli_", "outputs": [100], "inputs": ["m:0"], "flops": 1, "attrs": {"alias": "m:0", "inplace": true}},
    {"name": "y", "op": "mul", "outputs": [100], "inputs": ["h:0", "d:0"], "flops": 1},
    {"name": "z", "op": "layer", "outputs": [100], "inputs": ["y:0"], "flops": 1000},
    {"name": "loss", "op": "sum", "outputs": [10], "inputs": ["z:0"]},
    {"name": "gz", "op": "grad", "outputs": [100], "inputs": ["loss:0", "y:0"]},
    {"name": "gy", "op": "grad", "outputs": [100], "inputs": ["gz:0"]},
    {"name": "gh", "op": "mul_grad", "outputs": [100], "inputs": ["gy:0", "d:0"]}], "outputs": ["gh:0"]})");
  auto facts = rw::read_facts(g);
  CHECK(facts.shape_only == std::vector<bool>{false, false, true, false, false, false, false, false, false, false});
  remat::remat_options replay{.budget = 300};
  replay.unrepeatable_ops.clear();
  const auto r = remat::rematerialize(facts, program(facts.size()), replay);
  CHECK(r.extra_flops == 2);
  CHECK(r.planned_peak == 300);
  CHECK(steps_of(facts, r) == std::vector<std::string>{"x", "h", "m", "d", "y", "z", "loss", "gz", "gy", "Recomputed/m",
                                                       "Recomputed/d", "gh"});
  REQUIRE(r.plan.nodes.size() == 2);
  CHECK(r.plan.nodes[0].inputs.empty());
  check_runs(facts, r, 300);
  // The same plan run as its sequence of vertices (runs.hpp) reads nothing for m's copy either.
  const auto again = remat::plan_of_runs(facts, remat::runs_of(r));
  CHECK(again.plan.nodes[0].inputs.empty());
  CHECK(again.planned_peak == 300);
  // A copy reading nothing is refused for an op that reads values.
  auto reads_values = r.plan;
  reads_values.nodes[1].inputs.clear();
  const auto faults = rw::check_plan(facts, reads_values);
  CHECK(std::ranges::find(faults, "added node 'Recomputed/d' is not 'd' on the same input values") != faults.end());
  // The cost floor counts m's copy the same way: a plan fits, for at least a little.
  const double floor = remat::rematerialisation_cost_floor(facts, 300, replay).extra_flops;
  CHECK(floor > 0);
  CHECK(floor <= 2);
  // Without the shape-only rule, nothing fits, and the cost floor knows it.
  facts.shape_only.clear();
  CHECK(remat::rematerialize(facts, program(facts.size()), replay).planned_peak == 310);
  CHECK(remat::rematerialisation_cost_floor(facts, 300, replay).extra_flops == std::numeric_limits<double>::infinity());
}
