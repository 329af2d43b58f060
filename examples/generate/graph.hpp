#pragma once
// A generated graph before it is written: nodes in program order, each with
// its op, output sizes, data inputs, weight flag, flops and training phase;
// write_graph streams it as memopt-graph/1 (docs/graph-format.md) without
// building a JSON document, so that millions of nodes write in seconds.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace graph_gen {

using tensor = std::pair<std::size_t, std::size_t>;  ///< (node, port)

struct node {
  std::string name;
  std::string op;
  std::vector<std::uint64_t> outputs;  ///< bytes per port
  std::vector<tensor> inputs;
  bool persistent = false;
  double flops = 0;
  std::string phase;  ///< "forward", "backward" or empty
};

struct graph {
  std::string name;
  std::string source;
  std::vector<node> nodes;
  std::vector<tensor> outputs;  ///< live at the end

  /// Appends a node and returns its index.
  std::size_t add(node n) {
    nodes.push_back(std::move(n));
    return nodes.size() - 1;
  }
};

/// Writes `g` as memopt-graph/1 text.
inline void write_graph(std::ostream& out, const graph& g) {
  const auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(); };
  const auto ref = [&](tensor t) { return quoted(g.nodes[t.first].name + ":" + std::to_string(t.second)); };
  out << "{\"format\": \"memopt-graph/1\", \"name\": " << quoted(g.name) << ", \"source\": " << quoted(g.source)
      << ",\n \"nodes\": [\n";
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const node& n = g.nodes[i];
    out << "  {\"name\": " << quoted(n.name) << ", \"op\": " << quoted(n.op) << ", \"outputs\": [";
    for (std::size_t p = 0; p < n.outputs.size(); ++p) out << (p ? ", " : "") << n.outputs[p];
    out << "]";
    if (!n.inputs.empty()) {
      out << ", \"inputs\": [";
      for (std::size_t k = 0; k < n.inputs.size(); ++k) out << (k ? ", " : "") << ref(n.inputs[k]);
      out << "]";
    }
    if (n.persistent) out << ", \"persistent\": true";
    if (n.flops > 0) out << ", \"flops\": " << nlohmann::json(n.flops).dump();
    if (!n.phase.empty()) out << ", \"attrs\": {\"phase\": " << quoted(n.phase) << "}";
    out << (i + 1 < g.nodes.size() ? "},\n" : "}\n");
  }
  out << " ],\n \"outputs\": [";
  for (std::size_t k = 0; k < g.outputs.size(); ++k) out << (k ? ", " : "") << ref(g.outputs[k]);
  out << "]}\n";
}

}  // namespace graph_gen
