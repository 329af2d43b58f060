// heap/online_fit.hpp and heap/algorithm.hpp: free-list allocators, driven by
// events directly and through plan_heap, and users' algorithms of either shape.
#include <memopt/heap/algorithm.hpp>
#include <memopt/heap/check.hpp>
#include <memopt/heap/online_fit.hpp>

#include <doctest/doctest.h>

#include <span>
#include <stdexcept>
#include <vector>

static_assert(memopt::online_heap_algorithm<memopt::first_fit>);
static_assert(memopt::heap_algorithm<memopt::first_fit>);
static_assert(memopt::heap_algorithm<memopt::best_fit>);
static_assert(!memopt::offline_heap_algorithm<memopt::first_fit>);

namespace {

// Holes [0,3) and [5,6) when v arrives at t = 2: first fit takes the lowest,
// best fit the smallest.
const std::vector<memopt::heap_buffer> two_holes = {
    {0, 1, 3}, {0, 4, 2}, {0, 1, 1}, {0, 4, 1}, {2, 4, 1}};

// a, b, c side by side, b dies, d needs 2: the hole of b is too small.
const std::vector<memopt::heap_buffer> fragmenting = {{0, 3, 1}, {0, 1, 1}, {0, 3, 1}, {2, 3, 2}};

}  // namespace

TEST_CASE("first_fit: the lowest hole that fits") {
  const auto plan = memopt::plan_heap(two_holes, memopt::first_fit{});
  CHECK(plan.offsets == std::vector<std::uint64_t>{0, 3, 5, 6, 0});
  CHECK(plan.arena_bytes == 7);
  CHECK(plan.peak_bytes == 7);
  CHECK(memopt::check_heap_plan(two_holes, plan).empty());
}

TEST_CASE("best_fit: the smallest hole that fits") {
  const auto plan = memopt::plan_heap(two_holes, memopt::best_fit{});
  CHECK(plan.offsets == std::vector<std::uint64_t>{0, 3, 5, 6, 5});
  CHECK(memopt::check_heap_plan(two_holes, plan).empty());
}

TEST_CASE("first_fit: online placement fragments where a global order would not") {
  const auto plan = memopt::plan_heap(fragmenting, memopt::first_fit{});
  CHECK(plan.offsets == std::vector<std::uint64_t>{0, 1, 2, 3});
  CHECK(plan.arena_bytes == 5);
  CHECK(plan.peak_bytes == 4);
}

TEST_CASE("first_fit: driven by events, a freed top lowers the top and holes merge") {
  memopt::first_fit heap;
  heap.allocate(0, 10);
  heap.allocate(1, 10);
  heap.allocate(2, 10);
  heap.free(0, 10);
  heap.free(1, 10);  // merges with the hole of 0: [0, 20)
  heap.allocate(3, 20);
  heap.free(2, 10);
  heap.allocate(4, 15);  // the top fell back to 20
  const auto plan = std::move(heap).finish();
  CHECK(plan.offsets == std::vector<std::uint64_t>{0, 10, 20, 0, 20});
  CHECK(plan.arena_bytes == 35);
  CHECK(plan.peak_bytes == 35);
}

TEST_CASE("best_fit: holes of any size, up to 2^62, far apart among its buckets") {
  constexpr std::uint64_t huge = std::uint64_t{1} << 62;
  memopt::best_fit heap;
  heap.allocate(0, huge);
  heap.allocate(1, 8);
  heap.allocate(2, huge / 2);
  heap.allocate(3, 8);
  heap.allocate(4, 3);
  heap.free(0, huge);      // hole [0, 2^62)
  heap.free(2, huge / 2);  // hole [2^62 + 8, 2^62 + 8 + 2^61)
  heap.allocate(5, 2);     // the smaller hole, as is the rest of it next
  heap.allocate(6, huge / 4);
  heap.allocate(7, huge - 1);
  const auto plan = std::move(heap).finish();
  CHECK(plan.offsets == std::vector<std::uint64_t>{0, huge, huge + 8, huge + 8 + huge / 2, huge + 16 + huge / 2,
                                                   huge + 8, huge + 10, 0});
  CHECK(plan.arena_bytes == huge + 19 + huge / 2);
}

