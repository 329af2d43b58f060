// memopt-plan, run as a user runs it: JSON on stdout, exit 1 and one line on
// stderr for bad input or usage, never a crash.
#include "run_plan.hpp"

#include <memopt/heap.hpp>
#include <memopt/io/graph_file.hpp>
#include <memopt/schedule.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::string data_dir = MEMOPT_DATA_DIR;

using memopt::testing::check_refused;
using memopt::testing::plan;
using memopt::testing::temp_path;
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
  // y reads x (10) and makes 20; z reads y (20) and makes 20; weights are left out.
  CHECK(j["op_bound_bytes"] == 40);
  CHECK(j["op_bound_node"] == "z");
}

TEST_CASE("peak: matches peaks_alias.tsv on every shipped graph, storages counted once") {
  std::ifstream table(data_dir + "/peaks_alias.tsv");
  std::string file, nodes, aliased, apart, peak;
  std::getline(table, file);
  while (table >> file >> nodes >> aliased >> apart >> peak) {
    INFO(file);
    const auto r = plan("peak " + data_dir + "/" + file);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["peak_bytes"].get<std::uint64_t>() == std::stoull(peak));
    CHECK(j["aliased_outputs"].get<std::uint64_t>() == std::stoull(aliased));
    CHECK(j["storages"].get<std::uint64_t>() + std::stoull(aliased) == j["buffers"].get<std::uint64_t>());
  }
}

