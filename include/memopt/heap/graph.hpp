#pragma once
// plan_arena: the arena of one schedule of a graph in one call, so that a
// user need not build lifetimes by hand. Liveness for the order gives the
// lifetimes; each storage (a root and its views and in-place results) is one
// block (heap_buffers_of); the algorithm places the blocks; every alias sits
// at its storage's offset (share_offsets), an output that took over a dying
// input's storage (in-place reuse, part of liveness) included. Persistent
// buffers stay out of the arena, at offset 0.
//
// The result keeps what a caller checks or reports the plan with:
// check_heap_plan(arena.buffers, arena.plan, capacity, arena.storage).
// O(V + E) plus the algorithm's cost. Throws what liveness throws
// (not_topological_error, ...) and what plan_heap throws.

#include <memopt/graph/concepts.hpp>
#include <memopt/heap/algorithm.hpp>
#include <memopt/heap/aliasing.hpp>
#include <memopt/heap/lifetimes.hpp>
#include <memopt/heap/problem.hpp>
#include <memopt/liveness/liveness.hpp>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace memopt {

struct arena_options {
  std::uint64_t alignment = 1;  ///< of every block
};

struct arena_problem {
  liveness_result live;             ///< the order's lifetimes and buffer table (live.buffers)
  std::vector<buffer_id> storage;   ///< by buffer id: the root whose block it sits in
  std::vector<heap_buffer> buffers; ///< the problem, one per buffer id (aliases and persistent ones empty)
};

struct arena_plan : arena_problem {
  heap_plan plan;  ///< offsets by buffer id
};

/// The problem plan_arena solves, for an algorithm given by name
/// (heap::by_name) or a caller's own; then share_offsets(plan, storage).
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] arena_problem make_arena_problem(const G& g, std::span<const vertex_t<G>> order,
                                               const arena_options& options = {}, Index index = {}) {
  arena_problem problem{.live = liveness(g, order, index)};
  problem.storage = problem.live.buffers.storage;
  problem.buffers = heap_buffers_of(problem.live, {.alignment = options.alignment, .storage = problem.storage});
  return problem;
}

template <tensor_graph G, heap_algorithm Algorithm, vertex_index_map<G> Index = identity_index>
[[nodiscard]] arena_plan plan_arena(const G& g, std::span<const vertex_t<G>> order, Algorithm algorithm,
                                    const arena_options& options = {}, Index index = {}) {
  arena_plan arena{make_arena_problem(g, order, options, index)};
  arena.plan = plan_heap(arena.buffers, std::move(algorithm));
  share_offsets(arena.plan, arena.storage);
  return arena;
}

}  // namespace memopt
