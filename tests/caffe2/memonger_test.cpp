// caffe2_like/: Caffe2 memonger's passes on small NetDefs worked out by hand,
// the seed's naming conventions, devices, refusals and errors.
#include <caffe2_like/memonger.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

namespace c2 = caffe2_like;

namespace {

c2::net_def load(const std::string& name) {
  std::ifstream in(std::string(MEMOPT_CAFFE2_DATA_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return c2::parse_net(text.str());
}

/// Each op's "inputs -> outputs", joined by " | ".
std::string ops_of(const nlohmann::json& net) {
  std::string text;
  for (const auto& op : net["op"]) {
    if (!text.empty()) text += " | ";
    for (const auto& b : op["input"]) text += b.get<std::string>() + " ";
    text += "->";
    for (const auto& b : op["output"]) text += " " + b.get<std::string>();
  }
  return text;
}

c2::net_def with_type(c2::net_def net, const std::string& type) {
  net.type = type;
  net.document["type"] = type;
  return net;
}

}  // namespace

TEST_CASE("inference: a chain alternates two shared blobs, named in order of first release") {
  const auto r = c2::optimize_inference_net(load("chain.json"));
  CHECK(r.refusal.empty());
  CHECK(ops_of(r.net) ==
        "X W1 B1 -> __m0_shared | __m0_shared -> __m1_shared | __m1_shared W2 B2 -> __m0_shared | "
        "__m0_shared -> __m1_shared | __m1_shared -> out");
  CHECK(r.shared_names == 2);
  CHECK(r.renamed_blobs == 4);
  CHECK(r.net["external_input"] == load("chain.json").document["external_input"]);
}

TEST_CASE("inference: the blob freed last is reused first (LIFO)") {
  const auto net = c2::parse_net(std::string(R"({"op": [
      {"type": "FC", "input": ["X"], "output": ["p"]},
      {"type": "FC", "input": ["X"], "output": ["q"]},
      {"type": "Sum", "input": ["p", "q"], "output": ["r"]},
      {"type": "Relu", "input": ["r"], "output": ["s"]},
      {"type": "Softmax", "input": ["s"], "output": ["out"]}],
    "external_input": ["X"], "external_output": ["out"]})"));
  const auto r = c2::optimize_inference_net(net);
  // Sum frees p then q (__m0, __m1); its own output cannot take them; Relu takes q.
  CHECK(ops_of(r.net) == "X -> __m0_shared | X -> __m1_shared | __m0_shared __m1_shared -> __m2_shared | "
                         "__m2_shared -> __m1_shared | __m1_shared -> out");
}

TEST_CASE("inference: in-place ops keep every version of a blob in one storage") {
  const auto net = c2::parse_net(std::string(R"({"op": [
      {"type": "FC", "input": ["X"], "output": ["a"]},
      {"type": "Relu", "input": ["a"], "output": ["a"]},
      {"type": "FC", "input": ["a"], "output": ["b"]},
      {"type": "Relu", "input": ["b"], "output": ["b"]},
      {"type": "FC", "input": ["b"], "output": ["c"]},
      {"type": "Softmax", "input": ["c"], "output": ["out"]}],
    "external_input": ["X"], "external_output": ["out"]})"));
  const auto r = c2::optimize_inference_net(net);
  CHECK(ops_of(r.net) == "X -> __m0_shared | __m0_shared -> __m0_shared | __m0_shared -> __m1_shared | "
                         "__m1_shared -> __m1_shared | __m1_shared -> __m0_shared | __m0_shared -> out");
}

