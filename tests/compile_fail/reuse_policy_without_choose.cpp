// A reuse policy orders free storages (before) and picks one (choose); one
// without choose is no reuse_policy.
#include <memopt/share/linear.hpp>

#include <boost/graph/adjacency_list.hpp>

struct newest_first {
  bool before(const memopt::free_storage& a, const memopt::free_storage& b) const { return a.release > b.release; }
};

int main() {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, memopt::tensor_node, memopt::tensor_edge>
      g(2);
  (void)memopt::linear_share(g, memopt::program_order(g), newest_first{});
}
