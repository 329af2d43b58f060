#pragma once
// memopt-plan arena INPUT --algo NAME [--capacity BYTES] [--time-limit SECONDS]
//                   [--output FILE.csv] [--schedule NAME] [--alignment BYTES]
//                   [--no-alias] [--in-place | --no-in-place]
// INPUT is a MiniMalloc CSV (*.csv) or a memopt-graph/1 file, whose lifetimes
// come from a schedule (CSV id "node:port", lower the producer's step, upper
// one past the last reader's; persistent buffers are left out of the arena).
// One JSON object (its fields are listed by --help, arena_fields): algo,
// method (whose plan it is), buffers, arena_bytes, lower_bound_bytes (max-live),
// fits (with a capacity), proved_optimal, seconds, interrupted (Ctrl-C ended
// the search with its best plan), fragmentation, and for
// exact: status ("fits", "does-not-fit", "unknown") and nodes;
// stopped_by_clock (a time limit ended the arena's search or, for a graph,
// the schedule's: another run may give another plan; --work-limit alone
// repeats), for a graph the order (node names) its lifetimes come from, and
// offsets: each row's id ("node:port") -> offset, size, lower, upper (its
// lifetime [lower, upper) in steps). --output
// writes the plan as MiniMalloc CSV with an offset column. For an ONNX model,
// --value-offsets FILE.json writes {"arena_bytes", "values": {ONNX value name:
// {"offset", "size"}}} for the tensors in the arena (not weights, not the
// shape arithmetic the importer folds).
// A graph's views and in-place results live in their source's storage: one
// block per storage; an alias's row has an empty lifetime and its storage's
// offset (--no-alias: every output its own block). Under in-place reuse (on
// for ONNX, --in-place for a file) an output that takes over a dying input's
// storage in the order sits in that block too (graph/buffers.hpp's rule).

#include "command.hpp"
#include "format.hpp"
#include "progress_line.hpp"
#include "schedulers.hpp"

#include <memopt/io/minimalloc_csv.hpp>

#include <memopt/heap.hpp>
#include <memopt/liveness.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memopt::plan {

/// The arena problem of a graph under a schedule, one row per transient
/// buffer, named "node:port"; storage[row] is the row whose storage it lives
/// in (the row itself when none), in-place reuse included.
struct graph_arena {
  io::csv_problem problem;
  std::vector<buffer_id> storage;
};

inline graph_arena graph_arena_problem(const io::file_graph& g, const std::vector<std::size_t>& order,
                                       std::uint64_t alignment) {
  const auto all = make_arena_problem(g, std::span(order), {.alignment = alignment});
  const auto& table = all.live.buffers;
  graph_arena arena;
  arena.problem.has_alignment = alignment > 1;
  std::vector<buffer_id> row_of(table.size());
  for (buffer_id b = 0, row = 0; b < table.size(); ++b) {
    if (!table.persistent[b]) row_of[b] = row++;
  }
  for (buffer_id b = 0; b < table.size(); ++b) {
    if (table.persistent[b]) continue;
    arena.problem.ids.push_back(buffer_name(g, table.owner[b], table.port_of(b)));
    arena.problem.buffers.push_back(all.buffers[b]);
    arena.storage.push_back(row_of[all.storage[b]]);
  }
  return arena;
}

/// Each heuristic's arena (and exact's) for the program order, beside max-live.
inline void report_arena(const io::file_graph& g, std::ostream& out) {
  const auto buffers = graph_arena_problem(g, program_order(g), 1).problem.buffers;
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
  for (const auto& algo : heap::entries()) {
    const auto [r, ms] = timed([&] { return algo(buffers, {.time_limit_seconds = 10.0}); });
    row(std::string(algo.name), r.plan.arena_bytes, ms,
        !algo.default_seconds ? "" : r.proved_optimal ? "   proved optimal" : "   best found in 10 s");
  }
}

/// What `memopt-plan arena` does with its input: the heap algorithm and its
/// limits, and for a graph the schedule (or the order) lifetimes come from.
struct arena_request {
  std::string algo = "best";
  std::optional<std::uint64_t> capacity;
  std::optional<double> time_limit;
  std::optional<std::uint64_t> work_limit;
  std::string schedule = "best";
  std::optional<std::vector<std::size_t>> order;  ///< instead of running `schedule`
  std::uint64_t alignment = 1;
  const std::atomic<bool>* stop = nullptr;
};

/// An arena problem, its rows named by problem.ids; for a graph, the row whose
/// storage each row lives in and the order its lifetimes come from.
struct arena_input {
  io::csv_problem problem;
  std::vector<buffer_id> storage;
  std::optional<std::vector<std::size_t>> order;
  bool schedule_stopped_by_clock = false;
};

