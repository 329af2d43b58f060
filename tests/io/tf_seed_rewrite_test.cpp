// The memory optimizer's own test scenarios (grappler's
// memory_optimizer_test.cc), rebuilt as GraphDefs and run through the
// TF-like adapter: the same node counts, names and inputs. Scenarios that
// hinge on TF's cost model (SwappingHeuristics, UnswappableInputs) are
// covered in tests/rewrite/swap_test.cpp with times worked out by hand.
#include <tf_like/rewrite.hpp>

#include <memopt/io/graph_file.hpp>
#include <memopt/rewrite.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace rw = memopt::rewrite;

namespace {

struct rewritten {
  nlohmann::json doc;
  nlohmann::json out;

  [[nodiscard]] std::size_t size() const { return out["node"].size(); }
  [[nodiscard]] const nlohmann::json* node(const std::string& name) const {
    for (const auto& n : out["node"]) {
      if (n["name"] == name) return &n;
    }
    return nullptr;
  }
  [[nodiscard]] std::vector<std::string> inputs(const std::string& name) const {
    const auto* n = node(name);
    REQUIRE(n != nullptr);
    return n->value("input", std::vector<std::string>{});
  }
};

/// Recomputation on a GraphDef as memopt-plan rewrite runs it.
rewritten recompute(const std::string& graph_def, rw::recompute_mode mode, const std::string& scope = "gradients/",
                    std::vector<std::string> feeds = {}) {
  rewritten r{.doc = nlohmann::json::parse(graph_def)};
  const auto file = tf_like::to_file_graph(tf_like::read_graph_def(r.doc), r.doc);
  const auto facts = rw::read_facts(file);
  rw::recompute_options options;
  options.mode = mode;
  options.target_scope = scope;
  options.has_hint = [&](std::size_t v) { return file[v].attrs.contains("recompute_hint"); };
  for (const auto& feed : feeds) {
    options.feed.push_back(static_cast<std::size_t>(std::ranges::find(facts.name, feed) - facts.name.begin()));
  }
  const auto plan = rw::recompute(facts, options);
  REQUIRE(rw::check_plan(facts, plan).empty());
  r.out = tf_like::rewritten_graph_def(r.doc, facts, plan);
  return r;
}

const std::string simple_subgraph = R"({"node": [
  {"name": "a", "op": "VariableV2"},
  {"name": "b", "op": "Identity", "input": ["a"], "attr": {"_recompute_hint": {"i": "0"}}},
  {"name": "c", "op": "Identity", "input": ["b"]},
  {"name": "gradients/d", "op": "AddN", "input": ["c"]},
  {"name": "gradients/e", "op": "AddN", "input": ["gradients/d", "b"]},
  {"name": "gradients/f", "op": "AddN", "input": ["gradients/e", "a"]}]})";

}  // namespace

TEST_CASE("the seed's SimpleSubgraph: a hinted node copied for a gradient, with its trigger") {
  const auto r = recompute(simple_subgraph, rw::recompute_mode::manual);
  CHECK(r.size() == 8);
  CHECK(r.inputs("gradients/e") == std::vector<std::string>{"gradients/d", "Recomputed/b"});
  CHECK(r.inputs("Recomputed/b") == std::vector<std::string>{"a", "^RecomputeTrigger/b"});
  CHECK(r.inputs("RecomputeTrigger/b") == std::vector<std::string>{"^gradients/d"});
}

TEST_CASE("the seed's NoFeedsRecomputed: a fed node is never copied") {
  CHECK(recompute(simple_subgraph, rw::recompute_mode::manual, "gradients/", {"b"}).size() == 6);
}

TEST_CASE("the seed's TwoInputSubgraphs: a custom scope, two hinted inputs") {
  const auto r = recompute(R"({"node": [
      {"name": "a", "op": "VariableV2", "attr": {"_recompute_hint": {"i": "0"}}},
      {"name": "b", "op": "VariableV2", "attr": {"_recompute_hint": {"i": "0"}}},
      {"name": "some_name_scope/gradients/two_subgraph_inputs", "op": "AddN", "input": ["a", "b"]}]})",
                           rw::recompute_mode::manual, "some_name_scope/gradients");
  CHECK(r.size() == 7);
  for (const char* name : {"Recomputed/a", "Recomputed/b", "RecomputeTrigger/a", "RecomputeTrigger/b"}) {
    CHECK(r.node(name) != nullptr);
  }
}

