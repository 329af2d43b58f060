#pragma once
// choose_best: runs several heap algorithms on one problem and keeps the plan
// with the smallest arena (the first on ties), as XLA's ChooseBestHeapAlgorithm.
// The default set is every heuristic memopt ships. Cost: the sum of theirs.

#include <memopt/heap/algorithm.hpp>
#include <memopt/heap/global_fit.hpp>
#include <memopt/heap/online_fit.hpp>

#include <cstddef>
#include <utility>
#include <span>

namespace memopt {

struct heap_choice {
  heap_plan plan;
  std::size_t chosen = 0;  ///< position of the winner among the algorithms tried
};

template <heap_algorithm... A>
  requires(sizeof...(A) > 0)
[[nodiscard]] heap_choice choose_best(std::span<const heap_buffer> buffers, A... algorithms) {
  heap_choice best;
  std::size_t position = 0;
  bool first = true;
  const auto consider = [&](heap_plan plan) {
    if (first || plan.arena_bytes < best.plan.arena_bytes) best = {std::move(plan), position};
    first = false;
    ++position;
  };
  (consider(plan_heap(buffers, std::move(algorithms))), ...);
  return best;
}

/// The smallest arena of every shipped heuristic, tried in the order
/// greedy_by_size, xla_size_fit, xla_area_fit, greedy_by_breadth, best_fit, first_fit.
[[nodiscard]] inline heap_choice choose_best(std::span<const heap_buffer> buffers) {
  return choose_best(buffers, greedy_by_size{}, xla_size_fit{}, xla_area_fit{},
                     greedy_by_breadth{}, best_fit{}, first_fit{});
}

}  // namespace memopt
