#pragma once
// Pictures for memopt-plan report --svg DIR, as plain SVG (no plotting
// dependency; any browser opens them):
// - timeline.svg: live transient bytes at each step of every scheduler's
//   order (a polyline each, x scaled to the order's length), the lower bound
//   as a dashed line, and the buffers live at the best order's peak named;
// - arena.svg: the arena plan of the best schedule, each buffer a rectangle
//   over its lifetime (x) and its offset range (y), coloured by the op that
//   made it (the eleven op types with the most bytes apart, the rest grey),
//   with a hover title naming it, its bytes and its steps;
// - a simulation (memopt-plan simulate --svg FILE): the Chrome trace's
//   tracks drawn, a row per device and per link with every run a bar over
//   its time coloured by op type, and below them each device's live bytes;
// - the rematerialisation trade-off (memopt-plan rewrite --curve --svg FILE,
//   report --svg DIR: remat.svg): extra flops against the peak reached, a
//   point per budget (filled where the budget is met), the floor dashed.

#include "command.hpp"
#include "format.hpp"

#include <memopt/heap/problem.hpp>
#include <memopt/simulate/machine.hpp>
#include <memopt/simulate/result.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace memopt::plan::svg {

inline std::string escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

/// The k-th of a dozen colours apart from each other, then around again.
inline std::string colour(std::size_t k) {
  static const char* const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                        "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#e7ba52"};
  return palette[k % std::size(palette)];
}

inline constexpr double width = 1040, height = 540, left = 90, right = 260, top = 40, bottom = 50;

inline void open_svg(std::ostream& out, const std::string& title, double picture_height = height) {
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << picture_height
      << "\" viewBox=\"0 0 " << width << ' ' << picture_height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << left << "\" y=\"24\" font-size=\"15\">" << escaped(title) << "</text>\n";
}

inline void axes(std::ostream& out, const std::string& x_label, const std::string& y_label, std::uint64_t y_max) {
  const double x0 = left, y0 = height - bottom, x1 = width - right;
  out << "<line x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x1 << "\" y2=\"" << y0 << "\" stroke=\"black\"/>\n"
      << "<line x1=\"" << x0 << "\" y1=\"" << top << "\" x2=\"" << x0 << "\" y2=\"" << y0 << "\" stroke=\"black\"/>\n"
      << "<text x=\"" << (x0 + x1) / 2 << "\" y=\"" << height - 15 << "\" text-anchor=\"middle\">" << escaped(x_label)
      << "</text>\n"
      << "<text x=\"" << x0 - 8 << "\" y=\"" << top + 4 << "\" text-anchor=\"end\">" << human_bytes(y_max) << "</text>\n"
      << "<text x=\"" << x0 - 8 << "\" y=\"" << y0 << "\" text-anchor=\"end\">0</text>\n"
      << "<text x=\"20\" y=\"" << (top + y0) / 2 << "\" transform=\"rotate(-90 20 " << (top + y0) / 2
      << ")\" text-anchor=\"middle\">" << escaped(y_label) << "</text>\n";
}

struct named_timeline {
  std::string name;
  std::vector<std::uint64_t> live;  ///< bytes at each step
};

/// `lines` (each scheduler's live bytes per step), `bound` dashed, `at_peak`
/// (the best order's largest live buffers: name, bytes) listed at the right.
inline void write_timeline(std::ostream& out, const std::string& graph, const std::vector<named_timeline>& lines,
                           std::uint64_t bound, const std::vector<std::pair<std::string, std::uint64_t>>& at_peak) {
  std::uint64_t y_max = std::max<std::uint64_t>(bound, 1);
  for (const auto& l : lines) {
    for (const auto b : l.live) y_max = std::max(y_max, b);
  }
  const double x0 = left, y0 = height - bottom, plot_w = width - right - left, plot_h = y0 - top;
  const auto y_of = [&](std::uint64_t bytes) { return y0 - plot_h * static_cast<double>(bytes) / double(y_max); };
  open_svg(out, graph + ": live bytes at each step of each order");
  axes(out, "step (each order scaled to its length)", "live transient bytes", y_max);
  double legend_y = top + 10;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const auto& l = lines[k];
    const std::string line_colour = colour(k);
    out << "<polyline class=\"schedule\" fill=\"none\" stroke=\"" << line_colour << "\" stroke-width=\"1.5\" points=\"";
    const double n = static_cast<double>(std::max<std::size_t>(l.live.size(), 2) - 1);
    for (std::size_t s = 0; s < l.live.size(); ++s) {
      out << (s ? " " : "") << x0 + plot_w * static_cast<double>(s) / n << ',' << y_of(l.live[s]);
    }
    out << "\"><title>" << escaped(l.name) << "</title></polyline>\n"
        << "<text x=\"" << width - right + 10 << "\" y=\"" << legend_y << "\" fill=\"" << line_colour << "\">"
        << escaped(l.name) << "</text>\n";
    legend_y += 16;
  }
  out << "<line class=\"bound\" x1=\"" << x0 << "\" y1=\"" << y_of(bound) << "\" x2=\"" << x0 + plot_w << "\" y2=\""
      << y_of(bound) << "\" stroke=\"black\" stroke-dasharray=\"6,4\"><title>lower bound " << bound
      << " B</title></line>\n"
      << "<text x=\"" << width - right + 10 << "\" y=\"" << legend_y << "\">- - lower bound</text>\n";
  legend_y += 24;
  out << "<text x=\"" << width - right + 10 << "\" y=\"" << legend_y << "\">at the best peak:</text>\n";
  for (const auto& [name, bytes] : at_peak) {
    legend_y += 14;
    out << "<text class=\"peak-buffer\" x=\"" << width - right + 10 << "\" y=\"" << legend_y
        << "\" font-size=\"10\">" << escaped(name) << ' ' << human_bytes(bytes) << "</text>\n";
  }
  out << "</svg>\n";
}

