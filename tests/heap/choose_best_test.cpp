// heap/choose_best.hpp: the smallest arena among several algorithms.
#include <memopt/heap/check.hpp>
#include <memopt/heap/choose_best.hpp>

#include <doctest/doctest.h>

#include <vector>

namespace {

const std::vector<memopt::heap_buffer> fragmenting = {{0, 3, 1}, {0, 1, 1}, {0, 3, 1}, {2, 3, 2}};

}  // namespace

TEST_CASE("choose_best: keeps the smallest arena and says which algorithm made it") {
  const auto choice = memopt::choose_best(fragmenting, memopt::first_fit{}, memopt::greedy_by_size{});
  CHECK(choice.chosen == 1);
  CHECK(choice.plan.arena_bytes == 4);
  CHECK(memopt::check_heap_plan(fragmenting, choice.plan).empty());
}

TEST_CASE("choose_best: the first on ties") {
  const auto choice = memopt::choose_best(fragmenting, memopt::greedy_by_size{}, memopt::xla_size_fit{});
  CHECK(choice.chosen == 0);
}

TEST_CASE("choose_best: the default set reaches max-live here") {
  const auto choice = memopt::choose_best(fragmenting);
  CHECK(choice.plan.arena_bytes == 4);
  CHECK(choice.plan.peak_bytes == 4);
}
