// The rewrite family's plan, validator and apply, and the recomputation pass
// on small graphs worked out by hand against the memory optimizer's rules:
// exact names, inputs and control edges.
#include "edges.hpp"

#include <memopt/io/graph_file.hpp>
#include <memopt/rewrite.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace rw = memopt::rewrite;
using memopt::testing::added_names;
using memopt::testing::inputs_of;

namespace {

/// x -> conv -> bn -> relu -> conv2 -> loss; the backward reads relu's and bn's outputs.
const std::string bn_relu_train = MEMOPT_DATA_DIR "/rewrite/bn_relu_train.json";

memopt::io::file_graph graph_of(const std::string& nodes, const std::string& outputs = "[]") {
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "t", "nodes": )" + nodes +
                                 R"(, "outputs": )" + outputs + "}");
}

/// The hint and the backward phase as memopt-graph/1 marks them.
rw::recompute_options options_for(const memopt::io::file_graph& g, rw::recompute_mode mode) {
  rw::recompute_options o;
  o.mode = mode;
  o.has_hint = [&g](std::size_t v) { return g[v].attrs.is_object() && g[v].attrs.contains("recompute_hint"); };
  return o;
}


std::size_t vertex_named(const rw::rewritten_graph& g, const std::string& name) {
  for (std::size_t v = 0; v < num_vertices(g); ++v) {
    if (g[v].name == name) return v;
  }
  FAIL("no node " << name);
  return 0;
}

/// a -> b (hinted) -> c -> gradients/d; gradients/e reads d and b; gradients/f reads e and a.
const std::string hinted = R"([
  {"name": "a", "op": "VariableV2", "outputs": [24], "persistent": true},
  {"name": "b", "op": "Identity", "outputs": [24], "inputs": ["a:0"], "attrs": {"recompute_hint": 0}},
  {"name": "c", "op": "Identity", "outputs": [24], "inputs": ["b:0"]},
  {"name": "gradients/d", "op": "AddN", "outputs": [24], "inputs": ["c:0"]},
  {"name": "gradients/e", "op": "AddN", "outputs": [24], "inputs": ["gradients/d:0", "b:0"]},
  {"name": "gradients/f", "op": "AddN", "outputs": [24], "inputs": ["gradients/e:0", "a:0"]}])";

}  // namespace

TEST_CASE("recompute, manual: a hinted node copied for its gradient target, with its trigger") {
  const auto g = graph_of(hinted, R"(["gradients/f:0"])");
  const auto facts = rw::read_facts(g);
  const auto plan = rw::recompute(facts, options_for(g, rw::recompute_mode::manual));
  CHECK(rw::check_plan(facts, plan).empty());
  REQUIRE(plan.nodes.size() == 2);
  CHECK(plan.nodes[0].name == "RecomputeTrigger/b");
  CHECK(plan.nodes[0].op == "NoOp");
  CHECK(plan.nodes[1].name == "Recomputed/b");
  CHECK(plan.nodes[1].op == "Identity");
  const auto h = rw::apply(facts, plan);
  CHECK(inputs_of(h, vertex_named(h, "RecomputeTrigger/b")) == std::vector<std::string>{"^gradients/d"});
  CHECK(inputs_of(h, vertex_named(h, "Recomputed/b")) == std::vector<std::string>{"a:0", "^RecomputeTrigger/b"});
  CHECK(inputs_of(h, vertex_named(h, "gradients/e")) == std::vector<std::string>{"gradients/d:0", "Recomputed/b:0"});
  CHECK(inputs_of(h, vertex_named(h, "c")) == std::vector<std::string>{"b:0"});  // not a target: unchanged
  CHECK(num_vertices(g) == 6);  // the input graph is untouched
}

