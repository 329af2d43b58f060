#pragma once
// choose_best: runs several heap algorithms on one problem and keeps the plan
// with the smallest arena (the first on ties), as XLA's ChooseBestHeapAlgorithm,
// reporting every candidate's arena as best_of does for schedulers.
// The default set is every heuristic memopt ships. Cost: the sum of theirs.

#include <memopt/heap/algorithm.hpp>
#include <memopt/heap/global_fit.hpp>
#include <memopt/heap/online_fit.hpp>
#include <memopt/registry.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memopt {

/// One algorithm's outcome in choose_best.
struct heap_candidate {
  std::string name;  ///< its name(), or "algorithm <position>"
  std::uint64_t arena_bytes = 0;
  double seconds = 0;
};

struct heap_choice {
  heap_plan plan;
  std::string method;                      ///< candidates[chosen].name
  std::size_t chosen = 0;                  ///< position of the winner among the algorithms tried
  std::vector<heap_candidate> candidates;  ///< in the order given
};

template <heap_algorithm... A>
  requires(sizeof...(A) > 0)
[[nodiscard]] heap_choice choose_best(std::span<const heap_buffer> buffers, A... algorithms) {
  heap_choice best;
  const auto consider = [&](auto algorithm) {
    const std::size_t position = best.candidates.size();
    auto name = detail::algorithm_name(algorithm, "algorithm", position);
    const auto started = std::chrono::steady_clock::now();
    heap_plan plan = plan_heap(buffers, std::move(algorithm));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    best.candidates.push_back({name, plan.arena_bytes, seconds});
    if (position == 0 || plan.arena_bytes < best.plan.arena_bytes) {
      best.plan = std::move(plan);
      best.method = std::move(name);
      best.chosen = position;
    }
  };
  (consider(std::move(algorithms)), ...);
  return best;
}

/// The smallest arena of every shipped heuristic, tried in the order
/// greedy_by_size, xla_size_fit, xla_area_fit, greedy_by_breadth, best_fit, first_fit.
[[nodiscard]] inline heap_choice choose_best(std::span<const heap_buffer> buffers) {
  return choose_best(buffers, greedy_by_size{}, xla_size_fit{}, xla_area_fit{},
                     greedy_by_breadth{}, best_fit{}, first_fit{});
}

}  // namespace memopt
