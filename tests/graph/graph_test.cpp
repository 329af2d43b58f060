// graph/: concepts, tensor traits, buffer tables, orders and cycles.
#include "../support/graph_spec.hpp"
#include "../support/named_graphs.hpp"

#include <memopt/graph.hpp>

#include <doctest/doctest.h>

#include <boost/graph/adjacency_list.hpp>

namespace mt = memopt::testing;

// Every shipped graph type models what the algorithms need.
static_assert(memopt::dag<mt::vec_graph> && memopt::tensor_graph<mt::vec_graph>);
static_assert(memopt::indexed_dag<mt::vec_graph> && !memopt::bidirectional_dag<mt::vec_graph>);
static_assert(memopt::bidirectional_dag<mt::bidir_graph> && memopt::tensor_graph<mt::bidir_graph>);
static_assert(memopt::tensor_graph<mt::list_graph> && !memopt::indexed_dag<mt::list_graph>);
static_assert(memopt::tensor_graph<mt::hand_graph> && memopt::indexed_dag<mt::hand_graph>);
// The archetype offers nothing the concepts do not ask for, so that an
// algorithm needing more fails to compile on it.
template <class G>
concept counts_edges = requires(const G& g, memopt::vertex_t<G> v) {
  num_edges(g);
  out_degree(v, g);
};
template <class G>
concept names_traversal = requires { typename boost::graph_traits<G>::traversal_category; };
static_assert(counts_edges<mt::vec_graph> && names_traversal<mt::vec_graph>);
static_assert(!counts_edges<mt::hand_graph> && !names_traversal<mt::hand_graph>);
static_assert(!memopt::bidirectional_dag<mt::hand_graph>);
static_assert(memopt::vertex_index_map<memopt::identity_index, mt::vec_graph>);
static_assert(!memopt::vertex_index_map<memopt::identity_index, mt::list_graph>);
// An undirected graph is no dag; a graph without tensor bundles is no tensor_graph.
static_assert(!memopt::dag<boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>>);
static_assert(!memopt::tensor_graph<boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>>);

namespace {

// A bundle with plain byte counts and none of the optional members.
struct plain_node {
  std::vector<std::uint32_t> outputs;
};
using plain_graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, plain_node>;
static_assert(memopt::tensor_graph<plain_graph>);

// A user's bundle, with persistence decided by the user's own field.
struct user_node {
  std::vector<memopt::tensor_output> outputs;
  int kind = 0;  // 1 = weight
};
using user_graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, user_node>;

}  // namespace

template <>
struct memopt::tensor_traits<user_graph> : memopt::bundled_tensor_traits<user_graph> {
  static bool is_persistent(const user_graph& g, vertex_t<user_graph> v) { return g[v].kind == 1; }
};

TEST_CASE("bundled_tensor_traits: reads plain sizes and defaults the optional members") {
  plain_graph g;
  const auto a = add_vertex(plain_node{{7, 9}}, g);
  const auto b = add_vertex(plain_node{{}}, g);
  const auto [e, added] = add_edge(a, b, g);
  REQUIRE(added);
  using traits = memopt::tensor_traits<plain_graph>;
  CHECK(traits::num_outputs(g, a) == 2);
  CHECK(traits::output_bytes(g, a, 1) == 9);
  CHECK_FALSE(traits::is_live_out(g, a, 0));
  CHECK_FALSE(traits::is_persistent(g, a));
  CHECK(traits::port(g, e) == 0);
  CHECK_FALSE(traits::is_control(g, e));
  CHECK_FALSE(traits::alias_of(g, a, 0).has_value());
}

TEST_CASE("tensor_traits: a specialisation overrides one member and keeps the rest") {
  user_graph g;
  const auto w = add_vertex(user_node{{{.bytes = 64}}, 1}, g);
  const auto x = add_vertex(user_node{{{.bytes = 8, .live_out = true, .alias = memopt::buffer_ref<std::size_t>{0, 0}}}, 0}, g);
  using traits = memopt::tensor_traits<user_graph>;
  CHECK(traits::is_persistent(g, w));
  CHECK_FALSE(traits::is_persistent(g, x));
  CHECK(traits::is_live_out(g, x, 0));
  REQUIRE(traits::alias_of(g, x, 0).has_value());
  CHECK(*traits::alias_of(g, x, 0) == memopt::buffer_ref<std::size_t>{w, 0});
  const auto buffers = memopt::make_buffer_table(g);
  CHECK(buffers.persistent[0]);
  CHECK_FALSE(buffers.persistent[1]);
}