TEST_CASE("recompute: a custom target scope with two hinted inputs, each its own group") {
  const auto g = graph_of(R"([
    {"name": "x", "op": "Placeholder", "outputs": [8]},
    {"name": "p", "op": "Square", "outputs": [8], "inputs": ["x:0"], "attrs": {"recompute_hint": 0}},
    {"name": "q", "op": "Neg", "outputs": [8], "inputs": ["x:0"], "attrs": {"recompute_hint": 0}},
    {"name": "mid", "op": "MatMul", "outputs": [8], "inputs": ["p:0", "q:0"]},
    {"name": "back/mid", "op": "MatMul", "outputs": [8], "inputs": ["mid:0", "p:0"]},
    {"name": "back/end", "op": "AddN", "outputs": [8], "inputs": ["back/mid:0", "q:0"]}])");
  auto options = options_for(g, rw::recompute_mode::manual);
  options.target_scope = "back/";
  const auto facts = rw::read_facts(g);
  const auto plan = rw::recompute(facts, options);
  CHECK(rw::check_plan(facts, plan).empty());
  CHECK(added_names(plan) == std::vector<std::string>{"RecomputeTrigger/p", "Recomputed/p", "RecomputeTrigger/q", "Recomputed/q"});
  const auto h = rw::apply(facts, plan);
  CHECK(inputs_of(h, vertex_named(h, "RecomputeTrigger/p")) == std::vector<std::string>{"^mid"});
  CHECK(inputs_of(h, vertex_named(h, "RecomputeTrigger/q")) == std::vector<std::string>{"^back/mid"});
  CHECK(inputs_of(h, vertex_named(h, "back/mid")) == std::vector<std::string>{"mid:0", "Recomputed/p:0"});
  CHECK(inputs_of(h, vertex_named(h, "back/end")) == std::vector<std::string>{"back/mid:0", "Recomputed/q:0"});
  // Under the default scope nothing is a target: nothing to do.
  CHECK(rw::recompute(facts, options_for(g, rw::recompute_mode::manual)).empty());
}


TEST_CASE("recompute, heuristic: the cheap batch norm and ReLU are copied, the convolution is not") {
  const auto g = memopt::io::read_graph(bn_relu_train);
  const auto facts = rw::read_facts(g);
  const auto plan = rw::recompute(facts, options_for(g, rw::recompute_mode::heuristic));
  CHECK(rw::check_plan(facts, plan).empty());
  // One group {bn, relu}: triggers by earliest target (relu feeds gradients/conv2 first), then copies.
  CHECK(added_names(plan) == std::vector<std::string>{"RecomputeTrigger/relu", "RecomputeTrigger/bn", "Recomputed/bn", "Recomputed/relu"});
  const auto h = rw::apply(facts, plan);
  // The targets' other inputs, topologically: conv, loss, gradients/conv2, gradients/relu; the first
  // trigger takes those before its earliest target (gradients/conv2), the second none.
  CHECK(inputs_of(h, vertex_named(h, "RecomputeTrigger/relu")) == std::vector<std::string>{"^conv", "^loss"});
  CHECK(inputs_of(h, vertex_named(h, "RecomputeTrigger/bn")) == std::vector<std::string>{"^RecomputeTrigger/relu"});
  CHECK(inputs_of(h, vertex_named(h, "Recomputed/bn")) == std::vector<std::string>{"conv:0", "^RecomputeTrigger/bn"});
  CHECK(inputs_of(h, vertex_named(h, "Recomputed/relu")) == std::vector<std::string>{"Recomputed/bn:0", "^RecomputeTrigger/relu"});
  CHECK(inputs_of(h, vertex_named(h, "gradients/conv2")) == std::vector<std::string>{"loss:0", "Recomputed/relu:0"});
  CHECK(inputs_of(h, vertex_named(h, "gradients/relu")) == std::vector<std::string>{"gradients/conv2:0", "Recomputed/relu:0"});
  CHECK(inputs_of(h, vertex_named(h, "gradients/bn")) ==
        std::vector<std::string>{"gradients/relu:0", "conv:0", "Recomputed/bn:1", "Recomputed/bn:2"});
  const auto report = rw::evaluate(facts, plan);
  CHECK(report.extra_flops == 60);
  CHECK(report.nodes_added == 4);
  CHECK(report.peak_after == memopt::liveness(report.graph, report.order_after).peak_bytes);
}

TEST_CASE("recompute: a fed node is never recomputed") {
  const auto g = memopt::io::read_graph(bn_relu_train);
  const auto facts = rw::read_facts(g);
  auto options = options_for(g, rw::recompute_mode::heuristic);
  options.feed = {4};  // relu
  const auto plan = rw::recompute(facts, options);
  CHECK(std::ranges::none_of(plan.nodes, [](const auto& n) { return n.name == "Recomputed/relu"; }));
  CHECK(std::ranges::any_of(plan.nodes, [](const auto& n) { return n.name == "Recomputed/bn"; }));
}

