// A list-scheduler priority must rank a vertex given the scheduler's state:
// p(list_state, vertex); one that takes only the vertex is no schedule_priority.
#include <memopt/schedule/list.hpp>

#include <boost/graph/adjacency_list.hpp>

#include <cstddef>

struct by_index_only {
  double operator()(std::size_t v) const { return -static_cast<double>(v); }
};

int main() {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, memopt::tensor_node, memopt::tensor_edge>
      g(2);
  (void)memopt::list_schedule(g, by_index_only{});
}