TEST_CASE("to_graph: an in-place op is a storage alias, and the memory model orders the blob's readers") {
  const auto net = c2::parse_net(std::string(R"({"op": [
      {"type": "FC", "input": ["X"], "output": ["a"]},
      {"type": "Copy", "input": ["a"], "output": ["k"]},
      {"type": "Relu", "input": ["a"], "output": ["a"]},
      {"type": "Sum", "input": ["a", "k"], "output": ["out"]}],
    "external_input": ["X"], "external_output": ["out"]})"));
  c2::memonger_options options;
  options.blob_bytes = {{"X", 1}, {"a", 10}, {"k", 10}, {"out", 10}};
  const auto graph = c2::to_graph(net, options);
  // Vertices: X, FC, Copy, Relu, Sum. Relu's output lives in FC's storage.
  const auto& g = graph.g;
  REQUIRE(g[3].outputs.size() == 1);
  CHECK(g[3].outputs[0].shares == memopt::shared_storage<std::size_t>{{1, 0}, true});
  const auto table = memopt::make_buffer_table(g);
  CHECK(table.aliased == 1);
  CHECK(graph.buffer_of.at("a") == table.storage[table.id(3, 0)]);
  // Copy reads a before Relu overwrites it: the model keeps it so.
  CHECK(memopt::storage_hazards(g, table) == std::vector<memopt::storage_hazard>{{2, 3, true}, {3, 4, false}});
  CHECK_FALSE(memopt::is_topological_order(g, std::vector<std::size_t>{0, 1, 3, 2, 4}));
  const auto live = memopt::liveness(g, memopt::program_order(g));
  CHECK(live.peak_bytes == 10 + 10 + 10);  // a's storage, k and out at the Sum
}

TEST_CASE("inference: don't-share blobs keep their names and storages") {
  const auto r = c2::optimize_inference_net(load("chain.json"), {.dont_share = {"b"}});
  // b stays: c takes a's storage, d a new one.
  CHECK(ops_of(r.net) == "X W1 B1 -> __m0_shared | __m0_shared -> b | b W2 B2 -> __m0_shared | "
                         "__m0_shared -> __m1_shared | __m1_shared -> out");
}

TEST_CASE("dag: parallel branches never share, the join reuses them") {
  const auto r = c2::optimize_dag_net(load("branches.json"), {.namescope = "ns/"});
  CHECK(r.refusal.empty());
  CHECK(ops_of(r.net) == "X W -> a | a -> b1 | a -> ns/__m0_shared | b1 -> c1 | "
                         "ns/__m0_shared -> ns/__m1_shared | c1 ns/__m1_shared -> ns/__m0_shared | "
                         "ns/__m0_shared -> ns/__m1_shared | ns/__m1_shared -> out");
  // Only blobs actually reused are renamed: a, b1, c1 keep their names.
  CHECK(r.shared_names == 2);
  CHECK(r.renamed_blobs == 4);
}

TEST_CASE("dag: a CPU/GPU net with copies, no storage mixes devices") {
  const auto net = load("devices.json");
  const auto r = c2::optimize_dag_net(net);
  // GPU: a, f share; b, e share. CPU (CopyGPUToCPU's output and after): b_cpu, d share.
  CHECK(ops_of(r.net) == "X W -> __m0_shared | __m0_shared -> __m1_shared | __m1_shared -> __m2_shared | "
                         "__m2_shared -> c | c -> __m2_shared | __m2_shared -> __m1_shared | "
                         "__m1_shared -> __m0_shared | __m0_shared -> out");
  const auto graph = c2::to_graph(net);
  CHECK(graph.device[graph.buffer_of.at("b")] != graph.device[graph.buffer_of.at("b_cpu")]);
  CHECK(graph.device[graph.buffer_of.at("b_cpu")] == graph.device[graph.buffer_of.at("c")]);
  CHECK(graph.device[graph.buffer_of.at("d")] != graph.device[graph.buffer_of.at("e")]);
  // The same net, its copy treated as a GPU op: b_cpu could take a's storage.
  auto moved = net;
  moved.op[2].type = "Copy";
  moved.document["op"][2]["type"] = "Copy";
  const auto m = c2::optimize_dag_net(moved);
  CHECK(m.net["op"][2]["output"][0] != r.net["op"][2]["output"][0]);
}

TEST_CASE("dag: the versions an in-place op writes are one blob, renamed only when shared") {
  // a and b are each written twice, read by the op making the next blob:
  // nothing can share (out is an external output), so nothing is renamed.
  const auto chain = c2::parse_net(std::string(R"({"op": [
      {"type": "FC", "input": ["X"], "output": ["a"]},
      {"type": "Relu", "input": ["a"], "output": ["a"]},
      {"type": "FC", "input": ["a"], "output": ["b"]},
      {"type": "Relu", "input": ["b"], "output": ["b"]},
      {"type": "FC", "input": ["b"], "output": ["out"]}],
    "external_input": ["X"], "external_output": ["out"]})"));
  const auto r = c2::optimize_dag_net(chain);
  CHECK(r.refusal.empty());
  CHECK(r.shared_names == 0);
  CHECK(r.net == chain.document);
  // An external output written twice keeps its name (libFuzzer found the rename).
  const auto twice = c2::parse_net(std::string(
      R"({"op": [{"type": "v", "output": ["out"]}, {"type": "m", "output": ["out"]}], "external_output": ["out"]})"));
  CHECK(c2::optimize_dag_net(twice).net == twice.document);
}

