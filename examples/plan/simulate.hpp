#pragma once
// memopt-plan simulate GRAPH [--config CONFIG.json] [--policy NAME]
//     [--placement FILE.json] [--trace FILE.json] [--svg FILE.svg] [--arena] [--no-alias]
// Runs the graph as grappler's virtual scheduler would (simulate/). Without
// --config: one device with the default cost model (sum). CONFIG (all fields
// optional; a wrong one is refused naming it):
//   devices: [{name, kind, flops_per_s, bytes_per_s, memory_bytes}]; a node
//     runs on the device its device field matches as TensorFlow matches names
//     ("/gpu:0" matches "/job:localhost/replica:0/task:0/device:GPU:0"; other
//     names match themselves), on the first when it has none; a field
//     matching no device or several is refused (without devices: one device
//     runs every node);
//   links: [{from, to, bytes_per_s, latency_us}]; default_link: {bytes_per_s,
//     latency_us} for pairs not listed;
//   cost_model: "sum" (default) or "roofline"; op_costs_us: {op type: us,
//     "*": us for every other op}; node_costs_us: {node name: us};
//   placement: {node: device}, over the graph's device fields;
//   fetch, feed: [node names]; count_unread_outputs (true); control_token_bytes (0).
// --placement FILE: a {node: device} object, or `memopt-plan colocate`'s
// output (its "placement"), over the graph's and the config's. --svg draws
// the run (svg.hpp).
// Prints one JSON object: graph, policy, cost_model, makespan_us, devices
// (name, kind, busy_us, compute_us, memory_us, idle_us, utilisation, runs,
// peak_bytes, persistent_bytes, memory_bytes, fits, live_at_peak as [node,
// port], with --arena arena_bytes and arena_method), links, transfers (name,
// from, to, bytes, start_us, end_us), schedule (every run in run order: node,
// op, device, start_us, end_us, compute_us, memory_us), not_run.

#include "command.hpp"
#include "svg.hpp"

#include <memopt/heap.hpp>
#include <memopt/simulate.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

/// file_graph nodes pair a _Send with its _Recv by attrs.tensor_name.
template <>
struct memopt::sim::op_traits<memopt::io::file_graph> : bundled_op_traits<io::file_graph> {
  static std::string_view transfer_key(const io::file_graph& g, std::size_t v) {
    const auto& attrs = g[v].attrs;
    if (!attrs.is_object()) return {};
    const auto it = attrs.find("tensor_name");
    return it != attrs.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>())
                                                : std::string_view();
  }
};

