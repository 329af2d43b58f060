// A user's own scheduling heuristic compared beside memopt's, on the user's
// graphs: every built-in scheduler of the registry, then a list-scheduler
// priority of our own, each a column of the same table (comparison.hpp),
// with the bound, the geometric means and the wins.
//
// usage: memopt-compare-example GRAPH.json...
#include "comparison.hpp"

#include <memopt/io.hpp>
#include <memopt/schedule.hpp>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

// Our heuristic: the ready op that frees the most bytes, whatever it defines.
struct frees_most {
  static constexpr std::string_view name() { return "frees-most"; }
  static constexpr memopt::key_dependency depends_on = memopt::key_dependency::bytes_freed;  // else any state
  std::uint64_t operator()(const memopt::list_state& s, std::size_t v) const { return s.bytes_freed(v); }
};

int main(int argc, char** argv) {
  std::vector<comparison::cell> cells;
  try {
    for (int i = 1; i < argc; ++i) {
      const auto g = memopt::io::read_graph(argv[i]);
      const std::string name = g[boost::graph_bundle].name;
      const memopt::search_limits limits{.work_limit = 100'000};
      std::uint64_t bound = memopt::lower_bound(g);
      const auto first = cells.size();
      for (const auto& scheduler : memopt::schedule::entries()) {  // the built-ins
        const auto r = scheduler(g, limits);
        bound = std::max(bound, r.lower_bound_bytes);
        cells.push_back({name, "schedule", std::string(scheduler.name), r.peak_bytes});
      }
      const auto ours = memopt::list_schedule(g, frees_most{});  // ours, beside them
      cells.push_back({name, "schedule", ours.method, ours.peak_bytes});
      for (auto k = first; k < cells.size(); ++k) cells[k].lower_bound = bound;
    }
  } catch (const memopt::error& e) {
    std::cerr << "memopt-compare-example: " << e.what() << '\n';
    return 1;
  }
  comparison::print_markdown(std::cout, cells, {{"schedule", "transient peak bytes; bound: the lower bounds"}});
}
