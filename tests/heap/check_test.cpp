// heap/check.hpp: every fault a plan can have, found and named.
#include <memopt/heap/check.hpp>

#include <doctest/doctest.h>

#include <vector>

using memopt::heap_fault;
using memopt::heap_violation;

namespace {

const std::vector<memopt::heap_buffer> three = {{0, 4, 4}, {2, 6, 4}, {6, 8, 8}};

}  // namespace

TEST_CASE("check_heap_plan: a valid plan has no violations") {
  CHECK(memopt::check_heap_plan(three, memopt::make_heap_plan(three, {0, 4, 0})).empty());
  CHECK(memopt::check_heap_plan(three, memopt::make_heap_plan(three, {0, 4, 0}), 8).empty());
}

TEST_CASE("check_heap_plan: buffers live together that share bytes collide") {
  const auto plan = memopt::make_heap_plan(three, {0, 3, 0});
  CHECK(memopt::check_heap_plan(three, plan) == std::vector<heap_violation>{{heap_fault::collision, 0, 1}});
}

TEST_CASE("check_heap_plan: every collision among equal offsets is reported") {
  const std::vector<memopt::heap_buffer> same = {{0, 2, 4}, {0, 2, 4}, {1, 3, 4}};
  const auto faults = memopt::check_heap_plan(same, memopt::make_heap_plan(same, {0, 0, 0}));
  CHECK(faults.size() == 3);
}

TEST_CASE("check_heap_plan: alignment, capacity, count and arena") {
  std::vector<memopt::heap_buffer> aligned = three;
  aligned[1].alignment = 8;
  CHECK(memopt::check_heap_plan(aligned, memopt::make_heap_plan(aligned, {0, 4, 0})) ==
        std::vector<heap_violation>{{heap_fault::misaligned, 1}});
  CHECK(memopt::check_heap_plan(three, memopt::make_heap_plan(three, {0, 4, 0}), 7) ==
        std::vector<heap_violation>{{heap_fault::over_capacity, 1}, {heap_fault::over_capacity, 2}});
  CHECK(memopt::check_heap_plan(three, memopt::heap_plan{.offsets = {0, 4}}) ==
        std::vector<heap_violation>{{heap_fault::wrong_count}});
  auto plan = memopt::make_heap_plan(three, {0, 4, 0});
  plan.arena_bytes = 7;
  CHECK(memopt::check_heap_plan(three, plan) == std::vector<heap_violation>{{heap_fault::wrong_arena}});
}

TEST_CASE("check_heap_plan: buffers taking no space may sit anywhere") {
  const std::vector<memopt::heap_buffer> buffers = {{0, 4, 4}, {1, 1, 4}, {0, 4, 0}};
  CHECK(memopt::check_heap_plan(buffers, memopt::make_heap_plan(buffers, {0, 1, 2}), 4).empty());
}
