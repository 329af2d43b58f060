// An undirected graph has no order of operations: it is no dag.
#include <memopt/liveness.hpp>

#include <boost/graph/adjacency_list.hpp>

int main() {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, memopt::tensor_node, memopt::tensor_edge> g(2);
  (void)memopt::liveness(g, memopt::program_order(g));
}
