// The memory optimizer's own test scenarios (grappler's
// memory_optimizer_test.cc), rebuilt as GraphDefs and run through the
// TF-like adapter: the same node counts, names and inputs. The swapping
// heuristic's own scenarios (SwappingHeuristics, UnswappableInputs) run on
// the seed's test cluster twice: with TF's cost model, where memopt picks as
// the seed does, and storage-aware (the default), where views change the picks.
#include <tf_like/rewrite.hpp>

#include <memopt/io/graph_file.hpp>
#include <memopt/rewrite.hpp>
#include <memopt/simulate.hpp>

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

namespace {

/// The swapping heuristic on a GraphDef of grappler's own tests, run on the
/// seed's test cluster (a GPU of 1 MiB at 128 KB/s, where every op takes
/// seconds) with `fetch`, first ready first as its virtual cluster runs, under
/// `model` (with TF's cost model, an op completes 1 ns after it ends, as in
/// the seed); the GraphDef the plan makes.
struct heuristic_swaps {
  memopt::io::file_graph file;
  rw::graph_facts facts;
  std::vector<rw::swap_request> requests;
  nlohmann::json out;

  [[nodiscard]] std::vector<std::string> inputs(const std::string& name) const {
    for (const auto& n : out["node"]) {
      if (n["name"] == name) return n.value("input", std::vector<std::string>{});
    }
    FAIL("no node " << name);
    return {};
  }
  /// The names of the nodes the plan added.
  [[nodiscard]] std::vector<std::string> added() const {
    std::vector<std::string> names;
    for (std::size_t k = facts.size(); k < out["node"].size(); ++k) names.push_back(out["node"][k]["name"]);
    return names;
  }
  /// The data inputs the heuristic asked to swap, as "node:input".
  [[nodiscard]] std::vector<std::string> picked() const {
    std::vector<std::string> names;
    for (const auto& r : requests) {
      for (const std::size_t k : r.operands) names.push_back(facts.name[r.vertex] + ":" + std::to_string(k));
    }
    return names;
  }
};

heuristic_swaps swap_heuristically(const std::string& file_name, const std::vector<std::string>& fetch,
                                   tf_like::memory_model model) {
  namespace sim = memopt::sim;
  const auto doc = nlohmann::json::parse(memopt::io::detail::read_file(MEMOPT_DATA_DIR "/rewrite/" + file_name));
  heuristic_swaps r{.file = tf_like::to_file_graph(tf_like::read_graph_def(doc), doc, {.memory = model})};
  r.facts = rw::read_facts(r.file);
  sim::machine m;
  m.devices[0] = {.name = "/gpu:0", .kind = "GPU", .flops_per_s = 24e9, .bytes_per_s = 128e3, .memory_bytes = 1 << 20};
  sim::simulation_options options;
  for (const auto& name : fetch) {
    options.tasks.fetch.push_back(static_cast<std::size_t>(std::ranges::find(r.facts.name, name) - r.facts.name.begin()));
  }
  const auto run = sim::simulate(r.file, m, sim::one_device(r.file), sim::sum_cost{}, sim::first_ready{}, options);
  const auto listed = [&](std::size_t v, const char* key, std::size_t index) {
    const auto it = r.file[v].attrs.find(key);
    return it != r.file[v].attrs.end() && std::ranges::count(*it, nlohmann::json(index)) > 0;
  };
  rw::swap_options swapping;
  if (model == tf_like::memory_model::tf_cost_model) swapping.completion_delay_us = 0.001;
  swapping.is_reference_input = [&](std::size_t v, std::size_t k) { return listed(v, "ref_inputs", k); };
  swapping.is_reference_output = [&](std::size_t v, std::size_t port) { return listed(v, "ref_outputs", port); };
  r.requests = rw::choose_swaps(r.facts, run, 0, m.devices[0].memory_bytes, swapping);
  const auto plan = rw::swap(r.facts, r.requests, rw::completion_times(run, r.facts.size()), swapping);
  REQUIRE(rw::check_plan(r.facts, plan).empty());
  r.out = tf_like::rewritten_graph_def(doc, r.facts, plan);
  return r;
}

}  // namespace

