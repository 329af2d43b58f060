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

/// s (1) makes x (10), read by a (10, may take over x) and by b (4); a and b
/// unread. (x has a predecessor: a graph input is never taken over.)
mt::graph_spec shared_input(std::uint64_t a_bytes = 10) {
  return {{{.outputs = {1}},
           {.outputs = {10}, .inputs = {{0, 0}}},
           {.outputs = {a_bytes}, .inputs = {{1, 0}}, .may_aliases = {{.port = 0, .node = 1, .node_port = 0}}},
           {.outputs = {4}, .inputs = {{1, 0}}}}};
}

}  // namespace

TEST_CASE("in-place reuse: whether a read is the last depends on the order") {
  const auto spec = shared_input();
  const auto early = mt::liveness_of<mt::vec_graph>(spec, {0, 1, 2, 3});
  CHECK(early.reused.empty());
  CHECK(early.timeline == std::vector<std::uint64_t>{1, 11, 20, 14});
  const auto last = mt::liveness_of<mt::vec_graph>(spec, {0, 1, 3, 2});
  CHECK(last.reused == ids{2});
  CHECK(last.timeline == std::vector<std::uint64_t>{1, 11, 14, 10});
  CHECK(last.buffers.storage == ids{0, 1, 1, 3});
  CHECK(last.buffers.bytes == std::vector<std::uint64_t>{1, 10, 0, 4});
  CHECK(last.intervals[2] == memopt::live_interval{1, 3});
}

TEST_CASE("in-place reuse: not over a graph input, a graph output or a weight, not by a graph output, not across sizes") {
  auto input = shared_input();
  input.nodes[1].inputs.clear();  // x, now without a predecessor, is the caller's
  CHECK(mt::liveness_of<mt::vec_graph>(input, {0, 1, 3, 2}).reused.empty());
  auto out = shared_input();
  out.nodes[1].live_out = {0};
  CHECK(mt::liveness_of<mt::vec_graph>(out, {0, 1, 3, 2}).reused.empty());
  auto weight = shared_input();
  weight.nodes[1].persistent = true;
  CHECK(mt::liveness_of<mt::vec_graph>(weight, {0, 1, 3, 2}).reused.empty());
  auto taker_out = shared_input();
  taker_out.nodes[2].live_out = {0};  // a graph output gets a buffer of its own
  CHECK(mt::liveness_of<mt::vec_graph>(taker_out, {0, 1, 3, 2}).reused.empty());
  CHECK(mt::liveness_of<mt::vec_graph>(shared_input(8), {0, 1, 3, 2}).reused.empty());
}

TEST_CASE("in-place reuse: one taker per storage, a chain ends at its first storage") {
  // s (1) makes x (10); y (two outputs of 10, both may take over x); z (10)
  // may take over y:0; t (1, a graph output) reads y:1 and z.
  const mt::graph_spec spec{{{.outputs = {1}},
                             {.outputs = {10}, .inputs = {{0, 0}}},
                             {.outputs = {10, 10},
                              .inputs = {{1, 0}},
                              .may_aliases = {{.port = 0, .node = 1, .node_port = 0},
                                              {.port = 1, .node = 1, .node_port = 0}}},
                             {.outputs = {10}, .inputs = {{2, 0}},
                              .may_aliases = {{.port = 0, .node = 2, .node_port = 0}}},
                             {.outputs = {1}, .inputs = {{2, 1}, {3, 0}}, .live_out = {0}}}};
  const auto r = mt::liveness_of<mt::vec_graph>(spec, {0, 1, 2, 3, 4});
  CHECK(r.reused == ids{2, 4});
  CHECK(r.buffers.storage == ids{0, 1, 1, 3, 1, 5});
  CHECK(r.timeline == std::vector<std::uint64_t>{1, 11, 20, 20, 21});
}
