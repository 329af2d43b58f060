#pragma once
// The hand-checked graphs of examples/data/small/ (README there), as specs.
// Node order = the file's node order.

#include "graph_spec.hpp"

namespace memopt::testing {

/// a(10) -> b(20) -> c(5) -> d(30, output). Peak 35 at d.
inline graph_spec chain() {
  return {{{.outputs = {10}},
           {.outputs = {20}, .inputs = {{0, 0}}},
           {.outputs = {5}, .inputs = {{1, 0}}},
           {.outputs = {30}, .inputs = {{2, 0}}, .live_out = {0}}}};
}

/// s(1) -> l1(10), r1(10) -> l2(1), r2(1) -> j(1). Program order 21, best 12.
inline graph_spec diamond() {
  return {{{.outputs = {1}},
           {.outputs = {10}, .inputs = {{0, 0}}},
           {.outputs = {10}, .inputs = {{0, 0}}},
           {.outputs = {1}, .inputs = {{1, 0}}},
           {.outputs = {1}, .inputs = {{2, 0}}},
           {.outputs = {1}, .inputs = {{3, 0}, {4, 0}}, .live_out = {0}}}};
}

/// x(1) -> b1..b6(4) -> c1..c6(1) -> z(1). Program order 25, best 10.
inline graph_spec fanout6() {
  graph_spec spec{{{.outputs = {1}}}};
  for (std::size_t k = 0; k < 6; ++k) spec.nodes.push_back({.outputs = {4}, .inputs = {{0, 0}}});
  for (std::size_t k = 0; k < 6; ++k) spec.nodes.push_back({.outputs = {1}, .inputs = {{1 + k, 0}}});
  node_spec z{.outputs = {1}, .live_out = {0}};
  for (std::size_t k = 0; k < 6; ++k) z.inputs.push_back({7 + k, 0});
  spec.nodes.push_back(z);
  return spec;
}

/// XLA's comment: A B C D E F G = vertices 0..6; B and F output 2 bytes.
inline graph_spec xla_counterexample() {
  return {{{.outputs = {1}},
           {.outputs = {2}, .inputs = {{0, 0}}},
           {.outputs = {1}, .inputs = {{1, 0}}},
           {.outputs = {1}, .inputs = {{0, 0}}},
           {.outputs = {1}, .inputs = {{0, 0}}},
           {.outputs = {2}, .inputs = {{3, 0}, {4, 0}}},
           {.outputs = {1}, .inputs = {{2, 0}, {5, 0}}, .live_out = {0}}}};
}

/// Weights w1(100), w2(50) persistent; x(10) -> y(20) -> z(20). Peak 40, persistent 150.
inline graph_spec persistent() {
  return {{{.outputs = {100}, .persistent = true},
           {.outputs = {50}, .persistent = true},
           {.outputs = {10}},
           {.outputs = {20}, .inputs = {{2, 0}, {0, 0}}},
           {.outputs = {20}, .inputs = {{3, 0}, {1, 0}}, .control = {0}, .live_out = {0}}}};
}

/// Graph outputs q1, q2 never freed; d(100) unread. Program order 102.
inline graph_spec outputs_dead() {
  return {{{.outputs = {10}},
           {.outputs = {10}},
           {.outputs = {1}, .inputs = {{0, 0}}, .live_out = {0}},
           {.outputs = {1}, .inputs = {{1, 0}}, .live_out = {0}},
           {.outputs = {100}, .inputs = {{2, 0}}}}};
}

/// Control edges big2 -> s1 and big1 -> s2 keep both big buffers live. Peak 21.
inline graph_spec control() {
  return {{{.outputs = {1}},
           {.outputs = {10}, .inputs = {{0, 0}}},
           {.outputs = {10}, .inputs = {{0, 0}}},
           {.outputs = {1}, .inputs = {{1, 0}}, .control = {2}},
           {.outputs = {1}, .inputs = {{2, 0}}, .control = {1}},
           {.outputs = {1}, .inputs = {{3, 0}, {4, 0}}, .live_out = {0}}}};
}

/// a has ports 5 and 7 (port 1 unread); c reads a:0 twice. Peak 12.
inline graph_spec multiport() {
  return {{{.outputs = {5, 7}},
           {.outputs = {3}, .inputs = {{0, 0}}, .live_out = {0}},
           {.outputs = {2}, .inputs = {{0, 0}, {0, 0}}, .live_out = {0}}}};
}

/// r u v u2 u3 j: program 15, optimum 14 (v after u2).
inline graph_spec greedy_trap() {
  return {{{.outputs = {1}},
           {.outputs = {3}, .inputs = {{0, 0}}},
           {.outputs = {2}, .inputs = {{0, 0}}},
           {.outputs = {10}, .inputs = {{1, 0}}},
           {.outputs = {1}, .inputs = {{3, 0}}},
           {.outputs = {1}, .inputs = {{4, 0}, {2, 0}}, .live_out = {0}}}};
}

}  // namespace memopt::testing
