// The storage-aware memory model (graph/buffers.hpp, graph/storage.hpp,
// liveness): views and in-place results share their source's storage, and
// in-place writes order what touches the storage. Hand-checked, exact to the
// byte, on every graph type; each family's validator rejects a plan that
// splits a storage or shares one that is still live through an alias.
#include "../support/graph_spec.hpp"

#include <memopt/heap.hpp>
#include <memopt/schedule.hpp>
#include <memopt/share.hpp>

#include <doctest/doctest.h>

#include <algorithm>

namespace mt = memopt::testing;
using memopt::order_fault;

namespace {

mt::alias_spec view(std::size_t node, std::size_t port = 0, std::size_t out = 0) {
  return {.port = out, .node = node, .node_port = port, .in_place = false};
}
mt::alias_spec in_place(std::size_t node, std::size_t port = 0) {
  return {.port = 0, .node = node, .node_port = port, .in_place = true};
}

/// x -> v1 = view(x) -> v2 = view(v1) -> y -> z (graph output).
mt::graph_spec view_chain() {
  return {{{.outputs = {100}},
           {.outputs = {100}, .inputs = {{0, 0}}, .aliases = {view(0)}},
           {.outputs = {100}, .inputs = {{1, 0}}, .aliases = {view(1)}},
           {.outputs = {10}, .inputs = {{2, 0}}},
           {.outputs = {1}, .inputs = {{3, 0}}, .live_out = {0}}}};
}

/// r = relu_(x) in place; a reads r; b reads x after the write; z joins them.
mt::graph_spec read_after_write() {
  return {{{.outputs = {100}},
           {.outputs = {100}, .inputs = {{0, 0}}, .aliases = {in_place(0)}},
           {.outputs = {50}, .inputs = {{1, 0}}},
           {.outputs = {20}, .inputs = {{0, 0}}},
           {.outputs = {1}, .inputs = {{2, 0}, {3, 0}}, .live_out = {0}}}};
}

/// r reads x (making 1000 bytes); then w = add_(x, B) overwrites x. Running w
/// first would free B early (peak 1101), but r must read x before the write.
mt::graph_spec write_after_read() {
  return {{{.outputs = {100}},
           {.outputs = {500}},
           {.outputs = {1000}, .inputs = {{0, 0}}},
           {.outputs = {100}, .inputs = {{0, 0}, {1, 0}}, .aliases = {in_place(0)}},
           {.outputs = {1}, .inputs = {{2, 0}, {3, 0}}, .live_out = {0}}}};
}

/// v = view(x) is a graph output; y reads x, z reads y.
mt::graph_spec view_of_output() {
  return {{{.outputs = {100}},
           {.outputs = {100}, .inputs = {{0, 0}}, .live_out = {0}, .aliases = {view(0)}},
           {.outputs = {10}, .inputs = {{0, 0}}},
           {.outputs = {5}, .inputs = {{2, 0}}}}};
}

/// t = view(w) of a weight (t itself not marked persistent); m reads x and t.
mt::graph_spec view_of_weight() {
  return {{{.outputs = {400}, .persistent = true},
           {.outputs = {400}, .inputs = {{0, 0}}, .aliases = {view(0)}},
           {.outputs = {100}},
           {.outputs = {50}, .inputs = {{2, 0}, {1, 0}}, .live_out = {0}}}};
}

/// s = split(x) into three views; a, b, c read one each; z joins them.
mt::graph_spec split_three() {
  return {{{.outputs = {300}},
           {.outputs = {100, 100, 100}, .inputs = {{0, 0}}, .aliases = {view(0, 0, 0), view(0, 0, 1), view(0, 0, 2)}},
           {.outputs = {10}, .inputs = {{1, 0}}},
           {.outputs = {10}, .inputs = {{1, 1}}},
           {.outputs = {10}, .inputs = {{1, 2}}},
           {.outputs = {1}, .inputs = {{2, 0}, {3, 0}, {4, 0}}, .live_out = {0}}}};
}

/// The same graph with every alias dropped: every output apart.
mt::graph_spec apart(mt::graph_spec spec) {
  for (auto& node : spec.nodes) node.aliases.clear();
  return spec;
}

template <class G>
std::uint64_t program_peak(const mt::graph_spec& spec) {
  return mt::liveness_of<G>(spec, mt::identity_order(spec.nodes.size())).peak_bytes;
}

template <class G>
memopt::not_topological_error refusal(const mt::graph_spec& spec, const std::vector<std::size_t>& order) {
  const auto [g, vertex] = mt::build<G>(spec);
  try {
    (void)memopt::liveness(g, mt::to_vertices<G>(vertex, order), mt::index_map(g));
  } catch (const memopt::not_topological_error& e) {
    return e;
  }
  FAIL("the order was accepted");
  return memopt::not_topological_error(order_fault::missing, 0);
}

template <class G>
memopt::bad_alias_error alias_refusal(const mt::graph_spec& spec) {
  const auto [g, vertex] = mt::build<G>(spec);
  try {
    (void)memopt::liveness(g, mt::to_vertices<G>(vertex, mt::identity_order(spec.nodes.size())),
                           mt::index_map(g));
  } catch (const memopt::bad_alias_error& e) {
    return e;
  }
  FAIL("the alias was accepted");
  return memopt::bad_alias_error(memopt::alias_fault::loop, 0, 0, 0, 0);
}

}  // namespace

