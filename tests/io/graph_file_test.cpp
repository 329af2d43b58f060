// memopt/io: the memopt-graph/1 reader, on the shipped files and on every
// class of bad input.
#include "../support/named_graphs.hpp"

#include <memopt/io/graph_file.hpp>
#include <memopt/io/order_file.hpp>
#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace io = memopt::io;

namespace {

const std::string data_dir = MEMOPT_DATA_DIR;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::filesystem::path temp_path(const std::string& name) {
  // Per process: ctest runs test cases of this file side by side.
  return std::filesystem::temp_directory_path() /
         ("memopt_io_test_" + std::to_string(getpid()) + "_" + name);
}

void write_gzip(const std::filesystem::path& path, const std::string& text) {
  gzFile out = gzopen(path.c_str(), "wb");
  REQUIRE(out != nullptr);
  REQUIRE(gzwrite(out, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  gzclose(out);
}

/// The message parse_graph gives for `text`, or "" when it parses.
std::string refusal(const std::string& text) {
  try {
    (void)io::parse_graph(text);
  } catch (const io::format_error& e) {
    return e.what();
  }
  return "";
}

std::string graph_with(const std::string& nodes, const std::string& outputs = "[]") {
  return R"({"format": "memopt-graph/1", "name": "t", "nodes": [)" + nodes + R"(], "outputs": )" +
         outputs + "}";
}

}  // namespace

TEST_CASE("read_graph: every shipped graph gives peaks_alias.tsv's exact storage-aware bytes") {
  std::ifstream table(data_dir + "/peaks_alias.tsv");
  std::string file, nodes, aliased, apart_peak, peak;
  std::getline(table, file);  // header
  int checked = 0;
  while (table >> file >> nodes >> aliased >> apart_peak >> peak) {
    INFO(file);
    const auto g = io::read_graph(data_dir + "/" + file);
    const auto r = memopt::liveness(g, memopt::program_order(g));
    CHECK(r.buffers.aliased == std::stoull(aliased));
    CHECK(r.peak_bytes == std::stoull(peak));
    const auto apart = io::read_graph(data_dir + "/" + file, {.storage_aliases = false});
    CHECK(memopt::liveness(apart, memopt::program_order(apart)).peak_bytes == std::stoull(apart_peak));
    ++checked;
  }
  CHECK(checked == 20);
}

TEST_CASE("read_graph: every shipped graph, every output apart, gives peaks.tsv's exact bytes") {
  std::ifstream table(data_dir + "/peaks.tsv");
  std::string file, nodes, peak, persistent;
  std::getline(table, file);  // header
  int checked = 0;
  while (table >> file >> nodes >> peak >> persistent) {
    INFO(file);
    const auto g = io::read_graph(data_dir + "/" + file, {.storage_aliases = false});
    CHECK(num_vertices(g) == std::stoull(nodes));
    const auto r = memopt::liveness(g, memopt::program_order(g));
    CHECK(r.peak_bytes == std::stoull(peak));
    CHECK(r.persistent_bytes == std::stoull(persistent));
    ++checked;
  }
  CHECK(checked == 20);
}

TEST_CASE("read_graph: the hand-checked graphs give the README's program-order peaks") {
  const std::vector<std::pair<std::string, std::uint64_t>> expected = {
      {"chain", 35},        {"diamond", 21}, {"fanout6", 25}, {"xla_counterexample", 5},
      {"persistent", 40},   {"outputs_dead", 102}, {"control", 21}, {"multiport", 12},
      {"greedy_trap", 15}};
  for (const auto& [name, peak] : expected) {
    const auto& name_label = name;  // clang 14: INFO's lambda cannot capture a binding
    INFO(name_label);
    const auto g = io::read_graph(data_dir + "/small/" + name + ".json");
    CHECK(g[boost::graph_bundle].name == name);
    CHECK(memopt::liveness(g, memopt::program_order(g)).peak_bytes == peak);
  }
}

TEST_CASE("read_graph: the file's structure lands in the graph") {
  const auto g = io::read_graph(data_dir + "/small/persistent.json");
  REQUIRE(num_vertices(g) == 5);
  CHECK(g[0].name == "w1");
  CHECK(g[0].op == "parameter");
  CHECK(g[0].persistent);
  CHECK(g[4].outputs[0].live_out);
  // z reads y:0 and w2:0 (operand order), then has a control edge from w1.
  std::vector<std::pair<std::size_t, bool>> in;
  for (const auto e : boost::make_iterator_range(in_edges(4, g))) in.push_back({source(e, g), g[e].control});
  CHECK(in == std::vector<std::pair<std::size_t, bool>>{{3, false}, {1, false}, {0, true}});
}

TEST_CASE("read_graph: views and in-place outputs record their storage and their alias") {
  const std::string text = graph_with(R"(
    {"name": "x", "outputs": [8]},
    {"name": "v", "op": "view", "inputs": ["x:0"], "outputs": [8], "attrs": {"view": true, "alias": "x:0"}},
    {"name": "s", "op": "split", "inputs": ["v:0"], "outputs": [4, 4], "attrs": {"alias": ["v:0", null]}},
    {"name": "r", "op": "relu_", "inputs": ["s:1"], "outputs": [4], "attrs": {"inplace": true, "alias": "s:1"}})");
  const auto g = io::parse_graph(text);
  using shared = memopt::shared_storage<std::size_t>;
  REQUIRE(g[1].outputs[0].shares.has_value());
  CHECK(*g[1].outputs[0].shares == shared{{0, 0}, false});
  CHECK(*g[2].outputs[0].shares == shared{{1, 0}, false});
  CHECK_FALSE(g[2].outputs[1].shares.has_value());
  CHECK(*g[3].outputs[0].shares == shared{{2, 1}, true});
  CHECK(memopt::tensor_traits<io::file_graph>::shares_storage_of(g, 3, 0) == shared{{2, 1}, true});
  // Only under in-place reuse is it also an in-place candidate.
  CHECK_FALSE(memopt::tensor_traits<io::file_graph>::alias_of(g, 1, 0).has_value());
  const auto apart = io::parse_graph(text, {.storage_aliases = false});
  CHECK_FALSE(apart[1].outputs[0].shares.has_value());
  CHECK_FALSE(apart[1].outputs[0].alias.has_value());
  const auto reusing = io::parse_graph(text, {.storage_aliases = false, .in_place_reuse = true});
  CHECK(*reusing[1].outputs[0].alias == memopt::buffer_ref<std::size_t>{0, 0});
  // x, v and s:0 are one storage; s:1 and r another: 8 + 4 bytes, 4 storages of 6 buffers.
  const auto live = memopt::liveness(g, memopt::program_order(g));
  CHECK(live.buffers.aliased == 2 + 1);
  CHECK(live.peak_bytes == 12);
  CHECK(memopt::liveness(apart, memopt::program_order(apart)).peak_bytes == 8 + 4 + 4);  // v, s:0, s:1
}

TEST_CASE("read_graph: a .json.gz reads as its JSON and a truncated one is refused") {
  const std::string text = slurp(data_dir + "/resnet18_train_b32.json");
  const auto gz = temp_path("resnet18.json.gz");
  write_gzip(gz, text);
  const auto g = io::read_graph(gz.string());
  CHECK(memopt::liveness(g, memopt::program_order(g)).peak_bytes == 735700388);

  const std::string packed = slurp(gz.string());
  const auto cut = temp_path("truncated.json.gz");
  std::ofstream(cut, std::ios::binary) << packed.substr(0, packed.size() / 2);
  try {
    (void)io::read_graph(cut.string());
    FAIL("a truncated gzip file was read");
  } catch (const io::format_error& e) {
    CHECK(std::string(e.what()).find("truncated gzip") != std::string::npos);
  }
  std::filesystem::remove(gz);
  std::filesystem::remove(cut);
}

TEST_CASE("parse_graph: scratch_bytes is read, counted at its node's step, and refused when not a size") {
  // x (4) -> conv (8, scratch 100) -> y (2): steps 4, 4 + 8 + 100, 8 + 2.
  const auto g = io::parse_graph(graph_with(
      R"({"name": "x", "outputs": [4]}, {"name": "conv", "outputs": [8], "inputs": ["x:0"], "scratch_bytes": 100},)"
      R"({"name": "y", "outputs": [2], "inputs": ["conv:0"]})"));
  CHECK(g[0].scratch_bytes == 0);
  CHECK(g[1].scratch_bytes == 100);
  CHECK(memopt::liveness(g, memopt::program_order(g)).timeline == std::vector<std::uint64_t>{4, 112, 10});
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1], "scratch_bytes": -3})")) ==
        "node 'a': scratch_bytes -3 is negative");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1], "scratch_bytes": "big"})")) ==
        "node 'a': scratch_bytes \"big\" is not a number");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1], "scratch_bytes": 1.5})")) ==
        "node 'a': scratch_bytes 1.5 is not a whole number of bytes");
}

