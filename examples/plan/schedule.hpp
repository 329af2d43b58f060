#pragma once
// memopt-plan schedule GRAPH --algo NAME [--time-limit SECONDS]
// One JSON object: graph, algo, method (what produced the order: the
// scheduler, or for exact and best the seed heuristic or "exact" when the
// search beat every seed), peak_bytes, lower_bound_bytes, proved_optimal
// (peak_bytes == lower_bound_bytes), seconds, interrupted (Ctrl-C ended the
// search: the order is the best found by then), stopped_by_clock (the time
// limit ended the search: another run may find another order; --work-limit
// alone repeats), order (node names, in order).

#include "command.hpp"
#include "progress_line.hpp"
#include "schedulers.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

namespace memopt::plan {

/// The JSON of `memopt-plan schedule`: the scheduler `algo` run on g within `limits`.
inline nlohmann::ordered_json schedule_json(const io::file_graph& g, const std::string& algo, const search_limits& limits) {
  const auto r = run_scheduler(g, algo, limits);
  nlohmann::ordered_json out;
  out["graph"] = g[boost::graph_bundle].name;
  out["algo"] = algo;
  out["method"] = r.method;
  out["peak_bytes"] = r.peak_bytes;
  out["lower_bound_bytes"] = r.lower_bound_bytes;
  out["proved_optimal"] = r.peak_bytes == r.lower_bound_bytes;
  out["seconds"] = r.seconds;
  out["interrupted"] = limits.stop != nullptr && limits.stop->load();
  out["stopped_by_clock"] = r.stopped_by_clock;
  auto& order = out["order"] = nlohmann::ordered_json::array();
  for (const auto v : r.order) order.push_back(g[v].name);
  return out;
}

inline command add_schedule_command(CLI::App& app) {
  struct options {
    graph_argument graph;
    std::string algo;
    search_limits limits;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("schedule", "an order of the ops with a low peak, as JSON");
  add_graph_argument(cmd, opts->graph);
  cmd->add_option("--algo", opts->algo, "scheduler")
      ->required()
      ->check(CLI::IsMember(schedule::names()));
  cmd->add_option("--time-limit", opts->limits.time_limit_seconds, "seconds for exact (default 60) and best (default 3, with 2,000,000 states: whichever first)")
      ->check(positive_number());
  cmd->add_option("--work-limit", opts->limits.work_limit,
                  "states exact and best may expand; alone (no --time-limit), the order depends on the graph only")
      ->check(whole_number());
  return {cmd, [opts] {
            const auto g = load_graph(opts->graph);
            naming_nodes(g, opts->graph.path, [&] {
              auto limits = opts->limits;
              limits.stop = &interrupted;
              progress_line progress("schedule " + opts->algo);
              limits.progress = progress.callback();
              std::cout << schedule_json(g, opts->algo, limits).dump() << '\n';
            });
          }};
}

}  // namespace memopt::plan
