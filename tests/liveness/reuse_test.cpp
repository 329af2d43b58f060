// In-place reuse in the memory model (graph/buffers.hpp's rule, applied by
// liveness): hand-checked cases of each condition.
#include "../support/graph_spec.hpp"

#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace mt = memopt::testing;
using ids = std::vector<memopt::buffer_id>;

namespace {

/// x (10) read by a (10, may take over x) and by b (4); a and b unread.
mt::graph_spec shared_input(std::uint64_t a_bytes = 10) {
  return {{{.outputs = {10}},
           {.outputs = {a_bytes}, .inputs = {{0, 0}}, .may_aliases = {{.port = 0, .node = 0, .node_port = 0}}},
           {.outputs = {4}, .inputs = {{0, 0}}}}};
}

}  // namespace

TEST_CASE("in-place reuse: whether a read is the last depends on the order") {
  const auto spec = shared_input();
  const auto early = mt::liveness_of<mt::vec_graph>(spec, {0, 1, 2});
  CHECK(early.reused.empty());
  CHECK(early.timeline == std::vector<std::uint64_t>{10, 20, 14});
  const auto last = mt::liveness_of<mt::vec_graph>(spec, {0, 2, 1});
  CHECK(last.reused == ids{1});
  CHECK(last.timeline == std::vector<std::uint64_t>{10, 14, 10});
  CHECK(last.buffers.storage == ids{0, 0, 2});
  CHECK(last.buffers.bytes == std::vector<std::uint64_t>{10, 0, 4});
  CHECK(last.intervals[1] == memopt::live_interval{0, 2});
}

TEST_CASE("in-place reuse: not over a graph output, a weight, or a storage of other bytes") {
  auto out = shared_input();
  out.nodes[0].live_out = {0};
  CHECK(mt::liveness_of<mt::vec_graph>(out, {0, 2, 1}).reused.empty());
  auto weight = shared_input();
  weight.nodes[0].persistent = true;
  CHECK(mt::liveness_of<mt::vec_graph>(weight, {0, 2, 1}).reused.empty());
  CHECK(mt::liveness_of<mt::vec_graph>(shared_input(8), {0, 2, 1}).reused.empty());
}

TEST_CASE("in-place reuse: one taker per storage, a chain ends at its first storage, a live-out taker keeps it") {
  // x (10); y (two outputs of 10, both may take over x); z (10) may take over y:0.
  const mt::graph_spec spec{{{.outputs = {10}},
                             {.outputs = {10, 10},
                              .inputs = {{0, 0}},
                              .may_aliases = {{.port = 0, .node = 0, .node_port = 0},
                                              {.port = 1, .node = 0, .node_port = 0}}},
                             {.outputs = {10}, .inputs = {{1, 0}}, .live_out = {0},
                              .may_aliases = {{.port = 0, .node = 1, .node_port = 0}}},
                             {.outputs = {1}, .inputs = {{1, 1}}}}};
  const auto r = mt::liveness_of<mt::vec_graph>(spec, {0, 1, 2, 3});
  CHECK(r.reused == ids{1, 3});
  CHECK(r.buffers.storage == ids{0, 0, 2, 0, 4});
  CHECK(r.buffers.live_out[0]);
  CHECK(r.timeline == std::vector<std::uint64_t>{10, 20, 20, 21});
}
