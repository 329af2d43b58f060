// The README's first program: the peak memory of one order of a small graph.
#include <memopt/memopt.hpp>
#include <boost/graph/adjacency_list.hpp>
#include <iostream>

int main() {
  using graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                      memopt::tensor_node, memopt::tensor_edge>;
  graph g;
  const auto x = add_vertex({.outputs = {{.bytes = 100}}}, g);
  const auto w = add_vertex({.outputs = {{.bytes = 400}}, .persistent = true}, g);
  const auto y = add_vertex({.outputs = {{.bytes = 200}}}, g);
  const auto z = add_vertex({.outputs = {{.bytes = 50, .live_out = true}}}, g);
  add_edge(x, y, g);  add_edge(w, y, g);  add_edge(y, z, {.port = 0}, g);
  const auto r = memopt::liveness(g, memopt::program_order(g));
  std::cout << "peak " << r.peak_bytes << " B at step " << r.peak_step << '\n';  // peak 300 B at step 2
}