/// A colour per op type, the eleven with the largest weight apart and the
/// rest grey, with their legend at the right.
inline std::map<std::string, std::string> op_colours(std::ostream& out, const std::map<std::string, double>& weight) {
  std::vector<std::pair<double, std::string>> ops;
  ops.reserve(weight.size());
  for (const auto& [op, w] : weight) ops.emplace_back(w, op);
  std::ranges::sort(ops, std::greater{});
  std::map<std::string, std::string> colour_of_op;
  double legend_y = top + 10;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    colour_of_op[ops[k].second] = k < 11 ? colour(k) : "#c7c7c7";
    if (k > 11) continue;
    out << "<text x=\"" << width - right + 10 << "\" y=\"" << legend_y << "\" fill=\"" << colour_of_op[ops[k].second]
        << "\">" << (k < 11 ? escaped(ops[k].second) : std::string("other ops")) << "</text>\n";
    legend_y += 16;
  }
  return colour_of_op;
}

struct placed_buffer {
  std::string name, op;
  heap_buffer lifetime;
  std::uint64_t offset = 0;
};

/// Every buffer that takes space as a rectangle: steps across, offsets up.
inline void write_arena(std::ostream& out, const std::string& graph, const std::vector<placed_buffer>& buffers,
                        std::uint64_t arena_bytes, const std::string& method) {
  std::uint64_t steps = 1;
  for (const auto& b : buffers) steps = std::max(steps, b.lifetime.upper);
  const std::uint64_t y_max = std::max<std::uint64_t>(arena_bytes, 1);
  const double x0 = left, y0 = height - bottom, plot_w = width - right - left, plot_h = y0 - top;
  open_svg(out, graph + ": arena plan (" + method + "), " + human_bytes(arena_bytes));
  axes(out, "step", "offset in the arena", y_max);
  std::map<std::string, double> bytes_of_op;
  for (const auto& b : buffers) bytes_of_op[b.op] += static_cast<double>(b.lifetime.bytes);
  auto colour_of_op = op_colours(out, bytes_of_op);
  for (const auto& b : buffers) {
    const double x = x0 + plot_w * static_cast<double>(b.lifetime.lower) / double(steps);
    const double w = plot_w * static_cast<double>(b.lifetime.upper - b.lifetime.lower) / double(steps);
    const double h = plot_h * static_cast<double>(b.lifetime.bytes) / double(y_max);
    const double y = y0 - plot_h * static_cast<double>(b.offset) / double(y_max) - h;
    out << "<rect class=\"buffer\" x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << h
        << "\" fill=\"" << colour_of_op[b.op] << "\" stroke=\"white\" stroke-width=\"0.3\"><title>" << escaped(b.name)
        << " (" << escaped(b.op) << "): " << b.lifetime.bytes << " B at offset " << b.offset << ", steps "
        << b.lifetime.lower << ".." << b.lifetime.upper - 1 << "</title></rect>\n";
  }
  out << "</svg>\n";
}

