// In-place accumulation and relaxed allocator constraints as the memory
// optimizer does them: the seed's own scenarios (an AddN of three tensors
// feeding a Square; assignments with their fan-out on one device, on two
// CPUs, across a CPU/GPU boundary, into a send, and one assignment in
// another's fan-out) with exact names, inputs and peaks worked out by hand.
#include "edges.hpp"

#include <memopt/io/graph_file.hpp>
#include <memopt/rewrite.hpp>
#include <memopt/simulate.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace rw = memopt::rewrite;
namespace sim = memopt::sim;
using memopt::testing::added_names;
using memopt::testing::inputs_of;

namespace {

memopt::io::file_graph graph_of(const std::string& nodes) {
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "t", "nodes": )" + nodes + "}");
}

/// The seed's test: d = AddN(a, b, c), e = Square(d), 100 B tensors on one CPU.
const std::string addn = R"([
  {"name": "a", "op": "RandomNormal", "outputs": [100], "device": "/cpu:0"},
  {"name": "b", "op": "RandomNormal", "outputs": [100], "device": "/cpu:0"},
  {"name": "c", "op": "RandomNormal", "outputs": [100], "device": "/cpu:0"},
  {"name": "d", "op": "AddN", "outputs": [100], "inputs": ["a:0", "b:0", "c:0"], "device": "/cpu:0", "flops": 300},
  {"name": "e", "op": "Square", "outputs": [100], "inputs": ["d:0"], "device": "/cpu:0"}])";

}  // namespace

TEST_CASE("accumulate: an AddN of three tensors becomes the seed's temporary-variable accumulation") {
  const auto g = graph_of(addn);
  const auto facts = rw::read_facts(g);
  const auto plan = rw::accumulate(facts, {3});
  CHECK(rw::check_plan(facts, plan).empty());
  CHECK(added_names(plan) == std::vector<std::string>{"d/tmp_var", "d/tmp_var_zeros", "d/tmp_var_initializer",
                                                   "d/tmp_var_accum_0", "d/tmp_var_accum_1", "d/tmp_var_accum_2"});
  const auto h = rw::apply(facts, plan);
  // The walk back from d explores its last input first: c finishes first.
  CHECK(h[5].op == "TemporaryVariable");
  CHECK(inputs_of(h, 5) == std::vector<std::string>{"^c"});
  CHECK(h[6].op == "ZerosLike");
  CHECK(inputs_of(h, 6) == std::vector<std::string>{"c:0"});
  CHECK(h[7].op == "Assign");
  CHECK(inputs_of(h, 7) == std::vector<std::string>{"d/tmp_var:0", "d/tmp_var_zeros:0"});
  CHECK(h[8].op == "AssignAdd");
  CHECK(inputs_of(h, 8) == std::vector<std::string>{"d/tmp_var_initializer:0", "a:0"});
  CHECK(inputs_of(h, 10) == std::vector<std::string>{"d/tmp_var_initializer:0", "c:0"});
  CHECK(h[3].name == "d");
  CHECK(h[3].op == "DestroyTemporaryVariable");
  CHECK(inputs_of(h, 3) == std::vector<std::string>{"d/tmp_var_initializer:0", "^d/tmp_var_accum_0",
                                                    "^d/tmp_var_accum_1", "^d/tmp_var_accum_2"});
  CHECK(inputs_of(h, 4) == std::vector<std::string>{"d:0"});  // e still reads d
  CHECK(h[8].flops == 100);                                    // the sum's work, shared by the adds
  CHECK(h[3].flops == 0);
  const auto report = rw::evaluate(facts, plan);
  CHECK(report.peak_before == 400);  // a, b, c and the sum at once
  CHECK(report.peak_after == 300);   // c, the buffer and its zeros; then each input goes once added
  CHECK(report.extra_flops == 0);
  // Twice changes nothing: the accumulator's name is taken.
  CHECK(rw::accumulate(rw::read_facts(h), {3}).empty());
}

TEST_CASE("accumulate, the seed's rule: rewrite when the peak passes 80 % of the device's memory") {
  const auto g = graph_of(addn);
  const auto facts = rw::read_facts(g);
  const sim::machine m;
  const auto run = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{1}, sim::program{});
  REQUIRE(run.devices[0].peak_bytes() == 400);
  CHECK(rw::choose_accumulations(facts, run, 0, 450) == std::vector<std::size_t>{3});  // 400 > 360
  CHECK(rw::choose_accumulations(facts, run, 0, 500).empty());                         // 400 <= 400
  rw::accumulation_options only_addn_of_four;
  only_addn_of_four.sum_ops = {"AccumulateNV2"};
  CHECK(rw::choose_accumulations(facts, run, 0, 450, only_addn_of_four).empty());
}

TEST_CASE("accumulate: the validator refuses an accumulator that does not sum exactly the old inputs") {
  const auto facts = rw::read_facts(graph_of(addn));
  const auto plan = rw::accumulate(facts, {3});
  auto missing = plan;  // d no longer waits for the add of c
  missing.changes[0].control.pop_back();
  CHECK_FALSE(rw::check_plan(facts, missing).empty());
  auto wrong = plan;  // adds a twice, c never
  wrong.nodes[5].inputs[1] = {rw::original(0), 0};
  CHECK_FALSE(rw::check_plan(facts, wrong).empty());
  auto peek = plan;  // another node reads the partial sums
  peek.nodes.push_back({.name = "peek", .op = "Identity", .outputs = {{.bytes = 100}}, .inputs = {{rw::added(2), 0}}});
  CHECK_FALSE(rw::check_plan(facts, peek).empty());
  auto twice = plan;
  twice.changes.push_back(plan.changes[0]);
  CHECK_FALSE(rw::check_plan(facts, twice).empty());
  auto redirected = plan;
  redirected.redirects.push_back({3, 0, {rw::original(0), 0}});
  CHECK_FALSE(rw::check_plan(facts, redirected).empty());
  CHECK_THROWS_AS((void)rw::apply(facts, wrong), rw::bad_plan_error);
}

