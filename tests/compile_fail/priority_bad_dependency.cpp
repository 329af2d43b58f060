// A priority states what its key reads as a memopt::key_dependency; any other
// depends_on (here a bare number) is no schedule_priority.
#include <memopt/schedule/list.hpp>

#include <boost/graph/adjacency_list.hpp>

#include <cstddef>

struct declares_a_number {
  static constexpr int depends_on = 1;
  std::size_t operator()(const memopt::list_state& s, std::size_t v) const { return s.users(v); }
};

int main() {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, memopt::tensor_node, memopt::tensor_edge>
      g(2);
  (void)memopt::list_schedule(g, declares_a_number{});
}
