// A graph whose vertices carry no tensor bundle is no tensor_graph.
#include <memopt/liveness.hpp>

#include <boost/graph/adjacency_list.hpp>

int main() {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS> g(3);
  (void)memopt::liveness(g, memopt::program_order(g));
}