TEST_CASE("best_fit: a hole smaller than every request so far waits aside, and is taken when one fits it") {
  memopt::best_fit heap;
  heap.allocate(0, 100);
  heap.allocate(1, 100);
  heap.allocate(2, 100);
  heap.free(1, 100);     // hole [100, 200)
  heap.allocate(3, 70);  // [100, 170); the 30 bytes left are less than any request yet
  heap.free(3, 70);      // merges with them: [100, 200) again
  heap.allocate(4, 60);  // [100, 160), leaving the 40 bytes of [160, 200)
  heap.allocate(5, 35);  // a smaller request: the 40-byte hole is the smallest that fits
  heap.allocate(6, 5);   // and the 5 bytes it left
  heap.allocate(7, 1);   // none left: the top
  const auto plan = std::move(heap).finish();
  CHECK(plan.offsets == std::vector<std::uint64_t>{0, 100, 200, 100, 100, 160, 195, 300});
  CHECK(plan.arena_bytes == 301);
}

TEST_CASE("online fits: alignment pads the offset and leaves the padding as a hole") {
  std::vector<memopt::heap_buffer> buffers = {{0, 4, 3}, {0, 4, 5}, {1, 4, 2}};
  buffers[1].alignment = 8;
  for (const auto& plan : {memopt::plan_heap(buffers, memopt::first_fit{}),
                           memopt::plan_heap(buffers, memopt::best_fit{})}) {
    CHECK(plan.offsets == std::vector<std::uint64_t>{0, 8, 3});
    CHECK(plan.arena_bytes == 13);
    CHECK(memopt::check_heap_plan(buffers, plan).empty());
  }
}

namespace {

/// A user's algorithm without alignment: everything stacked, never reused.
struct stack_heap {
  std::vector<std::uint64_t> offsets;
  std::uint64_t top = 0;
  void allocate(memopt::buffer_id b, std::uint64_t bytes) {
    if (b >= offsets.size()) offsets.resize(b + 1);
    offsets[b] = top;
    top += bytes;
  }
  void free(memopt::buffer_id, std::uint64_t) {}
  memopt::heap_plan finish() && { return {.offsets = std::move(offsets), .arena_bytes = top}; }
};
static_assert(memopt::heap_algorithm<stack_heap>);

}  // namespace

TEST_CASE("plan_heap: a user's algorithm runs, an alignment it cannot take is refused") {
  const auto plan = memopt::plan_heap(fragmenting, stack_heap{});
  CHECK(plan.arena_bytes == 5);
  CHECK(plan.peak_bytes == 4);
  CHECK(memopt::check_heap_plan(fragmenting, plan).empty());
  auto aligned = fragmenting;
  aligned[2].alignment = 4;
  CHECK_THROWS_AS((void)memopt::plan_heap(aligned, stack_heap{}), std::invalid_argument);
}

namespace {

/// A user's offline algorithm: every buffer at a new offset, never reused.
struct stack_everything {
  std::vector<std::uint64_t> pack(std::span<const memopt::heap_buffer> buffers) const {
    std::vector<std::uint64_t> offsets;
    std::uint64_t top = 0;
    for (const auto& x : buffers) {
      top += (x.alignment - top % x.alignment) % x.alignment;
      offsets.push_back(top);
      top += x.bytes;
    }
    return offsets;
  }
};
static_assert(memopt::offline_heap_algorithm<stack_everything>);
static_assert(!memopt::online_heap_algorithm<stack_everything>);

/// A half-written algorithm: offsets under another name, no events.
struct neither {
  std::vector<std::uint64_t> offsets(std::span<const memopt::heap_buffer>) const;
  void allocate(memopt::buffer_id, std::uint64_t);
};
static_assert(!memopt::online_heap_algorithm<neither>);
static_assert(!memopt::offline_heap_algorithm<neither>);
static_assert(!memopt::heap_algorithm<neither>);

/// Forgets the last buffer.
struct one_short {
  std::vector<std::uint64_t> pack(std::span<const memopt::heap_buffer> buffers) const {
    return std::vector<std::uint64_t>(buffers.size() - 1, 0);
  }
};

}  // namespace

TEST_CASE("plan_heap: a user's offline algorithm runs on the whole problem") {
  const auto plan = memopt::plan_heap(fragmenting, stack_everything{});
  CHECK(plan.offsets == std::vector<std::uint64_t>{0, 1, 2, 3});
  CHECK(plan.arena_bytes == 5);
  CHECK(plan.peak_bytes == 4);
  CHECK(memopt::check_heap_plan(fragmenting, plan).empty());
  auto aligned = fragmenting;
  aligned[2].alignment = 4;
  const auto padded = memopt::plan_heap(aligned, stack_everything{});
  CHECK(padded.offsets == std::vector<std::uint64_t>{0, 1, 4, 5});
  CHECK(padded.arena_bytes == 7);
  CHECK(memopt::check_heap_plan(aligned, padded).empty());
  CHECK_THROWS_AS((void)memopt::plan_heap(fragmenting, one_short{}), std::invalid_argument);
}
