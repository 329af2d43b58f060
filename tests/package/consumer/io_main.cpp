// Reads the memopt-graph/1 file named on the command line with memopt::io and
// runs one algorithm of each family on it: the peak of its program order, the
// peak of its best schedule, that schedule's arena (best fit) and the bytes of
// its storages shared for every order (dag_share).
#include <memopt/io.hpp>
#include <memopt/memopt.hpp>

#include <iostream>
#include <span>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer_io GRAPH.json\n";
    return 2;
  }
  try {
    const auto g = memopt::io::read_graph(argv[1]);
    const auto best = memopt::best_schedule(g);
    const std::span<const std::size_t> order(best.order);
    std::cout << "consumer_io: " << g[boost::graph_bundle].name << " peak "
              << memopt::liveness(g, memopt::program_order(g)).peak_bytes << " best " << best.peak_bytes
              << " arena " << memopt::plan_arena(g, order, memopt::best_fit{}).plan.arena_bytes << " shared "
              << memopt::dag_share(g).total_bytes << '\n';
  } catch (const memopt::error& e) {
    std::cerr << "consumer_io: " << argv[1] << ": " << e.what() << '\n';
    return 1;
  }
}
