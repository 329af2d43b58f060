// memopt-plan, run as a user runs it: JSON on stdout, exit 1 and one line on
// stderr for bad input or usage, never a crash.
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

struct run_result {
  int status = -1;
  std::string out;
  std::string err;
};

std::filesystem::path temp_path(const std::string& name) {
  // Per process: ctest runs test cases of this file side by side.
  return std::filesystem::temp_directory_path() /
         ("memopt_cli_test_" + std::to_string(getpid()) + "_" + name);
}

run_result plan(const std::string& args) {
  const auto err_path = temp_path("stderr.txt");
  const std::string command = std::string(MEMOPT_PLAN) + " " + args + " 2>" + err_path.string();
  run_result r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> chunk{};
  while (const auto got = fread(chunk.data(), 1, chunk.size(), pipe)) r.out.append(chunk.data(), got);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  std::stringstream err;
  err << in.rdbuf();
  r.err = err.str();
  return r;
}

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

/// Exit 1 with exactly one line on stderr that contains `needle`.
void check_refused(const run_result& r, const std::string& needle) {
  INFO("stderr: " << r.err);
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(needle) != std::string::npos);
}

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

TEST_CASE("arena: the JSON contract on MiniMalloc's README example, every algorithm") {
  const auto csv = data_dir + "/minimalloc/examples/input.12.csv";
  for (const std::string algo :
       {"first-fit", "best-fit", "xla-size", "xla-area", "greedy-size", "greedy-breadth", "best", "exact"}) {
    INFO(algo);
    const auto r = plan("arena " + csv + " --algo " + algo + " --capacity 12");
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["algo"] == algo);
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
  const auto graph = data_dir + "/resnet18_train_b32.json";
  const auto best = nlohmann::json::parse(plan("arena " + graph + " --algo best").out);
  CHECK(best["lower_bound_bytes"] == 1016784292);
  CHECK(best["arena_bytes"].get<double>() <= 1.01 * 1016784292);
  const auto exact = nlohmann::json::parse(plan("arena " + graph + " --algo exact").out);
  CHECK(exact["arena_bytes"] == 1016784292);
  CHECK(exact["proved_optimal"] == true);
}

TEST_CASE("arena: bad input and usage are refused in one line") {
  check_refused(plan("arena " + write_temp("neg.csv", "id,lower,upper,size\na,0,1,-4\n").string() + " --algo best"),
                "line 2: size \"-4\" is negative");
  check_refused(plan("arena " + write_temp("cols.csv", "id,lower,size\n").string() + " --algo best"),
                "missing column \"upper\"");
  check_refused(plan("arena " + data_dir + "/minimalloc/examples/input.12.csv --algo worst-fit"), "unknown --algo 'worst-fit'");
  check_refused(plan("arena " + data_dir + "/small/diamond.json --schedule nope"), "unknown schedule 'nope'");
  check_refused(plan("arena /nonexistent/x.csv"), "cannot open");
}

TEST_CASE("report: arena section beside max-live") {
  const auto r = plan("report " + data_dir + "/resnet18_train_b32.json");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("Arena offsets for program order") != std::string::npos);
  CHECK(r.out.find("greedy-breadth") != std::string::npos);
  CHECK(r.out.find("proved optimal") != std::string::npos);
}

TEST_CASE("arena --alias: an in-place output shares its input's storage and lowers max-live") {
  const auto file = write_temp("inplace.json", graph_with(
      R"({"name": "x", "outputs": [10]},
         {"name": "k", "outputs": [4]},
         {"name": "y", "outputs": [10], "inputs": ["x:0"], "attrs": {"inplace": true, "alias": "x:0"}},
         {"name": "w", "outputs": [2], "inputs": ["y:0", "k:0"]})"));
  const auto plain = nlohmann::json::parse(plan("arena " + file.string() + " --algo exact").out);
  CHECK(plain["lower_bound_bytes"] == 24);
  const auto out = temp_path("inplace.csv");
  const auto shared = nlohmann::json::parse(plan("arena " + file.string() + " --algo exact --alias --output " + out.string()).out);
  CHECK(shared["lower_bound_bytes"] == 16);
  CHECK(shared["arena_bytes"] == 16);
  std::ifstream in(out);
  std::string header, x, k, y;
  std::getline(in, header);
  std::getline(in, x);
  std::getline(in, k);
  std::getline(in, y);
  CHECK(y.starts_with("y:0,2,2,10,"));  // no space of its own
  CHECK(y.substr(y.rfind(',')) == x.substr(x.rfind(',')));  // x's offset
}