TEST_CASE("peak --no-alias: matches peaks.tsv on every shipped graph, every output apart") {
  std::ifstream table(data_dir + "/peaks.tsv");
  std::string file, nodes, peak, persistent;
  std::getline(table, file);
  while (table >> file >> nodes >> peak >> persistent) {
    INFO(file);
    const auto r = plan("peak " + data_dir + "/" + file + " --no-alias");
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

TEST_CASE("peak --order: an order against an in-place write is refused naming both ops, unless --no-alias") {
  const auto file = write_temp("hazard.json", graph_with(
      R"({"name": "x", "outputs": [100]},
         {"name": "r", "outputs": [1000], "inputs": ["x:0"]},
         {"name": "w", "outputs": [100], "inputs": ["x:0"], "attrs": {"inplace": true, "alias": "x:0"}},
         {"name": "s", "outputs": [1], "inputs": ["r:0", "w:0"]})"));
  const auto early = write_temp("early.txt", "x\nw\nr\ns\n");
  check_refused(plan("peak " + file.string() + " --order " + early.string()),
                "the order runs 'w' before 'r', but 'w' overwrites in place a storage that 'r' uses first");
  const auto apart = plan("peak " + file.string() + " --order " + early.string() + " --no-alias");
  REQUIRE(apart.status == 0);
  CHECK(nlohmann::json::parse(apart.out)["peak_bytes"] == 1200);
  const auto best = nlohmann::json::parse(plan("schedule " + file.string() + " --algo exact").out);
  CHECK(best["order"] == nlohmann::json::array({"x", "r", "w", "s"}));
  CHECK(best["peak_bytes"] == 1101);
  CHECK(best["proved_optimal"] == true);
}

TEST_CASE("bad input: exit 1 and one line naming the fault, for every class") {
  check_refused(plan("peak " + write_temp("notjson.json", "this is not json").string()), "not JSON");
  check_refused(plan("peak " + write_temp("empty.json", "").string()), "empty file");
  // Its last four bytes, read as a trailer, would state 2 GiB of text: a
  // truncated file has no trailer, and the memory check must not believe one.
  check_refused(plan("peak " + write_temp("gz.json.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\x56"
                                                                    "\xff\xff\xff\x7f",
                                                                    16))
                                   .string()),
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

TEST_CASE("schedule: the JSON contract, and the optimum of the greedy trap") {
  const auto r = plan("schedule " + data_dir + "/small/greedy_trap.json --algo exact --time-limit 5");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["graph"] == "greedy_trap");
  CHECK(j["algo"] == "exact");
  CHECK(j["peak_bytes"] == 14);
  CHECK(j["lower_bound_bytes"] == 14);
  CHECK(j["proved_optimal"] == true);
  CHECK(j["seconds"].is_number());
  CHECK(j["order"] == nlohmann::json::array({"r", "u", "u2", "u3", "v", "j"}));
  for (const char* algo : {"program", "list", "dfs", "post-order", "xla", "lpmf", "bfs", "dfs-size", "best"}) {
    INFO(algo);
    const auto other = plan("schedule " + data_dir + "/small/greedy_trap.json --algo " + algo);
    REQUIRE(other.status == 0);
    const auto k = nlohmann::json::parse(other.out);
    CHECK(k["order"].size() == 6);
    CHECK(k["peak_bytes"] >= 14);
    CHECK(k["lower_bound_bytes"] <= 14);
    CHECK(k["proved_optimal"] == (k["peak_bytes"] == k["lower_bound_bytes"]));
  }
  check_refused(plan("schedule " + data_dir + "/small/greedy_trap.json --algo magic"), "--algo");
  check_refused(plan("schedule " + data_dir + "/small/greedy_trap.json --algo exact --time-limit -1"), "--time-limit");
}

TEST_CASE("schedule --algo exact: RandWire seeds no code was tuned on, split into their stages and proved") {
  // Each edge weight's sigmoid and index float to their reader, so the stage
  // boundaries are cut vertices; the stem then decides the peak. Work limits
  // keep it the same on every machine.
  for (const auto& run : {std::pair{"s3", "1000000"}, std::pair{"s4", "1000000"}, std::pair{"s2", "10000000"}}) {
    const std::string seed = run.first;  // a copy: clang 14 does not capture structured bindings in INFO
    INFO(seed);
    const auto r = plan("schedule " + data_dir + "/gaps/randwire_ws_" + seed +
                        "_infer_b32.json.gz --algo exact --work-limit " + run.second);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["peak_bytes"] == 125239296);
    CHECK(j["proved_optimal"] == true);
  }
}

TEST_CASE("schedule and arena say when the clock ended their search, and a work limit alone repeats") {
  const std::string graph = data_dir + "/gaps/randwire_ws_c156_s7_infer_b32.json.gz";  // not proved within minutes
  const auto timed = plan("schedule " + graph + " --algo exact --time-limit 0.2");
  REQUIRE(timed.status == 0);
  CHECK(nlohmann::json::parse(timed.out)["stopped_by_clock"] == true);
  const auto worked = plan("schedule " + graph + " --algo exact --work-limit 20000");
  const auto again = plan("schedule " + graph + " --algo exact --work-limit 20000");
  REQUIRE(worked.status == 0);
  const auto j = nlohmann::json::parse(worked.out);
  CHECK(j["stopped_by_clock"] == false);
  CHECK(j["proved_optimal"] == false);
  CHECK(nlohmann::json::parse(again.out)["order"] == j["order"]);
  // Proved at once: the clock never came into it.
  CHECK(nlohmann::json::parse(plan("schedule " + data_dir + "/small/greedy_trap.json --algo best").out)["stopped_by_clock"] == false);
  const std::string csv = data_dir + "/minimalloc/challenging/D.1048576.csv";  // its minimum is open
  const auto arena = plan("arena " + csv + " --algo exact --time-limit 0.2");
  REQUIRE(arena.status == 0);
  CHECK(nlohmann::json::parse(arena.out)["stopped_by_clock"] == true);
  const auto arena_worked = plan("arena " + csv + " --algo exact --work-limit 5000");
  REQUIRE(arena_worked.status == 0);
  CHECK(nlohmann::json::parse(arena_worked.out)["stopped_by_clock"] == false);
}

TEST_CASE("schedule and arena: the library's names, and only those") {
  const auto r = plan("schedule " + data_dir + "/small/greedy_trap.json --algo least-live-after");
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["method"] == "least-live-after");
  check_refused(plan("arena " + data_dir + "/minimalloc/examples/input.12.csv --algo worst-fit"),
                "(known: first-fit, best-fit, xla-size, xla-area, greedy-size, greedy-breadth, best, exact)");
}

TEST_CASE("schedule: a file whose own order is not topological") {
  const auto path = write_temp("late.json", graph_with(R"({"name": "b", "outputs": [1], "inputs": ["a:0"]},
                                                          {"name": "a", "outputs": [1]})"));
  check_refused(plan("schedule " + path.string() + " --algo program"), "the order runs 'b' before its predecessor 'a'");
  const auto r = plan("schedule " + path.string() + " --algo list");
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["order"] == nlohmann::json::array({"a", "b"}));
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

TEST_CASE("usage: numbers out of range are refused by name, never wrapped") {
  // CLI11 would read "-5" into an unsigned option as 2^64 - 5.
  const std::string graph = data_dir + "/small/chain.json";
  check_refused(plan("rewrite " + graph + " --budget -5"), "--budget: '-5' is not a whole number from 0 up");
  check_refused(plan("rewrite " + graph + " --budget 1e9"), "--budget: '1e9' is not a whole number");
  check_refused(plan("rewrite " + graph + " --mode all --budget 5 --rounds 0"), "--rounds: '0' is not a whole number from 1 to 1000");
  check_refused(plan("rewrite " + graph + " --budget 5 --local-search -1"), "--local-search: '-1' is not a whole number from 0 to 100000");
  check_refused(plan("arena " + graph + " --capacity -1"), "--capacity: '-1'");
  check_refused(plan("arena " + graph + " --alignment 0"), "--alignment: '0' is not a whole number from 1 up");
  check_refused(plan("arena " + graph + " --time-limit nan"), "--time-limit: 'nan' is not a number above 0");
  check_refused(plan("schedule " + graph + " --algo exact --time-limit -1"), "--time-limit: '-1' is not a number above 0");
  check_refused(plan("schedule " + graph + " --algo exact --work-limit -1"), "--work-limit: '-1'");
  check_refused(plan("compare " + graph + " --time-limit inf"), "--time-limit: 'inf'");
  check_refused(plan("generate cnn-train --vertices 100000000000"), "--vertices: '100000000000' is not a whole number from 1 to 100000000");
  check_refused(plan("generate cnn-train --vertices 10 --seed -1"), "--seed: '-1'");
  // A budget of 0 is a request like any other: the lowest peak reached, out of reach.
  const auto zero = plan("rewrite " + graph + " --budget 0");
  REQUIRE(zero.status == 0);
  const auto j = nlohmann::json::parse(zero.out);
  CHECK(j["budget"] == 0);
  CHECK(j["fits"] == false);
}

TEST_CASE("bad input: a graph file too large for the memory available is refused before it is read") {
  // A sparse file of 1 TiB: no machine this runs on has 16 TiB to read it.
  const auto path = temp_path("huge.json");
  std::ofstream(path).put(' ');
  std::filesystem::resize_file(path, std::uint64_t{1} << 40);
  for (const std::string command : {"peak", "schedule --algo dfs", "rewrite --curve"}) {
    const auto space = command.find(' ');
    const std::string sub = command.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : command.substr(space);
    check_refused(plan(sub + " " + path.string() + rest), "MiB of graph text takes about");
  }
  std::filesystem::remove(path);
}

TEST_CASE("report --svg: a directory that cannot be made is named") {
  const auto r = plan("report " + data_dir + "/small/chain.json --svg /proc/memopt-no-such-dir");
  INFO("stderr: " << r.err);
  CHECK(r.status == 1);
  CHECK(r.err == "memopt-plan: cannot create the directory /proc/memopt-no-such-dir: No such file or directory\n");
}

namespace {

/// The share JSON contract: every buffer of the graph that is not persistent
/// in exactly one storage, total_bytes the sum of the storages.
void check_share_contract(const nlohmann::json& j, const std::string& graph_path) {
  const auto graph = nlohmann::json::parse(std::ifstream(graph_path));
  std::set<std::string> expected, listed;
  for (const auto& node : graph["nodes"]) {
    if (node.value("persistent", false)) continue;
    for (std::size_t p = 0; p < node["outputs"].size(); ++p) {
      expected.insert(node["name"].get<std::string>() + ":" + std::to_string(p));
    }
  }
  std::uint64_t total = 0;
  for (const auto& storage : j["storages"]) {
    total += storage["bytes"].get<std::uint64_t>();
    CHECK(!storage["buffers"].empty());
    for (const auto& b : storage["buffers"]) CHECK(listed.insert(b.get<std::string>()).second);
  }
  CHECK(listed == expected);
  CHECK(j["total_bytes"].get<std::uint64_t>() == total);
  CHECK(total <= j["unshared_bytes"].get<std::uint64_t>());
}

}  // namespace

TEST_CASE("share: the JSON contract on the diamond, linear and DAG") {
  const auto diamond = data_dir + "/small/diamond.json";
  const auto order = write_temp("share_order.txt", "s\nl1\nl2\nr1\nr2\nj\n");
  const auto r = plan("share " + diamond + " --algo linear --order " + order.string());
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["algo"] == "linear");
  CHECK(j["policy"] == "lifo");
  CHECK(j["storages"].size() == 5);
  CHECK(j["storages"][1] == nlohmann::json{{"bytes", 10}, {"buffers", {"l1:0", "r1:0"}}});
  CHECK(j["total_bytes"] == 14);
  CHECK(j["unshared_bytes"] == 24);
  CHECK(j["peak_bytes"] == 12);
  check_share_contract(j, diamond);

  const auto d = plan("share " + diamond + " --algo dag");
  REQUIRE(d.status == 0);
  const auto k = nlohmann::json::parse(d.out);
  CHECK(k["storages"].size() == 6);  // the two branches never share
  CHECK(k["total_bytes"] == 24);
  CHECK(k["exact_precedence"] == true);
  check_share_contract(k, diamond);
  CHECK(!j.contains("exact_precedence"));  // linear: one order, no paths asked
}

TEST_CASE("share: exact precedence against the walk's answers, and says which it used") {
  // NASNet-like cells join parallel branches, where the walk misses paths.
  const auto nasnet = data_dir + "/nasnet_like_infer_b32.json";
  const auto exact = plan("share " + nasnet + " --algo dag");
  const auto walk = plan("share " + nasnet + " --algo dag --exact-precedence-vertices 0 --exact-block-vertices 1");
  const auto blocks = plan("share " + nasnet + " --algo dag --exact-precedence-vertices 0 --exact-block-vertices 512");
  REQUIRE(exact.status == 0);
  REQUIRE(walk.status == 0);
  REQUIRE(blocks.status == 0);
  const auto e = nlohmann::json::parse(exact.out);
  const auto w = nlohmann::json::parse(walk.out);
  const auto b = nlohmann::json::parse(blocks.out);
  CHECK(e["exact_precedence"] == true);
  CHECK(e["total_bytes"] == 761197568);
  CHECK(w["exact_precedence"] == false);
  CHECK(w["total_bytes"] == 1002443776);
  CHECK(b["exact_precedence"] == false);  // 2,012 vertices in blocks of 512: between the two
  CHECK(b["total_bytes"] == 858338304);
  check_share_contract(e, nasnet);
  check_share_contract(w, nasnet);
  check_share_contract(b, nasnet);
}

TEST_CASE("share: real graphs, both passes, never below the peak") {
  for (const char* file : {"resnet18_train_b32.json", "inception_v3_infer_b32.json", "gpt_infer_b32.json"}) {
    for (const char* algo : {"linear", "dag"}) {
      INFO(file << " " << algo);
      const auto r = plan("share " + data_dir + "/" + file + " --algo " + algo);
      REQUIRE(r.status == 0);
      const auto j = nlohmann::json::parse(r.out);
      check_share_contract(j, data_dir + "/" + file);
      CHECK(j["total_bytes"].get<std::uint64_t>() >= j["peak_bytes"].get<std::uint64_t>());
    }
  }
  const auto report = plan("report " + data_dir + "/resnet18_infer_b1.json");
  REQUIRE(report.status == 0);
  CHECK(report.out.find("DAG (every order), best fit") != std::string::npos);
  CHECK(report.out.find("7831456") != std::string::npos);  // linear, LIFO
}

TEST_CASE("share: bad usage and input, one line each") {
  const auto diamond = data_dir + "/small/diamond.json";
  check_refused(plan("share " + diamond + " --algo greedy"), "--algo");
  check_refused(plan("share " + diamond), "--algo");
  check_refused(plan("share " + diamond + " --algo dag --order " +
                     write_temp("share_o.txt", "s\n").string()),
                "--order applies to --algo linear only");
  check_refused(plan("share " + diamond + " --algo linear --exact-precedence-vertices 8"),
                "--exact-precedence-vertices and --exact-block-vertices apply to --algo dag only");
  check_refused(plan("share " + diamond + " --algo dag --exact-block-vertices 0"), "--exact-block-vertices");
  check_refused(plan("share " + diamond + " --algo dag --exact-precedence-vertices -3"),
                "--exact-precedence-vertices");
  check_refused(plan("share " + diamond + " --algo linear --order " +
                     write_temp("share_bad.txt", "s\nl2\nl1\nr1\nr2\nj\n").string()),
                "the order runs 'l2' before its predecessor 'l1'");
}

TEST_CASE("caffe2: rewrites a NetDef, refuses as the seed does, names the blob read too early") {
  const auto nets = data_dir + "/../caffe2_like/data";
  const auto r = plan("caffe2 " + nets + "/chain.json --pass inference");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["op"][2]["input"] == nlohmann::json{"__m1_shared", "W2", "B2"});
  CHECK(j["op"][2]["output"] == nlohmann::json{"__m0_shared"});
  CHECK(j["external_output"] == nlohmann::json{"out"});

  const auto d = plan("caffe2 " + nets + "/branches.json --pass dag --namescope ns/");
  REQUIRE(d.status == 0);
  CHECK(nlohmann::json::parse(d.out)["op"][2]["output"] == nlohmann::json{"ns/__m0_shared"});

  const auto refused = plan("caffe2 " + nets + "/branches.json --pass inference");
  CHECK(refused.status == 0);
  CHECK(nlohmann::json::parse(refused.out) == nlohmann::json::parse(std::ifstream(nets + "/branches.json")));
  CHECK(refused.err.find("left unchanged: cannot optimise memory for nets of type 'dag'") != std::string::npos);

  const auto early = write_temp("early.json", R"({"op": [{"type": "Relu", "input": ["y"], "output": ["z"]},
      {"type": "Relu", "input": ["z"], "output": ["y"]}]})");
  check_refused(plan("caffe2 " + early.string() + " --pass dag"), "reads blob 'y' before any op produced it");
  check_refused(plan("caffe2 " + write_temp("c2bad.json", "[1]").string() + " --pass dag"), "not an object");
  check_refused(plan("caffe2 /nonexistent/net.json --pass dag"), "cannot open");
  check_refused(plan("caffe2 " + nets + "/chain.json --pass fast"), "--pass");

  // Options reach the passes: b kept, the seed's size pick with sizes.
  const auto kept = plan("caffe2 " + nets + "/chain.json --pass inference --dont-share b");
  REQUIRE(kept.status == 0);
  CHECK(nlohmann::json::parse(kept.out)["op"][1]["output"] == nlohmann::json{"b"});
  const auto sizes = write_temp("sizes.json", R"({"a": 100, "b": 10, "c": 10})");
  const auto sized = plan("caffe2 " + nets + "/chain.json --pass dag --policy caffe2 --blob-bytes " +
                          sizes.string());
  REQUIRE(sized.status == 0);
  CHECK(nlohmann::json::parse(sized.out)["op"][2]["output"] == nlohmann::json{"__m0_shared"});
  check_refused(plan("caffe2 " + nets + "/chain.json --pass dag --blob-bytes " +
                     write_temp("sizes_bad.json", R"({"a": -1})").string()),
                "not a JSON object of byte counts");
  check_refused(plan("caffe2 " + nets + "/chain.json --pass dag --blob-bytes " +
                     write_temp("sizes_huge.json", R"({"a": 18446744073709551616})").string()),
                "'a' has 1.8446744073709552e+19, which is larger than 2^64 - 1 bytes");
  const auto fit = plan("share " + data_dir + "/small/diamond.json --algo linear --policy best-fit");
  REQUIRE(fit.status == 0);
  CHECK(nlohmann::json::parse(fit.out)["policy"] == "best-fit");
}

