// An op's scratch (tensor_traits::scratch_bytes): live during its step only,
// counted by liveness and by every family built on it. Hand-checked graphs
// with exact peaks, then random DAGs with scratch against the brute-force
// peak and the validators.
#include "../support/random_dag.hpp"

#include <memopt/heap.hpp>
#include <memopt/liveness.hpp>
#include <memopt/remat.hpp>
#include <memopt/rewrite.hpp>
#include <memopt/schedule.hpp>
#include <memopt/share.hpp>

#include <doctest/doctest.h>

#include <random>
#include <span>
#include <vector>

namespace mt = memopt::testing;

namespace {

/// s (10) feeds x (50) and y (1, scratch 60); z (1, graph output) reads both.
/// s, x, y, z: x 10 + 50 = 60, y 10 + 50 + 1 + 60 = 121, z 50 + 1 + 1 = 52.
/// s, y, x, z: y 10 + 1 + 60 = 71, x 10 + 1 + 50 = 61, z 52. Without the
/// scratch both orders peak at 61.
mt::graph_spec fork_with_scratch() {
  return {{{.outputs = {10}},
           {.outputs = {50}, .inputs = {{0, 0}}},
           {.outputs = {1}, .inputs = {{0, 0}}, .scratch = 60},
           {.outputs = {1}, .inputs = {{1, 0}, {2, 0}}, .live_out = {0}}}};
}

}  // namespace

TEST_CASE_TEMPLATE("scratch: live at its op's step only, in the table after the outputs, without a port", G,
                   mt::vec_graph, mt::list_graph, mt::bidir_graph, mt::hand_graph) {
  const auto spec = fork_with_scratch();
  const auto [g, vertex] = mt::build<G>(spec);
  const auto r = memopt::liveness(g, mt::to_vertices<G>(vertex, {0, 1, 2, 3}), mt::index_map(g));
  CHECK(r.timeline == std::vector<std::uint64_t>{10, 60, 121, 52});
  CHECK(r.peak_bytes == 121);
  CHECK(r.peak_step == 2);
  const memopt::buffer_table& t = r.buffers;
  REQUIRE(t.size() == 5);
  CHECK(t.num_outputs(2) == 1);
  const memopt::buffer_id scratch = t.first[3] - 1;
  CHECK(t.scratch[scratch]);
  CHECK(t.owner[scratch] == 2);
  CHECK(t.bytes[scratch] == 60);
  CHECK(r.intervals[scratch] == memopt::live_interval{2, 2});
  CHECK(std::ranges::count(r.live_at_peak, scratch) == 1);

  const auto other = memopt::liveness(g, mt::to_vertices<G>(vertex, {0, 2, 1, 3}), mt::index_map(g));
  CHECK(other.timeline == std::vector<std::uint64_t>{10, 71, 61, 52});
}

TEST_CASE("scratch: counted when unread outputs are not, and an edge cannot read it") {
  // a (5, scratch 7) -> b (3, unread). Grappler's accounting drops b, not a's scratch.
  const mt::graph_spec spec{{{.outputs = {5}, .scratch = 7}, {.outputs = {3}, .inputs = {{0, 0}}}}};
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  const std::vector<std::size_t> order{0, 1};
  CHECK(memopt::liveness(g, std::span<const std::size_t>(order)).timeline == std::vector<std::uint64_t>{12, 8});
  CHECK(memopt::liveness(g, std::span<const std::size_t>(order), {}, {.count_unread_outputs = false}).timeline ==
        std::vector<std::uint64_t>{12, 5});

  mt::graph_spec reads_scratch = spec;
  reads_scratch.nodes[1].inputs = {{0, 1}};  // port 1 would be a's scratch buffer
  const auto [h, hv] = mt::build<mt::vec_graph>(reads_scratch);
  CHECK_THROWS_AS((void)memopt::liveness(h, std::span<const std::size_t>(order)), memopt::bad_port_error);
  CHECK_THROWS_AS((void)memopt::make_compact_graph(h), memopt::bad_port_error);
}

TEST_CASE("scratch: the exact scheduler runs the op with scratch while less is live, and every scheduler's peak is its order's") {
  const auto spec = fork_with_scratch();
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  const auto best = memopt::exact_schedule(g);
  CHECK(best.order == std::vector<std::size_t>{0, 2, 1, 3});
  CHECK(best.peak_bytes == 71);
  CHECK(best.proved_optimal);
  for (const auto& entry : memopt::schedule::entries()) {
    INFO(entry.name);
    const auto r = entry(g, {.work_limit = 10000});
    CHECK(r.peak_bytes == memopt::liveness(g, std::span<const std::size_t>(r.order)).peak_bytes);
    CHECK(r.peak_bytes >= 71);
  }
}