TEST_CASE("read_graph: a missing file") {
  CHECK_THROWS_WITH_AS((void)io::read_graph("/nonexistent/graph.json"),
                       "cannot open /nonexistent/graph.json", io::format_error);
}

TEST_CASE("parse_graph: each class of bad input is refused, naming the node") {
  CHECK(refusal("") == "empty file");
  CHECK(refusal(" \n") == "empty file");
  CHECK(refusal("{\"format\": ").rfind("not JSON: ", 0) == 0);
  CHECK(refusal("nodes: []").rfind("not JSON: ", 0) == 0);
  CHECK(refusal("[1, 2]") == "the top level is array, not an object");
  CHECK(refusal(R"({"nodes": []})") == "missing \"format\"");
  CHECK(refusal(R"({"format": "memopt-graph/2", "nodes": []})") ==
        "format is \"memopt-graph/2\", expected \"memopt-graph/1\"");
  CHECK(refusal(R"({"format": "memopt-graph/1"})") == "missing \"nodes\"");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1]}, {"name": "a", "outputs": [2]})")) ==
        "node 'a': duplicate node name");
  CHECK(refusal(graph_with(R"({"outputs": [1]})")) == "node '#0': missing \"name\"");
  CHECK(refusal(graph_with(R"({"name": "a"})")) == "node 'a': missing \"outputs\"");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1], "inputs": ["b:0"]})")) ==
        "node 'a': input \"b:0\" names node 'b', which does not exist");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1]}, {"name": "b", "outputs": [1], "inputs": ["a:1"]})")) ==
        "node 'b': input \"a:1\" reads port 1 of 'a', which has 1 output");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1]}, {"name": "b", "outputs": [1], "inputs": ["a"]})")) ==
        "node 'b': input \"a\" is not of the form node:port");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1]}, {"name": "b", "outputs": [1], "inputs": ["a:x"]})")) ==
        "node 'b': input \"a:x\" has no valid port number");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1]}, {"name": "b", "outputs": [1], "inputs": ["a:-1"]})")) ==
        "node 'b': input \"a:-1\" has no valid port number");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1], "control": ["ghost"]})")) ==
        "node 'a': control predecessor 'ghost' does not exist");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1]})", R"(["b:0"])")) ==
        "graph output \"b:0\" names node 'b', which does not exist");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1]})", R"(["a:3"])")) ==
        "graph output \"a:3\" reads port 3 of 'a', which has 1 output");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [-4]})")) == "node 'a': size -4 is negative");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [2.5]})")) ==
        "node 'a': size 2.5 is not a whole number of bytes");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": ["12"]})")) == "node 'a': size \"12\" is not a number");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [null]})")) == "node 'a': size null is not a number");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1e3]})")).empty());  // a whole number, written as float
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1e30]})")) ==
        "node 'a': size 1e+30 is larger than 2^64 - 1 bytes");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [18446744073709551616]})")) ==
        "node 'a': size 1.8446744073709552e+19 is larger than 2^64 - 1 bytes");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [18446744073709551615]})")).empty());
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1e18]})")) ==
        "node 'a': size 1e+18 is a float above 2^53, which may have been rounded: write it in digits");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1], "scratch_bytes": 1e30})")) ==
        "node 'a': scratch_bytes 1e+30 is larger than 2^64 - 1 bytes");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": 5})")) == "node 'a': \"outputs\" must be array, not number");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1], "persistent": "yes"})")) ==
        "node 'a': \"persistent\" must be boolean, not string");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1], "attrs": {"alias": "q:0"}})")) ==
        "node 'a': alias \"q:0\" names node 'q', which does not exist");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1]}, {"name": "b", "outputs": [1], "inputs": ["a:0"]},
      {"name": "c", "outputs": [1], "inputs": ["a:0"], "attrs": {"alias": "b:0"}})")) ==
        "node 'c': alias \"b:0\" is not an input of the node");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1]},
      {"name": "c", "outputs": [1], "inputs": ["a:0"], "attrs": {"alias": "a:0", "inplace": 1}})")) ==
        "node 'c': attrs.inplace must be boolean, not number");
}

