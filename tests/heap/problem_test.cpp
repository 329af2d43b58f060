// heap/problem.hpp: max-live, plans from offsets, the problem of a schedule.
#include "../support/graph_spec.hpp"

#include <memopt/heap/lifetimes.hpp>
#include <memopt/heap/problem.hpp>
#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

#include <vector>

TEST_CASE("max_live_bytes: a buffer dead at t makes room for one born at t") {
  const std::vector<memopt::heap_buffer> chain = {{0, 3, 4}, {3, 9, 4}, {0, 9, 4}, {9, 21, 4}, {0, 21, 4}};
  CHECK(memopt::max_live_bytes(chain) == 12);  // MiniMalloc's README example
  const std::vector<memopt::heap_buffer> touching = {{0, 2, 5}, {2, 4, 7}};
  CHECK(memopt::max_live_bytes(touching) == 7);
  const std::vector<memopt::heap_buffer> overlapping = {{0, 3, 5}, {2, 4, 7}};
  CHECK(memopt::max_live_bytes(overlapping) == 12);
}

TEST_CASE("max_live_bytes: empty lifetimes and zero sizes take no space") {
  const std::vector<memopt::heap_buffer> buffers = {{4, 4, 100}, {0, 9, 0}, {1, 2, 3}};
  CHECK(memopt::max_live_bytes(buffers) == 3);
  CHECK(memopt::max_live_bytes({}) == 0);
  CHECK_FALSE(buffers[0].takes_space());
  CHECK_FALSE(buffers[0].overlaps(buffers[2]));
}

TEST_CASE("max_live_bytes: a sum beyond 64 bits is a size_overflow_error") {
  const std::uint64_t half = std::uint64_t{1} << 63;
  const std::vector<memopt::heap_buffer> buffers = {{0, 2, half}, {1, 3, half}};
  CHECK_THROWS_AS((void)memopt::max_live_bytes(buffers), memopt::size_overflow_error);
}

TEST_CASE("make_heap_plan: arena is the top of the highest buffer, fragmentation against max-live") {
  const std::vector<memopt::heap_buffer> buffers = {{0, 2, 4}, {1, 3, 4}, {5, 5, 100}};
  const auto plan = memopt::make_heap_plan(buffers, {0, 6, 0});
  CHECK(plan.arena_bytes == 10);
  CHECK(plan.peak_bytes == 8);
  CHECK(plan.fragmentation() == doctest::Approx(0.25));
}

TEST_CASE("heap_buffers_of: closed live steps become half-open, persistent buffers leave the arena") {
  // p (persistent) -> a -> b -> c; a is read by b and c.
  memopt::testing::graph_spec spec;
  spec.nodes.push_back({.outputs = {50}, .persistent = true});
  spec.nodes.push_back({.outputs = {10}, .inputs = {{0, 0}}});
  spec.nodes.push_back({.outputs = {20}, .inputs = {{1, 0}}});
  spec.nodes.push_back({.outputs = {30}, .inputs = {{1, 0}, {2, 0}}, .live_out = {0}});
  const auto [g, vertex] = memopt::testing::build<memopt::testing::vec_graph>(spec);
  const std::vector<std::size_t> order = {0, 1, 2, 3};
  const auto live = memopt::liveness(g, order);
  const auto buffers = memopt::heap_buffers_of(live, {.alignment = 8});
  REQUIRE(buffers.size() == 4);
  CHECK_FALSE(buffers[0].takes_space());
  CHECK(buffers[1].lower == 1);
  CHECK(buffers[1].upper == 4);
  CHECK(buffers[2].lower == 2);
  CHECK(buffers[2].upper == 4);
  CHECK(buffers[3].lower == 3);
  CHECK(buffers[3].upper == 4);
  CHECK(buffers[3].alignment == 8);
  CHECK(memopt::max_live_bytes(buffers) == live.peak_bytes);
  CHECK(live.peak_bytes == 60);
}
