#pragma once
// Reads a schedule for a file_graph: one node name a line (blank lines and
// lines starting with '#' are skipped, surrounding blanks trimmed). Whether the
// names form a topological order is the library's call (check_topological_order);
// this only refuses names the graph does not have.

#include <memopt/io/graph_file.hpp>

#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace memopt::io {

[[nodiscard]] inline std::vector<std::size_t> read_order(const std::string& path,
                                                          const file_graph& g) {
  std::ifstream in(path);
  if (!in) throw format_error("", "cannot open order file " + path);
  std::unordered_map<std::string_view, std::size_t> index_of;
  for (std::size_t v = 0; v < num_vertices(g); ++v) index_of.emplace(g[v].name, v);
  std::vector<std::size_t> order;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto last = line.find_last_not_of(" \t\r");
    const std::string name = line.substr(first, last - first + 1);
    const auto it = index_of.find(name);
    if (it == index_of.end()) {
      throw format_error(name, path + ":" + std::to_string(number) +
                                   ": the order names a node the graph does not have");
    }
    order.push_back(it->second);
  }
  return order;
}

}  // namespace memopt::io
