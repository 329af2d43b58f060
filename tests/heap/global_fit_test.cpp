// heap/global_fit.hpp: XLA's and TFLite's offline best-fit packers.
#include <memopt/heap/check.hpp>
#include <memopt/heap/global_fit.hpp>

#include <doctest/doctest.h>

#include <vector>

static_assert(memopt::offline_heap_algorithm<memopt::xla_size_fit>);
static_assert(memopt::offline_heap_algorithm<memopt::greedy_by_breadth>);
static_assert(!memopt::online_heap_algorithm<memopt::greedy_by_size>);  // no events to replay

namespace {

const std::vector<memopt::heap_buffer> fragmenting = {{0, 3, 1}, {0, 1, 1}, {0, 3, 1}, {2, 3, 2}};

}  // namespace

TEST_CASE("greedy_by_size: largest first, each in the smallest hole among its overlaps") {
  // d first at 0; a above d; b fits the hole [0, 2) under a; c above all.
  const auto plan = memopt::plan_heap(fragmenting, memopt::greedy_by_size{});
  CHECK(plan.offsets == std::vector<std::uint64_t>{2, 0, 3, 0});
  CHECK(plan.arena_bytes == 4);
  CHECK(plan.peak_bytes == 4);
}

TEST_CASE("xla_size_fit: on equal sizes the longer lifetime goes first") {
  // Sizes 2, 1, 1, 1 with lifetimes 1, 3, 1, 3: d, a, c, b.
  const auto plan = memopt::plan_heap(fragmenting, memopt::xla_size_fit{});
  CHECK(plan.offsets == std::vector<std::uint64_t>{2, 0, 3, 0});
  CHECK(memopt::check_heap_plan(fragmenting, plan).empty());
}

TEST_CASE("xla_area_fit: largest bytes x lifetime first") {
  // Areas 3, 1, 3, 2: a, c, d, b. a at 0, c at 1, d above both, b above a and c.
  const auto plan = memopt::plan_heap(fragmenting, memopt::xla_area_fit{});
  CHECK(plan.offsets == std::vector<std::uint64_t>{0, 2, 1, 2});
  CHECK(plan.arena_bytes == 4);
}

TEST_CASE("greedy_by_breadth: the busiest step's buffers first") {
  // Steps 0, 1, 2 hold 3, 2, 4 bytes: step 2 first (d, then a, c), then b.
  const auto plan = memopt::plan_heap(fragmenting, memopt::greedy_by_breadth{});
  CHECK(plan.offsets == std::vector<std::uint64_t>{2, 0, 3, 0});
  CHECK(plan.arena_bytes == 4);
}

TEST_CASE("global fits: alignment is honoured in holes and on top") {
  std::vector<memopt::heap_buffer> buffers = {{0, 2, 6}, {1, 3, 3}, {2, 4, 4}};
  buffers[1].alignment = 4;
  buffers[2].alignment = 4;
  for (const auto& plan : {memopt::plan_heap(buffers, memopt::greedy_by_size{}),
                           memopt::plan_heap(buffers, memopt::xla_area_fit{})}) {
    CHECK(memopt::check_heap_plan(buffers, plan).empty());
    CHECK(plan.offsets[1] % 4 == 0);
    CHECK(plan.offsets[2] % 4 == 0);
  }
}