#define ALL_GRAPH_TYPES mt::vec_graph, mt::list_graph, mt::bidir_graph, mt::hand_graph

TEST_CASE_TEMPLATE("storage: a chain of views is one storage, live to its last reader", G, ALL_GRAPH_TYPES) {
  const auto live = mt::liveness_of<G>(view_chain(), mt::identity_order(5));
  CHECK(live.buffers.aliased == 2);
  CHECK(live.buffers.storage == std::vector<memopt::buffer_id>{0, 0, 0, 3, 4});
  CHECK(live.timeline == std::vector<std::uint64_t>{100, 100, 100, 110, 11});
  CHECK(live.intervals[0] == memopt::live_interval{0, 3});
  CHECK(live.intervals[2] == memopt::live_interval{0, 3});
  CHECK(live.live_at_peak == std::vector<memopt::buffer_id>{0, 3});
  CHECK(program_peak<G>(apart(view_chain())) == 200);
}

TEST_CASE_TEMPLATE("storage: an in-place op's source read again later lives to that read", G, ALL_GRAPH_TYPES) {
  const auto live = mt::liveness_of<G>(read_after_write(), mt::identity_order(5));
  CHECK(live.timeline == std::vector<std::uint64_t>{100, 100, 150, 170, 71});
  CHECK(live.intervals[0] == memopt::live_interval{0, 3});
  const auto [g, vertex] = mt::build<G>(read_after_write());
  const auto table = memopt::make_buffer_table(g, mt::index_map(g));
  CHECK(table.in_place == std::vector<bool>{false, true, false, false, false});
  // The write orders its readers: a (through r) and b (through x) after it.
  CHECK(memopt::storage_hazards(g, table, mt::index_map(g)) ==
        std::vector<memopt::storage_hazard>{{1, 2, false}, {1, 3, false}});
  // Reading x before the write would read other values: refused, both named.
  const auto e = refusal<G>(read_after_write(), {0, 3, 1, 2, 4});
  CHECK(e.fault == order_fault::read_too_early);
  CHECK(e.vertex == 3);
  CHECK(e.other == 1);
  CHECK(std::string(e.what()) ==
        "the order runs vertex 3 before vertex 1, but vertex 3 uses a storage after vertex 1 "
        "overwrites it in place in the graph's order");
  const auto violations =
      memopt::check_topological_order(g, mt::to_vertices<G>(vertex, {0, 3, 1, 2, 4}), mt::index_map(g));
  CHECK(violations == std::vector<memopt::order_violation>{{order_fault::read_too_early, 3, 1}});
}

TEST_CASE_TEMPLATE("storage: no scheduler moves a reader after the write that overwrites what it reads", G,
                   ALL_GRAPH_TYPES) {
  const auto built = mt::build<G>(write_after_read());  // members, not a binding: clang 14 lambdas cannot capture those
  const auto& g = built.g;
  const auto index = mt::index_map(g);
  CHECK(program_peak<G>(write_after_read()) == 1600);
  const auto e = refusal<G>(write_after_read(), {0, 1, 3, 2, 4});
  CHECK(e.fault == order_fault::write_too_early);
  CHECK(e.vertex == 3);
  CHECK(e.other == 2);
  CHECK(std::string(e.what()) ==
        "the order runs vertex 3 before vertex 2, but vertex 3 overwrites in place a storage that "
        "vertex 2 uses first in the graph's order");
  const auto check = [&](const auto& r) {
    CHECK(memopt::is_topological_order(g, std::span<const memopt::vertex_t<G>>(r.order), index));
    CHECK(r.peak_bytes == 1600);
  };
  check(memopt::list_schedule(g, memopt::bytes_freed_priority{}, {}, index));
  check(memopt::dfs_schedule(g, index));
  check(memopt::post_order_schedule(g, index));
  check(memopt::lpmf_schedule(g, index));
  check(memopt::bfs_schedule(g, index));
  check(memopt::dfs_size_schedule(g, index));
  check(memopt::best_heuristic(g, index));
  const auto exact = memopt::exact_schedule(g, {}, index);
  check(exact);
  CHECK(exact.lower_bound_bytes == 1600);
  // As copies, w may run first: the optimum is then 1200 (x, B, w, r, s).
  const auto [copies, copy_vertex] = mt::build<G>(apart(write_after_read()));
  const auto free = memopt::exact_schedule(copies, {}, mt::index_map(copies));
  CHECK(free.peak_bytes == 1200);
  CHECK(free.lower_bound_bytes == 1200);
}