namespace memopt::plan {

/// The config's cost model: measured times by name and type, "*" for the
/// rest, else sum or roofline.
struct config_cost {
  bool roofline = false;
  std::optional<double> other_ops_us;
  [[nodiscard]] sim::op_cost cost(const sim::op_profile& op, const sim::device_spec& d) const {
    if (other_ops_us) return sim::fixed_cost{*other_ops_us}.cost(op, d);
    return roofline ? sim::roofline_cost{}.cost(op, d) : sim::sum_cost{}.cost(op, d);
  }
};

/// What a simulation config says (see the header comment).
struct simulation_config {
  sim::machine machine;
  bool devices_given = false;  ///< false: the one default device runs every node, whatever its device field
  sim::table_cost<config_cost> cost;
  std::unordered_map<std::string, std::string> placement;
  std::vector<std::string> fetch;
  std::vector<std::string> feed;
  bool count_unread_outputs = true;
  std::uint64_t control_token_bytes = 0;
};

namespace detail {

/// Reads a JSON file; a missing or malformed one is a cli_error naming it.
inline nlohmann::json read_json(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw cli_error(path + ": cannot open the " + what);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw cli_error(path + ": the " + what + " is not JSON: " + e.what());
  }
}

/// Typed access to config fields, each fault naming the field.
class config_reader {
 public:
  explicit config_reader(std::string path) : path_(std::move(path)) {}
  static std::string joined_field(const std::string& field, const std::string& key) {
    return field.empty() ? key : field + "." + key;
  }
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw cli_error(path_ + ": config field '" + field + "' " + problem);
  }
  double positive(const nlohmann::json& j, const std::string& field) const {
    if (!j.is_number() || !(j.get<double>() > 0) || !(j.get<double>() < 1e300)) fail(field, "must be a positive number");
    return j.get<double>();
  }
  double non_negative(const nlohmann::json& j, const std::string& field) const {
    if (!j.is_number() || !(j.get<double>() >= 0) || !(j.get<double>() < 1e300)) fail(field, "must be a number >= 0");
    return j.get<double>();
  }
  std::uint64_t size(const nlohmann::json& j, const std::string& field) const {
    if (const auto problem = io::detail::size_problem(j)) fail(field, *problem + " (" + j.dump() + ")");
    return io::detail::parse_size(j, "");
  }
  std::string string(const nlohmann::json& j, const std::string& field) const {
    if (!j.is_string()) fail(field, "must be a string");
    return j.get<std::string>();
  }
  std::vector<std::string> names(const nlohmann::json& j, const std::string& field) const {
    if (!j.is_array()) fail(field, "must be a list of node names");
    std::vector<std::string> out;
    out.reserve(j.size());
    for (std::size_t k = 0; k < j.size(); ++k) out.push_back(string(j[k], field + "[" + std::to_string(k) + "]"));
    return out;
  }
  void only(const nlohmann::json& j, const std::string& field, std::initializer_list<const char*> known) const {
    if (!j.is_object()) {
      if (field.empty()) throw cli_error(path_ + ": the config must be a JSON object");
      fail(field, "must be an object");
    }
    for (const auto& item : j.items()) {
      const std::string& key = item.key();
      if (std::find_if(known.begin(), known.end(), [&](const char* k) { return key == k; }) == known.end()) {
        fail(joined_field(field, key), "is not a field memopt-plan simulate knows");
      }
    }
  }

 private:
  std::string path_;
};

inline sim::link_spec read_link(const config_reader& r, const nlohmann::json& j, const std::string& field,
                                sim::link_spec link) {
  if (j.contains("bytes_per_s")) link.bytes_per_s = r.positive(j["bytes_per_s"], field + ".bytes_per_s");
  if (j.contains("latency_us")) link.latency_us = r.non_negative(j["latency_us"], field + ".latency_us");
  return link;
}

}  // namespace detail

