#pragma once
// What the rewrite tests read back from a rewritten graph and a plan.

#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>

#include <string>
#include <vector>

namespace memopt::testing {

/// "name:port" of each data input and "^name" of each control input of vertex v, in edge order.
inline std::vector<std::string> inputs_of(const rewrite::rewritten_graph& g, std::size_t v) {
  std::vector<std::string> in;
  for (const auto e : boost::make_iterator_range(in_edges(v, g))) {
    const auto& s = g[source(e, g)].name;
    in.push_back(g[e].control ? "^" + s : s + ":" + std::to_string(g[e].port));
  }
  return in;
}

/// The names of the nodes a plan adds, in order.
inline std::vector<std::string> added_names(const rewrite::rewrite_plan& plan) {
  std::vector<std::string> names;
  names.reserve(plan.nodes.size());
  for (const auto& node : plan.nodes) names.push_back(node.name);
  return names;
}

}  // namespace memopt::testing
