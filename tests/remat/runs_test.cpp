// plan_of_runs (remat/runs.hpp): a schedule of vertex runs as a plan, its
// errors, the states of storages written in place, and the pruning of copies
// a plan can do without.
#include <memopt/io/graph_file.hpp>
#include <memopt/remat.hpp>
#include <memopt/rewrite.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace rw = memopt::rewrite;
namespace remat = memopt::remat;

namespace {

// x -> a -> b -> c, and d reads x, a and c: a (100 bytes) is read first by
// b and last by d. The program's peak is at c: x, a, b, c.
memopt::io::file_graph chain_with_skip() {
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "skip", "nodes": [
    {"name": "x", "op": "input", "outputs": [10]},
    {"name": "a", "op": "f", "outputs": [100], "inputs": ["x:0"], "flops": 7},
    {"name": "b", "op": "f", "outputs": [100], "inputs": ["a:0"], "flops": 1},
    {"name": "c", "op": "f", "outputs": [100], "inputs": ["b:0"], "flops": 1},
    {"name": "d", "op": "f", "outputs": [10], "inputs": ["x:0", "a:0", "c:0"], "flops": 1}],
    "outputs": ["d:0"]})");
}

// x -> a; b reads a; w = add_(a) in place over a's storage; y reads w.
memopt::io::file_graph in_place_write() {
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "inplace", "nodes": [
    {"name": "x", "op": "input", "outputs": [10]},
    {"name": "a", "op": "f", "outputs": [100], "inputs": ["x:0"], "flops": 5},
    {"name": "b", "op": "f", "outputs": [10], "inputs": ["a:0"], "flops": 1},
    {"name": "w", "op": "add_", "outputs": [100], "inputs": ["a:0"], "flops": 1, "attrs": {"alias": "a:0", "inplace": true}},
    {"name": "y", "op": "f", "outputs": [10], "inputs": ["w:0", "b:0"], "flops": 1}],
    "outputs": ["y:0"]})");
}

std::string error_of(const rw::graph_facts& f, const std::vector<std::size_t>& runs) {
  try {
    static_cast<void>(remat::plan_of_runs(f, runs));
  } catch (const rw::bad_plan_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("plan_of_runs: the program order is the empty plan at the program's peak") {
  const auto f = rw::read_facts(chain_with_skip());
  const auto r = remat::plan_of_runs(f, std::vector<std::size_t>{0, 1, 2, 3, 4});
  CHECK(r.plan.nodes.empty());
  CHECK(r.plan.redirects.empty());
  CHECK(r.planned_peak == 310);
  CHECK(r.planned_bytes.size() == 5);
  CHECK(r.extra_flops == 0);
}

TEST_CASE("plan_of_runs: a copy of a frees its original early, and d reads the copy") {
  const auto f = rw::read_facts(chain_with_skip());
  const auto r = remat::plan_of_runs(f, std::vector<std::size_t>{0, 1, 2, 3, 1, 4});
  REQUIRE(rw::check_plan(f, r.plan).empty());
  REQUIRE(r.plan.nodes.size() == 1);
  CHECK(r.plan.nodes[0].name == "Recomputed/a");
  CHECK(r.plan.nodes[0].copy_of == std::optional<std::size_t>(1));
  REQUIRE(r.plan.redirects.size() == 1);
  CHECK(r.plan.redirects[0].vertex == 4);
  CHECK(r.plan.redirects[0].operand == 1);
  CHECK(r.extra_flops == 7);
  CHECK(r.planned_peak == 220);  // at d: x, c, a', d (at c: x, b, c)
  CHECK(remat::runs_of(r) == std::vector<std::size_t>{0, 1, 2, 3, 1, 4});
}

TEST_CASE("plan_of_runs: bad sequences are named") {
  const auto f = rw::read_facts(chain_with_skip());
  CHECK(error_of(f, {0, 2, 1, 3, 4}).find("run 1 of 'b' reads 'a', not run yet") != std::string::npos);
  CHECK(error_of(f, {0, 1, 2, 3, 9}).find("run 4: vertex 9 does not exist") != std::string::npos);
  CHECK(error_of(f, {0, 1, 2, 3}).find("'d' never runs") != std::string::npos);
}

TEST_CASE("plan_of_runs: no run reads a storage in another state than the graph's vertex does") {
  const auto f = rw::read_facts(in_place_write());
  // The program: b reads a before w overwrites it.
  CHECK(remat::plan_of_runs(f, std::vector<std::size_t>{0, 1, 2, 3, 4}).planned_peak == 120);
  // A copy of b after w would read the overwritten a.
  CHECK(error_of(f, {0, 1, 2, 3, 2, 4}).find("run 4 of 'b' reads 'a' in another state than 'b' does") !=
        std::string::npos);
  // A copy of b before w reads a storage w has still to write: in the
  // rewritten graph every copy comes after the write.
  CHECK(error_of(f, {0, 1, 2, 2, 3, 4}).find("run 3 of 'b' reads 'a' before 'w' writes it in place") !=
        std::string::npos);
  // A copy of a after w is a new tensor holding a's value: b's copy may read it.
  const auto r = remat::plan_of_runs(f, std::vector<std::size_t>{0, 1, 2, 3, 1, 2, 4});
  CHECK(rw::check_plan(f, r.plan).empty());
  CHECK(r.extra_flops == 6);
}

TEST_CASE("rematerialize_best: no copy the plan can do without") {
  // At a budget of 220 the copy of a is needed; at 310 nothing is.
  const auto f = rw::read_facts(chain_with_skip());
  const std::vector<std::size_t> program{0, 1, 2, 3, 4};
  const auto tight = remat::rematerialize_best(f, {program}, {.budget = 220});
  CHECK(tight.planned_peak == 220);
  CHECK(tight.extra_flops == 7);
  const auto loose = remat::rematerialize_best(f, {program}, {.budget = 310});
  CHECK(loose.plan.nodes.empty());
}
