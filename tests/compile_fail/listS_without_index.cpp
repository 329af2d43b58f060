// listS vertices are no dense index: the caller must pass an index map.
#include <memopt/liveness.hpp>

#include <boost/graph/adjacency_list.hpp>

int main() {
  using graph = boost::adjacency_list<boost::listS, boost::listS, boost::directedS,
                                      memopt::tensor_node, memopt::tensor_edge>;
  graph g;
  (void)memopt::liveness(g, memopt::program_order(g));
}