/// The config in `j`; a fault is a cli_error naming `source` and the field.
inline simulation_config parse_simulation_config(const nlohmann::json& j, const std::string& source) {
  const detail::config_reader r(source);
  r.only(j, "", {"devices", "links", "default_link", "cost_model", "op_costs_us", "node_costs_us", "placement",
                 "fetch", "feed", "count_unread_outputs", "control_token_bytes"});
  simulation_config c;
  if (j.contains("devices")) {
    const auto& devices = j["devices"];
    if (!devices.is_array() || devices.empty()) r.fail("devices", "must be a non-empty list");
    c.machine.devices.clear();
    c.devices_given = true;
    for (std::size_t k = 0; k < devices.size(); ++k) {
      const std::string field = "devices[" + std::to_string(k) + "]";
      const auto& d = devices[k];
      r.only(d, field, {"name", "kind", "flops_per_s", "bytes_per_s", "memory_bytes"});
      if (!d.contains("name")) r.fail(field + ".name", "is missing");
      sim::device_spec spec{.name = r.string(d["name"], field + ".name")};
      if (c.machine.find_device(spec.name)) r.fail(field + ".name", "repeats device '" + spec.name + "'");
      if (d.contains("kind")) spec.kind = r.string(d["kind"], field + ".kind");
      if (d.contains("flops_per_s")) spec.flops_per_s = r.positive(d["flops_per_s"], field + ".flops_per_s");
      if (d.contains("bytes_per_s")) spec.bytes_per_s = r.positive(d["bytes_per_s"], field + ".bytes_per_s");
      if (d.contains("memory_bytes")) spec.memory_bytes = r.size(d["memory_bytes"], field + ".memory_bytes");
      c.machine.devices.push_back(std::move(spec));
    }
  }
  if (j.contains("default_link")) {
    r.only(j["default_link"], "default_link", {"bytes_per_s", "latency_us"});
    c.machine.default_link = detail::read_link(r, j["default_link"], "default_link", c.machine.default_link);
  }
  if (j.contains("links")) {
    const auto& links = j["links"];
    if (!links.is_array()) r.fail("links", "must be a list");
    for (std::size_t k = 0; k < links.size(); ++k) {
      const std::string field = "links[" + std::to_string(k) + "]";
      r.only(links[k], field, {"from", "to", "bytes_per_s", "latency_us"});
      sim::link_spec link = c.machine.default_link;
      for (const char* end : {"from", "to"}) {
        if (!links[k].contains(end)) r.fail(field + "." + end, "is missing");
        const std::string name = r.string(links[k][end], field + "." + end);
        const auto d = c.machine.find_device(name);
        if (!d) r.fail(field + "." + end, "names no device: '" + name + "'");
        (std::string_view(end) == "from" ? link.from : link.to) = *d;
      }
      c.machine.links.push_back(detail::read_link(r, links[k], field, link));
    }
  }
  if (j.contains("cost_model")) {
    const std::string model = r.string(j["cost_model"], "cost_model");
    if (model != "sum" && model != "roofline") r.fail("cost_model", "must be \"sum\" or \"roofline\", not '" + model + "'");
    c.cost.fallback.roofline = model == "roofline";
  }
  for (const char* table : {"op_costs_us", "node_costs_us"}) {
    if (!j.contains(table)) continue;
    if (!j[table].is_object()) r.fail(table, "must be an object of microseconds");
    for (const auto& [key, value] : j[table].items()) {
      const double us = r.non_negative(value, std::string(table) + "." + key);
      if (std::string_view(table) == "node_costs_us") {
        c.cost.by_name[key] = us;
      } else if (key == "*") {
        c.cost.fallback.other_ops_us = us;
      } else {
        c.cost.by_type[key] = us;
      }
    }
  }
  if (j.contains("placement")) {
    if (!j["placement"].is_object()) r.fail("placement", "must be an object of node -> device");
    for (const auto& [node, device] : j["placement"].items()) {
      c.placement[node] = r.string(device, "placement." + node);
    }
  }
  if (j.contains("fetch")) c.fetch = r.names(j["fetch"], "fetch");
  if (j.contains("feed")) c.feed = r.names(j["feed"], "feed");
  if (j.contains("count_unread_outputs")) {
    if (!j["count_unread_outputs"].is_boolean()) r.fail("count_unread_outputs", "must be true or false");
    c.count_unread_outputs = j["count_unread_outputs"].get<bool>();
  }
  if (j.contains("control_token_bytes")) c.control_token_bytes = r.size(j["control_token_bytes"], "control_token_bytes");
  return c;
}

inline simulation_config read_simulation_config(const std::string& path) {
  return parse_simulation_config(detail::read_json(path, "config"), path);
}

/// The simulation policies by CLI name.
inline const std::vector<std::string>& simulation_policy_names() {
  static const std::vector<std::string> names = {"composite", "fifo", "lifo", "first-ready", "program"};
  return names;
}

/// Runs `f(policy)` with the policy named `name`.
template <class F>
decltype(auto) with_policy(const std::string& name, F&& f) {
  if (name == "fifo") return f(sim::fifo{});
  if (name == "lifo") return f(sim::lifo{});
  if (name == "first-ready") return f(sim::first_ready{});
  if (name == "program") return f(sim::program{});
  return f(sim::composite{});
}

inline cli_error not_a_device_name(const std::string& file, const std::string& node) {
  return cli_error(file + ": the device of '" + node + "' must be a string");
}

inline cli_error unknown_device(const std::string& what, const std::string& node, const std::string& device) {
  return cli_error(what + " puts '" + node + "' on '" + device + "', which is not a configured device");
}

