// memopt-plan: the command line front door to memopt.
//   memopt-plan peak GRAPH [--order FILE] [--timeline]   one JSON object on stdout
//   memopt-plan report GRAPH                             a readable comparison
// Exit 0 on success; 1 on bad input or usage, with one line on stderr.

#include "../io/graph_file.hpp"
#include "../io/order_file.hpp"
#include "format.hpp"

#include <memopt/memopt.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace {

using memopt::io::file_graph;
using json = nlohmann::ordered_json;

std::string buffer_name(const file_graph& g, const memopt::buffer_table& buffers,
                        memopt::buffer_id b) {
  return g[buffers.owner[b]].name + ":" + std::to_string(buffers.port_of(b));
}

/// The order to evaluate: the file's own, or the one in `order_path`.
std::vector<std::size_t> chosen_order(const file_graph& g, const std::string& order_path) {
  return order_path.empty() ? memopt::program_order(g) : memopt::io::read_order(order_path, g);
}

void run_peak(const file_graph& g, const std::string& order_path, bool with_timeline) {
  const auto order = chosen_order(g, order_path);
  const auto live = memopt::liveness(g, order);
  json out;
  out["graph"] = g[boost::graph_bundle].name;
  out["nodes"] = num_vertices(g);
  out["edges"] = num_edges(g);
  out["buffers"] = live.buffers.size();
  out["peak_bytes"] = live.peak_bytes;
  out["persistent_bytes"] = live.persistent_bytes;
  out["peak_step"] = live.peak_step;
  out["peak_node"] = order.empty() ? "" : g[order[live.peak_step]].name;
  json at_peak = json::array();
  for (const auto b : live.live_at_peak) at_peak.push_back(buffer_name(g, live.buffers, b));
  out["live_at_peak"] = std::move(at_peak);
  if (with_timeline) out["timeline"] = live.timeline;
  std::cout << out.dump() << '\n';
}

void run_report(const file_graph& g, const std::string& path) {
  using memopt::plan::human_bytes;
  using memopt::plan::pad;
  const auto started = std::chrono::steady_clock::now();
  const auto order = memopt::program_order(g);
  const auto live = memopt::liveness(g, order);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();

  std::cout << "memopt-plan report: " << g[boost::graph_bundle].name << " (" << path << ")\n"
            << "  " << num_vertices(g) << " nodes, " << num_edges(g) << " edges, "
            << live.buffers.size() << " buffers; persistent " << human_bytes(live.persistent_bytes)
            << " (" << live.persistent_bytes << " B), reported apart\n\n";

  std::cout << "Schedules: transient peak of each order (no fragmentation)\n";
  std::cout << "  " << pad("schedule", 16) << pad("peak bytes", 14, true) << pad("peak", 12, true)
            << pad("vs program", 12, true) << pad("time", 11, true) << '\n';
  char time_text[32];
  std::snprintf(time_text, sizeof time_text, "%.2f ms", ms);
  std::cout << "  " << pad("program order", 16) << pad(std::to_string(live.peak_bytes), 14, true)
            << pad(human_bytes(live.peak_bytes), 12, true) << pad("1.000", 12, true)
            << pad(time_text, 11, true) << "\n\n";

  if (order.empty()) return;
  auto at_peak = live.live_at_peak;
  std::ranges::sort(at_peak, [&](auto a, auto b) {
    return live.buffers.bytes[a] > live.buffers.bytes[b] ||
           (live.buffers.bytes[a] == live.buffers.bytes[b] && a < b);
  });
  std::cout << "Program order peaks at step " << live.peak_step << " ('" << g[order[live.peak_step]].name
            << "') with " << at_peak.size() << " buffers live; the largest:\n";
  for (std::size_t k = 0; k < std::min<std::size_t>(at_peak.size(), 8); ++k) {
    const auto b = at_peak[k];
    const auto& interval = live.intervals[b];
    std::cout << "  " << pad(buffer_name(g, live.buffers, b), 40) << pad(human_bytes(live.buffers.bytes[b]), 12, true)
              << "   live steps " << interval.first << ".." << interval.last << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"memopt-plan: plan the memory of a computation graph (memopt-graph/1 JSON)"};
  app.require_subcommand(1);
  std::string graph_path;
  std::string order_path;
  bool with_timeline = false;

  auto* peak = app.add_subcommand("peak", "peak live bytes of one order, as JSON");
  peak->add_option("GRAPH", graph_path, "memopt-graph/1 file (.json or .json.gz)")->required();
  peak->add_option("--order", order_path, "node names, one a line (default: the file's order)");
  peak->add_flag("--timeline", with_timeline, "also print the live bytes at every step");

  auto* report = app.add_subcommand("report", "a readable comparison of the plans for a graph");
  report->add_option("GRAPH", graph_path, "memopt-graph/1 file (.json or .json.gz)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "memopt-plan: " << e.what() << " (see memopt-plan --help)\n";
    return 1;
  }

  // The graph outlives the try block so that the library's errors, which name
  // vertices by index, can be told with node names.
  std::optional<file_graph> graph;
  try {
    graph = memopt::io::read_graph(graph_path);
    if (peak->parsed()) run_peak(*graph, order_path, with_timeline);
    if (report->parsed()) run_report(*graph, graph_path);
  } catch (const memopt::error& e) {
    const std::string message = graph ? e.describe(memopt::io::node_namer(*graph)) : e.what();
    std::cerr << "memopt-plan: " << graph_path << ": " << message << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "memopt-plan: " << graph_path << ": " << e.what() << '\n';
    return 1;
  }
  return 0;
}