TEST_CASE("scratch: the arena gives it a block of its own for its step") {
  const auto spec = fork_with_scratch();
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  const std::vector<std::size_t> order{0, 2, 1, 3};
  const auto arena = memopt::plan_arena(g, order, memopt::greedy_by_size{});
  CHECK(arena.live.peak_bytes == 71);
  CHECK(arena.plan.arena_bytes >= 71);
  CHECK(memopt::check_heap_plan(arena.buffers, arena.plan, std::nullopt, arena.storage).empty());
  // y's scratch (step 1) and x (from step 2) may share bytes; s (steps 0-2) may not.
  const memopt::buffer_id scratch = arena.live.buffers.first[3] - 1;
  const auto offset = arena.plan.offsets[scratch];
  CHECK((offset >= 10 || offset + 60 <= arena.plan.offsets[0]));
}

TEST_CASE("scratch: sharing gives it a blob of its own for its step") {
  const auto spec = fork_with_scratch();
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  const std::vector<std::size_t> order{0, 2, 1, 3};
  const auto linear = memopt::linear_share(g, std::span<const std::size_t>(order));
  CHECK(memopt::check_sharing(g, linear, std::span<const std::size_t>(order)).empty());
  CHECK(linear.unshared_bytes == 122);
  CHECK(linear.total_bytes >= 71);
  const auto dag = memopt::dag_share(g);
  CHECK(memopt::check_sharing(g, dag).empty());
}

TEST_CASE("scratch: rematerialisation counts it at its step and in its copies") {
  // a (100) -> b (100, scratch 50) -> c (1, output); a also read by c.
  // Program order: a 100, b 250, c 201. A recomputed b runs with its scratch again.
  const mt::graph_spec spec{{{.outputs = {100}},
                             {.outputs = {100}, .inputs = {{0, 0}}, .scratch = 50},
                             {.outputs = {1}, .inputs = {{1, 0}, {0, 0}}, .live_out = {0}}}};
  const auto [g, vertex] = mt::build<mt::bidir_graph>(spec);
  const auto facts = memopt::rewrite::read_facts(g);
  CHECK(facts.scratch == std::vector<std::uint64_t>{0, 50, 0});
  const auto r = memopt::remat::rematerialize(facts, {0, 1, 2}, {.budget = 1000});
  CHECK(r.planned_peak == 250);
  CHECK(r.planned_bytes == std::vector<std::uint64_t>{100, 250, 201});
  CHECK(memopt::remat::rematerialisation_floor(facts).bytes == 250);

  memopt::rewrite::rewrite_plan copy;
  copy.nodes.push_back({.name = "b_again", .op = "b", .copy_of = 1, .outputs = {{.bytes = 100}},
                        .inputs = {{{0, false}, 0}}});
  const auto h = memopt::rewrite::apply(facts, copy);
  CHECK(h[3].scratch_bytes == 50);
  CHECK(h[1].scratch_bytes == 50);
}

TEST_CASE("property: with scratch, the peak is the brute-force one on every graph type, and schedules and arenas hold") {
  std::mt19937_64 rng(20261201);
  for (int trial = 0; trial < 1000; ++trial) {
    const auto spec = mt::random_dag(rng, {.max_nodes = 20, .alias_probability = trial % 2 == 0 ? 0.0 : 0.35,
                                           .scratch_probability = 0.3});
    const auto order = mt::random_topological_order(spec, rng);
    INFO("trial " << trial);
    const auto r = mt::liveness_of<mt::vec_graph>(spec, order);
    CHECK(r.peak_bytes == mt::brute_force_peak(spec, order));
    CHECK(mt::liveness_of<mt::list_graph>(spec, order).timeline == r.timeline);
    CHECK(mt::liveness_of<mt::hand_graph>(spec, order).timeline == r.timeline);
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const auto snapshot = memopt::snapshot_liveness(memopt::make_compact_graph(g), order);
    CHECK(snapshot.timeline == r.timeline);
    const auto list = memopt::list_schedule(g);
    CHECK(list.peak_bytes == mt::brute_force_peak(spec, list.order));
    const auto best = memopt::exact_schedule(g, {.work_limit = 2000});
    CHECK(best.peak_bytes == mt::brute_force_peak(spec, best.order));
    CHECK(best.lower_bound_bytes <= best.peak_bytes);
    CHECK(best.lower_bound_bytes <= r.peak_bytes);
    const auto arena = memopt::plan_arena(g, order, memopt::greedy_by_size{});
    CHECK(memopt::check_heap_plan(arena.buffers, arena.plan, std::nullopt, arena.storage).empty());
    CHECK(arena.plan.arena_bytes >= r.peak_bytes);
  }
}
