#pragma once
// memopt-plan share GRAPH --algo linear|dag [--order FILE] [--policy lifo|best-fit|caffe2]
//                   [--exact-precedence-vertices N] [--exact-block-vertices K]
// One JSON object: graph, algo, policy, storages (each with bytes and its
// buffers as "node:port"; persistent buffers are in none, static ones alone),
// total_bytes (sum of the storages), unshared_bytes, peak_bytes (the peak of
// the order used: no plan for it can cost less) and persistent_bytes; dag adds
// exact_precedence (every path known: the graph has at most N vertices,
// 16,384 by default; past it paths are known within blocks of K ops of the
// pass's walk, 2,048 by default, and it may miss others, and a reuse with them).
// linear follows the file's order unless --order gives another; dag is valid
// for every order. Every plan is checked with check_sharing before printing.
//
// report_sharing adds the same figures to memopt-plan report.

#include "command.hpp"
#include "format.hpp"

#include <memopt/io/order_file.hpp>

#include <memopt/liveness.hpp>
#include <memopt/share.hpp>

#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>

namespace memopt::plan {

/// The plan of `algo` with `policy` ("" for the pass's default), checked; an
/// invalid plan is an internal error.
inline sharing_plan share_graph(const io::file_graph& g, const std::vector<std::size_t>& order,
                                const std::string& algo, const std::string& policy,
                                const share_options& options = {}) {
  const std::span<const std::size_t> steps(order);
  const auto& pass = share::by_name(algo);
  auto plan = pass(g, steps, policy, options);
  const auto violations = pass.every_order ? check_sharing(g, plan) : check_sharing(g, plan, steps);
  if (!violations.empty()) {
    throw std::logic_error(algo + " sharing produced an invalid plan (" +
                           std::to_string(violations.size()) + " violations)");
  }
  return plan;
}

/// The JSON of `memopt-plan share`: the plan of `algo` with `policy` ("" for
/// its default) for g, linear ones for `order`.
inline nlohmann::ordered_json share_json(const io::file_graph& g, const std::vector<std::size_t>& order,
                                         const std::string& algo, const std::string& policy,
                                         const share_options& options = {}) {
  const auto live = liveness(g, std::span<const std::size_t>(order));
  const auto plan = share_graph(g, order, algo, policy, options);
  const auto members = storage_members(plan);
  nlohmann::ordered_json out;
  out["graph"] = g[boost::graph_bundle].name;
  out["algo"] = algo;
  out["policy"] = policy.empty() ? std::string(share::by_name(algo).default_policy) : policy;
  auto& storages = out["storages"] = nlohmann::ordered_json::array();
  for (std::size_t s = 0; s < plan.num_storages(); ++s) {
    nlohmann::ordered_json storage;
    storage["bytes"] = plan.storage_bytes[s];
    auto& names = storage["buffers"] = nlohmann::ordered_json::array();
    for (const auto b : members[s]) names.push_back(buffer_name(g, plan.buffers.owner[b], plan.buffers.port_of(b)));
    storages.push_back(std::move(storage));
  }
  out["total_bytes"] = plan.total_bytes;
  out["unshared_bytes"] = plan.unshared_bytes;
  out["peak_bytes"] = live.peak_bytes;
  out["persistent_bytes"] = live.persistent_bytes;
  if (share::by_name(algo).every_order) out["exact_precedence"] = plan.exact_precedence;
  return out;
}

inline command add_share_command(CLI::App& app) {
  struct options {
    graph_argument graph;
    std::string algo;
    std::string order;
    std::string policy;
    std::optional<std::size_t> exact_precedence_vertices;
    std::optional<std::size_t> exact_block_vertices;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("share", "which buffers may share storage, as JSON");
  add_graph_argument(cmd, opts->graph);
  cmd->add_option("--algo", opts->algo, "linear (one order) or dag (every order)")
      ->required()
      ->check(CLI::IsMember(share::names()));
  cmd->add_option("--order", opts->order, "linear: node names, one a line (default: the file's order)");
  cmd->add_option("--policy", opts->policy,
                  "reuse policy: lifo (linear's default), best-fit (dag's default), caffe2")
      ->check(CLI::IsMember(share::policy_names()));
  cmd->add_option("--exact-precedence-vertices", opts->exact_precedence_vertices,
                  "dag: know every path on graphs of at most N vertices (V^2/16 bytes; default 16384)")
      ->check(whole_number());
  cmd->add_option("--exact-block-vertices", opts->exact_block_vertices,
                  "dag, past that: know every path within blocks of K ops of the walk (K^2/16 bytes; default 2048)")
      ->check(whole_number(1));
  return {cmd, [opts] {
            if (opts->algo == "dag" && !opts->order.empty()) {
              throw cli_error("share: --order applies to --algo linear only");
            }
            if (opts->algo == "linear" && (opts->exact_precedence_vertices || opts->exact_block_vertices)) {
              throw cli_error("share: --exact-precedence-vertices and --exact-block-vertices apply to --algo dag only");
            }
            share_options options;
            if (opts->exact_precedence_vertices) options.exact_precedence_vertices = *opts->exact_precedence_vertices;
            if (opts->exact_block_vertices) options.exact_block_vertices = *opts->exact_block_vertices;
            const auto g = load_graph(opts->graph);
            naming_nodes(g, opts->graph.path, [&] {
              const auto order = opts->order.empty() ? program_order(g) : io::read_order(opts->order, g);
              std::cout << share_json(g, order, opts->algo, opts->policy, options).dump() << '\n';
            });
          }};
}

/// Storages and bytes without sharing, with each pass, and the lower bound.
inline void report_sharing(const io::file_graph& g, std::ostream& out) {
  const auto order = program_order(g);
  const auto live = liveness(g, std::span<const std::size_t>(order));
  out << "Sharing: storages for the transient buffers (lower bound: the program order's peak)\n"
      << "  " << pad("plan", 28) << pad("storages", 10, true) << pad("bytes", 14, true)
      << pad("", 12, true) << pad("vs bound", 10, true) << '\n';
  const auto row = [&](const std::string& name, std::size_t storages, std::uint64_t bytes) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3f",
                  live.peak_bytes == 0 ? 1.0
                                       : static_cast<double>(bytes) / static_cast<double>(live.peak_bytes));
    out << "  " << pad(name, 28) << pad(storages == 0 ? "" : std::to_string(storages), 10, true)
        << pad(std::to_string(bytes), 14, true) << pad(human_bytes(bytes), 12, true)
        << pad(ratio, 10, true) << '\n';
  };
  const auto linear = share_graph(g, order, "linear", "");
  row("no sharing", linear.buffers.size() - static_cast<std::size_t>(std::ranges::count(
                                               linear.buffers.persistent, true)),
      linear.unshared_bytes);
  row("linear, program order, LIFO", linear.num_storages(), linear.total_bytes);
  const auto fit = share_graph(g, order, "linear", "best-fit");
  row("linear, best fit", fit.num_storages(), fit.total_bytes);
  const auto dag = share_graph(g, order, "dag", "");
  row("DAG (every order), best fit", dag.num_storages(), dag.total_bytes);
  row("lower bound (peak)", 0, live.peak_bytes);
  out << '\n';
}

}  // namespace memopt::plan
