// Swapping to host as the memory optimizer does it: a manual swap with its
// pair, names and triggers worked out by hand from completion times; running
// the pass twice; references never swapped; the heuristic swapping some but
// not all inputs of a large concatenation on a small device.
#include "edges.hpp"

#include <memopt/io/graph_file.hpp>
#include <memopt/rewrite.hpp>
#include <memopt/simulate.hpp>

#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

namespace rw = memopt::rewrite;
using memopt::testing::added_names;
using memopt::testing::inputs_of;
namespace sim = memopt::sim;

namespace {

memopt::io::file_graph graph_of(const std::string& nodes) {
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "t", "nodes": )" + nodes + "}");
}


/// Completion times of the graph's own order with every op taking 1 us.
template <class G>
std::vector<double> unit_times(const G& g) {
  const sim::machine m;
  const auto r = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{1}, sim::program{});
  return rw::completion_times(r, num_vertices(g));
}

/// a feeds b early and d late, idle while c's large output lives; d's input 0
/// (a) is marked for the host.
const std::string manual = R"([
  {"name": "a", "op": "input", "outputs": [1000]},
  {"name": "b", "op": "op", "outputs": [10], "inputs": ["a:0"]},
  {"name": "c", "op": "op", "outputs": [2000], "inputs": ["b:0"]},
  {"name": "e", "op": "op", "outputs": [10], "inputs": ["c:0"]},
  {"name": "d", "op": "op", "outputs": [10], "inputs": ["a:0", "e:0"], "attrs": {"swap_to_host": [0]}}])";

}  // namespace

TEST_CASE("swap, manual: the pair, its names and its triggers") {
  const auto g = graph_of(manual);
  const auto facts = rw::read_facts(g);
  const auto plan = rw::swap(facts, {{4, {0}}}, unit_times(g));
  CHECK(rw::check_plan(facts, plan).empty());
  REQUIRE(plan.nodes.size() == 2);
  CHECK(plan.nodes[0].op == "_CopyFromGpuToHost");
  CHECK(plan.nodes[1].op == "_CopyFromHostToGpu");
  const auto h = rw::apply(facts, plan);
  // a completes at 1, b at 2, c at 3, e at 4: the swap-out goes before b (a's
  // other reader); the swap-in (1000 B at 16 GB/s: 0.0625 us) must start by
  // 3.9375: after c, the last of d's fan-in completing before then.
  CHECK(h[5].name == "swap_out_d_0");
  CHECK(h[6].name == "swap_in_d_0");
  CHECK(inputs_of(h, 5) == std::vector<std::string>{"a:0"});
  CHECK(inputs_of(h, 6) == std::vector<std::string>{"swap_out_d_0:0", "^c"});
  CHECK(inputs_of(h, 4) == std::vector<std::string>{"swap_in_d_0:0", "e:0"});
  CHECK(inputs_of(h, 1) == std::vector<std::string>{"a:0", "^swap_out_d_0"});
  CHECK(h[5].host_bytes == 1000);
  CHECK(h[5].outputs[0].bytes == 0);  // on the host: nothing on the device
  const auto report = rw::evaluate(facts, plan);
  CHECK(report.swapped_bytes == 1000);
  CHECK(report.peak_before == 3010);  // a idle beside b and c
  CHECK(report.peak_after == 2010);   // a on the host while c lives

  // Again on the result: already swapped, nothing to do.
  const auto again = rw::read_facts(h);
  CHECK(rw::swap(again, {{4, {0}}}, unit_times(h)).empty());
  // A reference input is never swapped.
  rw::swap_options references;
  references.is_reference_input = [](std::size_t v, std::size_t k) { return v == 4 && k == 0; };
  CHECK(rw::swap(facts, {{4, {0}}}, unit_times(g), references).empty());
}

namespace {

/// p1..p4 (4000 B each) made early, each read at once by a small s_i, then a
/// chain x1..x4 (x2 large), then a concatenation of p1..p4 and x4.
const std::string concatenation = R"([
  {"name": "p1", "op": "op", "outputs": [4000]}, {"name": "s1", "op": "op", "outputs": [1], "inputs": ["p1:0"]},
  {"name": "p2", "op": "op", "outputs": [4000]}, {"name": "s2", "op": "op", "outputs": [1], "inputs": ["p2:0"]},
  {"name": "p3", "op": "op", "outputs": [4000]}, {"name": "s3", "op": "op", "outputs": [1], "inputs": ["p3:0"]},
  {"name": "p4", "op": "op", "outputs": [4000]}, {"name": "s4", "op": "op", "outputs": [1], "inputs": ["p4:0"]},
  {"name": "x1", "op": "op", "outputs": [100]}, {"name": "x2", "op": "op", "outputs": [20000], "inputs": ["x1:0"]},
  {"name": "x3", "op": "op", "outputs": [100], "inputs": ["x2:0"]}, {"name": "x4", "op": "op", "outputs": [100], "inputs": ["x3:0"]},
  {"name": "cat", "op": "ConcatV2", "outputs": [16000], "inputs": ["p1:0", "p2:0", "p3:0", "p4:0", "x4:0"]}])";

}  // namespace

TEST_CASE("swap, heuristic: some but not all inputs of a large concatenation on a small device") {
  const auto g = graph_of(concatenation);
  const auto facts = rw::read_facts(g);
  const sim::machine m;
  // 2 ms an op: every tensor idles long enough to move.
  const auto run = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{2000}, sim::program{});
  const std::uint64_t peak = run.devices[0].peak_bytes();
  CHECK(peak == 36100);  // p1..p4 idle while x2 is made
  // 6000 B over: the two tensors idle longest around the peak, p1 and p2, are
  // enough (x2, live there too, is needed soonest).
  const auto requests = rw::choose_swaps(facts, run, 0, peak - 6000);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].vertex == 12);
  CHECK(requests[0].operands == std::vector<std::size_t>{0, 1});
  const auto plan = rw::swap(facts, requests, rw::completion_times(run, num_vertices(g)));
  CHECK(rw::check_plan(facts, plan).empty());
  CHECK(added_names(plan) == std::vector<std::string>{"swap_out_cat_0", "swap_in_cat_0", "swap_out_cat_1", "swap_in_cat_1"});
  const auto h = rw::apply(facts, plan);
  CHECK(inputs_of(h, 14) == std::vector<std::string>{"swap_out_cat_0:0", "^x3"});  // swap-ins after x3
  CHECK(inputs_of(h, 1) == std::vector<std::string>{"p1:0", "^swap_out_cat_0"});   // s1 waits for the copy out
  CHECK(rw::evaluate(facts, plan).swapped_bytes == 8000);
  // p1 a reference: the next two idle longest go instead.
  rw::swap_options options;
  options.is_reference_output = [](std::size_t v, std::size_t) { return v == 0; };
  const auto without_p1 = rw::choose_swaps(facts, run, 0, peak - 6000, options);
  REQUIRE(without_p1.size() == 1);
  CHECK(without_p1[0].operands == std::vector<std::size_t>{1, 2});
  // A device with room: nothing to swap.
  CHECK(rw::choose_swaps(facts, run, 0, peak).empty());
  // A completion delay that is no time is refused.
  for (const double delay : {-1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    rw::swap_options bad;
    bad.completion_delay_us = delay;
    CHECK_THROWS_AS((void)rw::choose_swaps(facts, run, 0, peak - 6000, bad), rw::bad_plan_error);
  }
}