TEST_CASE("the seed's MultiNode: the heuristic copies the cheap batch norm and ReLU, not the convolution") {
  const auto r = recompute(memopt::io::detail::read_file(MEMOPT_DATA_DIR "/rewrite/multinode.graphdef.json"),
                           rw::recompute_mode::heuristic);
  CHECK(r.size() == 13);
  CHECK(r.inputs("gradients/Conv1Grad") == std::vector<std::string>{"gradients/BN1Grad", "Recomputed/ReLU"});
  CHECK(r.inputs("gradients/ReLUGrad") == std::vector<std::string>{"gradients/Conv1Grad", "Recomputed/ReLU"});
  CHECK(r.inputs("gradients/BNGrad") == std::vector<std::string>{"gradients/ReLUGrad", "Conv"});
  CHECK(r.inputs("Recomputed/BN") == std::vector<std::string>{"Conv", "^RecomputeTrigger/BN"});
  CHECK(r.inputs("RecomputeTrigger/BN") == std::vector<std::string>{"^RecomputeTrigger/ReLU"});
  CHECK(r.inputs("Recomputed/ReLU") == std::vector<std::string>{"Recomputed/BN", "^RecomputeTrigger/ReLU"});
  CHECK(r.inputs("RecomputeTrigger/ReLU") == std::vector<std::string>{"^gradients/BN1Grad"});
}

TEST_CASE("the seed's SimpleSwapping: a manual swap, its pair and triggers, twice changes nothing") {
  const auto doc = nlohmann::json::parse(R"({"node": [
      {"name": "a", "op": "VariableV2", "device": "/gpu:0"},
      {"name": "b", "op": "AddN", "input": ["a"], "device": "/gpu:0",
       "attr": {"T": {"type": "DT_FLOAT"}, "_output_shapes": {"list": {"shape": [{"dim": [{"size": "10"}, {"size": "10"}]}]}}}},
      {"name": "c", "op": "AddN", "input": ["b"], "device": "/gpu:0"},
      {"name": "d", "op": "AddN", "input": ["c"], "device": "/gpu:0"},
      {"name": "e", "op": "AddN", "input": ["b", "d"], "device": "/gpu:0", "attr": {"_swap_to_host": {"list": {"i": ["0"]}}}},
      {"name": "constant", "op": "Const"},
      {"name": "init", "op": "Assign", "input": ["a", "constant"]}]})");
  const auto file = tf_like::to_file_graph(tf_like::read_graph_def(doc), doc);
  const auto facts = rw::read_facts(file);
  // Completion times in the graph's order, 1 us apart: b's 400 bytes take
  // 0.025 us to copy back, so the swap-in waits for c, d's input (d itself
  // completes too late).
  std::vector<double> done(facts.size());
  for (std::size_t v = 0; v < done.size(); ++v) done[v] = static_cast<double>(v + 1);
  const auto plan = rw::swap(facts, {{4, file[4].attrs["swap_to_host"].get<std::vector<std::size_t>>()}}, done);
  const auto out = tf_like::rewritten_graph_def(doc, facts, plan);
  REQUIRE(out["node"].size() == 9);
  CHECK(out["node"][4]["input"] == nlohmann::json::array({"swap_in_e_0", "d"}));
  CHECK(out["node"][7]["name"] == "swap_out_e_0");
  CHECK(out["node"][7]["op"] == "_CopyFromGpuToHost");
  CHECK(out["node"][7]["attr"]["_class"]["list"]["s"] == nlohmann::json::array({"loc@e_0"}));
  CHECK(out["node"][7]["input"] == nlohmann::json::array({"b"}));
  CHECK(out["node"][8]["name"] == "swap_in_e_0");
  CHECK(out["node"][8]["op"] == "_CopyFromHostToGpu");
  CHECK(out["node"][8]["input"] == nlohmann::json::array({"swap_out_e_0", "^c"}));
  CHECK(out["node"][2]["input"] == nlohmann::json::array({"b", "^swap_out_e_0"}));
  // Again on the result: already swapped.
  const auto again = tf_like::to_file_graph(tf_like::read_graph_def(out), out);
  const auto facts_again = rw::read_facts(again);
  std::vector<double> done_again(facts_again.size(), 1.0);
  CHECK(rw::swap(facts_again, {{4, {0}}}, done_again).empty());
}
