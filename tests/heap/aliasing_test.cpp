// heap/graph.hpp: plan_arena, the arena of a graph's schedule with its storages,
// in-place reuse included (heap/aliasing.hpp's share_offsets).
#include "../support/graph_spec.hpp"

#include <memopt/heap.hpp>
#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace {

using graph = memopt::testing::vec_graph;

/// k (4) -> x (10) -> y = relu_(x) (10) -> z = relu_(y) (8) -> w (2), which
/// also reads k. y and z may alias their input (x is made by an op: a graph
/// input would never be taken over).
graph chain(bool x_read_late) {
  graph g(5);
  g[0].outputs = {{.bytes = 10}};                                  // x
  g[1].outputs = {{.bytes = 10, .alias = {{0, 0}}}};              // y in place of x
  g[2].outputs = {{.bytes = 8, .alias = {{1, 0}}}};               // z in place of y (smaller)
  g[3].outputs = {{.bytes = 4}};                                   // k
  g[4].outputs = {{.bytes = 2, .live_out = true}};                 // w
  add_edge(0, 1, memopt::tensor_edge{}, g);
  add_edge(1, 2, memopt::tensor_edge{}, g);
  add_edge(2, 4, memopt::tensor_edge{}, g);
  add_edge(3, 4, memopt::tensor_edge{}, g);
  add_edge(3, 0, memopt::tensor_edge{}, g);
  if (x_read_late) add_edge(0, 4, memopt::tensor_edge{}, g);
  return g;
}

}  // namespace

TEST_CASE("in-place reuse: a chain of element-wise ops shares one storage, and the arena says so") {
  const auto g = chain(false);
  const std::vector<std::size_t> order = {3, 0, 1, 2, 4};
  const auto live = memopt::liveness(g, order);
  // y takes over x (same bytes, x dies at y); z is smaller, so it keeps its own.
  CHECK(live.reused == std::vector<memopt::buffer_id>{1});
  CHECK(live.buffers.storage == std::vector<memopt::buffer_id>{0, 0, 2, 3, 4});
  CHECK(live.timeline == std::vector<std::uint64_t>{4, 14, 14, 22, 14});  // step 2: x's storage 10 + k 4
  const auto arena = memopt::plan_arena(g, order, memopt::greedy_by_size{});
  CHECK(arena.buffers[0].lower == 1);
  CHECK(arena.buffers[0].upper == 4);  // x's storage lives until y's last reader, z
  CHECK_FALSE(arena.buffers[1].takes_space());
  CHECK(arena.plan.offsets[1] == arena.plan.offsets[0]);
  CHECK(arena.plan.arena_bytes >= live.peak_bytes);
  CHECK(memopt::check_heap_plan(arena.buffers, arena.plan, std::nullopt, arena.storage).empty());
}

TEST_CASE("in-place reuse: none while the input is still to be read") {
  const auto g = chain(true);  // w reads x too: y may not overwrite it
  const auto live = memopt::liveness(g, std::vector<std::size_t>{3, 0, 1, 2, 4});
  CHECK(live.reused.empty());
  CHECK(live.buffers.storage == std::vector<memopt::buffer_id>{0, 1, 2, 3, 4});
}

TEST_CASE("plan_arena: a graph and an order to offsets, aliases at their storage's") {
  // x (100); r = relu_(x) in place; a (60) reads r; b (60) reads a and may
  // overwrite it; z (1) reads b (output). Program order: x lives [0, 2] (a
  // reads its storage at 2), a [2, 3], b [3, 4], z [4, 4]: max-live 160 at
  // step 2. greedy_by_size: x at 0, a above it at 100, b in the hole under a.
  namespace mt = memopt::testing;
  const mt::graph_spec spec{{{.outputs = {100}},
                             {.outputs = {100},
                              .inputs = {{0, 0}},
                              .aliases = {{.port = 0, .node = 0, .node_port = 0, .in_place = true}}},
                             {.outputs = {60}, .inputs = {{1, 0}}},
                             {.outputs = {60}, .inputs = {{2, 0}}},
                             {.outputs = {1}, .inputs = {{3, 0}}, .live_out = {0}}}};
  auto [g, vertex] = mt::build<graph>(spec);
  const std::vector<std::size_t> order = {0, 1, 2, 3, 4};

  const auto arena = memopt::plan_arena(g, order, memopt::greedy_by_size{});
  CHECK(arena.live.peak_bytes == 160);
  CHECK(arena.storage == std::vector<memopt::buffer_id>{0, 0, 2, 3, 4});
  CHECK(arena.plan.offsets == std::vector<std::uint64_t>{0, 0, 100, 0, 60});  // z above b
  CHECK(arena.plan.arena_bytes == 160);
  CHECK(arena.plan.peak_bytes == 160);
  CHECK(memopt::check_heap_plan(arena.buffers, arena.plan, std::nullopt, arena.storage).empty());

  // Aligned to 64: a at 128; b under it at 0; z above b at 64.
  const auto aligned = memopt::plan_arena(g, order, memopt::greedy_by_size{}, {.alignment = 64});
  CHECK(aligned.plan.offsets == std::vector<std::uint64_t>{0, 0, 128, 0, 64});
  CHECK(aligned.plan.arena_bytes == 188);
  CHECK(memopt::check_heap_plan(aligned.buffers, aligned.plan, std::nullopt, aligned.storage).empty());

  // The recommended arena (best_arena) through plan_arena: max-live, as best_arena places it.
  const auto best = memopt::plan_arena(g, order, memopt::best_arena_fit{});
  CHECK(best.plan.arena_bytes == 160);
  CHECK(best.plan.offsets == memopt::best_arena(best.buffers).plan.offsets);
  CHECK(memopt::check_heap_plan(best.buffers, best.plan, std::nullopt, best.storage).empty());

  // With b marked may-alias of a: b takes over a's block, which now lives to
  // step 4; z fits under a.
  g[3].outputs[0].alias = memopt::buffer_ref<std::size_t>{2, 0};
  const auto reused = memopt::plan_arena(g, order, memopt::greedy_by_size{});
  CHECK(reused.storage == std::vector<memopt::buffer_id>{0, 0, 2, 2, 4});
  CHECK(reused.plan.offsets == std::vector<std::uint64_t>{0, 0, 100, 100, 0});
  CHECK(reused.plan.arena_bytes == 160);
  CHECK(memopt::check_heap_plan(reused.buffers, reused.plan, std::nullopt, reused.storage).empty());
}