/// A simulated run: a track per device and link, then memory per device over time.
inline void write_simulation(std::ostream& out, const std::string& graph, const sim::simulation_result& r,
                             const sim::machine& m) {
  const std::size_t num_devices = r.devices.size();
  const std::size_t tracks = num_devices + r.links.size();
  constexpr double row = 24, memory_height = 220;
  const double x0 = left, plot_w = width - right - left;
  const double memory_top = top + static_cast<double>(tracks) * row + 40;
  const double y0 = memory_top + memory_height;
  const double span = r.makespan_us > 0 ? r.makespan_us : 1;
  const auto x_of = [&](double us) { return x0 + plot_w * us / span; };
  char makespan[64];
  std::snprintf(makespan, sizeof makespan, "%.3f ms", r.makespan_us / 1000);
  open_svg(out, graph + ": simulated run (" + r.policy + "), makespan " + makespan, y0 + bottom);
  std::map<std::string, double> busy_of_op;
  for (const auto& run : r.runs) busy_of_op[std::string(r.graph.op_type(run.task))] += run.end_us - run.start_us;
  const auto colour_of_op = op_colours(out, busy_of_op);
  for (std::size_t k = 0; k < tracks; ++k) {
    const std::string name = k < num_devices ? m.devices[k].name
                                             : m.devices[r.links[k - num_devices].from].name + " -> " +
                                                   m.devices[r.links[k - num_devices].to].name;
    out << "<text x=\"" << x0 - 8 << "\" y=\"" << top + static_cast<double>(k) * row + row * 0.65
        << "\" text-anchor=\"end\" font-size=\"10\">" << escaped(name) << "</text>\n";
  }
  for (const auto& run : r.runs) {
    const std::string op_type(r.graph.op_type(run.task));
    const double y = top + static_cast<double>(run.resource) * row + 2;
    out << "<rect class=\"run\" x=\"" << x_of(run.start_us) << "\" y=\"" << y << "\" width=\""
        << std::max(0.5, x_of(run.end_us) - x_of(run.start_us)) << "\" height=\"" << row - 4 << "\" fill=\""
        << colour_of_op.at(op_type) << "\"><title>" << escaped(r.graph.name(run.task)) << " (" << escaped(op_type) << "): "
        << run.start_us << ".." << run.end_us << " us</title></rect>\n";
  }
  std::uint64_t y_max = 1;
  for (const auto& d : r.devices) y_max = std::max(y_max, d.peak_bytes());
  out << "<line x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x0 + plot_w << "\" y2=\"" << y0
      << "\" stroke=\"black\"/>\n<line x1=\"" << x0 << "\" y1=\"" << memory_top << "\" x2=\"" << x0 << "\" y2=\"" << y0
      << "\" stroke=\"black\"/>\n<text x=\"" << x0 - 8 << "\" y=\"" << memory_top + 4 << "\" text-anchor=\"end\">"
      << human_bytes(y_max) << "</text>\n<text x=\"" << x0 + plot_w / 2 << "\" y=\"" << y0 + 30
      << "\" text-anchor=\"middle\">time (us); above, a track per device and link; below, live bytes per device"
      << "</text>\n";
  for (std::size_t d = 0; d < num_devices; ++d) {
    out << "<polyline class=\"memory\" fill=\"none\" stroke=\"" << colour(d) << "\" stroke-width=\"1.5\" points=\"";
    std::uint64_t previous = 0;
    for (const auto& p : r.devices[d].timeline) {
      const double x = x_of(p.time_us);
      out << x << ',' << y0 - memory_height * static_cast<double>(previous) / double(y_max) << ' ' << x << ','
          << y0 - memory_height * static_cast<double>(p.bytes) / double(y_max) << ' ';
      previous = p.bytes;
    }
    out << x_of(r.makespan_us) << ',' << y0 - memory_height * static_cast<double>(previous) / double(y_max)
        << "\"><title>" << escaped(m.devices[d].name) << ": peak " << r.devices[d].peak_bytes()
        << " B</title></polyline>\n<text x=\"" << x0 + 6 << "\" y=\"" << memory_top + 14 + 14 * static_cast<double>(d)
        << "\" fill=\"" << colour(d) << "\">" << escaped(m.devices[d].name) << " peak "
        << human_bytes(r.devices[d].peak_bytes()) << "</text>\n";
  }
  out << "</svg>\n";
}

/// One budget of the trade-off curve.
struct curve_point {
  std::uint64_t budget = 0;
  std::uint64_t peak = 0;
  double extra_flops_percent = 0;
};

