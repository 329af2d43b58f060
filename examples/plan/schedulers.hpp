#pragma once
// A scheduler of the library's registry (memopt::schedule), by the name the
// --algo and --schedule flags take, run on a file graph and timed.

#include "format.hpp"

#include <memopt/io/graph_file.hpp>
#include <memopt/schedule.hpp>

#include <string_view>
#include <utility>

namespace memopt::plan {

struct scheduled : schedule_result<io::file_graph> {
  double seconds = 0;
};

/// The scheduler called `name`; lower_bound_bytes is its search's bound, or the static one.
inline scheduled run_scheduler(const io::file_graph& g, std::string_view name, const search_limits& limits = {}) {
  auto [r, ms] = timed([&] { return schedule::by_name(name)(g, limits); });
  scheduled out{std::move(r), ms / 1000};
  if (out.lower_bound_bytes == 0) out.lower_bound_bytes = lower_bound(g);
  return out;
}

}  // namespace memopt::plan