TEST_CASE("parse_graph: a cycle is refused with the cycle, a self-loop too") {
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1], "inputs": ["c:0"]},
                              {"name": "b", "outputs": [1], "inputs": ["a:0"]},
                              {"name": "c", "outputs": [1], "inputs": ["b:0"]})")) ==
        "the graph has a cycle: 'a' -> 'b' -> 'c' -> 'a'");
  CHECK(refusal(graph_with(R"({"name": "a", "outputs": [1], "control": ["a"]})")) ==
        "the graph has a cycle: 'a' -> 'a'");
}

TEST_CASE("parse_graph: a node listed before its input is read, and its file order is then no schedule") {
  const auto g = io::parse_graph(graph_with(R"({"name": "b", "outputs": [1], "inputs": ["a:0"]},
                                               {"name": "a", "outputs": [1]})"));
  try {
    (void)memopt::liveness(g, memopt::program_order(g));
    FAIL("no not_topological_error");
  } catch (const memopt::not_topological_error& e) {
    CHECK(e.describe(io::node_namer(g)) == "the order runs 'b' before its predecessor 'a'");
  }
}

TEST_CASE("read_order: names one a line, and an unknown name is refused with its line") {
  const auto g = io::read_graph(data_dir + "/small/diamond.json");
  const auto path = temp_path("order.txt");
  std::ofstream(path) << "s\n  l1 \n# comment\n\nl2\nr1\nr2\nj\n";
  CHECK(io::read_order(path.string(), g) == std::vector<std::size_t>{0, 1, 3, 2, 4, 5});
  std::ofstream(path) << "s\nl1\nzz\n";
  CHECK_THROWS_WITH_AS((void)io::read_order(path.string(), g),
                       ("node 'zz': " + path.string() + ":3: the order names a node the graph does not have").c_str(),
                       io::format_error);
  std::filesystem::remove(path);
}