TEST_CASE_TEMPLATE("make_buffer_table: dense ids in vertex then port order", G, mt::vec_graph,
                   mt::list_graph, mt::bidir_graph, mt::hand_graph) {
  const auto [g, vertex] = mt::build<G>(mt::multiport());
  const auto table = memopt::make_buffer_table(g, mt::index_map(g));
  REQUIRE(table.size() == 4);
  CHECK(table.num_vertices() == 3);
  CHECK(table.first == std::vector<memopt::buffer_id>{0, 2, 3, 4});
  CHECK(table.owner == std::vector<std::size_t>{0, 0, 1, 2});
  CHECK(table.bytes == std::vector<std::uint64_t>{5, 7, 3, 2});
  CHECK(table.port_of(1) == 1);
  CHECK(table.id(2, 0) == 3);
  CHECK(table.live_out == std::vector<bool>{false, false, true, true});
}

TEST_CASE_TEMPLATE("check_topological_order: names every fault", G, mt::vec_graph, mt::list_graph,
                   mt::bidir_graph, mt::hand_graph) {
  const auto built = mt::build<G>(mt::diamond());  // members, not a binding: clang 14 lambdas cannot capture those
  const auto& g = built.g;
  const auto& vertex = built.vertex;
  const auto index = mt::index_map(g);
  const auto order = [&](std::vector<std::size_t> spec) { return mt::to_vertices<G>(vertex, spec); };
  using memopt::order_fault;
  using violation = memopt::order_violation;

  CHECK(memopt::is_topological_order(g, order({0, 1, 2, 3, 4, 5}), index));
  CHECK(memopt::is_topological_order(g, order({0, 2, 4, 1, 3, 5}), index));
  CHECK(memopt::is_topological_order(g, memopt::program_order(g), index));
  CHECK(memopt::check_topological_order(g, order({0, 1, 3, 5, 2, 4}), index) ==
        std::vector<violation>{{order_fault::before_predecessor, 5, 4}});
  CHECK(memopt::check_topological_order(g, order({0, 1, 2, 3, 4}), index) ==
        std::vector<violation>{{order_fault::missing, 5}});
  CHECK(memopt::check_topological_order(g, order({0, 1, 1, 2, 3, 4, 5}), index) ==
        std::vector<violation>{{order_fault::duplicate, 1}});
  CHECK(memopt::check_topological_order(g, order({}), index).size() == 6);
}

TEST_CASE("check_topological_order: an index beyond the graph is an unknown vertex") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(mt::chain());
  CHECK(memopt::check_topological_order(g, std::vector<std::size_t>{0, 1, 2, 3, 9}) ==
        std::vector<memopt::order_violation>{{memopt::order_fault::unknown_vertex, 9}});
}

TEST_CASE_TEMPLATE("find_cycle: none in a DAG, the cycle in edge order otherwise", G,
                   mt::vec_graph, mt::list_graph, mt::bidir_graph, mt::hand_graph) {
  auto [g, vertex] = mt::build<G>(mt::diamond());
  const auto index = mt::index_map(g);
  CHECK_FALSE(memopt::find_cycle(g, index).has_value());
  CHECK_NOTHROW(memopt::require_acyclic(g, index));

  // j -> l1 closes l1 -> l2 -> j.
  if constexpr (std::is_same_v<G, mt::hand_graph>) {
    g.add_edge(5, 1, 0, true);
  } else {
    add_edge(vertex[5], vertex[1], memopt::tensor_edge{.control = true}, g);
  }
  const auto cycle = memopt::find_cycle(g, index);
  REQUIRE(cycle.has_value());
  std::vector<std::size_t> indices;
  for (const auto v : *cycle) indices.push_back(index(v));
  CHECK(indices == std::vector<std::size_t>{1, 3, 5});
  try {
    memopt::require_acyclic(g, index);
    FAIL("no cycle_error");
  } catch (const memopt::cycle_error& e) {
    CHECK(e.cycle == std::vector<std::size_t>{1, 3, 5});
    CHECK(std::string(e.what()) == "the graph has a cycle: vertex 1 -> vertex 3 -> vertex 5 -> vertex 1");
    CHECK(e.describe([](std::size_t v) { return "n" + std::to_string(v); }) ==
          "the graph has a cycle: n1 -> n3 -> n5 -> n1");
  }
}

TEST_CASE("find_cycle: a self-loop is a cycle of one") {
  auto [g, vertex] = mt::build<mt::vec_graph>(mt::chain());
  add_edge(2, 2, g);
  const auto cycle = memopt::find_cycle(g);
  REQUIRE(cycle.has_value());
  CHECK(*cycle == std::vector<std::size_t>{2});
}

TEST_CASE("find_cycle: a chain of 200000 vertices needs no recursion") {
  mt::vec_graph g(200000);
  for (std::size_t v = 0; v + 1 < 200000; ++v) add_edge(v, v + 1, g);
  CHECK_FALSE(memopt::find_cycle(g).has_value());
  add_edge(199999, 0, g);
  const auto cycle = memopt::find_cycle(g);
  REQUIRE(cycle.has_value());
  CHECK(cycle->size() == 200000);
}

