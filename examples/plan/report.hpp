#pragma once
// memopt-plan report GRAPH [--svg DIR]: a readable comparison for a person.
// Each family adds its section (a function of the graph writing to the
// stream), then for a training graph the rematerialisation trade-off, the
// last a one-device simulation under each ready policy; --svg DIR also draws
// the orders' timelines, the arena and the trade-off (svg.hpp).

#include "arena.hpp"
#include "command.hpp"
#include "format.hpp"
#include "schedulers.hpp"
#include "rewrite.hpp"
#include "share.hpp"
#include "simulate.hpp"
#include "svg.hpp"

#include <memopt/liveness.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <ostream>
#include <system_error>

namespace memopt::plan {

/// The graph's size, and what its views and in-place results save (or cost:
/// a small view keeps its whole source alive) in the program order.
inline void report_header(const io::file_graph& g, const graph_argument& input, std::ostream& out) {
  const auto live = liveness(g, program_order(g));
  out << "memopt-plan report: " << g[boost::graph_bundle].name << " (" << input.path << ")\n"
      << "  " << num_vertices(g) << " nodes, " << num_edges(g) << " edges, " << live.buffers.size()
      << " buffers; persistent " << human_bytes(live.persistent_bytes) << " ("
      << live.persistent_bytes << " B), reported apart\n";
  if (input.no_alias) {
    out << "  every output counted apart (--no-alias): views and in-place results as copies\n\n";
    return;
  }
  if (live.buffers.aliased == 0) {
    out << "  no views or in-place results: every output owns its storage\n\n";
    return;
  }
  graph_argument every_output_apart = input;
  every_output_apart.no_alias = true;
  const auto apart = load_graph(every_output_apart);
  const std::uint64_t copies = liveness(apart, program_order(apart)).peak_bytes;
  const std::uint64_t peak = live.peak_bytes;
  char percent[32];
  std::snprintf(percent, sizeof percent, "%.1f%%",
                copies == 0 ? 0.0 : 100.0 * (static_cast<double>(copies) - static_cast<double>(peak)) /
                                        static_cast<double>(copies));
  out << "  " << live.buffers.aliased << " outputs are views or in-place results living in another tensor's storage ("
      << live.buffers.size() - live.buffers.aliased << " storages); program-order peak " << human_bytes(peak)
      << " against " << human_bytes(copies) << " with every output apart: ";
  if (peak <= copies) {
    out << "storage sharing saves " << human_bytes(copies - peak) << " (" << percent << ")\n\n";
  } else {
    out << "views keep their sources alive, " << human_bytes(peak - copies) << " more\n\n";
  }
}

/// The orders report_schedules ran, by scheduler, and the best lower bound.
struct report_orders {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> orders;
  std::uint64_t lower_bound = 0;
};

/// Every scheduler's transient peak, side by side, with the lower bound.
inline report_orders report_schedules(const io::file_graph& g, std::ostream& out) {
  report_orders ran;
  const auto program = liveness(g, program_order(g)).peak_bytes;
  const auto bound = lower_bound(g);
  out << "Schedules: transient peak of each order (no fragmentation)\n"
      << "  " << pad("schedule", 16) << pad("peak bytes", 14, true) << pad("peak", 12, true)
      << pad("vs program", 12, true) << pad("time", 12, true) << '\n';
  std::uint64_t best_bound = bound;
  for (const auto& scheduler : schedule::entries()) {
    if (scheduler.name == "exact") continue;  // best is exact within its budget
    const auto r = run_scheduler(g, scheduler.name);
    best_bound = std::max(best_bound, r.lower_bound_bytes);
    ran.orders.emplace_back(scheduler.name, r.order);
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3f", program == 0 ? 1.0 : double(r.peak_bytes) / double(program));
    out << "  " << pad(std::string(scheduler.name), 16) << pad(std::to_string(r.peak_bytes), 14, true)
        << pad(human_bytes(r.peak_bytes), 12, true) << pad(ratio, 12, true)
        << pad(milliseconds(r.seconds * 1000), 12, true) << '\n';
  }
  out << "  " << pad("lower bound", 16) << pad(std::to_string(best_bound), 14, true)
      << pad(human_bytes(best_bound), 12, true) << "   (no order peaks lower)\n\n";
  ran.lower_bound = best_bound;
  return ran;
}

/// DIR/timeline.svg (every order's live bytes) and DIR/arena.svg (the best
/// order's arena plan); see svg.hpp.
inline void write_pictures(const io::file_graph& g, const report_orders& ran, const std::string& dir) {
  const auto open = [&](const std::string& name) {
    std::error_code fault;
    std::filesystem::create_directories(dir, fault);
    if (fault) throw cli_error("cannot create the directory " + dir + ": " + fault.message());
    std::ofstream file(std::filesystem::path(dir) / name, std::ios::binary);
    if (!file) throw cli_error("cannot write " + (std::filesystem::path(dir) / name).string());
    return file;
  };
  const std::string graph = g[boost::graph_bundle].name;
  std::vector<svg::named_timeline> lines;
  for (const auto& [name, order] : ran.orders) lines.push_back({name, liveness(g, order).timeline});
  const auto& best = std::ranges::find(ran.orders, std::string("best"), [](const auto& o) { return o.first; })->second;
  const auto live = liveness(g, best);
  auto at_peak = live.live_at_peak;
  std::ranges::stable_sort(at_peak, [&](auto a, auto b) { return live.buffers.bytes[a] > live.buffers.bytes[b]; });
  std::vector<std::pair<std::string, std::uint64_t>> named;
  for (std::size_t k = 0; k < std::min<std::size_t>(at_peak.size(), 12); ++k) {
    const auto b = at_peak[k];
    named.emplace_back(buffer_name(g, live.buffers.owner[b], live.buffers.port_of(b)), live.buffers.bytes[b]);
  }
  auto timeline = open("timeline.svg");
  svg::write_timeline(timeline, graph, lines, ran.lower_bound, named);
  const auto problem = make_arena_problem(g, std::span<const std::size_t>(best));
  const auto plan = heap::by_name("best")(problem.buffers);
  std::vector<svg::placed_buffer> placed;
  for (buffer_id b = 0; b < problem.buffers.size(); ++b) {
    if (!problem.buffers[b].takes_space()) continue;
    const auto owner = problem.live.buffers.owner[b];
    placed.push_back({buffer_name(g, owner, problem.live.buffers.port_of(b)), g[owner].op, problem.buffers[b],
                      plan.plan.offsets[b]});
  }
  auto arena = open("arena.svg");
  svg::write_arena(arena, graph, placed, plan.plan.arena_bytes, plan.method);
}

/// What is live at the peak of the program order, largest first.
inline void report_peak_buffers(const io::file_graph& g, std::ostream& out) {
  const auto order = program_order(g);
  if (order.empty()) return;
  const auto live = liveness(g, order);
  auto at_peak = live.live_at_peak;
  const auto& bytes = live.buffers.bytes;
  std::ranges::stable_sort(at_peak, [&](auto a, auto b) { return bytes[a] > bytes[b]; });
  out << "Program order peaks at step " << live.peak_step << " ('" << g[order[live.peak_step]].name
      << "') with " << at_peak.size() << " buffers live; the largest:\n";
  for (std::size_t k = 0; k < std::min<std::size_t>(at_peak.size(), 8); ++k) {
    const auto b = at_peak[k];
    out << "  " << pad(buffer_name(g, live.buffers.owner[b], live.buffers.port_of(b)), 40)
        << pad(human_bytes(bytes[b]), 12, true) << "   live steps " << live.intervals[b].first
        << ".." << live.intervals[b].last << '\n';
  }
  out << '\n';
}

/// For a training graph (a node with attrs.phase "backward"): the
/// rematerialisation trade-off, and DIR/remat.svg when drawing.
inline void report_remat(const io::file_graph& g, std::ostream& out, const std::string& svg_dir) {
  const bool training = std::ranges::any_of(boost::make_iterator_range(vertices(g)), [&](auto v) {
    const auto* phase = node_attr(g, v, "phase");
    return phase != nullptr && *phase == "backward";
  });
  if (!training) return;
  const auto facts = rewrite::read_facts(g);
  const exact_options search{.time_limit_seconds = std::nullopt, .work_limit = 200'000, .stop = &interrupted};
  const auto c = remat_curve_points(g, facts, {}, search);
  out << "\nRematerialisation (a training graph): extra compute to fit each budget, from the best peak "
      << human_bytes(c.peak_before) << " down to the floor " << human_bytes(c.floor.bytes) << " (at '"
      << facts.name[c.floor.vertex] << "'; memopt-plan rewrite --curve); the flops floor: no plan within the budget adds less\n"
      << "  " << pad("budget", 12, true) << pad("of best", 10, true) << pad("peak", 12, true) << pad("fits", 6, true)
      << pad("extra flops", 13, true) << pad("flops floor", 13, true) << pad("copies", 9, true) << '\n';
  for (const auto& p : c.points) {
    char share[16], flops[24], floor[24];
    std::snprintf(share, sizeof share, "%.3f", static_cast<double>(p.budget) / static_cast<double>(std::max<std::uint64_t>(c.peak_before, 1)));
    std::snprintf(flops, sizeof flops, "%.2f %%", p.extra_flops_percent);
    if (std::isfinite(p.extra_flops_floor_percent)) {
      std::snprintf(floor, sizeof floor, "%.2f %%", p.extra_flops_floor_percent);
    } else {
      std::snprintf(floor, sizeof floor, "none fits");
    }
    out << "  " << pad(human_bytes(p.budget), 12, true) << pad(share, 10, true) << pad(human_bytes(p.peak), 12, true)
        << pad(p.peak <= p.budget ? "yes" : "no", 6, true) << pad(flops, 13, true) << pad(floor, 13, true)
        << pad(std::to_string(p.nodes_added), 9, true) << '\n';
  }
  if (!svg_dir.empty()) {
    std::ofstream file(std::filesystem::path(svg_dir) / "remat.svg");
    if (!file) throw cli_error("cannot write " + (std::filesystem::path(svg_dir) / "remat.svg").string());
    write_curve_svg(file, facts, c);
  }
}

/// One device under the default cost model, each ready policy: time and peak.
inline void report_simulation(const io::file_graph& g, std::ostream& out) {
  const simulation_config config;
  out << '\n';
  const sim::device_spec& device = config.machine.devices[0];
  char rates[96];
  std::snprintf(rates, sizeof rates, "%.3g FLOP/s, %.3g B/s", device.flops_per_s, device.bytes_per_s);
  out << "Simulation on one device (" << rates << ", cost model sum; memopt-plan simulate for more)\n"
      << "  " << pad("policy", 16) << pad("makespan", 12, true) << pad("compute", 12, true)
      << pad("memory", 12, true) << pad("peak bytes", 14, true) << pad("peak", 12, true) << '\n';
  for (const auto& policy : simulation_policy_names()) {
    const auto r = run_simulation(g, config, policy, "", "");
    const sim::device_report& d = r.devices[0];
    out << "  " << pad(policy, 16) << pad(milliseconds(r.makespan_us / 1000), 12, true)
        << pad(milliseconds(d.compute_us / 1000), 12, true) << pad(milliseconds(d.memory_us / 1000), 12, true)
        << pad(std::to_string(d.peak_bytes()), 14, true) << pad(human_bytes(d.peak_bytes()), 12, true) << '\n';
  }
}

inline command add_report_command(CLI::App& app) {
  struct options {
    graph_argument input;
    std::string svg_dir;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("report", "a readable comparison of the plans for a graph");
  add_graph_argument(cmd, opts->input);
  cmd->add_option("--svg", opts->svg_dir, "also draw timeline.svg, arena.svg (and remat.svg for a training graph) in this directory");
  return {cmd, [opts] {
            const auto& input = opts->input;
            const auto g = load_graph(input);
            naming_nodes(g, input.path, [&] {
              report_header(g, input, std::cout);
              const auto ran = report_schedules(g, std::cout);
              if (!opts->svg_dir.empty()) write_pictures(g, ran, opts->svg_dir);
              report_peak_buffers(g, std::cout);
              report_sharing(g, std::cout);
              report_arena(g, std::cout);
              report_remat(g, std::cout, opts->svg_dir);
              report_simulation(g, std::cout);
            });
          }};
}

}  // namespace memopt::plan