TEST_CASE("check_plan refuses what would change the program, and apply refuses such a plan") {
  const auto g = graph_of(hinted, R"(["gradients/f:0"])");
  const auto facts = rw::read_facts(g);
  const auto good = rw::recompute(facts, options_for(g, rw::recompute_mode::manual));
  const auto faults_of = [&](const rw::rewrite_plan& p) {
    const auto faults = rw::check_plan(facts, p);
    return faults.empty() ? std::string() : faults.front();
  };
  auto wrong_input = good;
  wrong_input.nodes[1].inputs[0] = {rw::original(2), 0};  // Recomputed/b reading c, not a
  CHECK(faults_of(wrong_input) == "added node 'Recomputed/b' is not 'b' on the same input values");
  auto wrong_value = good;
  wrong_value.redirects[0].source = {rw::original(2), 0};  // gradients/e reading c for b
  CHECK(faults_of(wrong_value) == "data input 1 of 'gradients/e' would read 'c', which does not hold its value");
  auto taken = good;
  taken.nodes[1].name = "c";
  CHECK(faults_of(taken) == "added node 'c': the name is taken");
  auto cycle = good;
  cycle.controls.push_back({rw::original(4), rw::added(0)});  // gradients/e before the trigger it waits on
  CHECK(faults_of(cycle).starts_with("the plan makes a cycle"));
  auto missing = good;
  missing.redirects.push_back({9, 0, {rw::original(0), 0}});
  CHECK(faults_of(missing) == "a redirect names data input 0 of vertex 9, which it lacks");
  CHECK_THROWS_AS((void)rw::apply(facts, cycle), rw::bad_plan_error);
}

namespace {

/// Two recompute groups, one that helps and one that hurts (peaks worked out
/// by hand; every order below is the best, sizes in bytes):
/// x(10) -> p = MatMul(x)(60) -> q = Cast(p)(5); a = Relu(x)(100);
/// m = MatMul(a, p)(10) -> big(200) -> y(10); gradients/g1 reads y and a,
/// gradients/g2 reads g1 and q. The backward keeps a (100) and q (5) through
/// big's step: 100 + 5 + m 10 + big 200 = 315.
/// - a's group (Recomputed/a reads x): x (10) stays instead of a:
///   10 + 5 + 10 + 200 = 225. It helps.
/// - q's group (Recomputed/q reads p): p (60) stays instead of q (5):
///   100 + 60 + 10 + 200 = 370. It hurts.
/// - both: 10 + 60 + 10 + 200 = 280, the seed's plan.
const std::string one_helps_one_hurts = MEMOPT_DATA_DIR "/rewrite/one_helps_one_hurts.json";

}  // namespace

