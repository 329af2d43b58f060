// Reads the memopt-graph/1 file named on the command line with memopt::io and
// prints its peak in program order.
#include <memopt/io.hpp>
#include <memopt/memopt.hpp>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer_io GRAPH.json\n";
    return 2;
  }
  try {
    const auto g = memopt::io::read_graph(argv[1]);
    std::cout << "consumer_io: " << g[boost::graph_bundle].name << " peak "
              << memopt::liveness(g, memopt::program_order(g)).peak_bytes << '\n';
  } catch (const memopt::error& e) {
    std::cerr << "consumer_io: " << argv[1] << ": " << e.what() << '\n';
    return 1;
  }
}