TEST_CASE("arena: the JSON contract on MiniMalloc's README example, every algorithm") {
  const auto csv = data_dir + "/minimalloc/examples/input.12.csv";
  for (const std::string algo :
       {"first-fit", "best-fit", "xla-size", "xla-area", "greedy-size", "greedy-breadth", "best", "exact"}) {
    INFO(algo);
    const auto r = plan("arena " + csv + " --algo " + algo + " --capacity 12");
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["algo"] == algo);
    if (algo != "best") CHECK(j["method"] == algo);  // best names the heuristic or search whose plan it kept
    CHECK(!j["method"].get<std::string>().empty());
    CHECK(j["buffers"] == 5);
    CHECK(j["lower_bound_bytes"] == 12);
    CHECK(j["arena_bytes"].get<std::uint64_t>() >= 12);
    CHECK(j["fits"] == (j["arena_bytes"].get<std::uint64_t>() <= 12));
    CHECK(j.contains("proved_optimal"));
    CHECK(j.contains("seconds"));
  }
  const auto j = nlohmann::json::parse(plan("arena " + csv + " --algo exact").out);
  CHECK(j["arena_bytes"] == 12);
  CHECK(j["proved_optimal"] == true);
  CHECK_FALSE(j.contains("fits"));
}

TEST_CASE("arena --help lists exactly the fields of the JSON, offsets included") {
  const auto help = plan("arena --help");
  REQUIRE(help.status == 0);
  const auto list = help.out.find("Prints one JSON object:\n");
  REQUIRE(list != std::string::npos);
  std::set<std::string> listed;
  std::istringstream lines(help.out.substr(list));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && line.starts_with("  ")) listed.insert(line.substr(2, line.find(' ', 2) - 2));
  // A graph, a capacity and the exact search: every field the JSON can have.
  const auto r = plan("arena " + data_dir + "/small/chain.json --algo exact --capacity 1000 --work-limit 1000");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  std::set<std::string> fields;
  for (const auto& [key, value] : j.items()) fields.insert(key);
  CHECK(fields == listed);
  REQUIRE(!j["offsets"].empty());
  for (const auto& [id, row] : j["offsets"].items()) {
    CHECK(id.find(':') != std::string::npos);
    for (const char* field : {"offset", "size", "lower", "upper"}) CHECK(row.contains(field));
  }
  CHECK(help.out.find("id (node:port for a graph) -> offset, size, lower, upper") != std::string::npos);
}

