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
