#pragma once
// Comparing algorithms as data: a cell is one algorithm's result on one graph
// with the family's lower bound there and the seconds it took; summarise()
// gives each algorithm's geometric mean of ratios to the bound, its wins (no
// algorithm of the family did better on that graph) and its total time; the
// printers write a Markdown table per family, CSV (a row per cell) or JSON.
// memopt-plan compare fills cells with the library's algorithms; a user's own
// heuristic enters the same way (examples/compare/custom_priority.cpp).

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace comparison {

struct cell {
  std::string graph, family, algorithm;
  std::uint64_t value = 0;
  std::uint64_t lower_bound = 0;
  double seconds = 0;

  [[nodiscard]] double ratio() const {
    return lower_bound == 0 ? 1.0 : static_cast<double>(value) / static_cast<double>(lower_bound);
  }
};

struct algorithm_summary {
  std::string family, algorithm;
  double log_ratio_sum = 0;
  std::size_t graphs = 0, wins = 0;
  double seconds = 0;

  [[nodiscard]] double geomean_ratio() const { return graphs == 0 ? 1.0 : std::exp(log_ratio_sum / double(graphs)); }
};

/// One summary per (family, algorithm), in the order the cells first name them.
inline std::vector<algorithm_summary> summarise(const std::vector<cell>& cells) {
  std::vector<algorithm_summary> out;
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  std::map<std::pair<std::string, std::string>, std::uint64_t> best;  // (graph, family) -> lowest value
  for (const auto& c : cells) {
    const auto [it, fresh] = best.try_emplace({c.graph, c.family}, c.value);
    if (!fresh) it->second = std::min(it->second, c.value);
  }
  for (const auto& c : cells) {
    const auto [it, fresh] = index.try_emplace({c.family, c.algorithm}, out.size());
    if (fresh) out.push_back({c.family, c.algorithm});
    auto& s = out[it->second];
    s.log_ratio_sum += std::log(c.ratio());
    ++s.graphs;
    s.wins += c.value == best.at({c.graph, c.family}) ? 1 : 0;
    s.seconds += c.seconds;
  }
  return out;
}

inline std::string fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

/// A table per family, in the order given: (family, what its values are).
inline void print_markdown(std::ostream& out, const std::vector<cell>& cells,
                           const std::vector<std::pair<std::string, std::string>>& families) {
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
    out << "### " << family << ": " << what << "\n\n| graph |";
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
        out << ' ' << c->value << " (" << fixed(c->ratio(), 3) << ") |";
      }
      out << '\n';
    }
    const auto row = [&](const std::string& label, auto&& cell) {
      out << "| " << label << " |";
      for (const auto& s : summary) {
        if (s.family == family) out << ' ' << cell(s) << " |";
      }
      out << '\n';
    };
    row("geometric mean of ratios", [](const algorithm_summary& s) { return fixed(s.geomean_ratio(), 4); });
    row("wins", [](const algorithm_summary& s) { return std::to_string(s.wins); });
    row("seconds", [](const algorithm_summary& s) { return fixed(s.seconds, 2); });
    out << '\n';
  }
}

inline void print_csv(std::ostream& out, const std::vector<cell>& cells) {
  out << "graph,family,algorithm,value,lower_bound,ratio,seconds\n";
  for (const auto& c : cells) {
    out << c.graph << ',' << c.family << ',' << c.algorithm << ',' << c.value << ',' << c.lower_bound << ','
        << fixed(c.ratio(), 6) << ',' << fixed(c.seconds, 6) << '\n';
  }
}

inline void print_json(std::ostream& out, const std::vector<cell>& cells) {
  nlohmann::ordered_json doc;
  auto& rows = doc["cells"] = nlohmann::ordered_json::array();
  for (const auto& c : cells) {
    rows.push_back({{"graph", c.graph}, {"family", c.family}, {"algorithm", c.algorithm}, {"value", c.value},
                    {"lower_bound", c.lower_bound}, {"ratio", c.ratio()}, {"seconds", c.seconds}});
  }
  auto& summary = doc["summary"] = nlohmann::ordered_json::array();
  for (const auto& s : summarise(cells)) {
    summary.push_back({{"family", s.family}, {"algorithm", s.algorithm}, {"geomean_ratio", s.geomean_ratio()},
                       {"wins", s.wins}, {"graphs", s.graphs}, {"seconds", s.seconds}});
  }
  out << doc.dump() << '\n';
}

}  // namespace comparison