TEST_CASE("arena --output: the plan as MiniMalloc CSV with an offset column") {
  const auto out = temp_path("plan.csv");
  const auto r = plan("arena " + data_dir + "/minimalloc/examples/input.12.csv --algo exact --output " + out.string());
  REQUIRE(r.status == 0);
  std::ifstream in(out);
  std::string header, row;
  std::getline(in, header);
  CHECK(header == "id,lower,upper,size,offset");
  int rows = 0;
  while (std::getline(in, row)) ++rows;
  CHECK(rows == 5);
}

TEST_CASE("arena: a capacity that cannot fit is an answer, not an error") {
  const auto r = plan("arena " + data_dir + "/minimalloc/examples/input.12.csv --algo exact --capacity 11");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["fits"] == false);
  CHECK(j["status"] == "does-not-fit");
}

TEST_CASE("arena: lifetimes from the best schedule by default, from another with --schedule") {
  const auto graph = data_dir + "/small/greedy_trap.json";
  const auto by_default = nlohmann::json::parse(plan("arena " + graph + " --algo exact").out);
  CHECK(by_default["lower_bound_bytes"] == 14);  // the optimal order's peak
  const auto program = nlohmann::json::parse(plan("arena " + graph + " --algo exact --schedule program").out);
  CHECK(program["lower_bound_bytes"] == 15);
}

