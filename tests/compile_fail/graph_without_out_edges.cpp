// A user's graph type that lists its vertices but not their out-edges is no dag.
#include <memopt/graph/topology.hpp>

#include <cstddef>
#include <utility>
#include <vector>

namespace user {
struct vertex_list {
  std::size_t n = 0;
};
}  // namespace user

template <>
struct boost::graph_traits<user::vertex_list> {
  using vertex_descriptor = std::size_t;
  using edge_descriptor = std::pair<std::size_t, std::size_t>;
  using directed_category = boost::directed_tag;
  using traversal_category = boost::vertex_list_graph_tag;
  using vertex_iterator = std::vector<std::size_t>::const_iterator;
};

namespace user {
inline std::pair<std::vector<std::size_t>::const_iterator, std::vector<std::size_t>::const_iterator> vertices(
    const vertex_list&) {
  static const std::vector<std::size_t> none;
  return {none.begin(), none.end()};
}
inline std::size_t num_vertices(const vertex_list& g) { return g.n; }
inline std::size_t source(std::pair<std::size_t, std::size_t> e, const vertex_list&) { return e.first; }
inline std::size_t target(std::pair<std::size_t, std::size_t> e, const vertex_list&) { return e.second; }
}  // namespace user

int main() {
  const user::vertex_list g{};
  (void)memopt::program_order(g);
}
