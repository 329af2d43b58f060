// liveness/: the memory model on hand-checked graphs, exact to the byte.
#include "../support/graph_spec.hpp"
#include "../support/named_graphs.hpp"

#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

#include <limits>

namespace mt = memopt::testing;

#define ALL_GRAPH_TYPES mt::vec_graph, mt::list_graph, mt::bidir_graph, mt::hand_graph

TEST_CASE_TEMPLATE("liveness: chain intervals, timeline and peak", G, ALL_GRAPH_TYPES) {
  const auto r = mt::liveness_of<G>(mt::chain(), mt::identity_order(4));
  CHECK(r.intervals == std::vector<memopt::live_interval>{{0, 1}, {1, 2}, {2, 3}, {3, 3}});
  CHECK(r.timeline == std::vector<std::uint64_t>{10, 30, 25, 35});
  CHECK(r.peak_bytes == 35);
  CHECK(r.peak_step == 3);
  CHECK(r.live_at_peak == std::vector<memopt::buffer_id>{2, 3});
  CHECK(r.persistent_bytes == 0);
}

TEST_CASE_TEMPLATE("liveness: diamond, program order and the best order", G, ALL_GRAPH_TYPES) {
  const auto program = mt::liveness_of<G>(mt::diamond(), mt::identity_order(6));
  CHECK(program.timeline == std::vector<std::uint64_t>{1, 11, 21, 21, 12, 3});
  CHECK(program.peak_bytes == 21);
  CHECK(program.peak_step == 2);  // the first step reaching the peak
  CHECK(program.live_at_peak == std::vector<memopt::buffer_id>{0, 1, 2});
  CHECK(mt::liveness_of<G>(mt::diamond(), {0, 1, 3, 2, 4, 5}).peak_bytes == 12);
}

TEST_CASE_TEMPLATE("liveness: fan-out of six", G, ALL_GRAPH_TYPES) {
  CHECK(mt::liveness_of<G>(mt::fanout6(), mt::identity_order(14)).peak_bytes == 25);
  CHECK(mt::liveness_of<G>(mt::fanout6(), {0, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11, 6, 12, 13}).peak_bytes == 10);
}

TEST_CASE_TEMPLATE("liveness: the orders of XLA's counterexample", G, ALL_GRAPH_TYPES) {
  // A B C D E F G = 0..6
  CHECK(mt::liveness_of<G>(mt::xla_counterexample(), {0, 3, 4, 5, 1, 2, 6}).peak_bytes == 5);
  CHECK(mt::liveness_of<G>(mt::xla_counterexample(), {0, 1, 2, 3, 4, 5, 6}).peak_bytes == 5);
  CHECK(mt::liveness_of<G>(mt::xla_counterexample(), {0, 3, 4, 1, 5, 2, 6}).peak_bytes == 6);
  CHECK(mt::liveness_of<G>(mt::xla_counterexample(), {0, 1, 3, 4, 5, 2, 6}).peak_bytes == 6);
}

TEST_CASE_TEMPLATE("liveness: persistent buffers are reported apart", G, ALL_GRAPH_TYPES) {
  const auto r = mt::liveness_of<G>(mt::persistent(), mt::identity_order(5));
  CHECK(r.peak_bytes == 40);
  CHECK(r.persistent_bytes == 150);
  CHECK(r.intervals[0] == memopt::live_interval{0, 4});  // the whole run
  CHECK(r.timeline == std::vector<std::uint64_t>{0, 0, 10, 30, 40});
  CHECK(r.live_at_peak == std::vector<memopt::buffer_id>{3, 4});
}

TEST_CASE_TEMPLATE("liveness: graph outputs stay, unread outputs live one step", G, ALL_GRAPH_TYPES) {
  const auto program = mt::liveness_of<G>(mt::outputs_dead(), mt::identity_order(5));
  CHECK(program.peak_bytes == 102);
  CHECK(program.intervals[4] == memopt::live_interval{4, 4});  // d: nobody reads it
  CHECK(program.intervals[2] == memopt::live_interval{2, 4});  // q1: a graph output
  CHECK(mt::liveness_of<G>(mt::outputs_dead(), {0, 2, 4, 1, 3}).peak_bytes == 101);
}

TEST_CASE_TEMPLATE("liveness: control edges order ops and carry no bytes", G, ALL_GRAPH_TYPES) {
  const auto r = mt::liveness_of<G>(mt::control(), mt::identity_order(6));
  CHECK(r.peak_bytes == 21);
  CHECK(r.intervals[1] == memopt::live_interval{1, 3});  // big1: read by s1 only
}

TEST_CASE_TEMPLATE("liveness: ports, an unread port, a tensor read twice", G, ALL_GRAPH_TYPES) {
  const auto r = mt::liveness_of<G>(mt::multiport(), mt::identity_order(3));
  CHECK(r.intervals == std::vector<memopt::live_interval>{{0, 2}, {0, 0}, {1, 2}, {2, 2}});
  CHECK(r.timeline == std::vector<std::uint64_t>{12, 8, 10});
  CHECK(r.peak_bytes == 12);
}