/// Each node's device: the --placement file, else the config's placement,
/// else the device its device field matches (sim::device_field_matcher), else
/// the first.
inline std::vector<std::size_t> simulation_placement(const io::file_graph& g, const simulation_config& c,
                                                     const std::string& placement_file) {
  std::vector<std::optional<std::size_t>> placed(num_vertices(g));
  const auto apply = [&](const std::unordered_map<std::string, std::string>& by_node, const std::string& what) {
    std::vector<std::string> nodes;
    nodes.reserve(by_node.size());
    for (const auto& entry : by_node) nodes.push_back(entry.first);
    const auto vertices = vertices_named(g, nodes, what);
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const std::string& device = by_node.at(nodes[k]);
      const auto d = c.machine.find_device(device);
      if (!d) throw unknown_device(what, nodes[k], device);
      placed[vertices[k]] = *d;
    }
  };
  apply(c.placement, "the config's placement");
  if (!placement_file.empty()) {
    const nlohmann::json j = detail::read_json(placement_file, "placement");
    const nlohmann::json& map = j.contains("placement") ? j["placement"] : j;
    if (!map.is_object()) throw cli_error(placement_file + ": the placement must be an object of node -> device");
    std::unordered_map<std::string, std::string> by_node;
    for (const auto& [node, device] : map.items()) {
      if (!device.is_string()) throw not_a_device_name(placement_file, node);
      by_node[node] = device.get<std::string>();
    }
    apply(by_node, placement_file);
  }
  sim::device_field_matcher device_of(c.machine);
  std::vector<std::size_t> placement(num_vertices(g), 0);
  for (std::size_t v = 0; v < placement.size(); ++v) {
    if (placed[v]) {
      placement[v] = *placed[v];
    } else if (c.devices_given) {
      placement[v] = device_of(v, g[v].device);
    }
  }
  return placement;
}

/// "node" and port of a device's buffer, as the JSON reports it.
inline nlohmann::ordered_json buffer_pair(const sim::simulation_result& r, std::size_t buffer) {
  const sim::task_buffer& b = r.graph.buffers[buffer];
  return nlohmann::ordered_json::array({std::string(r.graph.name(b.task)), b.port});
}

inline nlohmann::ordered_json simulation_json(const io::file_graph& g, const sim::simulation_result& r,
                                              const simulation_config& c, bool arena) {
  nlohmann::ordered_json out;
  out["graph"] = g[boost::graph_bundle].name;
  out["policy"] = r.policy;
  out["cost_model"] = c.cost.fallback.roofline ? "roofline" : "sum";
  out["makespan_us"] = r.makespan_us;
  auto& devices = out["devices"] = nlohmann::ordered_json::array();
  for (std::size_t d = 0; d < r.devices.size(); ++d) {
    const sim::device_report& dev = r.devices[d];
    const sim::device_spec& spec = c.machine.devices[d];
    nlohmann::ordered_json j;
    j["name"] = dev.name;
    j["kind"] = spec.kind;
    j["busy_us"] = dev.busy_us;
    j["compute_us"] = dev.compute_us;
    j["memory_us"] = dev.memory_us;
    j["idle_us"] = dev.idle_us;
    j["utilisation"] = dev.utilisation;
    j["runs"] = dev.runs;
    j["peak_bytes"] = dev.peak_bytes();
    j["persistent_bytes"] = dev.persistent_bytes();
    if (spec.memory_bytes > 0) {
      j["memory_bytes"] = spec.memory_bytes;
      j["fits"] = dev.peak_bytes() + dev.persistent_bytes() <= spec.memory_bytes;
    }
    auto& at_peak = j["live_at_peak"] = nlohmann::ordered_json::array();
    for (const auto b : dev.memory.live_at_peak) at_peak.push_back(buffer_pair(r, dev.buffer_ids[b]));
    if (arena) {
      const auto buffers = heap_buffers_of(dev.memory);
      const auto choice = choose_best(buffers);
      j["arena_bytes"] = choice.plan.arena_bytes;
      j["arena_method"] = choice.method;
    }
    devices.push_back(std::move(j));
  }
  auto& links = out["links"] = nlohmann::ordered_json::array();
  for (const auto& l : r.links) {
    links.push_back({{"from", c.machine.devices[l.from].name},
                     {"to", c.machine.devices[l.to].name},
                     {"busy_us", l.busy_us},
                     {"transfers", l.transfers},
                     {"bytes", l.bytes}});
  }
  auto& transfers = out["transfers"] = nlohmann::ordered_json::array();
  for (const auto k : r.transfer_runs) {
    const auto& run = r.runs[k];
    const auto& t = r.graph.tasks[run.task];
    transfers.push_back({{"name", std::string(r.graph.name(run.task))},
                         {"from", c.machine.devices[t.device].name},
                         {"to", c.machine.devices[t.to_device].name},
                         {"bytes", t.transfer_bytes},
                         {"start_us", run.start_us},
                         {"end_us", run.end_us}});
  }
  auto& schedule = out["schedule"] = nlohmann::ordered_json::array();
  for (const auto& run : r.runs) {
    const auto& t = r.graph.tasks[run.task];
    schedule.push_back({{"node", std::string(r.graph.name(run.task))},
                        {"op", std::string(r.graph.op_type(run.task))},
                        {"device", c.machine.devices[t.device].name},
                        {"start_us", run.start_us},
                        {"end_us", run.end_us},
                        {"compute_us", run.cost.compute_us},
                        {"memory_us", run.cost.memory_us}});
  }
  auto& not_run = out["not_run"] = nlohmann::ordered_json::array();
  for (const auto t : r.not_run) not_run.push_back(std::string(r.graph.name(t)));
  return out;
}

