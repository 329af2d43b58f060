// graph/index_map.hpp: every family's entry points check the caller's vertex
// index map once and refuse a bad one with bad_index_error (run under ASan:
// before the check, a 1-based map wrote past the end of a table).
#include "../colocate/tf_ops.hpp"
#include "../support/graph_spec.hpp"

#include <memopt/colocate.hpp>
#include <memopt/heap.hpp>
#include <memopt/schedule.hpp>
#include <memopt/share.hpp>

#include <doctest/doctest.h>

#include <functional>

namespace mt = memopt::testing;
using memopt::index_fault;

namespace {

/// x -> y -> z, with a weight read by y.
mt::graph_spec small() {
  return {{{.outputs = {10}},
           {.outputs = {40}, .persistent = true},
           {.outputs = {20}, .inputs = {{0, 0}, {1, 0}}},
           {.outputs = {5}, .inputs = {{2, 0}}, .live_out = {0}}}};
}

struct bad_map {
  const char* name;
  std::function<std::size_t(std::size_t)> index;
  index_fault fault;
  std::size_t position;  ///< of the first vertex at fault
  std::size_t bad_index;
};

const bad_map bad_maps[] = {
    {"1-based", [](std::size_t v) { return v + 1; }, index_fault::out_of_range, 3, 4},
    {"not one-to-one", [](std::size_t v) { return v / 2; }, index_fault::repeated, 1, 0},
};

void check_refusal(const bad_map& map, const std::function<void()>& call) {
  try {
    call();
  } catch (const memopt::bad_index_error& e) {
    CHECK(e.fault == map.fault);
    CHECK(e.position == map.position);
    CHECK(e.index == map.bad_index);
    return;
  }
  FAIL("the index map was accepted");
}

}  // namespace

TEST_CASE("index maps: the message names the vertex by position and says what is wrong") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(small());
  try {
    (void)memopt::liveness(g, memopt::program_order(g), [](std::size_t v) { return v + 1; });
    FAIL("accepted");
  } catch (const memopt::bad_index_error& e) {
    CHECK(std::string(e.what()) ==
          "the vertex index map gives the vertex at position 3 of vertices(g) index 4, outside [0, 4) "
          "(a 1-based map?)");
  }
}

TEST_CASE("index maps: every family refuses a bad map before using it") {
  const auto built = mt::build<mt::vec_graph>(small());  // members, not a binding: clang 14 lambdas cannot capture those
  const auto& g = built.g;
  const auto order = memopt::program_order(g);
  const std::span<const std::size_t> steps(order);
  for (const auto& map : bad_maps) {
    INFO(map.name);
    const auto index = [&map](std::size_t v) { return map.index(v); };
    check_refusal(map, [&] { (void)memopt::make_buffer_table(g, index); });
    check_refusal(map, [&] { (void)memopt::make_compact_graph(g, index); });
    check_refusal(map, [&] { (void)memopt::find_cycle(g, index); });
    check_refusal(map, [&] { (void)memopt::check_topological_order(g, steps, index); });
    check_refusal(map, [&] { (void)memopt::liveness(g, steps, index); });
    check_refusal(map, [&] { (void)memopt::list_schedule(g, memopt::bytes_freed_priority{}, {}, index); });
    check_refusal(map, [&] { (void)memopt::dfs_schedule(g, index); });
    check_refusal(map, [&] { (void)memopt::lpmf_schedule(g, index); });
    check_refusal(map, [&] { (void)memopt::best_heuristic(g, index); });
    check_refusal(map, [&] { (void)memopt::exact_schedule(g, {}, index); });
    check_refusal(map, [&] { (void)memopt::lower_bound(g, index); });
    check_refusal(map, [&] { (void)memopt::linear_share(g, steps, memopt::lifo_reuse{}, {}, index); });
    check_refusal(map, [&] { (void)memopt::dag_share(g, memopt::best_fit_reuse{}, {}, index); });
    check_refusal(map, [&] { (void)memopt::check_sharing(g, memopt::dag_share(g), {}, index); });
  }
}

TEST_CASE("index maps: placement refuses a bad map before using it") {
  mt::tf_graph_builder b;
  b.add("a", "TestInput");
  b.add("b", "TestInput");
  b.add("c", "TestInput");
  b.add("d", "TestInput");
  const auto devices = mt::tf_test_devices();
  const auto kernels = mt::tf_test_kernels();
  for (const auto& map : bad_maps) {
    INFO(map.name);
    const auto index = [&map](std::size_t v) { return map.index(v); };
    check_refusal(map, [&] { (void)memopt::place(b.g, devices, kernels, {}, index); });
    const auto placed = memopt::place(b.g, devices, kernels);
    check_refusal(map, [&] { (void)memopt::check_placement(b.g, devices, kernels, placed, {}, index); });
  }
}
