// heap/exact.hpp: the exact packer, minimising and deciding.
#include <memopt/heap/check.hpp>
#include <memopt/heap/exact.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace {

// t0: a 2, b 2; t1: b 2, c 3. Max-live 5: b at the bottom, a and c above it.
const std::vector<memopt::heap_buffer> survivor = {{0, 1, 2}, {0, 2, 2}, {1, 2, 3}};

}  // namespace

TEST_CASE("exact_fit: reaches max-live and proves it") {
  const auto r = memopt::exact_fit(survivor);
  CHECK(r.status == memopt::fit_status::fits);
  CHECK(r.proved_optimal);
  CHECK(r.plan.arena_bytes == 5);
  CHECK(r.plan.peak_bytes == 5);
  CHECK(memopt::check_heap_plan(survivor, r.plan).empty());
}

TEST_CASE("exact_fit: MiniMalloc's README example packs into 12") {
  const std::vector<memopt::heap_buffer> example = {{0, 3, 4}, {3, 9, 4}, {0, 9, 4}, {9, 21, 4}, {0, 21, 4}};
  const auto r = memopt::exact_fit(example, {.capacity = 12});
  CHECK(r.status == memopt::fit_status::fits);
  CHECK(r.plan.arena_bytes == 12);
  CHECK(memopt::check_heap_plan(example, r.plan, 12).empty());
}

TEST_CASE("exact_fit: a capacity below max-live does not fit, without an error") {
  const auto r = memopt::exact_fit(survivor, {.capacity = 4});
  CHECK(r.status == memopt::fit_status::does_not_fit);
  CHECK_FALSE(r.plan.offsets.empty());  // the best heuristic plan, for what it is worth
}

TEST_CASE("exact_fit: empty, zero-length, zero-size and equal lifetimes") {
  CHECK(memopt::exact_fit({}).plan.arena_bytes == 0);
  CHECK(memopt::exact_fit({}).proved_optimal);
  const std::vector<memopt::heap_buffer> odd = {{3, 3, 50}, {0, 4, 0}, {1, 3, 7}, {1, 3, 7}, {1, 3, 7}};
  const auto r = memopt::exact_fit(odd, {.capacity = 21});
  CHECK(r.status == memopt::fit_status::fits);
  CHECK(r.plan.arena_bytes == 21);
  CHECK(memopt::check_heap_plan(odd, r.plan, 21).empty());
}

TEST_CASE("exact_fit: a single huge buffer") {
  const std::uint64_t huge = std::uint64_t{1} << 62;
  const std::vector<memopt::heap_buffer> one = {{0, 1, huge}};
  const auto r = memopt::exact_fit(one);
  CHECK(r.plan.arena_bytes == huge);
  CHECK(r.proved_optimal);
  CHECK(memopt::exact_fit(one, {.capacity = huge - 1}).status == memopt::fit_status::does_not_fit);
}

TEST_CASE("exact_fit: alignment") {
  std::vector<memopt::heap_buffer> buffers = {{0, 2, 3}, {1, 3, 4}, {0, 3, 1}};
  for (auto& b : buffers) b.alignment = 4;
  const auto r = memopt::exact_fit(buffers);
  CHECK(memopt::check_heap_plan(buffers, r.plan).empty());
  CHECK(r.plan.arena_bytes == 9);  // all three live at t1: slots 0, 4, 8, the 1-byte one on top
  CHECK(r.proved_optimal);
}

TEST_CASE("exact_fit: a time limit of zero returns a valid plan and proves nothing it has not") {
  const auto r = memopt::exact_fit(survivor, {.time_limit_seconds = 0.0});
  CHECK(memopt::check_heap_plan(survivor, r.plan).empty());
  CHECK(r.plan.arena_bytes >= 5);
  CHECK(r.proved_optimal == (r.plan.arena_bytes == 5));
}