// SwappingHeuristics: v a variable; a = Identity(v), b = Square(v), c =
// Sqrt(a), d = Identity(b), each 512 KiB; e concatenates a, b, c, d (2 MiB);
// f, g, h, i read a, b, c, d after e. The peak is e's step, far above 1 MiB:
// every tensor live there with a use after it is taken.
TEST_CASE("the seed's SwappingHeuristics under TF's cost model: e's inputs b, c and d swapped, a not, as the seed") {
  const auto r = swap_heuristically("swapping_heuristics.graphdef.json", {"e", "f", "g", "h", "i"},
                                    tf_like::memory_model::tf_cost_model);
  // a, an Identity of the variable on its device, forwards the variable's
  // buffer: a reference, never swapped. b, c and d are buffers of their own.
  // g (reading b) runs before e; h and i, the other late readers, are asked
  // for too, but their one input is the one swapped: no swap-in trigger, as
  // in the seed.
  CHECK(r.picked() == std::vector<std::string>{"e:1", "e:2", "e:3", "h:0", "i:0"});
  CHECK(r.inputs("e") == std::vector<std::string>{"a", "swap_in_e_1", "swap_in_e_2", "swap_in_e_3", "axis"});
  CHECK(r.added() == std::vector<std::string>{"swap_out_e_1", "swap_in_e_1", "swap_out_e_2", "swap_in_e_2",
                                              "swap_out_e_3", "swap_in_e_3"});
  CHECK(r.inputs("d") == std::vector<std::string>{"b", "^swap_out_e_1"});  // b's other reader waits for its copy
  CHECK(r.file[1].attrs["ref_outputs"] == nlohmann::json::array({0}));    // a forwards v
  CHECK(r.file[0].persistent);                                             // v
}

TEST_CASE("the seed's SwappingHeuristics, storage-aware (the default): b and c swapped, d is b's storage") {
  const auto r = swap_heuristically("swapping_heuristics.graphdef.json", {"e", "f", "g", "h", "i"},
                                    tf_like::memory_model::storage_aware);
  // Storages at e's step: v (a is a view of it), b (d a view of it), c and e.
  // v's own readers (a, b) run before the peak, e has no reader: candidates b
  // and c, whose direct reads after the peak are e:1 and e:2 (g and h, their
  // other readers, run before e, first ready first; with no 1 ns delay, h
  // ending as e starts is no use after it). d is no candidate: its bytes are
  // b's storage, counted once. The swap of b frees nothing while d, its
  // view, is read by e and i: memopt's model says so (the best peak rises by
  // the swap-in's 512 KiB, docs/rewrite.md).
  CHECK(r.picked() == std::vector<std::string>{"e:1", "e:2"});
  CHECK(r.inputs("e") == std::vector<std::string>{"a", "swap_in_e_1", "swap_in_e_2", "d", "axis"});
  CHECK_FALSE(r.file[0].persistent);
  CHECK(r.file[4].outputs[0].shares.has_value());  // d = Identity(b), a view
}

// UnswappableInputs: a = Square(v); b and c Identities of a; d = ScatterAdd(v,
// indices, c), whose output is the variable (a reference); e concatenates b,
// c and d. The peak is e's step.
TEST_CASE("the seed's UnswappableInputs under TF's cost model: the scatter's reference stays, its update goes") {
  const auto r = swap_heuristically("unswappable_inputs.graphdef.json", {"e"}, tf_like::memory_model::tf_cost_model);
  // d's output is a reference: never a candidate. c is read by d, which ends
  // as e starts (a use after the peak: the seed's completion is 1 ns late),
  // and by e; b by e only. b's swap has no other reader to trigger its copy
  // out: not swapped, as in the seed.
  CHECK(r.picked() == std::vector<std::string>{"d:2", "e:0", "e:1"});
  CHECK(r.inputs("e") == std::vector<std::string>{"b", "swap_in_e_1", "d", "axis", "^swap_out_d_2"});
  CHECK(r.inputs("d") == std::vector<std::string>{"v", "indices", "swap_in_d_2", "^swap_out_e_1"});
  CHECK(r.added() == std::vector<std::string>{"swap_out_d_2", "swap_in_d_2", "swap_out_e_1", "swap_in_e_1"});
  CHECK(r.file[7].attrs["ref_inputs"] == nlohmann::json::array({0}));
  CHECK(r.file[7].attrs["ref_outputs"] == nlohmann::json::array({0}));
}

