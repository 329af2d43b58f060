// A user's own list-scheduler priority beside every built-in scheduler, with
// the core alone (memopt::memopt). docs/compare.md shows the lines between the
// markers, and run.cmake checks that it shows them as they are here. Checks:
// a column per built-in and one for ours, one bound under every cell, and our
// cell is the peak of the order our priority gives.
// [compare.md]
#include <memopt/compare.hpp>

#include <iostream>

// Ours: the ready op that frees the most bytes first, whatever it defines.
struct frees_most {
  static constexpr std::string_view name() { return "frees-most"; }
  static constexpr memopt::key_dependency depends_on = memopt::key_dependency::bytes_freed;
  std::uint64_t operator()(const memopt::list_state& s, std::size_t v) const { return s.bytes_freed(v); }
};

// Every built-in scheduler on g, ours beside them, one bound for all, as a table.
template <memopt::tensor_graph G>
std::vector<memopt::compare::cell> compare_ours(const G& g, const std::string& name, std::ostream& out) {
  auto cells = memopt::compare::schedule_cells(g, name, {.limits = {.work_limit = 100'000}}, frees_most{});
  memopt::compare::print_markdown(out, cells);
  return cells;
}
// [compare.md]

#include <boost/graph/adjacency_list.hpp>

#include <algorithm>
#include <sstream>

int main() {
  using graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                      memopt::tensor_node, memopt::tensor_edge>;
  graph g;  // x(1) -> b1..b4(4) -> c1..c4(1) -> z(1): program order 17, best 8
  const auto x = add_vertex({.outputs = {{.bytes = 1}}}, g);
  std::vector<std::size_t> bs, cs;
  for (int k = 0; k < 4; ++k) bs.push_back(add_vertex({.outputs = {{.bytes = 4}}}, g));
  for (int k = 0; k < 4; ++k) cs.push_back(add_vertex({.outputs = {{.bytes = 1}}}, g));
  const auto z = add_vertex({.outputs = {{.bytes = 1}}}, g);  // vertices(g) is the program order
  for (int k = 0; k < 4; ++k) {
    add_edge(x, bs[k], g);
    add_edge(bs[k], cs[k], g);
    add_edge(cs[k], z, g);
  }
  std::ostringstream table;
  const auto cells = compare_ours(g, "fanout4", table);
  std::cerr << table.str();
  const auto fail = [](const char* what) {
    std::cerr << "consumer_compare: " << what << '\n';
    return 1;
  };
  const std::size_t builtins = memopt::schedule::entries().size();
  if (cells.size() != builtins + 1) return fail("not one cell per built-in plus ours");
  const std::string header = table.str().substr(table.str().find("| graph |"));
  const auto columns = std::ranges::count(header.substr(0, header.find('\n')), '|') - 2;
  if (static_cast<std::size_t>(columns) != builtins + 1) return fail("not one column per built-in plus ours");
  const auto& ours = cells.back();
  const auto order = memopt::list_schedule(g, frees_most{}).order;
  if (ours.algorithm != "frees-most") return fail("our column is not ours");
  if (ours.value != memopt::liveness(g, order).peak_bytes) return fail("our cell is not our order's peak");
  for (const auto& c : cells) {
    if (c.lower_bound != ours.lower_bound || c.value < c.lower_bound) return fail("the bound is not one bound");
  }
  std::cout << "consumer_compare: " << columns << " columns, frees-most " << ours.value << ", bound "
            << ours.lower_bound << '\n';
}
