// A user's own scheduling heuristic compared beside memopt's, on the user's
// graphs: every built-in scheduler of the registry, then a list-scheduler
// priority of our own, each a column of the same table (memopt/compare.hpp),
// with the bound, the geometric means and the wins.
//
// usage: memopt-compare-example GRAPH.json...
#include <memopt/compare.hpp>
#include <memopt/io.hpp>

#include <iostream>
#include <vector>

// Our heuristic: the ready op that frees the most bytes, whatever it defines.
struct frees_most {
  static constexpr std::string_view name() { return "frees-most"; }
  static constexpr memopt::key_dependency depends_on = memopt::key_dependency::bytes_freed;  // else any state
  std::uint64_t operator()(const memopt::list_state& s, std::size_t v) const { return s.bytes_freed(v); }
};

int main(int argc, char** argv) {
  std::vector<memopt::compare::cell> cells;
  try {
    for (int i = 1; i < argc; ++i) {
      const auto g = memopt::io::read_graph(argv[i]);
      const auto more = memopt::compare::schedule_cells(g, g[boost::graph_bundle].name,
                                                        {.limits = {.work_limit = 100'000}}, frees_most{});
      cells.insert(cells.end(), more.begin(), more.end());
    }
  } catch (const memopt::error& e) {
    std::cerr << "memopt-compare-example: " << e.what() << '\n';
    return 1;
  }
  memopt::compare::print_markdown(std::cout, cells, {{"schedule", "transient peak bytes; bound: the lower bounds"}});
}
