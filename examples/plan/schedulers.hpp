#pragma once
// The schedulers memopt-plan knows, by the names its --algo and --schedule
// flags take, run on a file graph.

#include "command.hpp"

#include <memopt/schedule.hpp>

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace memopt::plan {

inline constexpr std::array<std::string_view, 10> scheduler_names = {
    "program", "list", "dfs", "post-order", "xla", "lpmf", "bfs", "dfs-size", "exact", "best"};

/// Default time budgets of the searching schedulers, in seconds.
inline constexpr double exact_default_seconds = 60.0;
inline constexpr double best_default_seconds = 3.0;

struct scheduled {
  std::string method;  ///< what produced the order (a scheduler's name, or "exact")
  std::vector<std::size_t> order;
  std::uint64_t peak_bytes = 0;
  std::uint64_t lower_bound_bytes = 0;  ///< the search's bound, or the static one
  double seconds = 0;
};

/// How long exact and best may search: a time limit (their defaults
/// otherwise) and a work limit; a work limit alone makes the run repeatable.
struct search_limits {
  std::optional<double> seconds;
  std::optional<std::uint64_t> work;

  /// exact_options for a scheduler whose default budget is `default_seconds`.
  [[nodiscard]] exact_options for_exact(double default_seconds) const {
    return {.time_limit_seconds = seconds ? seconds : work ? std::nullopt : std::optional(default_seconds),
            .work_limit = work};
  }
};

/// Runs the scheduler called `name` (one of scheduler_names) with `limits`
/// for exact and best.
inline scheduled run_scheduler(const io::file_graph& g, std::string_view name, const search_limits& limits = {}) {
  const auto started = std::chrono::steady_clock::now();
  schedule_result<io::file_graph> r;
  if (name == "program") {
    r.method = "program";
    r.order = program_order(g);
    r.peak_bytes = liveness(g, r.order).peak_bytes;
  } else if (name == "list") {
    r = list_schedule(g);
  } else if (name == "dfs") {
    r = dfs_schedule(g);
  } else if (name == "post-order") {
    r = post_order_schedule(g);
  } else if (name == "xla") {
    r = xla_schedule(g);
  } else if (name == "lpmf") {
    r = lpmf_schedule(g);
  } else if (name == "bfs") {
    r = bfs_schedule(g);
  } else if (name == "dfs-size") {
    r = dfs_size_schedule(g);
  } else if (name == "exact" || name == "best") {
    r = exact_schedule(g, limits.for_exact(name == "exact" ? exact_default_seconds : best_default_seconds));
  } else {
    throw cli_error("unknown scheduler '" + std::string(name) + "'");
  }
  scheduled out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out.method = r.method;
  out.order.assign(r.order.begin(), r.order.end());
  out.peak_bytes = r.peak_bytes;
  out.lower_bound_bytes = r.lower_bound_bytes > 0 ? r.lower_bound_bytes : lower_bound(g);
  return out;
}

}  // namespace memopt::plan