TEST_CASE_TEMPLATE("liveness: the greedy trap's program order and optimum", G, ALL_GRAPH_TYPES) {
  CHECK(mt::liveness_of<G>(mt::greedy_trap(), mt::identity_order(6)).peak_bytes == 15);
  CHECK(mt::liveness_of<G>(mt::greedy_trap(), {0, 1, 3, 4, 2, 5}).peak_bytes == 14);
}

TEST_CASE("liveness: an empty graph peaks at zero") {
  const auto r = mt::liveness_of<mt::vec_graph>({}, {});
  CHECK(r.peak_bytes == 0);
  CHECK(r.timeline.empty());
  CHECK(r.live_at_peak.empty());
}

TEST_CASE_TEMPLATE("liveness: refuses an order that is not topological", G, ALL_GRAPH_TYPES) {
  try {
    (void)mt::liveness_of<G>(mt::chain(), {0, 2, 1, 3});
    FAIL("no not_topological_error");
  } catch (const memopt::not_topological_error& e) {
    CHECK(e.fault == memopt::order_fault::before_predecessor);
    CHECK(e.vertex == 2);
    CHECK(e.other == 1);
    CHECK(std::string(e.what()) == "the order runs vertex 2 before its predecessor vertex 1");
  }
  CHECK_THROWS_AS((void)mt::liveness_of<G>(mt::chain(), {0, 1, 2}), memopt::not_topological_error);
  CHECK_THROWS_AS((void)mt::liveness_of<G>(mt::chain(), {0, 1, 2, 2}), memopt::not_topological_error);
}

TEST_CASE_TEMPLATE("liveness: on a cyclic graph, the cycle rather than an order fault", G, ALL_GRAPH_TYPES) {
  // chain 0 -> 1 -> 2 -> 3 with a control edge 3 -> 1 closing 1 -> 2 -> 3 -> 1.
  auto looped = mt::chain();
  looped.nodes[1].control = {3};
  for (const auto& order : std::vector<std::vector<std::size_t>>{{0, 1, 2, 3}, {0, 1, 2}, {0, 3, 2, 1}}) {
    try {
      (void)mt::liveness_of<G>(looped, order);
      FAIL("no cycle_error");
    } catch (const memopt::cycle_error& e) {
      CHECK(e.cycle == std::vector<std::size_t>{1, 2, 3});
      CHECK(std::string(e.what()) == "the graph has a cycle: vertex 1 -> vertex 2 -> vertex 3 -> vertex 1");
    }
  }
}

TEST_CASE("liveness: an edge reading a port its source lacks") {
  auto [g, vertex] = mt::build<mt::vec_graph>(mt::chain());
  add_edge(1, 3, memopt::tensor_edge{.port = 4}, g);
  try {
    (void)memopt::liveness(g, memopt::program_order(g));
    FAIL("no bad_port_error");
  } catch (const memopt::bad_port_error& e) {
    CHECK(e.source == 1);
    CHECK(e.target == 3);
    CHECK(e.port == 4);
    CHECK(e.num_outputs == 1);
    CHECK(std::string(e.what()) == "vertex 3 reads output 4 of vertex 1, which has 1 output");
  }
}

TEST_CASE("liveness: a live sum beyond 64 bits is detected, not wrapped") {
  constexpr std::uint64_t half = std::uint64_t{1} << 63;
  // Two huge buffers never live together: fine.
  mt::graph_spec apart{{{.outputs = {half}}, {.outputs = {1}, .inputs = {{0, 0}}}, {.outputs = {half}, .inputs = {{1, 0}}}}};
  CHECK(mt::liveness_of<mt::vec_graph>(apart, mt::identity_order(3)).peak_bytes == half + 1);
  // Live together at vertex 1.
  mt::graph_spec together{{{.outputs = {half}}, {.outputs = {half}, .inputs = {{0, 0}}}}};
  try {
    (void)mt::liveness_of<mt::vec_graph>(together, mt::identity_order(2));
    FAIL("no size_overflow_error");
  } catch (const memopt::size_overflow_error& e) {
    CHECK(e.vertex == 1);
    CHECK(e.added_bytes == half);
    CHECK(e.sum_bytes == half);
  }
  // Two outputs of one op.
  mt::graph_spec one_op{{{.outputs = {half, half}}}};
  CHECK_THROWS_AS((void)mt::liveness_of<mt::vec_graph>(one_op, mt::identity_order(1)), memopt::size_overflow_error);
  // Persistent bytes.
  mt::graph_spec weights{{{.outputs = {half}, .persistent = true}, {.outputs = {half}, .persistent = true}}};
  CHECK_THROWS_AS((void)mt::liveness_of<mt::vec_graph>(weights, mt::identity_order(2)), memopt::size_overflow_error);
  // The largest representable peak is fine.
  constexpr auto max = std::numeric_limits<std::uint64_t>::max();
  mt::graph_spec exact{{{.outputs = {max - 1}}, {.outputs = {1}, .inputs = {{0, 0}}}}};
  CHECK(mt::liveness_of<mt::vec_graph>(exact, mt::identity_order(2)).peak_bytes == max);
}