/// Extra flops (percent of the graph's) against the peak reached, from
/// `peak_before` (no rewrite) down to the floor (`floor` bytes, at step
/// `floor_step`).
inline void write_remat_curve(std::ostream& out, const std::string& graph, std::uint64_t peak_before,
                              std::uint64_t floor, const std::string& floor_step, const std::vector<curve_point>& points) {
  std::uint64_t x_max = std::max<std::uint64_t>(peak_before, 1);
  double y_max = 1;
  for (const auto& p : points) {
    x_max = std::max(x_max, p.peak);
    y_max = std::max(y_max, p.extra_flops_percent * 1.1);
  }
  const double x0 = left, y0 = height - bottom, plot_w = width - right - left, plot_h = y0 - top;
  const auto x_of = [&](std::uint64_t bytes) { return x0 + plot_w * static_cast<double>(bytes) / double(x_max); };
  const auto y_of = [&](double percent) { return y0 - plot_h * percent / y_max; };
  open_svg(out, graph + ": extra compute to fit each budget (rematerialisation)");
  char top_label[32];
  std::snprintf(top_label, sizeof top_label, "%.3g %%", y_max);
  out << "<line x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x0 + plot_w << "\" y2=\"" << y0 << "\" stroke=\"black\"/>\n"
      << "<line x1=\"" << x0 << "\" y1=\"" << top << "\" x2=\"" << x0 << "\" y2=\"" << y0 << "\" stroke=\"black\"/>\n"
      << "<text x=\"" << x0 + plot_w / 2 << "\" y=\"" << height - 15 << "\" text-anchor=\"middle\">peak reached (transient bytes)</text>\n"
      << "<text x=\"" << x0 << "\" y=\"" << y0 + 16 << "\" text-anchor=\"middle\">0</text>\n"
      << "<text x=\"" << x0 + plot_w << "\" y=\"" << y0 + 16 << "\" text-anchor=\"middle\">" << human_bytes(x_max) << "</text>\n"
      << "<text x=\"" << x0 - 8 << "\" y=\"" << top + 4 << "\" text-anchor=\"end\">" << top_label << "</text>\n"
      << "<text x=\"" << x0 - 8 << "\" y=\"" << y0 << "\" text-anchor=\"end\">0 %</text>\n"
      << "<text x=\"20\" y=\"" << (top + y0) / 2 << "\" transform=\"rotate(-90 20 " << (top + y0) / 2
      << ")\" text-anchor=\"middle\">extra flops (% of the graph's)</text>\n";
  out << "<line class=\"floor\" x1=\"" << x_of(floor) << "\" y1=\"" << top << "\" x2=\"" << x_of(floor) << "\" y2=\"" << y0
      << "\" stroke=\"black\" stroke-dasharray=\"6,4\"><title>floor " << floor << " B at " << escaped(floor_step)
      << "</title></line>\n"
      << "<line x1=\"" << x_of(peak_before) << "\" y1=\"" << top << "\" x2=\"" << x_of(peak_before) << "\" y2=\"" << y0
      << "\" stroke=\"#999\" stroke-dasharray=\"2,3\"><title>best peak without rewriting " << peak_before << " B</title></line>\n";
  out << "<polyline fill=\"none\" stroke=\"" << colour(0) << "\" stroke-width=\"1.5\" points=\"";
  for (std::size_t k = 0; k < points.size(); ++k) {
    out << (k ? " " : "") << x_of(points[k].peak) << ',' << y_of(points[k].extra_flops_percent);
  }
  out << "\"/>\n";
  for (const auto& p : points) {
    const bool fits = p.peak <= p.budget;
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.2f", p.extra_flops_percent);
    out << "<circle class=\"" << (fits ? "fits" : "over") << "\" cx=\"" << x_of(p.peak) << "\" cy=\"" << y_of(p.extra_flops_percent)
        << "\" r=\"5\" stroke=\"" << colour(0) << "\" fill=\"" << (fits ? colour(0) : "white") << "\"><title>budget "
        << human_bytes(p.budget) << ": peak " << human_bytes(p.peak) << (fits ? "" : " (over)") << ", +" << percent
        << " % flops</title></circle>\n";
  }
  double legend_y = top + 10;
  for (const auto& line : {std::string("&#9679; budget met"), std::string("&#9675; budget not met (lowest peak reached)"),
                           std::string("- - floor: " + human_bytes(floor)), std::string("&#183;&#183; best peak: " + human_bytes(peak_before))}) {
    out << "<text x=\"" << width - right + 10 << "\" y=\"" << legend_y << "\">" << line << "</text>\n";
    legend_y += 16;
  }
  out << "<text x=\"" << width - right + 10 << "\" y=\"" << legend_y << "\" font-size=\"10\">the floor's step:</text>\n"
      << "<text x=\"" << width - right + 10 << "\" y=\"" << legend_y + 14 << "\" font-size=\"10\">" << escaped(floor_step)
      << "</text>\n</svg>\n";
}

}  // namespace memopt::plan::svg
