#pragma once
// Pictures for memopt-plan report --svg DIR, as plain SVG (no plotting
// dependency; any browser opens them):
// - timeline.svg: live transient bytes at each step of every scheduler's
//   order (a polyline each, x scaled to the order's length), the lower bound
//   as a dashed line, and the buffers live at the best order's peak named;
// - arena.svg: the arena plan of the best schedule, each buffer a rectangle
//   over its lifetime (x) and its offset range (y), coloured by the op that
//   made it (the eleven op types with the most bytes apart, the rest grey),
//   with a hover title naming it, its bytes and its steps.

#include "command.hpp"

#include <memopt/heap/problem.hpp>

#include <algorithm>
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

inline void open_svg(std::ostream& out, const std::string& title) {
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
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
  // Op types coloured by their share of the bytes, the largest first.
  std::map<std::string, std::uint64_t> bytes_of_op;
  for (const auto& b : buffers) bytes_of_op[b.op] += b.lifetime.bytes;
  std::vector<std::pair<std::uint64_t, std::string>> ops;
  ops.reserve(bytes_of_op.size());
  for (const auto& [op, bytes] : bytes_of_op) ops.emplace_back(bytes, op);
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

}  // namespace memopt::plan::svg
