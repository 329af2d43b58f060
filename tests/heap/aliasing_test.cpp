// heap/aliasing.hpp: in-place outputs in the storage of the input they read last.
#include "../support/graph_spec.hpp"

#include <memopt/heap.hpp>
#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

#include <vector>

namespace {

using graph = memopt::testing::vec_graph;

/// x (10) -> y = relu_(x) (10) -> z = relu_(y) (8) -> w (2), which also reads
/// k (4). y and z may alias their input.
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
  if (x_read_late) add_edge(0, 4, memopt::tensor_edge{}, g);
  return g;
}

}  // namespace

TEST_CASE("alias_storage: a chain of in-place ops shares one storage, and the peak says so") {
  const auto g = chain(false);
  const std::vector<std::size_t> order = {0, 3, 1, 2, 4};
  const auto live = memopt::liveness(g, order);
  CHECK(live.peak_bytes == 24);  // step 2: x 10 + k 4 + y 10
  const auto storage = memopt::alias_storage(g, live);
  CHECK(storage == std::vector<memopt::buffer_id>{0, 0, 0, 3, 4});
  const auto buffers = memopt::heap_buffers_of(live, {.storage = storage});
  CHECK(buffers[0].lower == 0);
  CHECK(buffers[0].upper == 5);  // x's storage lives until z's last reader, w
  CHECK_FALSE(buffers[1].takes_space());
  CHECK_FALSE(buffers[2].takes_space());
  CHECK(memopt::max_live_bytes(buffers) == 16);  // step 4: x's storage 10 + k 4 + w 2
  auto r = memopt::exact_fit(buffers);
  memopt::share_offsets(r.plan, storage);
  CHECK(r.plan.arena_bytes == 16);
  CHECK(r.plan.offsets[1] == r.plan.offsets[0]);
  CHECK(r.plan.offsets[2] == r.plan.offsets[0]);
  CHECK(memopt::check_heap_plan(buffers, r.plan).empty());
}

TEST_CASE("alias_storage: no sharing while the input is still to be read, or for a larger output") {
  const auto g = chain(true);  // w reads x too: y may not overwrite it
  const std::vector<std::size_t> order = {0, 3, 1, 2, 4};
  const auto live = memopt::liveness(g, order);
  const auto storage = memopt::alias_storage(g, live);
  CHECK(storage[1] == 1);
  CHECK(storage[2] == 1);  // z still overwrites y, whose last reader it is

  graph larger(2);
  larger[0].outputs = {{.bytes = 4}};
  larger[1].outputs = {{.bytes = 8, .alias = {{0, 0}}}};
  add_edge(0, 1, memopt::tensor_edge{}, larger);
  const std::vector<std::size_t> two = {0, 1};
  CHECK(memopt::alias_storage(larger, memopt::liveness(larger, two)) == std::vector<memopt::buffer_id>{0, 1});
}