/// The config's fetch, feed, control token size and memory accounting, for
/// simulating g or a rewrite of g (whose vertices keep g's indices).
inline sim::simulation_options simulation_options_for(const io::file_graph& g, const simulation_config& c) {
  sim::simulation_options options;
  options.tasks.fetch = vertices_named(g, c.fetch, "fetch");
  options.tasks.feed = vertices_named(g, c.feed, "feed");
  options.tasks.control_token_bytes = c.control_token_bytes;
  options.memory.count_unread_outputs = c.count_unread_outputs;
  return options;
}

/// Simulates g as the config says, under the named policy.
inline sim::simulation_result run_simulation(const io::file_graph& g, const simulation_config& c,
                                             const std::string& policy, const std::string& placement_file,
                                             const std::string& path) {
  const auto options = simulation_options_for(g, c);
  return naming_nodes(g, path, [&] {
    const auto placement = simulation_placement(g, c, placement_file);
    return with_policy(policy, [&](auto p) { return sim::simulate(g, c.machine, placement, c.cost, p, options); });
  });
}

inline command add_simulate_command(CLI::App& app) {
  struct options {
    graph_argument graph;
    std::string config;
    std::string policy = "composite";
    std::string placement;
    std::string trace;
    std::string svg;
    bool arena = false;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("simulate", "simulated execution: time, transfers and memory per device, as JSON");
  add_graph_argument(cmd, opts->graph);
  cmd->add_option("--config", opts->config, "devices, links, cost model, placement, fetch and feed (JSON)");
  cmd->add_option("--policy", opts->policy, "ready policy (default composite)")
      ->check(CLI::IsMember(simulation_policy_names()));
  cmd->add_option("--placement", opts->placement, "node -> device JSON (or memopt-plan colocate's output)");
  cmd->add_option("--trace", opts->trace, "write a Chrome trace (Perfetto, chrome://tracing) to this file");
  cmd->add_option("--svg", opts->svg, "draw the run (tracks per device and link, memory per device) as SVG");
  cmd->add_flag("--arena", opts->arena, "also plan each device's arena for the order it ran");
  return {cmd, [opts] {
            const simulation_config config =
                opts->config.empty() ? simulation_config{} : read_simulation_config(opts->config);
            const auto g = load_graph(opts->graph);
            const auto r = run_simulation(g, config, opts->policy, opts->placement, opts->graph.path);
            if (!opts->trace.empty()) {
              std::ofstream out(opts->trace);
              if (!out) throw cli_error("cannot write the trace to " + opts->trace);
              sim::write_chrome_trace(out, r, config.machine);
            }
            if (!opts->svg.empty()) {
              std::ofstream out(opts->svg);
              if (!out) throw cli_error("cannot write the picture to " + opts->svg);
              svg::write_simulation(out, g[boost::graph_bundle].name, r, config.machine);
            }
            std::cout << simulation_json(g, r, config, opts->arena).dump() << '\n';
          }};
}

}  // namespace memopt::plan
