#pragma once
// A comparison (memopt/compare.hpp) as JSON, the shape memopt-plan compare
// prints: {"cells": [{graph, family, algorithm, value, lower_bound, ratio,
// seconds}...], "summary": [{family, algorithm, geomean_ratio, wins, graphs,
// seconds}...]}. Here, in memopt::io, because it needs nlohmann/json.

#include <memopt/compare/cell.hpp>

#include <nlohmann/json.hpp>

#include <ostream>
#include <vector>

namespace memopt::io {

[[nodiscard]] inline nlohmann::ordered_json comparison_json(const std::vector<compare::cell>& cells) {
  nlohmann::ordered_json doc;
  auto& rows = doc["cells"] = nlohmann::ordered_json::array();
  for (const auto& c : cells) {
    rows.push_back({{"graph", c.graph}, {"family", c.family}, {"algorithm", c.algorithm}, {"value", c.value},
                    {"lower_bound", c.lower_bound}, {"ratio", c.ratio()}, {"seconds", c.seconds}});
  }
  auto& summary = doc["summary"] = nlohmann::ordered_json::array();
  for (const auto& s : compare::summarise(cells)) {
    summary.push_back({{"family", s.family}, {"algorithm", s.algorithm}, {"geomean_ratio", s.geomean_ratio()},
                       {"wins", s.wins}, {"graphs", s.graphs}, {"seconds", s.seconds}});
  }
  return doc;
}

/// comparison_json(cells) on one line.
inline void print_comparison_json(std::ostream& out, const std::vector<compare::cell>& cells) {
  out << comparison_json(cells).dump() << '\n';
}

}  // namespace memopt::io