TEST_CASE("the seed's UnswappableInputs, storage-aware (the default): b and c are views of a, nothing moves") {
  const auto r = swap_heuristically("unswappable_inputs.graphdef.json", {"e"}, tf_like::memory_model::storage_aware);
  // b and c are views of a, whose own reads (b, c) come before the peak; the
  // GraphDef marks no reference, so d's output is a tensor of its own, read
  // by e only: asked for, but nothing else reads it to trigger the copy out.
  CHECK(r.picked() == std::vector<std::string>{"e:2"});
  CHECK(r.inputs("e") == std::vector<std::string>{"b", "c", "d", "axis"});
  CHECK(r.added().empty());
}

TEST_CASE("TF's cost model on a GraphDef: no views, persistent variables, references from the ops' signatures") {
  const auto doc = nlohmann::json::parse(R"({"node": [
      {"name": "v", "op": "VariableV2", "device": "/gpu:0"},
      {"name": "k", "op": "Const"},
      {"name": "r", "op": "Identity", "input": ["v"], "device": "/gpu:0"},
      {"name": "far", "op": "Identity", "input": ["v"], "device": "/cpu:0"},
      {"name": "rr", "op": "Reshape", "input": ["r", "k"], "device": "/gpu:0"},
      {"name": "x", "op": "Square", "input": ["r"], "device": "/gpu:0"},
      {"name": "y", "op": "Identity", "input": ["x"], "device": "/gpu:0"},
      {"name": "m", "op": "RefMerge", "input": ["v", "rr"]},
      {"name": "up", "op": "AssignAdd", "input": ["v", "x", "^k"], "device": "/gpu:0"}]})");
  const auto g = tf_like::read_graph_def(doc);
  CHECK(g[6].outputs[0].shares.has_value());  // read storage-aware: y is a view of x
  const auto file = tf_like::to_file_graph(g, doc, {.memory = tf_like::memory_model::tf_cost_model});
  for (const auto v : boost::make_iterator_range(vertices(file))) CHECK_FALSE(file[v].outputs[0].shares.has_value());
  CHECK(file[0].persistent);
  CHECK(file[1].persistent);
  CHECK_FALSE(file[5].persistent);
  const auto refs = [&](std::size_t v, const char* key) { return file[v].attrs.value(key, nlohmann::json::array()); };
  CHECK(refs(0, "ref_outputs") == nlohmann::json::array({0}));
  CHECK(refs(2, "ref_outputs") == nlohmann::json::array({0}));  // an Identity of the variable on its device
  CHECK(refs(3, "ref_outputs").empty());                         // on another device: a copy
  CHECK(refs(4, "ref_outputs") == nlohmann::json::array({0}));  // a Reshape of that Identity
  CHECK(refs(6, "ref_outputs").empty());                         // an Identity of a plain tensor
  CHECK(refs(7, "ref_inputs") == nlohmann::json::array({0, 1}));
  CHECK(refs(8, "ref_inputs") == nlohmann::json::array({0}));
  CHECK(refs(8, "ref_outputs") == nlohmann::json::array({0}));
  // A document that is not the graph's is refused.
  CHECK_THROWS_AS((void)tf_like::to_file_graph(g, nlohmann::json::parse(R"({"node": []})")), memopt::io::format_error);
}
