// memopt-plan, run as a user runs it: JSON on stdout, exit 1 and one line on
// stderr for bad input or usage, never a crash.
#include "run_plan.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

const std::string data_dir = MEMOPT_DATA_DIR;

using memopt::testing::check_refused;
using memopt::testing::plan;
using memopt::testing::write_temp;

std::string graph_with(const std::string& nodes) {
  return R"({"format": "memopt-graph/1", "name": "t", "nodes": [)" + nodes + "]}";
}

}  // namespace

TEST_CASE("peak: the JSON contract on a hand-checked graph") {
  const auto r = plan("peak " + data_dir + "/small/persistent.json");
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["graph"] == "persistent");
  CHECK(j["nodes"] == 5);
  CHECK(j["buffers"] == 5);
  CHECK(j["peak_bytes"] == 40);
  CHECK(j["persistent_bytes"] == 150);
  CHECK(j["peak_step"] == 4);
  CHECK(j["peak_node"] == "z");
  CHECK(j["live_at_peak"] == nlohmann::json::array({"y:0", "z:0"}));
}

TEST_CASE("peak: matches peaks.tsv on every shipped graph") {
  std::ifstream table(data_dir + "/peaks.tsv");
  std::string file, nodes, peak, persistent;
  std::getline(table, file);
  while (table >> file >> nodes >> peak >> persistent) {
    INFO(file);
    const auto r = plan("peak " + data_dir + "/" + file);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["peak_bytes"].get<std::uint64_t>() == std::stoull(peak));
    CHECK(j["persistent_bytes"].get<std::uint64_t>() == std::stoull(persistent));
  }
}

TEST_CASE("peak --order: evaluates another order and refuses a bad one naming the node") {
  const auto good = write_temp("good.txt", "s\nl1\nl2\nr1\nr2\nj\n");
  const auto r = plan("peak " + data_dir + "/small/diamond.json --order " + good.string() + " --timeline");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["peak_bytes"] == 12);
  CHECK(j["timeline"] == nlohmann::json::array({1, 11, 12, 12, 12, 3}));

  const auto diamond = data_dir + "/small/diamond.json";
  check_refused(plan("peak " + diamond + " --order " + write_temp("a.txt", "s\nl2\nl1\nr1\nr2\nj\n").string()),
                "the order runs 'l2' before its predecessor 'l1'");
  check_refused(plan("peak " + diamond + " --order " + write_temp("b.txt", "s\nl1\nl2\nr1\nr2\n").string()),
                "the order never runs 'j'");
  check_refused(plan("peak " + diamond + " --order " + write_temp("c.txt", "s\nl1\nl1\nl2\nr1\nr2\nj\n").string()),
                "the order runs 'l1' twice");
  check_refused(plan("peak " + diamond + " --order " + write_temp("d.txt", "s\nl1\nnope\n").string()),
                "node 'nope'");
  check_refused(plan("peak " + diamond + " --order /nonexistent/order.txt"), "cannot open order file");
}

TEST_CASE("report: a readable table for a person") {
  const auto r = plan("report " + data_dir + "/resnet18_train_b32.json");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("program order") != std::string::npos);
  CHECK(r.out.find("1016784292") != std::string::npos);
  CHECK(r.out.find("332 nodes") != std::string::npos);
}

TEST_CASE("bad input: exit 1 and one line naming the fault, for every class") {
  check_refused(plan("peak " + write_temp("notjson.json", "this is not json").string()), "not JSON");
  check_refused(plan("peak " + write_temp("empty.json", "").string()), "empty file");
  check_refused(plan("peak " + write_temp("gz.json.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\x56", 12)).string()),
                "truncated gzip data");
  check_refused(plan("peak " + write_temp("format.json", R"({"format": "onnx", "nodes": []})").string()),
                "expected \"memopt-graph/1\"");
  check_refused(plan("peak " + write_temp("dup.json", graph_with(R"({"name": "a", "outputs": [1]}, {"name": "a", "outputs": [1]})")).string()),
                "node 'a': duplicate node name");
  check_refused(plan("peak " + write_temp("input.json", graph_with(R"({"name": "a", "outputs": [1], "inputs": ["zz:0"]})")).string()),
                "node 'a': input \"zz:0\" names node 'zz'");
  check_refused(plan("peak " + write_temp("port.json", graph_with(R"({"name": "a", "outputs": [1]}, {"name": "b", "outputs": [], "inputs": ["a:2"]})")).string()),
                "node 'b': input \"a:2\" reads port 2 of 'a'");
  check_refused(plan("peak " + write_temp("control.json", graph_with(R"({"name": "a", "outputs": [1], "control": ["zz"]})")).string()),
                "control predecessor 'zz' does not exist");
  check_refused(plan("peak " + write_temp("output.json", R"({"format": "memopt-graph/1", "nodes": [], "outputs": ["zz:0"]})").string()),
                "graph output \"zz:0\" names node 'zz'");
  check_refused(plan("peak " + write_temp("cycle.json", graph_with(R"({"name": "a", "outputs": [1], "inputs": ["b:0"]}, {"name": "b", "outputs": [1], "inputs": ["a:0"]})")).string()),
                "the graph has a cycle: 'a' -> 'b' -> 'a'");
  check_refused(plan("peak " + write_temp("self.json", graph_with(R"({"name": "a", "outputs": [1], "inputs": ["a:0"]})")).string()),
                "the graph has a cycle: 'a' -> 'a'");
  check_refused(plan("peak " + write_temp("neg.json", graph_with(R"({"name": "a", "outputs": [-1]})")).string()),
                "node 'a': size -1 is negative");
  check_refused(plan("peak " + write_temp("frac.json", graph_with(R"({"name": "a", "outputs": [0.5]})")).string()),
                "node 'a': size 0.5 is not a whole number");
  check_refused(plan("peak " + write_temp("nan.json", graph_with(R"({"name": "a", "outputs": ["big"]})")).string()),
                "node 'a': size \"big\" is not a number");
  check_refused(plan("peak " + write_temp("overflow.json", graph_with(R"({"name": "a", "outputs": [9223372036854775808]}, {"name": "b", "outputs": [9223372036854775808], "inputs": ["a:0"]})")).string()),
                "live bytes overflow 64 bits at 'b'");
  check_refused(plan("peak /nonexistent/graph.json"), "cannot open /nonexistent/graph.json");
}

TEST_CASE("usage: exit 1 with one line, and --help exits 0") {
  check_refused(plan(""), "memopt-plan");
  check_refused(plan("frobnicate x.json"), "memopt-plan");
  check_refused(plan("peak"), "GRAPH");
  check_refused(plan("peak " + data_dir + "/small/chain.json --no-such-flag"), "--no-such-flag");
  const auto help = plan("--help");
  CHECK(help.status == 0);
  CHECK(help.out.find("peak") != std::string::npos);
}
