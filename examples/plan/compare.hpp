#pragma once
// memopt-plan compare GRAPH... [--families schedule,arena,share,simulate,rewrite]
//                     [--algos LIST] [--time-limit S] [--work-limit N] [--format md|csv|json]
// Every algorithm of each family on every graph, side by side: a cell is the
// algorithm's result (schedule: transient peak; arena: arena bytes for the
// best schedule's lifetimes; share: total storage bytes for the program
// order; simulate: the device peak of each ready policy on one device;
// rewrite: the best schedule's peak after each rewrite mode at a budget of
// half the best peak, the seed's modes guarded as `rewrite` returns them),
// its ratio to the family's reference on that graph
// (schedule and simulate: the static bound and every search's certified one;
// arena: max-live; share: the program order's peak; rewrite: the best peak
// before, so a ratio below 1 is a saving) and the seconds it took. A summary per algorithm:
// the geometric mean of its ratios, its wins (graphs where no algorithm of
// the family did better) and its total time. --algos keeps the named
// algorithms (in whichever family has them). md: a table per family; csv:
// one row per cell; json: {"cells": [...], "summary": [...]}. A progress bar
// on stderr when it is a terminal; Ctrl-C ends the searches with their best.

#include "command.hpp"
#include "format.hpp"
#include "rewrite.hpp"
#include "schedulers.hpp"
#include "simulate.hpp"

#include <memopt/compare.hpp>
#include <memopt/io/compare_json.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <unistd.h>

