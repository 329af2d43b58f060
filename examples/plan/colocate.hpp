#pragma once
// memopt-plan colocate GRAPH --config CONFIG.json
// GRAPH: a memopt-graph/1 file or a TF GraphDef in JSON (see
// tf_like/graph_def.hpp); CONFIG: devices, kernels, device_type_preference,
// soft_placement (tf_like/placer_config.hpp). One JSON object: graph,
// placement (node -> full device name, in node order), groups (node names,
// one list per colocation group, by first member), num_groups, devices_used,
// and ignored ({node, group}: colocations soft placement dropped).
// Unsatisfiable constraints exit 1 with one line naming both nodes.

#include "command.hpp"

#include <tf_like/graph_def.hpp>
#include <tf_like/placer_config.hpp>

#include <memopt/colocate.hpp>

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <set>

namespace memopt::plan {

inline command add_colocate_command(CLI::App& app) {
  struct options {
    graph_argument graph;
    std::string config;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("colocate", "colocation groups and a device for every node, as JSON");
  cmd->add_option("GRAPH", opts->graph.path, "memopt-graph/1 file or TF GraphDef JSON (.json or .json.gz), or ONNX model (.onnx)")
      ->required();
  cmd->add_option("--dim", opts->graph.dims, "size of a dynamic dimension of an ONNX model (repeatable)")
      ->check(dimension_assignment());
  cmd->add_option("--config", opts->config, "placer configuration: devices, kernels, preference")->required();
  return {cmd, [opts] {
            const auto config = [&] {
              try {
                return tf_like::parse_placer_config(nlohmann::json::parse(io::detail::read_file(opts->config)));
              } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range: a number too large
                throw cli_error(opts->config + ": not JSON: " + e.what());
              } catch (const std::exception& e) {  // config_error, format_error (unreadable file)
                throw cli_error(opts->config + ": " + e.what());
              }
            }();
            const auto g = [&] {
              if (is_onnx(opts->graph)) return tf_like::from_file_graph(load_graph(opts->graph));
              check_memory_for(opts->graph.path);
              try {
                return tf_like::read_graph(opts->graph.path);
              } catch (const error& e) {
                throw cli_error(opts->graph.path + ": " + e.what());
              }
            }();
            const auto placed = [&] {
              try {
                return place(g, config.devices, config.kernels, config.options);
              } catch (const error& e) {
                throw cli_error(opts->graph.path + ": " + e.describe(tf_like::node_namer(g)));
              }
            }();
            nlohmann::ordered_json out;
            out["graph"] = g[boost::graph_bundle];
            auto& placement = out["placement"] = nlohmann::ordered_json::object();
            std::vector<std::vector<std::string>> groups(placed.num_groups);
            std::set<std::size_t> used;
            for (std::size_t v = 0; v < num_vertices(g); ++v) {
              placement[g[v].name] = config.devices.full_name(placed.device[v]);
              groups[placed.group[v]].push_back(g[v].name);
              used.insert(placed.device[v]);
            }
            out["groups"] = groups;
            out["num_groups"] = placed.num_groups;
            out["devices_used"] = used.size();
            auto& ignored = out["ignored"] = nlohmann::ordered_json::array();
            for (const auto& [v, group] : placed.ignored) ignored.push_back({{"node", g[v].name}, {"group", group}});
            std::cout << out.dump() << '\n';
          }};
}

}  // namespace memopt::plan
