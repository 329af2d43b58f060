#pragma once
// memopt-plan arena INPUT --algo NAME [--capacity BYTES] [--time-limit SECONDS]
//                   [--output FILE.csv] [--schedule NAME] [--alignment BYTES] [--alias]
//                   [--no-alias]
// INPUT is a MiniMalloc CSV (*.csv) or a memopt-graph/1 file, whose lifetimes
// come from a schedule (CSV id "node:port", lower the producer's step, upper
// one past the last reader's; persistent buffers are left out of the arena).
// One JSON object: algo, buffers, arena_bytes, lower_bound_bytes (max-live),
// fits (with a capacity), proved_optimal, seconds, fragmentation, and for
// exact: status ("fits", "does-not-fit", "unknown") and nodes. --output
// writes the plan as MiniMalloc CSV with an offset column.
// A graph's views and in-place results live in their source's storage: one
// block per storage; an alias's row has an empty lifetime and its storage's
// offset (--no-alias: every output its own block). With --alias, an output
// may also take over the storage of a may-alias input (attrs.alias) that dies
// where it is born, as in XLA's and TFLite's in-place reuse.

#include "command.hpp"
#include "format.hpp"
#include "schedulers.hpp"

#include <memopt/io/minimalloc_csv.hpp>

#include <memopt/heap.hpp>
#include <memopt/liveness.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memopt::plan {

/// The heuristics by their command-line names, in report order.
inline const std::vector<std::pair<std::string, std::function<heap_plan(std::span<const heap_buffer>)>>>&
heap_heuristics() {
  static const std::vector<std::pair<std::string, std::function<heap_plan(std::span<const heap_buffer>)>>> table = {
      {"first-fit", [](auto b) { return plan_heap(b, first_fit{}); }},
      {"best-fit", [](auto b) { return plan_heap(b, best_fit{}); }},
      {"xla-size", [](auto b) { return plan_heap(b, xla_size_fit{}); }},
      {"xla-area", [](auto b) { return plan_heap(b, xla_area_fit{}); }},
      {"greedy-size", [](auto b) { return plan_heap(b, greedy_by_size{}); }},
      {"greedy-breadth", [](auto b) { return plan_heap(b, greedy_by_breadth{}); }},
      {"best", [](auto b) { return choose_best(b).plan; }},
  };
  return table;
}

/// The order a graph's lifetimes come from: the scheduler called `name`.
inline std::vector<std::size_t> schedule_order(const io::file_graph& g, const std::string& name,
                                               const search_limits& limits = {}) {
  return run_scheduler(g, name, limits).order;
}

/// The arena problem of a graph under a schedule, one row per transient
/// buffer, named "node:port"; storage[row] is the row whose storage it lives
/// in (the row itself when none); may_alias adds alias_storage's reuse.
struct graph_arena {
  io::csv_problem problem;
  std::vector<buffer_id> storage;
};

inline graph_arena graph_arena_problem(const io::file_graph& g, const std::vector<std::size_t>& order,
                                       std::uint64_t alignment, bool may_alias) {
  const auto live = liveness(g, order);
  const auto storage = may_alias ? alias_storage(g, live) : live.buffers.storage;
  const auto all = heap_buffers_of(live, {.alignment = alignment, .storage = storage});
  graph_arena arena;
  arena.problem.has_alignment = alignment > 1;
  std::vector<buffer_id> row_of(all.size());
  for (buffer_id b = 0, row = 0; b < all.size(); ++b) {
    if (!live.buffers.persistent[b]) row_of[b] = row++;
  }
  for (buffer_id b = 0; b < all.size(); ++b) {
    if (live.buffers.persistent[b]) continue;
    arena.problem.ids.push_back(buffer_name(g, live.buffers.owner[b], live.buffers.port_of(b)));
    arena.problem.buffers.push_back(all[b]);
    arena.storage.push_back(row_of[storage[b]]);
  }
  return arena;
}

/// Each heuristic's arena (and exact's) for the program order, beside max-live.
inline void report_arena(const io::file_graph& g, std::ostream& out) {
  const auto buffers = graph_arena_problem(g, program_order(g), 1, false).problem.buffers;
  const std::uint64_t lower = max_live_bytes(buffers);
  out << "\nArena offsets for program order: max-live " << lower << " B (" << human_bytes(lower)
      << "), the lower bound\n  " << pad("algorithm", 16) << pad("arena bytes", 14, true)
      << pad("arena", 12, true) << pad("vs max-live", 13, true) << pad("time", 11, true) << '\n';
  const auto row = [&](const std::string& name, std::uint64_t arena, double ms, const std::string& note) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.4f", lower == 0 ? 1.0 : static_cast<double>(arena) / static_cast<double>(lower));
    out << "  " << pad(name, 16) << pad(std::to_string(arena), 14, true) << pad(human_bytes(arena), 12, true)
        << pad(ratio, 13, true) << pad(milliseconds(ms), 11, true) << note << '\n';
  };
  for (const auto& [name, run] : heap_heuristics()) {
    const auto [plan, ms] = timed([&] { return run(buffers); });
    row(name, plan.arena_bytes, ms, "");
  }
  const auto [exact, ms] = timed([&] { return exact_fit(buffers, {.time_limit_seconds = 10.0}); });
  row("exact", exact.plan.arena_bytes, ms, exact.proved_optimal ? "   proved optimal" : "   best found in 10 s");
  if (liveness(g, program_order(g)).buffers.aliased > 0) return;  // may-aliases are storages already
  const auto shared = graph_arena_problem(g, program_order(g), 1, true).problem.buffers;
  const auto [aliased, aliased_ms] = timed([&] { return exact_fit(shared, {.time_limit_seconds = 10.0}); });
  out << "  with in-place/view outputs in their input's storage (--alias): max-live "
      << aliased.plan.peak_bytes << " B, exact arena " << aliased.plan.arena_bytes << " B ("
      << human_bytes(aliased.plan.arena_bytes) << ")" << (aliased.proved_optimal ? ", proved optimal" : "") << '\n';
}

