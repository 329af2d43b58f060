// memopt/compare.hpp: cells, their bounds, the summaries and the printers; a
// user's own priority and scheduler beside every built-in scheduler.
#include "../support/graph_spec.hpp"
#include "../support/named_graphs.hpp"

#include <memopt/compare.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace mt = memopt::testing;

namespace {

// A user's priority: the ready op that frees the most bytes.
struct frees_most {
  static constexpr std::string_view name() { return "frees-most"; }
  static constexpr memopt::key_dependency depends_on = memopt::key_dependency::bytes_freed;
  std::uint64_t operator()(const memopt::list_state& s, std::size_t v) const { return s.bytes_freed(v); }
};

std::size_t lines(const std::string& text) { return static_cast<std::size_t>(std::ranges::count(text, '\n')); }

}  // namespace

TEST_CASE("compare summarise: geometric mean of ratios, wins and seconds per algorithm") {
  const std::vector<memopt::compare::cell> cells = {
      {"a", "schedule", "x", 20, 10, 1.0}, {"a", "schedule", "y", 10, 10, 0.5},
      {"b", "schedule", "x", 30, 30, 2.0}, {"b", "schedule", "y", 60, 30, 0.5},
      {"a", "arena", "x", 7, 0, 0.0}};
  const auto s = memopt::compare::summarise(cells);
  REQUIRE(s.size() == 3);
  CHECK(s[0].algorithm == "x");
  CHECK(s[0].family == "schedule");
  CHECK(s[0].geomean_ratio() == doctest::Approx(std::sqrt(2.0)));
  CHECK(s[0].wins == 1);
  CHECK(s[0].seconds == 3.0);
  CHECK(s[1].geomean_ratio() == doctest::Approx(std::sqrt(2.0)));
  CHECK(s[1].wins == 1);
  CHECK(s[2].family == "arena");
  CHECK(s[2].geomean_ratio() == 1.0);  // no bound: ratio 1
  CHECK(s[2].wins == 1);
  std::ostringstream csv;
  memopt::compare::print_csv(csv, cells);
  CHECK(lines(csv.str()) == 1 + cells.size());
  CHECK(csv.str().find("a,schedule,x,20,10,2.000000,1.000000\n") != std::string::npos);
  std::ostringstream md;
  memopt::compare::print_markdown(md, cells);  // every family, uncaptioned
  CHECK(md.str().find("### schedule\n\n| graph | x | y |\n") != std::string::npos);
  CHECK(md.str().find("| a | 20 (2.000) | 10 (1.000) |\n") != std::string::npos);
  CHECK(md.str().find("### arena\n") != std::string::npos);
  CHECK(md.str().find("| wins | 1 | 1 |\n") != std::string::npos);
}

TEST_CASE("compare print_markdown: an algorithm missing on a graph prints '-'") {
  const std::vector<memopt::compare::cell> cells = {
      {"a", "share", "x", 2, 1}, {"a", "share", "y", 1, 1}, {"b", "share", "x", 4, 2}};
  std::ostringstream md;
  memopt::compare::print_markdown(md, cells, {{"share", "bytes"}, {"arena", "absent"}});
  CHECK(md.str().find("### share: bytes\n") != std::string::npos);
  CHECK(md.str().find("| b | 4 (2.000) | - |\n") != std::string::npos);
  CHECK(md.str().find("### arena") == std::string::npos);
}

TEST_CASE("compare schedule_cells: every built-in, then a user's priority and scheduler, one bound") {
  const auto built = mt::build<mt::vec_graph>(mt::diamond());  // program order 21, best 12
  const auto& g = built.g;
  const auto mine = [&](const mt::vec_graph& h) {
    auto r = memopt::list_schedule(h, memopt::least_live_after_priority{});
    r.method = "mine";
    return r;
  };
  const auto cells = memopt::compare::schedule_cells(g, "diamond", {.limits = {.work_limit = 10'000}},
                                                     frees_most{}, mine);
  const auto builtins = memopt::schedule::entries().size();
  REQUIRE(cells.size() == builtins + 2);
  for (std::size_t k = 0; k < builtins; ++k) CHECK(cells[k].algorithm == memopt::schedule::entries()[k].name);
  CHECK(cells[builtins].algorithm == "frees-most");
  CHECK(cells[builtins + 1].algorithm == "mine");
  const auto ours = memopt::list_schedule(g, frees_most{});
  CHECK(cells[builtins].value == memopt::liveness(g, std::span<const std::size_t>(ours.order)).peak_bytes);
  for (const auto& c : cells) {
    CHECK(c.graph == "diamond");
    CHECK(c.family == "schedule");
    CHECK(c.lower_bound == 12);  // the exact search certifies the optimum
    CHECK(c.value >= c.lower_bound);
  }
  CHECK(cells.front().value == 21);  // program
  const auto some = memopt::compare::schedule_cells(g, "diamond", {.algorithms = {"program", "dfs"}});
  REQUIRE(some.size() == 2);
  CHECK(some[1].algorithm == "dfs");
  CHECK(some[0].lower_bound == memopt::lower_bound(g));  // no search ran: the static bound
}

TEST_CASE("compare schedule_cells: a listS graph passes its index map last, after its own schedulers") {
  const auto reference = mt::build<mt::vec_graph>(mt::diamond());
  const auto built = mt::build<mt::list_graph>(mt::diamond());  // descriptors are pointers, not 0..n-1
  const auto index = mt::index_map(built.g);
  const memopt::compare::comparison_options options{.limits = {.work_limit = 10'000}};
  const auto expected = memopt::compare::schedule_cells(reference.g, "diamond", options, frees_most{});
  const auto cells = memopt::compare::schedule_cells(built.g, "diamond", options, frees_most{}, index);
  REQUIRE(cells.size() == expected.size());
  for (std::size_t k = 0; k < cells.size(); ++k) {
    CHECK(cells[k].algorithm == expected[k].algorithm);
    CHECK(cells[k].value == expected[k].value);
    CHECK(cells[k].lower_bound == 12);
  }
  CHECK(cells.back().algorithm == "frees-most");
  const auto identity = memopt::compare::schedule_cells(reference.g, "diamond", options, memopt::identity_index{});
  CHECK(identity.size() == expected.size() - 1);  // no own scheduler: the built-ins
  const auto dfs = memopt::compare::schedule_cells(built.g, "diamond", {.algorithms = {"dfs"}}, index);
  REQUIRE(dfs.size() == 1);
  CHECK(dfs[0].value == std::ranges::find(expected, "dfs", &memopt::compare::cell::algorithm)->value);
}

TEST_CASE("compare arena_cells and share_cells: every heap algorithm and sharing pass for an order") {
  const auto built = mt::build<mt::vec_graph>(mt::fanout6());
  const auto& g = built.g;
  const auto best = memopt::best_schedule(g);
  const std::span<const std::size_t> order(best.order);
  const auto arena = memopt::compare::arena_cells(g, "fanout6", order, {.limits = {.work_limit = 10'000}});
  REQUIRE(arena.size() == memopt::heap::entries().size());
  const auto share = memopt::compare::share_cells(g, "fanout6", order);
  REQUIRE(share.size() == memopt::share::entries().size());
  for (const auto& c : arena) {
    CHECK(c.family == "arena");
    CHECK(c.lower_bound == best.peak_bytes);  // max-live of the order's lifetimes
    CHECK(c.value >= c.lower_bound);
  }
  for (const auto& c : share) {
    CHECK(c.family == "share");
    CHECK(c.lower_bound == best.peak_bytes);
  }
}
