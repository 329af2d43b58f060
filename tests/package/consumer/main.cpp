#include <memopt/memopt.hpp>

#include <boost/graph/adjacency_list.hpp>
#include <iostream>

int main() {
  using graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                      memopt::tensor_node, memopt::tensor_edge>;
  graph g;
  std::size_t previous = 0;
  for (const std::uint64_t bytes : {10, 20, 5, 30}) {
    const auto v = add_vertex({.outputs = {{.bytes = bytes}}}, g);
    if (v > 0) add_edge(previous, v, g);
    previous = v;
  }
  std::cout << "consumer: peak " << memopt::liveness(g, memopt::program_order(g)).peak_bytes << '\n';
}