inline command add_arena_command(CLI::App& app) {
  struct options {
    graph_argument input;
    std::string algo = "best";
    std::optional<std::uint64_t> capacity;
    std::optional<double> time_limit;
    std::optional<std::uint64_t> work_limit;
    std::string output;
    std::string schedule = "best";
    std::uint64_t alignment = 1;
    bool alias = false;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("arena", "arena offsets for every buffer, as JSON");
  add_graph_argument(cmd, opts->input, "MiniMalloc CSV (*.csv) or memopt-graph/1 file", "INPUT");
  cmd->add_option("--algo", opts->algo,
                  "first-fit, best-fit, xla-size, xla-area, greedy-size, greedy-breadth, best, exact")
      ->capture_default_str();
  cmd->add_option("--capacity", opts->capacity, "arena bytes available: report whether the plan fits");
  cmd->add_option("--time-limit", opts->time_limit, "seconds for exact (default 60 unless --work-limit)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--work-limit", opts->work_limit,
                  "search nodes for exact, and states for a searching --schedule; alone, the plan depends on "
                  "the input only");
  cmd->add_option("--output", opts->output, "write the plan as CSV with an offset column");
  cmd->add_option("--schedule", opts->schedule, "graph input: the scheduler lifetimes come from")
      ->capture_default_str()
      ->check(CLI::IsMember(std::vector<std::string>(scheduler_names.begin(), scheduler_names.end())));
  cmd->add_option("--alignment", opts->alignment, "graph input: every offset a multiple of this")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_flag("--alias", opts->alias,
                "graph input: an output may also take over a may-alias input's storage where it dies");
  return {cmd, [opts] {
            const bool is_csv = opts->input.path.ends_with(".csv");
            io::csv_problem problem;
            std::vector<buffer_id> storage;
            if (is_csv) {
              try {
                problem = io::read_minimalloc_csv(opts->input.path);
              } catch (const error& e) {
                throw cli_error(e.what());
              }
            } else {
              const auto g = load_graph(opts->input);
              auto arena = naming_nodes(g, opts->input.path, [&] {
                return graph_arena_problem(g, schedule_order(g, opts->schedule, {.work = opts->work_limit}),
                                           opts->alignment, opts->alias);
              });
              problem = std::move(arena.problem);
              storage = std::move(arena.storage);
            }
            const auto started = std::chrono::steady_clock::now();
            nlohmann::ordered_json out;
            out["algo"] = opts->algo;
            heap_plan plan;
            std::optional<exact_result> exact;
            if (opts->algo == "exact") {
              const auto seconds = opts->time_limit ? opts->time_limit
                                   : opts->work_limit ? std::nullopt : std::optional(60.0);
              exact = exact_fit(problem.buffers, {.capacity = opts->capacity, .time_limit_seconds = seconds,
                                                  .work_limit = opts->work_limit});
              plan = exact->plan;
            } else {
              const auto& table = heap_heuristics();
              const auto it = std::ranges::find(table, opts->algo, [](const auto& entry) { return entry.first; });
              if (it == table.end()) throw cli_error("unknown --algo '" + opts->algo + "'");
              try {
                plan = it->second(problem.buffers);
              } catch (const error& e) {
                throw cli_error(opts->input.path + ": " + e.what());
              }
            }
            share_offsets(plan, storage);
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            out["buffers"] = problem.buffers.size();
            out["arena_bytes"] = plan.arena_bytes;
            out["lower_bound_bytes"] = plan.peak_bytes;
            if (opts->capacity) out["fits"] = plan.arena_bytes <= *opts->capacity;
            out["proved_optimal"] = exact ? exact->proved_optimal : plan.arena_bytes == plan.peak_bytes;
            if (exact) {
              out["status"] = exact->status == fit_status::fits           ? "fits"
                              : exact->status == fit_status::does_not_fit ? "does-not-fit"
                                                                           : "unknown";
              out["nodes"] = exact->nodes;
            }
            out["fragmentation"] = plan.fragmentation();
            out["seconds"] = seconds;
            if (!opts->output.empty()) {
              std::ofstream file(opts->output, std::ios::binary);
              file << io::write_minimalloc_csv(problem, plan.offsets);
              if (!file) throw cli_error("cannot write " + opts->output);
            }
            std::cout << out.dump() << '\n';
          }};
}

}  // namespace memopt::plan