TEST_CASE("arena: a graph's buffers are named node:port and persistent ones stay out") {
  const auto out = temp_path("graph_plan.csv");
  const auto r = plan("arena " + data_dir + "/small/persistent.json --algo best --alignment 16 --output " + out.string());
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["lower_bound_bytes"] == 40);
  CHECK(j["buffers"].get<int>() < 5);
  std::ifstream in(out);
  std::string header, row;
  std::getline(in, header);
  CHECK(header == "id,lower,upper,size,alignment,offset");
  std::getline(in, row);
  CHECK(row.find(':') != std::string::npos);
}

TEST_CASE("arena: best reaches max-live on resnet18_train_b32 within 1 percent, exact on the dot") {
  const auto graph = data_dir + "/resnet18_train_b32.json --schedule program";
  for (const auto& [model, max_live] : {std::pair{"", 735700388}, std::pair{" --no-alias", 1016784292}}) {
    const auto& model_label = model;  // clang 14: INFO's lambda cannot capture a binding
    INFO(model_label);
    const auto best = nlohmann::json::parse(plan("arena " + graph + model + " --algo best").out);
    CHECK(best["lower_bound_bytes"] == max_live);
    CHECK(best["arena_bytes"].get<double>() <= 1.01 * max_live);
    const auto exact = nlohmann::json::parse(plan("arena " + graph + model + " --algo exact").out);
    CHECK(exact["arena_bytes"] == max_live);
    CHECK(exact["proved_optimal"] == true);
  }
}

