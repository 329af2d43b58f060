#pragma once
// Comparing algorithms as data: a cell is one algorithm's result on one graph
// (a byte count: a peak, an arena, a storage total) with the family's lower
// bound there and the seconds it took; summarise() gives each algorithm's
// geometric mean of ratios to the bound, its wins (no algorithm of its family
// did better on that graph) and its total time. O(C log C) for C cells.
// timed(f) runs f and gives its result and seconds, for a cell of one's own.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace memopt::compare {

struct cell {
  std::string graph, family, algorithm;
  std::uint64_t value = 0;        ///< what the algorithm reached: lower is better
  std::uint64_t lower_bound = 0;  ///< the family's bound (or reference) on this graph; 0: none
  double seconds = 0;

  /// value / lower_bound; 1 when there is no bound.
  [[nodiscard]] double ratio() const {
    return lower_bound == 0 ? 1.0 : static_cast<double>(value) / static_cast<double>(lower_bound);
  }
};

struct algorithm_summary {
  std::string family, algorithm;
  double log_ratio_sum = 0;
  std::size_t graphs = 0, wins = 0;
  double seconds = 0;

  [[nodiscard]] double geomean_ratio() const {
    return graphs == 0 ? 1.0 : std::exp(log_ratio_sum / static_cast<double>(graphs));
  }
};

/// One summary per (family, algorithm), in the order the cells first name them.
[[nodiscard]] inline std::vector<algorithm_summary> summarise(const std::vector<cell>& cells) {
  std::vector<algorithm_summary> out;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  std::map<std::pair<std::string, std::string>, std::uint64_t> best;  // (graph, family) -> lowest value
  for (const auto& c : cells) {
    const auto [it, fresh] = best.try_emplace({c.graph, c.family}, c.value);
    if (!fresh) it->second = std::min(it->second, c.value);
  }
  for (const auto& c : cells) {
    const auto [it, fresh] = index.try_emplace({c.family, c.algorithm}, out.size());
    if (fresh) out.push_back({c.family, c.algorithm});
    auto& s = out[it->second];
    s.log_ratio_sum += std::log(c.ratio());
    ++s.graphs;
    s.wins += c.value == best.at({c.graph, c.family}) ? 1 : 0;
    s.seconds += c.seconds;
  }
  return out;
}

/// f()'s result and the seconds it took.
template <class F>
[[nodiscard]] auto timed(F&& f) {
  const auto started = std::chrono::steady_clock::now();
  auto result = std::forward<F>(f)();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  return std::pair{std::move(result), took.count()};
}

}  // namespace memopt::compare