/// The arena problem of g under the request's order, else its schedule's.
inline arena_input graph_arena_input(const io::file_graph& g, const arena_request& request) {
  arena_input in;
  if (request.order) {
    in.order = request.order;
  } else {
    progress_line progress("schedule " + request.schedule);
    const auto scheduled = run_scheduler(g, request.schedule, {.work_limit = request.work_limit, .stop = request.stop,
                                                               .progress = progress.callback()});
    in.schedule_stopped_by_clock = scheduled.stopped_by_clock;
    in.order.emplace(scheduled.order.begin(), scheduled.order.end());
  }
  auto arena = graph_arena_problem(g, *in.order, request.alignment);
  in.problem = std::move(arena.problem);
  in.storage = std::move(arena.storage);
  return in;
}

/// The JSON of `memopt-plan arena` (g: the graph the input came from, if any), and the plan.
inline std::pair<nlohmann::ordered_json, heap_plan> arena_json(const arena_input& in, const arena_request& request,
                                                               const io::file_graph* g = nullptr) {
  const heap::entry& algo = heap::by_name(request.algo);
  auto [r, ms] = timed([&] {
    progress_line progress("arena " + request.algo);
    auto planned = algo(in.problem.buffers, {request.time_limit, request.work_limit, request.stop, progress.callback()},
                        request.capacity);
    share_offsets(planned.plan, in.storage);
    return planned;
  });
  nlohmann::ordered_json out;
  out["algo"] = request.algo;
  out["method"] = r.method;
  out["buffers"] = in.problem.buffers.size();
  out["arena_bytes"] = r.plan.arena_bytes;
  out["lower_bound_bytes"] = r.plan.peak_bytes;
  if (request.capacity) out["fits"] = r.plan.arena_bytes <= *request.capacity;
  out["proved_optimal"] = r.proved_optimal;
  if (algo.default_seconds) {  // a search: what it decided, and its work
    out["status"] = r.status == fit_status::fits           ? "fits"
                    : r.status == fit_status::does_not_fit ? "does-not-fit"
                                                            : "unknown";
    out["nodes"] = r.nodes;
  }
  out["stopped_by_clock"] = r.stopped_by_clock || in.schedule_stopped_by_clock;
  out["fragmentation"] = r.plan.fragmentation();
  out["seconds"] = ms / 1000;
  out["interrupted"] = request.stop != nullptr && request.stop->load();
  if (g != nullptr && in.order) {
    auto& order = out["order"] = nlohmann::ordered_json::array();
    for (const auto v : *in.order) order.push_back((*g)[v].name);
  }
  auto& offsets = out["offsets"] = nlohmann::ordered_json::object();
  for (std::size_t b = 0; b < in.problem.buffers.size(); ++b) {
    const auto& buffer = in.problem.buffers[b];
    offsets[in.problem.ids[b]] = {{"offset", r.plan.offsets[b]}, {"size", buffer.bytes},
                                  {"lower", buffer.lower}, {"upper", buffer.upper}};
  }
  return {std::move(out), std::move(r.plan)};
}

/// Writes the arena plan of the ONNX model `model` to `path`, keyed by ONNX value names.
inline void write_value_offsets(const graph_argument& model, const arena_input& in, const heap_plan& plan,
                                const std::string& path) {
#ifdef MEMOPT_WITH_ONNX
  const auto imported = import_onnx(model);
  const auto names = onnx_import::value_names(onnx_import::read_model(model.path), imported);
  std::unordered_map<std::string, std::uint64_t> bytes;  // a view's row has none: its tensor's size
  for (const auto& node : imported.doc["nodes"]) {
    for (std::size_t port = 0; port < node["outputs"].size(); ++port) {
      bytes.emplace(node["name"].get<std::string>() + ":" + std::to_string(port), node["outputs"][port].get<std::uint64_t>());
    }
  }
  nlohmann::ordered_json out;
  out["arena_bytes"] = plan.arena_bytes;
  auto& values = out["values"] = nlohmann::ordered_json::object();
  for (std::size_t b = 0; b < in.problem.buffers.size(); ++b) {
    const auto& id = in.problem.ids[b];
    values[names.at(id)] = {{"offset", plan.offsets[b]}, {"size", bytes.at(id)}};
  }
  std::ofstream file(path, std::ios::binary);
  file << out.dump(1) << '\n';
  if (!file) throw cli_error("cannot write " + path);
#else
  static_cast<void>(in), static_cast<void>(plan), static_cast<void>(path);
  static_cast<void>(onnx_document(model));  // says this build reads no ONNX
#endif
}