TEST_CASE("arena: bad input and usage are refused in one line") {
  check_refused(plan("arena " + write_temp("neg.csv", "id,lower,upper,size\na,0,1,-4\n").string() + " --algo best"),
                "line 2: size \"-4\" is negative");
  check_refused(plan("arena " + write_temp("cols.csv", "id,lower,size\n").string() + " --algo best"),
                "missing column \"upper\"");
  check_refused(plan("arena " + data_dir + "/minimalloc/examples/input.12.csv --algo worst-fit"), "unknown --algo 'worst-fit'");
  check_refused(plan("arena " + data_dir + "/small/diamond.json --schedule nope"), "--schedule");
  check_refused(plan("arena /nonexistent/x.csv"), "cannot open");
}

TEST_CASE("arena: an in-place output lives in its input's storage, and with --no-alias only --in-place puts it there") {
  const auto file = write_temp("inplace.json", graph_with(
      R"({"name": "k", "outputs": [4]},
         {"name": "x", "outputs": [10], "inputs": ["k:0"]},
         {"name": "y", "outputs": [10], "inputs": ["x:0"], "attrs": {"inplace": true, "alias": "x:0"}},
         {"name": "w", "outputs": [2], "inputs": ["y:0", "k:0"]})"));
  const auto rows = [](const std::filesystem::path& csv) {
    std::ifstream in(csv);
    std::vector<std::string> lines(4);
    for (auto& line : lines) std::getline(in, line);
    return lines;  // header, k, x, y
  };
  const auto out = temp_path("inplace.csv");
  const auto storage = nlohmann::json::parse(
      plan("arena " + file.string() + " --algo exact --schedule program --output " + out.string()).out);
  CHECK(storage["lower_bound_bytes"] == 16);
  CHECK(storage["arena_bytes"] == 16);
  auto csv = rows(out);
  CHECK(csv[2].starts_with("x:0,1,4,10,"));  // the storage lives to w's step
  CHECK(csv[3].starts_with("y:0,1,1,0,"));   // no space of its own
  CHECK(csv[3].substr(csv[3].rfind(',')) == csv[2].substr(csv[2].rfind(',')));  // x's offset

  const auto apart = file.string() + " --algo exact --schedule program --no-alias";
  CHECK(nlohmann::json::parse(plan("arena " + apart).out)["lower_bound_bytes"] == 24);
  const auto reused = nlohmann::json::parse(plan("arena " + apart + " --in-place --output " + out.string()).out);
  CHECK(reused["lower_bound_bytes"] == 16);
  CHECK(reused["arena_bytes"] == 16);
  csv = rows(out);
  CHECK(csv[3].starts_with("y:0,1,1,0,"));   // in x's storage, as a view is: no space of its own
  CHECK(csv[3].substr(csv[3].rfind(',')) == csv[2].substr(csv[2].rfind(',')));
}

TEST_CASE("peak: may-alias marks count only under --in-place, for a file") {
  // k (4) -> x (10) -> r = relu(x) (10, may take over x) -> w (2), which reads k.
  const auto file = write_temp("may_alias.json", graph_with(
      R"({"name": "k", "outputs": [4]},
         {"name": "x", "outputs": [10], "inputs": ["k:0"]},
         {"name": "r", "outputs": [10], "inputs": ["x:0"], "attrs": {"may_alias": "x:0"}},
         {"name": "w", "outputs": [2], "inputs": ["r:0", "k:0"]})"));
  const auto peak = [&](const std::string& flags) {
    const auto r = plan("peak " + file.string() + flags);
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out);
  };
  CHECK(peak("")["peak_bytes"] == 24);  // x, k and r at r's step
  CHECK(peak(" --no-in-place")["peak_bytes"] == 24);
  const auto reused = peak(" --in-place");
  CHECK(reused["peak_bytes"] == 16);  // r in x's storage: x's 10, k 4, w 2 at w's step
  CHECK(reused["aliased_outputs"] == 1);
  // The single-op bound holds for every order: r's step is x and r (20)
  // apart, x's storage alone (10) where r takes it over; then w's 16 leads.
  CHECK(peak("")["op_bound_bytes"] == 20);
  CHECK(reused["op_bound_bytes"] == 16);
  CHECK(reused["op_bound_node"] == "w");
  check_refused(plan("rewrite " + file.string() + " --budget 1 --in-place"),
                "rewrite plans without in-place reuse: --in-place is not taken here");
}

TEST_CASE("generate: a graph every subcommand reads, the same for the same seed, unknown kinds refused") {
  const auto file = temp_path("generated.json");
  REQUIRE(plan("generate cnn-train --vertices 400 --seed 3 --output " + file.string()).status == 0);
  const auto again = plan("generate cnn-train --vertices 400 --seed 3");
  REQUIRE(again.status == 0);
  std::ifstream in(file);
  const std::string written{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  CHECK(written == again.out);
  const auto peak = plan("peak " + file.string());
  REQUIRE(peak.status == 0);
  CHECK(nlohmann::json::parse(peak.out)["nodes"].get<std::size_t>() >= 360);
  CHECK(plan("schedule " + file.string() + " --algo best --work-limit 1000").status == 0);
  std::filesystem::remove(file);
  check_refused(plan("generate tree --vertices 10"), "tree");
}

TEST_CASE("compare: every algorithm of each family on every graph, with bounds, wins and geometric means") {
  const std::string graphs = data_dir + "/small/diamond.json " + data_dir + "/small/fanout6.json";
  const auto csv = plan("compare " + graphs + " --work-limit 1000 --format csv");
  REQUIRE(csv.status == 0);
  std::istringstream rows(csv.out);
  std::string line;
  std::getline(rows, line);
  CHECK(line == "graph,family,algorithm,value,lower_bound,ratio,seconds");
  std::size_t cells = 0;
  while (std::getline(rows, line)) ++cells;
  // Two graphs, each with every scheduler (11), heap algorithm (8) and sharing pass (2).
  CHECK(cells == 2 * (11 + 8 + 2));
  const auto json = plan("compare " + graphs + " --work-limit 1000 --format json --families schedule --algos program,best");
  REQUIRE(json.status == 0);
  const auto doc = nlohmann::json::parse(json.out);
  REQUIRE(doc["cells"].size() == 4);
  CHECK(doc["cells"][0]["graph"] == "diamond");
  CHECK(doc["cells"][0]["algorithm"] == "program");
  CHECK(doc["cells"][0]["value"] == 21);
  CHECK(doc["cells"][1]["value"] == 12);  // best: the optimum, and the bound
  CHECK(doc["cells"][1]["lower_bound"] == 12);
  const auto& summary = doc["summary"];
  REQUIRE(summary.size() == 2);
  CHECK(summary[0]["algorithm"] == "program");
  CHECK(summary[0]["wins"] == 0);  // 21 and 25 against 12 and 10
  CHECK(summary[1]["wins"] == 2);
  CHECK(summary[1]["geomean_ratio"] == 1.0);
  CHECK(summary[0]["geomean_ratio"].get<double>() == doctest::Approx(std::sqrt(21.0 / 12 * 25.0 / 10)));
  const auto md = plan("compare " + graphs + " --work-limit 1000 --families arena");
  REQUIRE(md.status == 0);
  CHECK(md.out.find("### arena") != std::string::npos);
  CHECK(md.out.find("| geometric mean of ratios |") != std::string::npos);
  CHECK(md.out.find("### schedule") == std::string::npos);
  check_refused(plan("compare " + graphs + " --algos fastest"), "fastest");
  check_refused(plan("compare " + graphs + " --families teleport"), "teleport");
  check_refused(plan("compare " + data_dir + "/small/missing.json"), "missing.json");
}

namespace {

/// Elements of an XML document by name with their count; fails the test when
/// a tag is unbalanced or the document has more than one root.
std::map<std::string, std::size_t> xml_elements(const std::string& text) {
  std::map<std::string, std::size_t> count;
  std::vector<std::string> open;
  std::size_t roots = 0;
  for (std::size_t at = text.find('<'); at != std::string::npos; at = text.find('<', at + 1)) {
    const std::size_t end = text.find('>', at);
    REQUIRE(end != std::string::npos);
    const std::string tag = text.substr(at + 1, end - at - 1);
    if (tag.starts_with('?') || tag.starts_with('!')) continue;
    if (tag.starts_with('/')) {
      REQUIRE(!open.empty());
      CHECK(open.back() == tag.substr(1));
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    ++count[name];
    if (open.empty()) ++roots;
    if (!tag.ends_with('/')) open.push_back(name);
  }
  CHECK(open.empty());
  CHECK(roots == 1);
  return count;
}

}  // namespace

TEST_CASE("report --svg: a timeline per scheduler and a rectangle per arena buffer, in well-formed SVG") {
  const auto dir = temp_path("svg");
  const std::string graph = data_dir + "/small/greedy_trap.json";
  REQUIRE(plan("report " + graph + " --svg " + dir.string()).status == 0);
  const auto read = [&](const std::string& name) {
    std::ifstream in(dir / name);
    return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  };
  const auto timeline = read("timeline.svg");
  const auto t = xml_elements(timeline);
  CHECK(t.at("svg") == 1);
  // Every scheduler of the report (all but exact, which best runs within its budget).
  CHECK(t.at("polyline") == memopt::schedule::entries().size() - 1);
  CHECK(timeline.find("class=\"bound\"") != std::string::npos);
  const auto arena = read("arena.svg");
  const auto a = xml_elements(arena);
  const auto g = memopt::io::read_graph(graph);
  const auto best = memopt::best_schedule(g);
  const auto problem = memopt::make_arena_problem(g, std::span<const std::size_t>(best.order));
  const auto taking_space = std::ranges::count_if(problem.buffers, [](const auto& b) { return b.takes_space(); });
  CHECK(a.at("rect") == static_cast<std::size_t>(taking_space) + 1);  // and the white background
  CHECK(a.at("title") == static_cast<std::size_t>(taking_space));
  std::filesystem::remove_all(dir);
}

// One test, so that the costly part of a training graph's report (its
// rematerialisation curve) runs once and is compared with rewrite --curve's.
TEST_CASE("report: a readable table for a person, and on a training graph the rematerialisation trade-off with remat.svg, a point per budget") {
  const auto dir = temp_path("remat_svg");
  const std::string graph = data_dir + "/resnet18_train_b32.json";
  const auto r = plan("report " + graph + " --svg " + dir.string());
  REQUIRE(r.status == 0);
  CHECK(r.out.find("332 nodes") != std::string::npos);
  for (const char* row : {"program", "list", "dfs", "post-order", "xla", "lpmf", "bfs", "dfs-size", "best", "lower bound"}) {
    CHECK(r.out.find(std::string("\n  ") + row + " ") != std::string::npos);
  }
  CHECK(r.out.find("735700388") != std::string::npos);  // the program order's peak
  CHECK(r.out.find("90 outputs are views or in-place results") != std::string::npos);
  CHECK(r.out.find("storage sharing saves 268.1 MiB (27.6%)") != std::string::npos);
  // The arena section beside max-live.
  CHECK(r.out.find("Arena offsets for program order") != std::string::npos);
  CHECK(r.out.find("greedy-breadth") != std::string::npos);
  CHECK(r.out.find("proved optimal") != std::string::npos);
  // The rematerialisation section and its picture.
  CHECK(r.out.find("Rematerialisation (a training graph)") != std::string::npos);
  CHECK(r.out.find("at 'gradients/native_batch_norm_backward_19'") != std::string::npos);
  std::ifstream in(dir / "remat.svg");
  const std::string picture{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto e = xml_elements(picture);
  CHECK(e.at("circle") == 11);
  CHECK(picture.find("class=\"floor\"") != std::string::npos);
  // The same picture from rewrite --curve --svg; --svg alone is refused.
  const auto file = dir / "curve.svg";
  REQUIRE(plan("rewrite " + graph + " --curve --svg " + file.string()).status == 0);
  std::ifstream again(file);
  CHECK(std::string{std::istreambuf_iterator<char>(again), std::istreambuf_iterator<char>()} == picture);
  CHECK(plan("rewrite " + graph + " --budget 100 --svg " + file.string()).status == 1);
  std::filesystem::remove_all(dir);
  // An inference graph has no such section; --no-alias says what it counts.
  const auto apart = plan("report " + data_dir + "/resnet18_infer_b1.json --no-alias");
  REQUIRE(apart.status == 0);
  CHECK(apart.out.find("Rematerialisation") == std::string::npos);
  CHECK(apart.out.find("every output counted apart") != std::string::npos);
  CHECK(apart.out.find("program                6422528") != std::string::npos);
}

TEST_CASE("schedule: Ctrl-C ends a long exact search with its best order, valid and marked interrupted") {
  // This RandWire stage is not proved within a minute: the search is still running when SIGINT comes.
  const std::string graph = data_dir + "/gaps/randwire_ws_c156_s7_infer_b32.json.gz";
  const auto out = temp_path("interrupted.json");
  const std::string command = std::string(MEMOPT_PLAN) + " schedule " + graph + " --algo exact --time-limit 600 > " +
                              out.string() +
                              " 2>/dev/null & pid=$!; sleep 3; kill -INT $pid; wait $pid";
  const auto started = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["interrupted"] == true);
  CHECK(j["stopped_by_clock"] == false);  // Ctrl-C, not the time limit
  CHECK(j["proved_optimal"] == false);
  // The order is a valid one, with the peak it claims.
  std::string names;
  for (const auto& name : j["order"]) names += name.get<std::string>() + "\n";
  const auto order = write_temp("interrupted_order.txt", names);
  const auto peak = plan("peak " + graph + " --order " + order.string());
  REQUIRE(peak.status == 0);
  CHECK(nlohmann::json::parse(peak.out)["peak_bytes"] == j["peak_bytes"]);
  std::filesystem::remove(out);
  std::filesystem::remove(order);
}