TEST_CASE_TEMPLATE("storage: a view of a graph output keeps the storage to the end", G, ALL_GRAPH_TYPES) {
  const auto live = mt::liveness_of<G>(view_of_output(), mt::identity_order(4));
  CHECK(live.buffers.live_out[0]);
  CHECK(live.intervals[0] == memopt::live_interval{0, 3});
  CHECK(live.timeline == std::vector<std::uint64_t>{100, 100, 110, 115});
  CHECK(program_peak<G>(apart(view_of_output())) == 210);
}

TEST_CASE_TEMPLATE("storage: a view of a weight costs nothing", G, ALL_GRAPH_TYPES) {
  const auto live = mt::liveness_of<G>(view_of_weight(), mt::identity_order(4));
  CHECK(live.buffers.persistent[1]);
  CHECK(live.peak_bytes == 150);
  CHECK(live.persistent_bytes == 400);
  CHECK(program_peak<G>(apart(view_of_weight())) == 550);
}

TEST_CASE_TEMPLATE("storage: split into three views keeps the whole source to the last reader", G,
                   ALL_GRAPH_TYPES) {
  const auto live = mt::liveness_of<G>(split_three(), mt::identity_order(6));
  CHECK(live.buffers.aliased == 3);
  CHECK(live.timeline == std::vector<std::uint64_t>{300, 300, 310, 320, 330, 31});
  CHECK(program_peak<G>(apart(split_three())) == 600);
}

TEST_CASE_TEMPLATE("storage: a bad alias is refused, naming the node", G, ALL_GRAPH_TYPES) {
  using memopt::alias_fault;
  // z claims y's storage, but reads x.
  const mt::graph_spec not_read{{{.outputs = {10}},
                                 {.outputs = {10}, .inputs = {{0, 0}}},
                                 {.outputs = {10}, .inputs = {{0, 0}}, .aliases = {view(1)}}}};
  const auto e = alias_refusal<G>(not_read);
  CHECK(e.fault == alias_fault::not_an_input);
  CHECK(e.vertex == 2);
  CHECK(e.source == 1);
  CHECK(std::string(e.what()) ==
        "output 0 of vertex 2 is declared to share the storage of output 0 of vertex 1, which "
        "vertex 2 does not read");
  // a and b claim each other's storage.
  const mt::graph_spec loop{{{.outputs = {10}, .aliases = {view(1)}}, {.outputs = {10}, .aliases = {view(0)}}}};
  CHECK(alias_refusal<G>(loop).fault == alias_fault::loop);
  const mt::graph_spec self{{{.outputs = {10}, .aliases = {view(0)}}}};
  CHECK(alias_refusal<G>(self).fault == alias_fault::loop);
  const mt::graph_spec no_port{{{.outputs = {10}}, {.outputs = {10}, .inputs = {{0, 0}}, .aliases = {view(0, 3)}}}};
  CHECK(alias_refusal<G>(no_port).fault == alias_fault::no_such_port);
}

TEST_CASE("storage: check_heap_plan rejects an alias placed apart from its storage") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(read_after_write());
  const auto live = memopt::liveness(g, memopt::program_order(g));
  const auto buffers = memopt::heap_buffers_of(live);
  auto plan = memopt::plan_heap(buffers, memopt::best_fit{});
  memopt::share_offsets(plan, live.buffers.storage);
  CHECK(plan.arena_bytes == 170);
  CHECK(memopt::check_heap_plan(buffers, plan, std::nullopt, live.buffers.storage).empty());
  plan.offsets[1] = plan.offsets[0] + 100;  // r elsewhere than x
  CHECK(memopt::check_heap_plan(buffers, plan, std::nullopt, live.buffers.storage) ==
        std::vector<memopt::heap_violation>{{memopt::heap_fault::split_storage, 1, 0}});
}

TEST_CASE("storage: check_sharing rejects a split storage and a blob shared while an alias keeps it live") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(read_after_write());
  const auto order = memopt::program_order(g);
  const auto plan = memopt::linear_share(g, std::span<const std::size_t>(order));
  CHECK(plan.storage_of[1] == plan.storage_of[0]);
  CHECK(memopt::check_sharing(g, plan, std::span<const std::size_t>(order)).empty());
  CHECK(memopt::check_sharing(g, memopt::dag_share(g)).empty());

  auto split = plan;
  split.storage_of[1] = split.storage_of[2];
  const auto split_faults = memopt::check_sharing(g, split, std::span<const std::size_t>(order));
  CHECK(std::ranges::count(split_faults, memopt::sharing_violation{memopt::sharing_fault::split_storage, 1, 0}) == 1);

  // b's output (born at step 3) in x's blob: x is still live, read by b itself.
  auto overlapping = plan;
  overlapping.storage_of[3] = overlapping.storage_of[0];
  const auto faults = memopt::check_sharing(g, overlapping, std::span<const std::size_t>(order));
  CHECK(std::ranges::count(faults, memopt::sharing_violation{memopt::sharing_fault::overlap, 0, 3}) == 1);
  const auto dag_faults = memopt::check_sharing(g, overlapping);
  CHECK(std::ranges::count(dag_faults, memopt::sharing_violation{memopt::sharing_fault::overlap, 0, 3}) == 1);
}