TEST_CASE("prune_plan: of two recompute groups the one that hurts is dropped, the one that helps kept as the seed made it") {
  const auto g = memopt::io::read_graph(one_helps_one_hurts);
  const auto facts = rw::read_facts(g);
  const auto seed = rw::recompute(facts);
  REQUIRE(rw::check_plan(facts, seed).empty());
  const auto parts = rw::plan_parts(seed);
  REQUIRE(parts.size() == 2);
  const auto names_of = [&](const rw::plan_part& part) {
    std::vector<std::string> names;
    for (const std::size_t i : part.nodes) names.push_back(seed.nodes[i].name);
    return names;
  };
  const auto part_a = std::ranges::find_if(parts, [&](const auto& part) { return names_of(part).back() == "Recomputed/a"; });
  const auto part_q = std::ranges::find_if(parts, [&](const auto& part) { return names_of(part).back() == "Recomputed/q"; });
  REQUIRE(part_a != parts.end());
  REQUIRE(part_q != parts.end());
  CHECK(names_of(*part_a) == std::vector<std::string>{"RecomputeTrigger/a", "Recomputed/a"});
  CHECK(part_a->targets == std::vector<std::size_t>{7});  // gradients/g1
  CHECK(part_q->targets == std::vector<std::size_t>{8});  // gradients/g2
  CHECK(part_a->redirects.size() == 1);
  CHECK(part_q->redirects.size() == 1);

  const auto r = rw::prune_plan(facts, seed);
  CHECK(r.peak_before == 315);
  CHECK(r.peak_given == 280);
  CHECK(r.peak_after == 225);
  CHECK(r.evaluations == 4);  // the graph, the whole plan, then each group in turn
  CHECK(r.complete);
  REQUIRE(r.kept.size() == 1);
  REQUIRE(r.dropped.size() == 1);
  CHECK(names_of(r.kept[0]) == std::vector<std::string>{"RecomputeTrigger/a", "Recomputed/a"});
  CHECK(names_of(r.dropped[0]) == std::vector<std::string>{"RecomputeTrigger/q", "Recomputed/q"});
  CHECK(rw::check_plan(facts, r.plan).empty());
  CHECK(rw::evaluate(facts, r.plan).peak_after == 225);
  // The kept group is the seed's, node for node: names, ops, inputs, controls.
  REQUIRE(r.plan.nodes.size() == 2);
  const auto h = rw::apply(facts, r.plan);
  CHECK(inputs_of(h, vertex_named(h, "RecomputeTrigger/a")) == std::vector<std::string>{"^y"});
  CHECK(inputs_of(h, vertex_named(h, "Recomputed/a")) == std::vector<std::string>{"x:0", "^RecomputeTrigger/a"});
  CHECK(inputs_of(h, vertex_named(h, "gradients/g1")) == std::vector<std::string>{"y:0", "Recomputed/a:0"});
  CHECK(inputs_of(h, vertex_named(h, "gradients/g2")) == std::vector<std::string>{"gradients/g1:0", "q:0"});
  const auto whole = rw::apply(facts, seed);
  for (const char* name : {"RecomputeTrigger/a", "Recomputed/a", "gradients/g1"}) {
    CHECK(inputs_of(h, vertex_named(h, name)) == inputs_of(whole, vertex_named(whole, name)));
  }

  // Each group alone, as the comment above works them out.
  CHECK(rw::evaluate(facts, rw::plan_with_parts(seed, parts, {part_a == parts.begin(), part_a != parts.begin()})).peak_after == 225);
  CHECK(rw::evaluate(facts, rw::plan_with_parts(seed, parts, {part_q == parts.begin(), part_q != parts.begin()})).peak_after == 370);
}

TEST_CASE("prune_plan: a plan that helps nowhere comes back empty, one with nothing in it, as it was") {
  // Only q's group: it raises the peak from 315 to 370.
  const auto g = memopt::io::read_graph(one_helps_one_hurts);
  const auto facts = rw::read_facts(g);
  rw::recompute_options only_q;
  only_q.cheap_ops = {"Cast"};
  const auto seed = rw::recompute(facts, only_q);
  REQUIRE(seed.nodes.size() == 2);
  const auto r = rw::prune_plan(facts, seed);
  CHECK(r.peak_before == 315);
  CHECK(r.peak_given == 370);
  CHECK(r.peak_after == 315);
  CHECK(r.evaluations == 2);
  CHECK(r.plan.empty());
  CHECK(r.kept.empty());
  REQUIRE(r.dropped.size() == 1);
  CHECK(r.dropped[0].targets == std::vector<std::size_t>{8});
  // Marks belong to no part: kept, and nothing to drop.
  rw::rewrite_plan marks;
  marks.relaxed_allocation.push_back(rw::original(1));
  const auto same = rw::prune_plan(facts, marks);
  CHECK(same.evaluations == 1);
  CHECK(same.peak_before == 315);
  CHECK(same.peak_after == 315);
  CHECK(same.plan.relaxed_allocation.size() == 1);
  CHECK(same.kept.empty());
  CHECK(same.dropped.empty());
}

TEST_CASE("prune_plan: a work limit spent keeps the parts not decided, and says so") {
  const auto g = memopt::io::read_graph(one_helps_one_hurts);
  const auto facts = rw::read_facts(g);
  const auto seed = rw::recompute(facts);
  const auto r = rw::prune_plan(facts, seed, {.work_limit = 1});
  CHECK_FALSE(r.complete);
  CHECK(r.evaluations == 2);
  CHECK(r.kept.size() == 2);
  CHECK(r.peak_after == 280);  // the whole plan: below the graph's 315, so kept
}
