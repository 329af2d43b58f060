// Budget-driven rematerialisation: chains of n equal layers (forward and
// backward, built here) in about 2 sqrt(n) activations for at most one more
// forward pass; the floor; plans that fit and say what they cost.
#include "edges.hpp"

#include <memopt/io/graph_file.hpp>
#include <memopt/rewrite.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

namespace rw = memopt::rewrite;

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
    const auto r = rw::rematerialize(facts, program(facts.size()), {.budget = budget});
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

TEST_CASE("remat: the floor is the step with the most bytes live at once") {
  const auto facts = rw::read_facts(chain(8));
  const auto floor = rw::rematerialisation_floor(facts);
  CHECK(floor.bytes == 300);  // a backward step: its activation, its incoming gradient, its output
  CHECK(facts.name[floor.vertex].starts_with("b"));
}