TEST_CASE("accumulate: sums of unequal sizes or of overwritten storages are left alone") {
  const auto uneven = rw::read_facts(graph_of(R"([
    {"name": "a", "op": "x", "outputs": [100]}, {"name": "b", "op": "x", "outputs": [50]},
    {"name": "c", "op": "x", "outputs": [100]},
    {"name": "d", "op": "AddN", "outputs": [100], "inputs": ["a:0", "b:0", "c:0"]}])"));
  CHECK(rw::accumulate(uneven, {3}).empty());
  const auto overwritten = rw::read_facts(graph_of(R"([
    {"name": "a", "op": "x", "outputs": [100]}, {"name": "b", "op": "x", "outputs": [100]},
    {"name": "c", "op": "x", "outputs": [100]},
    {"name": "d", "op": "AddN", "outputs": [100], "inputs": ["a:0", "b:0", "c:0"]},
    {"name": "w", "op": "relu_", "outputs": [100], "inputs": ["a:0", "d:0"], "attrs": {"alias": ["a:0"], "inplace": true}}])"));
  CHECK(rw::accumulate(overwritten, {3}).empty());
}

namespace {

/// constant and variable on /cpu:0, assign = Assign(variable, constant), then `rest`.
rw::rewrite_plan relaxed(const std::string& rest) {
  const auto g = graph_of(R"([
    {"name": "constant", "op": "Const", "outputs": [64], "device": "/cpu:0"},
    {"name": "variable", "op": "VariableV2", "outputs": [64], "device": "/cpu:0"},
    {"name": "assign", "op": "Assign", "outputs": [64], "inputs": ["variable:0", "constant:0"], "device": "/cpu:0"})" +
                         rest + "]");
  return rw::relax_allocator_constraints(rw::read_facts(g));
}

}  // namespace

TEST_CASE("relax allocator constraints: only when the assignment's fan-out stays on its side") {
  const std::vector<rw::node_ref> assign{rw::original(2)};
  // The seed's scenarios.
  CHECK(relaxed(R"(, {"name": "exp", "op": "Exp", "outputs": [64], "inputs": ["assign:0"], "device": "/cpu:0"})")
            .relaxed_allocation == assign);
  CHECK(relaxed(R"(, {"name": "exp", "op": "Exp", "outputs": [64], "inputs": ["assign:0"], "device": "/gpu:0"})")
            .relaxed_allocation.empty());
  CHECK(relaxed(R"(, {"name": "exp", "op": "Exp", "outputs": [64], "inputs": ["assign:0"], "device": "/cpu:1"})")
            .relaxed_allocation == assign);
  CHECK(relaxed(R"(, {"name": "send", "op": "_Send", "outputs": [], "inputs": ["assign:0"]})").relaxed_allocation.empty());
  // Downstream of a control edge counts too; another task crosses.
  CHECK(relaxed(R"(, {"name": "x", "op": "NoOp", "outputs": [], "control": ["assign"], "device": "/cpu:0"},
                    {"name": "y", "op": "Exp", "outputs": [64], "control": ["x"], "device": "/job:w/task:1/cpu:0"})")
            .relaxed_allocation.empty());
  // Two GPUs of one task do not cross.
  const auto gpus = rw::relax_allocator_constraints(rw::read_facts(graph_of(R"([
    {"name": "v", "op": "VariableV2", "outputs": [64], "device": "/gpu:0"},
    {"name": "assign", "op": "AssignVariableOp", "outputs": [64], "inputs": ["v:0"], "device": "/gpu:0"},
    {"name": "exp", "op": "Exp", "outputs": [64], "inputs": ["assign:0"], "device": "/gpu:1"}])")));
  CHECK(gpus.relaxed_allocation == std::vector<rw::node_ref>{rw::original(1)});
}

TEST_CASE("relax allocator constraints: an assignment in another's fan-out (the seed's last scenario)") {
  const auto g = graph_of(R"([
    {"name": "constant0", "op": "Const", "outputs": [64], "device": "/cpu:0"},
    {"name": "variable0", "op": "VariableV2", "outputs": [64], "device": "/cpu:0"},
    {"name": "assign0", "op": "Assign", "outputs": [64], "inputs": ["variable0:0", "constant0:0"], "device": "/cpu:0"},
    {"name": "exp1", "op": "Exp", "outputs": [64], "inputs": ["assign0:0"], "device": "/gpu:0"},
    {"name": "variable1", "op": "VariableV2", "outputs": [64], "device": "/gpu:0"},
    {"name": "assign1", "op": "Assign", "outputs": [64], "inputs": ["variable1:0", "exp1:0"], "device": "/gpu:0"}])");
  const auto facts = rw::read_facts(g);
  const auto plan = rw::relax_allocator_constraints(facts);
  CHECK(plan.relaxed_allocation == std::vector<rw::node_ref>{rw::original(5)});
  CHECK(rw::check_plan(facts, plan).empty());
  const auto h = rw::apply(facts, plan);
  CHECK(h[5].relaxed_allocation);
  CHECK_FALSE(h[2].relaxed_allocation);
  CHECK(rw::evaluate(facts, plan).peak_after == rw::evaluate(facts, {}).peak_after);  // a mark, no memory
}