TEST_CASE_TEMPLATE("make_compact_graph: distinct neighbours, reads and readers", G, mt::vec_graph,
                   mt::list_graph, mt::bidir_graph, mt::hand_graph) {
  // multiport: c reads a:0 twice; persistent: z reads y:0, w2:0 and has a control edge from w1.
  {
    const auto [g, vertex] = mt::build<G>(mt::multiport());
    const auto c = memopt::make_compact_graph(g, mt::index_map(g));
    CHECK(c.num_vertices() == 3);
    CHECK(std::ranges::equal(c.successors[0], std::vector<std::size_t>{1, 2}));
    CHECK(std::ranges::equal(c.predecessors[2], std::vector<std::size_t>{0}));
    CHECK(std::ranges::equal(c.reads[2], std::vector<memopt::buffer_id>{0}));
    CHECK(std::ranges::equal(c.readers[0], std::vector<std::size_t>{1, 2}));
    CHECK(c.readers[1].empty());  // a:1 is never read
  }
  {
    const auto [g, vertex] = mt::build<G>(mt::persistent());
    const auto c = memopt::make_compact_graph(g, mt::index_map(g));
    // Operand order where the graph keeps in-edges, source order otherwise.
    if constexpr (memopt::bidirectional_dag<G>) {
      CHECK(std::ranges::equal(c.predecessors[4], std::vector<std::size_t>{3, 1, 0}));
      CHECK(std::ranges::equal(c.reads[4], std::vector<memopt::buffer_id>{3, 1}));  // control carries none
    } else {
      CHECK(std::ranges::equal(c.predecessors[4], std::vector<std::size_t>{0, 1, 3}));
      CHECK(std::ranges::equal(c.reads[4], std::vector<memopt::buffer_id>{1, 3}));
    }
    CHECK(std::ranges::equal(c.readers[0], std::vector<std::size_t>{3}));
    CHECK(std::ranges::equal(c.successors[0], std::vector<std::size_t>{3, 4}));
  }
}

TEST_CASE_TEMPLATE("make_compact_graph: long rows with repeats keep first occurrences in order", G, mt::vec_graph,
                   mt::bidir_graph) {
  // h feeds r1..r40, each reading h:0 twice; j reads r40..r1, each twice, and
  // has control edges from r1 and r2 too: rows longer than a short row's 16.
  constexpr std::size_t readers = 40;
  mt::graph_spec spec{{{.outputs = {4}}}};
  for (std::size_t k = 1; k <= readers; ++k) spec.nodes.push_back({.outputs = {4}, .inputs = {{0, 0}, {0, 0}}});
  mt::node_spec join{.outputs = {4}, .control = {1, 2}, .live_out = {0}};
  for (std::size_t k = readers; k >= 1; --k) join.inputs.insert(join.inputs.end(), {{k, 0}, {k, 0}});
  spec.nodes.push_back(join);
  const auto [g, vertex] = mt::build<G>(spec);
  const auto c = memopt::make_compact_graph(g, mt::index_map(g));
  std::vector<std::size_t> up(readers), down(readers);
  for (std::size_t k = 0; k < readers; ++k) up[k] = k + 1, down[k] = readers - k;
  CHECK(std::ranges::equal(c.successors[0], up));
  CHECK(std::ranges::equal(c.readers[c.buffers.id(0, 0)], up));
  CHECK(std::ranges::equal(c.predecessors[1], std::vector<std::size_t>{0}));
  CHECK(std::ranges::equal(c.reads[1], std::vector<memopt::buffer_id>{c.buffers.id(0, 0)}));
  // Operand order where the graph keeps in-edges, source order otherwise.
  const auto& operands = memopt::bidirectional_dag<G> ? down : up;
  std::vector<memopt::buffer_id> read(readers);
  for (std::size_t k = 0; k < readers; ++k) read[k] = c.buffers.id(operands[k], 0);
  CHECK(std::ranges::equal(c.reads[readers + 1], read));
  CHECK(c.predecessors[readers + 1].size() == readers);
  for (std::size_t k = 1; k <= readers; ++k) {
    CHECK(std::ranges::equal(c.successors[k], std::vector<std::size_t>{readers + 1}));
  }
}

TEST_CASE("make_compact_graph: a port its source lacks") {
  auto [g, vertex] = mt::build<mt::vec_graph>(mt::chain());
  add_edge(0, 2, memopt::tensor_edge{.port = 1}, g);
  CHECK_THROWS_AS((void)memopt::make_compact_graph(g), memopt::bad_port_error);
}