/// --help's list of the JSON's fields, one a line: the contract scripts read.
inline std::string arena_fields() {
  return "Prints one JSON object:\n"
         "  algo               the --algo asked for\n"
         "  method             whose plan it is (for best: the heuristic or search that found it)\n"
         "  buffers            rows planned\n"
         "  arena_bytes        the arena's size\n"
         "  lower_bound_bytes  max-live: no plan is smaller\n"
         "  fits               with --capacity: arena_bytes <= capacity\n"
         "  proved_optimal     arena_bytes is the least possible\n"
         "  status             exact: fits, does-not-fit or unknown\n"
         "  nodes              exact: search nodes expanded\n"
         "  stopped_by_clock   a time limit ended the search (another run may differ)\n"
         "  fragmentation      arena_bytes / lower_bound_bytes - 1\n"
         "  seconds            time taken\n"
         "  interrupted        Ctrl-C ended the search with its best plan\n"
         "  order              graph input: the node names its lifetimes come from, in order\n"
         "  offsets            every row: id (node:port for a graph) -> offset, size, lower, upper\n";
}

inline command add_arena_command(CLI::App& app) {
  struct options {
    graph_argument input;
    arena_request request;
    std::string output;
    std::string value_offsets;
    bool alias = false;  ///< --alias, the name --in-place had here before in-place reuse joined the model
  };
  auto opts = std::make_shared<options>();
  auto& request = opts->request;
  auto* cmd = app.add_subcommand("arena", "arena offsets for every buffer, as JSON");
  cmd->footer(arena_fields());
  add_graph_argument(cmd, opts->input, "MiniMalloc CSV (*.csv) or memopt-graph/1 file", "INPUT");
  cmd->add_option("--algo", request.algo, joined(heap::names()))->capture_default_str();
  cmd->add_option("--capacity", request.capacity, "arena bytes available: report whether the plan fits")
      ->check(whole_number());
  cmd->add_option("--time-limit", request.time_limit, "seconds for exact (default 60 unless --work-limit)")
      ->check(positive_number());
  cmd->add_option("--work-limit", request.work_limit,
                  "search nodes for exact, and states for a searching --schedule; alone, the plan depends on "
                  "the input only")
      ->check(whole_number());
  cmd->add_option("--output", opts->output, "write the plan as CSV with an offset column");
  cmd->add_option("--value-offsets", opts->value_offsets,
                  "ONNX input: write the plan as JSON, ONNX value name -> offset and size");
  cmd->add_option("--schedule", request.schedule, "graph input: the scheduler lifetimes come from")
      ->capture_default_str()
      ->check(CLI::IsMember(schedule::names()));
  cmd->add_option("--alignment", request.alignment, "graph input: every offset a multiple of this")
      ->capture_default_str()->check(whole_number(1));
  cmd->add_flag("--alias", opts->alias, "--in-place, by its earlier name (kept for scripts that use it)");
  return {cmd, [opts] {
            opts->request.stop = &interrupted;
            if (opts->alias) opts->input.in_place = true;
            const auto& path = opts->input.path;
            if (!opts->value_offsets.empty() && !is_onnx(opts->input)) {
              throw cli_error("--value-offsets names ONNX values, and " + path + " is not an ONNX model");
            }
            try {
              static_cast<void>(heap::by_name(opts->request.algo));
            } catch (const unknown_algorithm_error& e) {
              throw cli_error("unknown --algo '" + opts->request.algo + "' (known: " + joined(e.known) + ")");
            }
            arena_input in;
            std::pair<nlohmann::ordered_json, heap_plan> answer;
            const auto plan_arena = [&](const io::file_graph* g) {
              try {
                answer = arena_json(in, opts->request, g);
              } catch (const error& e) {
                throw cli_error(path + ": " + e.what());
              }
            };
            if (path.ends_with(".csv")) {
              try {
                in.problem = io::read_minimalloc_csv(path);
              } catch (const error& e) {
                throw cli_error(e.what());
              }
              plan_arena(nullptr);
            } else {
              const auto g = load_graph(opts->input);
              in = naming_nodes(g, path, [&] { return graph_arena_input(g, opts->request); });
              plan_arena(&g);
            }
            if (!opts->output.empty()) {
              std::ofstream file(opts->output, std::ios::binary);
              file << io::write_minimalloc_csv(in.problem, answer.second.offsets);
              if (!file) throw cli_error("cannot write " + opts->output);
            }
            if (!opts->value_offsets.empty()) write_value_offsets(opts->input, in, answer.second, opts->value_offsets);
            std::cout << answer.first.dump() << '\n';
          }};
}

}  // namespace memopt::plan