TEST_CASE("dag: heads limit the walk as in the seed, the seed's size pick is a policy") {
  // With head W only, ops fed from X alone are never reached: nothing shared.
  const auto r = c2::optimize_dag_net(load("chain.json"), {.heads = {"Q"}});
  CHECK(r.shared_names == 0);
  const auto sized = c2::optimize_dag_net(
      load("chain.json"), {.seed_size_pick = true, .blob_bytes = {{"a", 100}, {"b", 10}, {"c", 10}}});
  CHECK(sized.shared_names == 2);
}

TEST_CASE("refusals: the net comes back unchanged, with the reason") {
  const auto chain = load("chain.json");
  const auto typed = c2::optimize_inference_net(with_type(chain, "async_scheduling"));
  CHECK(typed.net == with_type(chain, "async_scheduling").document);
  CHECK(typed.refusal.find("type 'async_scheduling'") != std::string::npos);
  CHECK(c2::optimize_dag_net(with_type(chain, "async_scheduling")).refusal.empty());

  const auto once = c2::optimize_inference_net(chain);
  const auto again = c2::parse_net(once.net);
  for (const auto& r : {c2::optimize_inference_net(again), c2::optimize_dag_net(again)}) {
    CHECK(r.net == once.net);
    CHECK(r.refusal.find("already optimised") != std::string::npos);
    CHECK(r.refusal.find("__m0_shared") != std::string::npos);
  }
  auto rnn = chain;
  rnn.op[1].type = "RecurrentNetwork";
  rnn.document["op"][1]["type"] = "RecurrentNetwork";
  for (const auto& r : {c2::optimize_inference_net(rnn), c2::optimize_dag_net(rnn)}) {
    CHECK(r.net == rnn.document);
    CHECK(r.refusal.find("op #1 (RecurrentNetwork)") != std::string::npos);
  }
}

TEST_CASE("errors: a blob read before the op that makes it, malformed nets") {
  const auto early = c2::parse_net(std::string(R"({"op": [
      {"type": "Relu", "input": ["y"], "output": ["z"]},
      {"type": "Relu", "input": ["z"], "output": ["y"]}]})"));
  CHECK_THROWS_WITH_AS((void)c2::optimize_inference_net(early),
                       "op #0 (Relu) reads blob 'y' before any op produced it (op #1 does, later)",
                       c2::net_error);
  CHECK_THROWS_AS((void)c2::optimize_dag_net(early), c2::net_error);
  CHECK_THROWS_WITH_AS((void)c2::parse_net(std::string(R"({"op": [{"type": "Relu", "input": "x"}]})")),
                       "op #0 (Relu): \"input\" must be an array of blob names", c2::net_error);
  CHECK_THROWS_AS((void)c2::parse_net(std::string("{")), c2::net_error);
  CHECK_THROWS_AS((void)c2::parse_net(std::string(R"({"op": [{"input": []}]})")), c2::net_error);
  CHECK_THROWS_AS((void)c2::parse_net(std::string(R"({"op": [{"type": "A", "device_option": {"device_type": "gpu"}}]})")),
                  c2::net_error);
  // A memopt::error like the library's, naming ops rather than vertices.
  try {
    (void)c2::optimize_inference_net(early);
    FAIL("no error");
  } catch (const memopt::error& e) {
    CHECK(e.describe(memopt::index_name) == e.what());
  }
}

TEST_CASE("post-check: a rewrite that changes what an op reads is refused") {
  const auto net = load("chain.json");
  auto ops = net.op;
  CHECK_NOTHROW(c2::detail::check_same_computation(net, ops));
  ops[3].input = {"a"};  // the second Relu reads a instead of c
  CHECK_THROWS_AS(c2::detail::check_same_computation(net, ops), std::logic_error);
  ops = net.op;
  ops[1].output = {"a"};  // Relu reads and writes one blob it did not before
  ops[2].input = {"a", "W2", "B2"};
  CHECK_THROWS_AS(c2::detail::check_same_computation(net, ops), std::logic_error);
}
