// best_of takes the vertex index map last, as every memopt algorithm does:
// best_of(g, index, schedulers...) does not compile.
#include <memopt/schedule.hpp>

#include <boost/graph/adjacency_list.hpp>

int main() {
  using graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                      memopt::tensor_node, memopt::tensor_edge>;
  graph g;
  (void)memopt::best_of(g, memopt::identity_index{}, memopt::dfs_scheduler{});
}