namespace memopt::plan {

namespace detail {

/// The family's cells for one graph, each with the family's bound on it:
/// schedule, arena and share are the library's (memopt/compare.hpp);
/// simulate and rewrite run memopt-plan's own simulate and rewrite.
inline std::vector<compare::cell> compare_family(const io::file_graph& g, const std::string& family,
                                                 const compare::comparison_options& options) {
  const std::string name = g[boost::graph_bundle].name;
  const auto& limits = options.limits;
  if (family == "schedule") return compare::schedule_cells(g, name, options);
  if (family == "arena") {
    const auto order = run_scheduler(g, "best", limits).order;
    return compare::arena_cells(g, name, std::span<const std::size_t>(order), options);
  }
  if (family == "share") {
    const auto order = program_order(g);
    return compare::share_cells(g, name, std::span<const std::size_t>(order), options);
  }
  std::vector<compare::cell> cells;
  std::uint64_t bound = 0;
  if (family == "simulate") {
    bound = lower_bound(g);
    const simulation_config config;
    for (const auto& policy : simulation_policy_names()) {
      if (!memopt::detail::is_selected(options, policy)) continue;
      const auto [r, seconds] = compare::timed([&] { return run_simulation(g, config, policy, "", name); });
      cells.push_back({name, family, policy, r.devices[0].peak_bytes(), 0, seconds});
    }
  } else {  // rewrite
    const auto facts = rewrite::read_facts(g);
    // The search limits given; none: 200,000 states, so the figures repeat.
    exact_options search{.time_limit_seconds = limits.time_limit_seconds, .work_limit = limits.work_limit,
                         .stop = limits.stop};
    if (!search.time_limit_seconds && !search.work_limit) search.work_limit = 200'000;
    bound = exact_schedule(g, search).peak_bytes;
    simulation_config config;
    config.machine.devices[0].memory_bytes = bound / 2;
    for (const char* mode : {"remat", "recompute", "swap", "accumulate", "all"}) {
      if (!memopt::detail::is_selected(options, mode)) continue;
      const auto [report, seconds] = compare::timed([&] {
        if (std::string_view(mode) == "remat") {
          const auto remat = remat_plan(g, facts, {.budget = bound / 2}, search);
          return rewrite::evaluate(facts, remat.plan, search, remat.order);
        }
        std::optional<seed_guard> guard;  // as `memopt-plan rewrite` returns the plan by default
        const auto p = rewrite_passes(g, facts, mode, "heuristic", "gradients/", {}, config, search, 25, false, &guard);
        return rewrite::evaluate(facts, p, search);
      });
      cells.push_back({name, family, mode, report.peak_after, 0, seconds});
    }
  }
  return memopt::detail::with_bound(cells, bound);
}

}  // namespace detail

inline command add_compare_command(CLI::App& app) {
  struct options {
    std::vector<std::string> graphs;
    std::vector<std::string> families = {"schedule", "arena", "share"};  // simulate, rewrite on request
    std::vector<std::string> algos;
    std::optional<double> time_limit;
    std::optional<std::uint64_t> work_limit;
    std::string format = "md";
    bool no_alias = false;
    std::vector<std::string> dims;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("compare", "every algorithm on every graph, side by side");
  cmd->add_option("GRAPH", opts->graphs, "memopt-graph/1 files (.json, .json.gz) or ONNX models (.onnx)")->required();
  cmd->add_option("--families", opts->families,
                  "schedule, arena, share (the default), simulate (ready policies), rewrite (remat and the seed's modes)")
      ->delimiter(',')
      ->check(CLI::IsMember({"schedule", "arena", "share", "simulate", "rewrite"}));
  cmd->add_option("--algos", opts->algos, "keep only these algorithms (comma-separated)")->delimiter(',');
  cmd->add_option("--time-limit", opts->time_limit, "seconds for each search (exact, best)")
      ->check(positive_number());
  cmd->add_option("--work-limit", opts->work_limit, "work for each search: the table then repeats exactly")
      ->check(whole_number());
  cmd->add_option("--format", opts->format, "md, csv or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "csv", "json"}));
  cmd->add_flag("--no-alias", opts->no_alias, "count every output apart");
  cmd->add_option("--dim", opts->dims, "size of a dynamic dimension of the ONNX models (repeatable)")
      ->check(dimension_assignment());
  return {cmd, [opts] {
            std::vector<std::string> known = schedule::names();
            for (const auto& names : {heap::names(), share::names(), simulation_policy_names(),
                                      std::vector<std::string>{"recompute", "swap", "all"}}) {
              known.insert(known.end(), names.begin(), names.end());
            }
            for (const auto& a : opts->algos) {
              if (std::ranges::find(known, a) == known.end()) {
                throw cli_error("compare: unknown algorithm '" + a + "' (known: " + joined(known) + ")");
              }
            }
            const compare::comparison_options options{{opts->time_limit, opts->work_limit, &interrupted}, opts->algos};
            std::vector<compare::cell> cells;
            const bool show_progress = isatty(STDERR_FILENO) != 0;  // silent in pipes and CI
            const std::size_t steps = opts->graphs.size() * opts->families.size();
            std::size_t done = 0;
            for (const auto& path : opts->graphs) {
              const graph_argument input{path, opts->no_alias, is_onnx({path}) ? opts->dims : std::vector<std::string>{}};
              const auto g = load_graph(input);
              naming_nodes(g, path, [&] {
                for (const auto& family : opts->families) {
                  if (show_progress) {
                    const std::size_t filled = 30 * done / steps;
                    std::cerr << "\r[" << std::string(filled, '#') << std::string(30 - filled, ' ') << "] " << done
                              << '/' << steps << ' ' << g[boost::graph_bundle].name << ' ' << family << "\x1b[K"
                              << std::flush;
                  }
                  auto more = detail::compare_family(g, family, options);
                  cells.insert(cells.end(), more.begin(), more.end());
                  ++done;
                }
              });
            }
            if (show_progress) std::cerr << "\r\x1b[K" << std::flush;
            if (interrupted) std::cerr << "memopt-plan: interrupted: the searches after Ctrl-C kept their best so far\n";
            if (opts->format == "md") {
              static const std::map<std::string, std::string> what = {
                  {"schedule", "transient peak bytes of each order; bound: the static and certified lower bounds"},
                  {"arena", "arena bytes for the best schedule's lifetimes; bound: max-live"},
                  {"share", "total storage bytes for the program order; bound: its peak"},
                  {"simulate", "device peak of each ready policy on one device; bound: the schedules' lower bound"},
                  {"rewrite", "best peak after each rewrite (the budget-driven planner, the seed's modes) at half the best peak; reference: the best peak before"}};
              std::vector<compare::family_caption> families;
              for (const auto& f : opts->families) families.push_back({f, what.at(f)});
              compare::print_markdown(std::cout, cells, families);
            } else if (opts->format == "csv") {
              compare::print_csv(std::cout, cells);
            } else {
              io::print_comparison_json(std::cout, cells);
            }
          }};
}

}  // namespace memopt::plan
