#pragma once
// memopt-plan peak GRAPH [--order FILE] [--timeline] [--no-alias]
// One JSON object: graph, nodes, edges, buffers, aliased_outputs (views and
// in-place results, living in another tensor's storage), storages (buffers
// that own theirs: buffers = storages + aliased_outputs), peak_bytes
// (transient), persistent_bytes, peak_step, peak_node, live_at_peak (the
// storages live there, "node:port"), op_bound_bytes (the largest inputs plus
// outputs of one node, storages counted once, less what in-place reuse may
// save there: no order goes below it; the bound HMCOS and others quote) and op_bound_node, and with --timeline the
// live bytes at every step. --no-alias counts every output apart.

#include "command.hpp"

#include <memopt/io/order_file.hpp>

#include <memopt/liveness.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

namespace memopt::plan {

/// The node whose transient inputs, outputs (each storage once) and scratch
/// are the largest, and their bytes: every order holds them together at its
/// step, less what in-place reuse may save there (an output that may take
/// over an input's storage, in the orders where this node reads it last).
inline std::pair<std::uint64_t, std::size_t> op_bound(const io::file_graph& g) {
  const buffer_table buffers = make_buffer_table(g);  // order-free: no order's reuse applied
  std::pair<std::uint64_t, std::size_t> best{0, 0};
  std::vector<buffer_id> storages;
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    storages.clear();
    // its outputs and its scratch
    for (buffer_id b = buffers.first[v]; b < buffers.first[v + 1]; ++b) storages.push_back(buffers.storage[b]);
    for (const auto e : boost::make_iterator_range(in_edges(v, g))) {
      if (!g[e].control) storages.push_back(buffers.storage[buffers.id(source(e, g), g[e].port)]);
    }
    std::ranges::sort(storages);
    storages.erase(std::unique(storages.begin(), storages.end()), storages.end());
    std::uint64_t bytes = 0;
    for (const buffer_id s : storages) {
      if (!buffers.persistent[s]) bytes += buffers.bytes[s];
    }
    for (buffer_id b = buffers.first[v]; b < buffers.first[v + 1]; ++b) {
      if (buffers.takes_over[b] != no_buffer) bytes -= buffers.bytes[b];
    }
    if (bytes > best.first) best = {bytes, v};
  }
  return best;
}

/// The JSON of `memopt-plan peak` for g run in `order` (with the live bytes at every step if `timeline`).
inline nlohmann::ordered_json peak_json(const io::file_graph& g, const std::vector<std::size_t>& order, bool timeline) {
  const auto live = liveness(g, order);
  nlohmann::ordered_json out;
  out["graph"] = g[boost::graph_bundle].name;
  out["nodes"] = num_vertices(g);
  out["edges"] = num_edges(g);
  out["buffers"] = live.buffers.size();
  out["aliased_outputs"] = live.buffers.aliased;
  out["storages"] = live.buffers.size() - live.buffers.aliased;
  out["peak_bytes"] = live.peak_bytes;
  out["persistent_bytes"] = live.persistent_bytes;
  out["peak_step"] = live.peak_step;
  out["peak_node"] = order.empty() ? "" : g[order[live.peak_step]].name;
  auto& at_peak = out["live_at_peak"] = nlohmann::ordered_json::array();
  for (const auto b : live.live_at_peak) {
    at_peak.push_back(buffer_name(g, live.buffers.owner[b], live.buffers.port_of(b)));
  }
  const auto [bound, bound_node] = op_bound(g);
  out["op_bound_bytes"] = bound;
  out["op_bound_node"] = num_vertices(g) == 0 ? "" : g[bound_node].name;
  if (timeline) out["timeline"] = live.timeline;
  return out;
}

inline command add_peak_command(CLI::App& app) {
  struct options {
    graph_argument graph;
    std::string order;
    bool timeline = false;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("peak", "peak live bytes of one order, as JSON");
  add_graph_argument(cmd, opts->graph);
  cmd->add_option("--order", opts->order, "node names, one a line (default: the file's order)");
  cmd->add_flag("--timeline", opts->timeline, "also print the live bytes at every step");
  return {cmd, [opts] {
            const auto g = load_graph(opts->graph);
            naming_nodes(g, opts->graph.path, [&] {
              const auto order = opts->order.empty() ? program_order(g) : io::read_order(opts->order, g);
              std::cout << peak_json(g, order, opts->timeline).dump() << '\n';
            });
          }};
}

}  // namespace memopt::plan
