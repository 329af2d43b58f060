#pragma once
// The comparison's printers, for a person and for a spreadsheet:
// print_markdown writes a table per family (a row per graph, a column per
// algorithm, each cell its value and ratio to the bound, then the geometric
// means, wins and seconds); print_csv a row per cell. JSON is memopt::io's
// (io/compare_json.hpp), which has nlohmann/json; the core does not.

#include <memopt/compare/cell.hpp>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace memopt::detail {

/// value with `digits` decimals, whatever the stream's locale and flags.
inline std::string fixed_digits(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

}  // namespace memopt::detail

namespace memopt::compare {

/// A family's name and what its values are, the caption of its table.
struct family_caption {
  std::string family, what;
};

/// A table per family, in the order given; a family without cells is skipped.
inline void print_markdown(std::ostream& out, const std::vector<cell>& cells,
                           const std::vector<family_caption>& families) {
  const auto summary = summarise(cells);
  for (const auto& [family_name, what] : families) {
    const std::string& family = family_name;  // a binding: clang 14 lambdas cannot capture it
    std::vector<std::string> algos, graphs;
    for (const auto& s : summary) {
      if (s.family == family) algos.push_back(s.algorithm);
    }
    for (const auto& c : cells) {
      if (c.family == family && std::ranges::find(graphs, c.graph) == graphs.end()) graphs.push_back(c.graph);
    }
    if (algos.empty()) continue;
    out << "### " << family << (what.empty() ? "" : ": ") << what << "\n\n| graph |";
    for (const auto& a : algos) out << ' ' << a << " |";
    out << "\n|---|";
    for (std::size_t k = 0; k < algos.size(); ++k) out << "---|";
    out << '\n';
    for (const auto& graph : graphs) {
      out << "| " << graph << " |";
      for (const auto& a : algos) {
        const auto c = std::ranges::find_if(cells, [&](const cell& x) {
          return x.graph == graph && x.family == family && x.algorithm == a;
        });
        if (c == cells.end()) {
          out << " - |";  // this algorithm did not run on this graph
        } else {
          out << ' ' << c->value << " (" << detail::fixed_digits(c->ratio(), 3) << ") |";
        }
      }
      out << '\n';
    }
    const auto row = [&](const std::string& label, auto&& text) {
      out << "| " << label << " |";
      for (const auto& s : summary) {
        if (s.family == family) out << ' ' << text(s) << " |";
      }
      out << '\n';
    };
    row("geometric mean of ratios", [](const algorithm_summary& s) { return detail::fixed_digits(s.geomean_ratio(), 4); });
    row("wins", [](const algorithm_summary& s) { return std::to_string(s.wins); });
    row("seconds", [](const algorithm_summary& s) { return detail::fixed_digits(s.seconds, 2); });
    out << '\n';
  }
}

/// A table per family, in the order the cells first name them, without captions.
inline void print_markdown(std::ostream& out, const std::vector<cell>& cells) {
  std::vector<family_caption> families;
  for (const auto& c : cells) {
    if (std::ranges::find(families, c.family, &family_caption::family) == families.end()) {
      families.push_back({c.family, ""});
    }
  }
  print_markdown(out, cells, families);
}

/// graph,family,algorithm,value,lower_bound,ratio,seconds: a header, then a row per cell.
inline void print_csv(std::ostream& out, const std::vector<cell>& cells) {
  out << "graph,family,algorithm,value,lower_bound,ratio,seconds\n";
  for (const auto& c : cells) {
    out << c.graph << ',' << c.family << ',' << c.algorithm << ',' << c.value << ',' << c.lower_bound << ','
        << detail::fixed_digits(c.ratio(), 6) << ',' << detail::fixed_digits(c.seconds, 6) << '\n';
  }
}

}  // namespace memopt::compare
