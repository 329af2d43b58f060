// A user's own Boost graph, adapted to memopt: a vertex bundle of the user's
// (no `outputs` member), a tensor_traits<my::net> specialisation spelling out
// every member memopt asks for, then one liveness, the best schedule and the
// recommended arena, each checked against the figures worked out by hand in
// the comments (the program exits 1 on a mismatch; the tests build and run it).
//
// The one convention: a member takes the vertex descriptor of the vertex it is
// asked about (v), and names any *other* vertex (the source of a view or of an
// in-place reuse) by its index in the vertex index map. On this vecS graph the
// two are the same number; on a listS graph the descriptor is a pointer and the
// bundle would hold the index (as view_of does).
#include <memopt/memopt.hpp>

#include <boost/graph/adjacency_list.hpp>

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace my {

/// One op with one output tensor.
struct op {
  std::string name;
  std::uint64_t bytes = 0;        ///< of its output
  bool weight = false;            ///< a parameter: held for the whole run
  int view_of = -1;               ///< the output is a view of this input's (by vertex index), or -1
  std::uint64_t workspace = 0;    ///< bytes the op allocates and frees while it runs
};

/// An edge: a read of the source's output, or (control) an ordering alone.
struct use {
  bool control = false;
};

using net = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, op, use>;

}  // namespace my

// [tensor_traits]
template <>
struct memopt::tensor_traits<my::net> {
  using vertex = memopt::vertex_t<my::net>;  // the vertex asked about, by descriptor
  using edge = memopt::edge_t<my::net>;

  /// Output tensors of v, ports 0 .. num_outputs - 1: one per op here.
  static std::size_t num_outputs(const my::net&, vertex) { return 1; }
  /// Bytes of output `port` of v.
  static std::uint64_t output_bytes(const my::net& g, vertex v, std::size_t /*port*/) { return g[v].bytes; }
  /// A graph output, never freed: here an op nothing else waits for.
  static bool is_live_out(const my::net& g, vertex v, std::size_t /*port*/) { return out_degree(v, g) == 0; }
  /// A may-alias: an input (vertex *index*, port) whose storage this output may take over where that
  /// storage dies (in-place reuse). This net declares none, so the rule is off.
  static std::optional<memopt::buffer_ref<std::size_t>> alias_of(const my::net&, vertex, std::size_t) {
    return std::nullopt;
  }
  /// A must-alias: the input (vertex *index*, port) whose storage this output is; a view here.
  static std::optional<memopt::shared_storage<std::size_t>> shares_storage_of(const my::net& g, vertex v,
                                                                             std::size_t /*port*/) {
    if (g[v].view_of < 0) return std::nullopt;
    return memopt::shared_storage<std::size_t>{{static_cast<std::size_t>(g[v].view_of), 0}, /*in_place=*/false};
  }
  /// Held for the whole run and reported apart from the transient peak.
  static bool is_persistent(const my::net& g, vertex v) { return g[v].weight; }
  /// Bytes v uses during its own step only (optional: 0 when a specialisation leaves it out).
  static std::uint64_t scratch_bytes(const my::net& g, vertex v) { return g[v].workspace; }
  /// The output port of its source that data edge e reads.
  static std::size_t port(const my::net&, edge) { return 0; }
  /// Whether e only orders its ends and reads nothing.
  static bool is_control(const my::net& g, edge e) { return g[e].control; }
};
static_assert(memopt::tensor_graph<my::net>);  // fails here, readably, if a member is wrong
// [tensor_traits]

namespace {

int failures = 0;

void expect(const char* what, std::uint64_t got, std::uint64_t want) {
  std::cout << what << ": " << got << (got == want ? "" : " (expected " + std::to_string(want) + ")") << '\n';
  if (got != want) ++failures;
}

}  // namespace

int main() {
  my::net g;
  const auto x = add_vertex({.name = "x", .bytes = 100}, g);                       // the input
  const auto w = add_vertex({.name = "w", .bytes = 400, .weight = true}, g);       // a weight
  const auto a = add_vertex({.name = "a", .bytes = 200, .workspace = 50}, g);      // matmul(x, w)
  const auto b = add_vertex({.name = "b", .bytes = 300}, g);                       // a big op on x
  const auto v = add_vertex({.name = "v", .bytes = 200, .view_of = static_cast<int>(a)}, g);  // reshape(a)
  const auto c = add_vertex({.name = "c", .bytes = 200}, g);                       // relu(v)
  const auto out = add_vertex({.name = "out", .bytes = 8}, g);                     // add(c, b): the result
  add_edge(x, a, g);  add_edge(w, a, g);  add_edge(x, b, g);  add_edge(a, v, g);
  add_edge(v, c, g);  add_edge(c, out, g);  add_edge(b, out, g);
  add_edge(x, w, {.control = true}, g);  // w is loaded once x has arrived

  // The graph's own order x w a b v c out. At c (step 5): v's storage, a's 200 (a view adds
  // nothing), b 300 and c 200 are live: 700. The weight's 400 is apart; a's workspace (50)
  // only at step 2 (x 100 + a 200 + 50 = 350).
  const auto live = memopt::liveness(g, memopt::program_order(g));
  expect("program order: peak bytes", live.peak_bytes, 700);
  expect("program order: peak step", live.peak_step, 5);
  expect("persistent bytes", live.persistent_bytes, 400);

  // b read x and is read by out, so it lives from its step to out's; run after c, it meets
  // x 100 and c 200 (600), not a's 200 and c's 200 (700). No order does better: b before c
  // keeps b live at c (700); b after c keeps x and c live at b (600).
  const auto best = memopt::best_schedule(g);
  std::string names;
  for (const auto u : best.order) names += (names.empty() ? "" : " ") + g[u].name;
  std::cout << "best schedule: " << names << '\n';
  if (names != "x w a v c b out") ++failures;  // the one order reaching 600 (w waits for x)
  expect("best schedule: peak bytes", best.peak_bytes, 600);
  if (!best.proved_optimal) ++failures;

  // The recommended arena of that order: c [0, 200), b and before it a [200, 500), x and
  // then out [500, 600), a's workspace under c's block before c runs: as small as the peak.
  const auto arena = memopt::plan_arena(g, std::span<const memopt::vertex_t<my::net>>(best.order),
                                        memopt::best_arena_fit{});
  expect("arena bytes", arena.plan.arena_bytes, 600);
  expect("arena faults", memopt::check_heap_plan(arena.buffers, arena.plan, {}, arena.storage).size(), 0);
  return failures == 0 ? 0 : 1;
}
