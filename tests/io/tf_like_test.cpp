// tf_like/: where TensorFlow shares a buffer, the GraphDef adapter declares a
// storage: reference outputs written in place, forwarding ops as views.
#include <tf_like/graph_def.hpp>
#include <tf_like/rewrite.hpp>

#include <memopt/rewrite.hpp>

#include <memopt/simulate.hpp>
#include <tf_like/placer_config.hpp>

#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

using shared = memopt::shared_storage<std::size_t>;

TEST_CASE("read_graph_def: Assign writes its reference in place, Identity forwards, the model orders them") {
  const auto g = tf_like::read_graph_def(nlohmann::json::parse(R"({"node": [
      {"name": "v", "op": "VariableV2", "attr": {"ref_outputs": [0]}},
      {"name": "init", "op": "Const"},
      {"name": "read", "op": "Identity", "input": ["v"], "attr": {"ref_inputs": [0]}},
      {"name": "use", "op": "MatMul", "input": ["read", "init"]},
      {"name": "assign", "op": "Assign", "input": ["v", "init"],
       "attr": {"ref_inputs": [0], "ref_outputs": [0]}},
      {"name": "after", "op": "Neg", "input": ["assign"]}]})"));
  CHECK_FALSE(g[0].outputs[0].shares.has_value());
  CHECK(g[2].outputs[0].shares == shared{{0, 0}, false});
  CHECK(g[4].outputs[0].shares == shared{{0, 0}, true});
  CHECK_FALSE(g[5].outputs[0].shares.has_value());
  const auto table = memopt::make_buffer_table(g);
  CHECK(table.aliased == 2);
  // read and use touch v before the Assign overwrites it; after reads the new value.
  CHECK(memopt::storage_hazards(g, table) ==
        std::vector<memopt::storage_hazard>{{2, 4, true}, {3, 4, true}, {4, 5, false}});
  CHECK_FALSE(memopt::is_topological_order(g, std::vector<std::size_t>{0, 1, 4, 2, 3, 5}));
  CHECK(memopt::is_topological_order(g, memopt::program_order(g)));
}

TEST_CASE("GraphDef: an output of more than 2^64 - 1 bytes is refused, naming the node and port") {
  const auto sized = [](const std::string& dims) {
    return nlohmann::json::parse(R"({"node": [{"name": "big", "op": "Const", "attr": {"T": {"type": "DT_FLOAT"},
        "_output_shapes": {"list": {"shape": [{"dim": [{"size": "2"}]}, {"dim": )" + dims + "}]}}}}]}");
  };
  CHECK(tf_like::read_graph_def(sized(R"([{"size": "4611686018427387903"}])"))[0].outputs[1].bytes ==
        18446744073709551612u);
  const std::string refusal = "node 'big': _output_shapes: output 1 is larger than 2^64 - 1 bytes";
  CHECK_THROWS_WITH_AS((void)tf_like::read_graph_def(sized(R"([{"size": "4294967296"}, {"size": "1073741824"}])")),
                       refusal.c_str(), memopt::error);
  CHECK_THROWS_WITH_AS((void)tf_like::read_graph_def(sized(R"([{"size": "99999999999999999999"}])")),
                       refusal.c_str(), memopt::error);
  CHECK_THROWS_WITH_AS((void)tf_like::read_graph_def(sized(R"([{"size": 99999999999999999999}])")),
                       refusal.c_str(), memopt::error);
}

TEST_CASE("the adapter's errors are memopt::errors naming nodes or keys") {
  CHECK_THROWS_WITH_AS((void)tf_like::read_graph_def(nlohmann::json::parse(R"({"node": [{"name": "a", "input": ["b"]}]})")),
                       "node 'a': input \"b\" names no node", memopt::error);
  try {
    (void)tf_like::parse_placer_config(nlohmann::json::parse(R"({"devices": []})"));
    FAIL("no error");
  } catch (const memopt::error& e) {
    CHECK(e.describe(memopt::index_name) == e.what());
    CHECK(std::string(e.what()) == "\"devices\" is empty: there is nothing to place on");
  }
}

TEST_CASE("a GraphDef simulated with the seed's semantics: Merge, persistent op types, transfer names") {
  const auto g = tf_like::read_graph_def(nlohmann::json::parse(R"({"node": [
      {"name": "c", "op": "Const", "device": "/job:localhost/replica:0/task:0/device:CPU:0"},
      {"name": "p", "op": "Placeholder", "device": "/job:localhost/replica:0/task:0/device:CPU:0"},
      {"name": "sw", "op": "Switch", "input": ["p", "c"], "device": "/job:localhost/replica:0/task:0/device:CPU:0"},
      {"name": "f", "op": "Neg", "input": ["sw"], "device": "/job:localhost/replica:0/task:0/device:GPU:0"},
      {"name": "t", "op": "Identity", "input": ["sw:1"], "device": "/job:localhost/replica:0/task:0/device:GPU:0"},
      {"name": "m", "op": "Merge", "input": ["f", "t"], "device": "/job:localhost/replica:0/task:0/device:GPU:0"}]})"));
  namespace sim = memopt::sim;
  sim::machine m;
  m.devices = {{.name = "/job:localhost/replica:0/task:0/device:CPU:0"},
               {.name = "/job:localhost/replica:0/task:0/device:GPU:0"}};
  const auto r = sim::simulate(g, m, sim::placement_by_device_field(g, m), sim::fixed_cost{1}, sim::first_ready{});
  std::vector<std::string> names;
  for (const auto& run : r.runs) names.emplace_back(r.graph.name(run.task));
  // c and p ready at 0 (c first by name); each port of sw crosses once, and at
  // equal ready times the first receive goes before the second send (by name);
  // both branches run and m runs once per input.
  const std::string cpu = "_job_localhost_replica_0_task_0_device_CPU_0";
  const std::string gpu = "_job_localhost_replica_0_task_0_device_GPU_0";
  CHECK(names == std::vector<std::string>{"c", "p", "sw", "Send_sw_0_from_" + cpu + "_to_" + gpu,
                                          "Recv_sw_0_on_" + gpu, "Send_sw_1_from_" + cpu + "_to_" + gpu,
                                          "Recv_sw_1_on_" + gpu, "f", "t", "m", "m"});
  CHECK(r.graph.transfers == 2);
  CHECK(r.graph.buffers[r.graph.first_buffer[0]].persistent);  // Const: the seed's persistent op type
}

namespace {

/// A GraphDef node's input list.
std::vector<std::string> inputs_named(const nlohmann::json& graph_def, const std::string& name) {
  for (const auto& node : graph_def["node"]) {
    if (node["name"] == name) return node.value("input", std::vector<std::string>{});
  }
  FAIL("no node " << name);
  return {};
}

const nlohmann::json& node_named(const nlohmann::json& graph_def, const std::string& name) {
  for (const auto& node : graph_def["node"]) {
    if (node["name"] == name) return node;
  }
  throw std::runtime_error("no node " + name);
}

}  // namespace

TEST_CASE("GraphDef rewrites: sizes from _output_shapes, the seed's names, inputs and attributes written back") {
  namespace rw = memopt::rewrite;
  const auto shape = R"({"_output_shapes": {"list": {"shape": [{"dim": [{"size": "5"}, {"size": "5"}]}]}}, "T": {"type": "DT_FLOAT"}})";
  const auto attrs = [&](const std::string& more) {
    auto a = nlohmann::json::parse(shape);
    if (!more.empty()) a.update(nlohmann::json::parse(more));
    return a;
  };
  nlohmann::json doc = nlohmann::json::parse(R"({"node": [
      {"name": "x", "op": "Placeholder"}, {"name": "a", "op": "Relu", "input": ["x"]},
      {"name": "b", "op": "Relu", "input": ["x"]}, {"name": "c", "op": "Relu", "input": ["x"]},
      {"name": "d", "op": "AddN", "input": ["a", "b:0", "c", "^x"]},
      {"name": "gradients/g", "op": "Mul", "input": ["d", "a"]}]})");
  for (auto& node : doc["node"]) node["attr"] = attrs("");
  doc["node"][1]["attr"]["_recompute_hint"] = {{"i", "0"}};
  doc["node"][5]["attr"]["_swap_to_host"] = {{"list", {{"i", {"1"}}}}};
  const auto g = tf_like::read_graph_def(doc);
  CHECK(g[0].outputs[0].bytes == 100);  // 5 x 5 floats
  const auto file = tf_like::to_file_graph(g, doc);
  CHECK(file[1].attrs["recompute_hint"] == true);
  CHECK(file[5].attrs["swap_to_host"] == nlohmann::json::array({1}));
  const auto facts = rw::read_facts(file);

  rw::recompute_options manual;
  manual.mode = rw::recompute_mode::manual;
  manual.has_hint = [&](std::size_t v) { return file[v].attrs.contains("recompute_hint"); };
  const auto recomputed = rw::recompute(facts, manual);
  const auto accumulated = rw::accumulate(facts, {4});
  const auto plan = rw::then(recomputed, accumulated, facts.size());
  REQUIRE(rw::check_plan(facts, plan).empty());
  const auto out = tf_like::rewritten_graph_def(doc, facts, plan);
  // The seed's recomputation: the hinted Relu copied for the gradient, with its trigger.
  CHECK(inputs_named(out, "Recomputed/a") == std::vector<std::string>{"x", "^RecomputeTrigger/a"});
  CHECK(node_named(out, "Recomputed/a")["attr"]["_recompute_hint"] == nlohmann::json{{"i", "0"}});
  CHECK(inputs_named(out, "gradients/g") == std::vector<std::string>{"d", "Recomputed/a"});
  // The seed's accumulation, TF's input syntax; the read keeps only T and var_name.
  CHECK(node_named(out, "d")["op"] == "DestroyTemporaryVariable");
  CHECK(inputs_named(out, "d") == std::vector<std::string>{"d/tmp_var_initializer", "^d/tmp_var_accum_0",
                                                           "^d/tmp_var_accum_1", "^d/tmp_var_accum_2"});
  CHECK(node_named(out, "d")["attr"] == nlohmann::json::parse(R"({"T": {"type": "DT_FLOAT"}, "var_name": {"s": "d/tmp_var"}})"));
  // The control input ^x finishes first in the walk back from d: it runs before the buffer.
  CHECK(inputs_named(out, "d/tmp_var") == std::vector<std::string>{"^x", "^c"});
  CHECK(inputs_named(out, "d/tmp_var_accum_1") == std::vector<std::string>{"d/tmp_var_initializer", "b"});
  CHECK(node_named(out, "d/tmp_var")["attr"]["shape"] == nlohmann::json::parse(R"({"shape": {"dim": [{"size": "5"}, {"size": "5"}]}})"));
  CHECK(node_named(out, "d/tmp_var_initializer")["attr"]["validate_shape"] == nlohmann::json{{"b", false}});
  CHECK(node_named(out, "d/tmp_var_accum_0")["attr"]["use_locking"] == nlohmann::json{{"b", true}});
  // Read back, the sizes come back from _output_shapes.
  const auto again = tf_like::read_graph_def(out);
  CHECK(again[num_vertices(again) - 1].outputs[0].bytes == 100);

  // A manual swap of gradients/g's input 1: the pair and the node share the seed's class.
  std::vector<double> done(facts.size());
  for (std::size_t v = 0; v < done.size(); ++v) done[v] = static_cast<double>(v + 1);
  const auto swapped = rw::swap(facts, {{5, {1}}}, done);
  REQUIRE(swapped.nodes.size() == 2);
  const auto with_swap = tf_like::rewritten_graph_def(doc, facts, swapped);
  const auto group = nlohmann::json::array({"loc@gradients/g_1"});
  CHECK(node_named(with_swap, "swap_out_gradients/g_1")["attr"]["_class"]["list"]["s"] == group);
  CHECK(node_named(with_swap, "swap_in_gradients/g_1")["attr"]["_class"]["list"]["s"] == group);
  CHECK(node_named(with_swap, "gradients/g")["attr"]["_class"]["list"]["s"] == group);
  CHECK(inputs_named(with_swap, "gradients/g") == std::vector<std::string>{"d", "swap_in_gradients/g_1"});
  CHECK(node_named(with_swap, "swap_out_gradients/g_1")["op"] == "_CopyFromGpuToHost");
}

TEST_CASE("GraphDef rewrites: an assignment relaxed as the seed marks it") {
  namespace rw = memopt::rewrite;
  const auto doc = nlohmann::json::parse(R"({"node": [
      {"name": "constant", "op": "Const", "device": "/cpu:0"},
      {"name": "variable", "op": "VariableV2", "device": "/cpu:0", "attr": {"ref_outputs": [0]}},
      {"name": "assign", "op": "Assign", "input": ["variable", "constant"], "device": "/cpu:0",
       "attr": {"ref_inputs": [0], "ref_outputs": [0]}},
      {"name": "exp", "op": "Exp", "input": ["assign"], "device": "/cpu:1"}]})");
  const auto g = tf_like::read_graph_def(doc);
  const auto file = tf_like::to_file_graph(g, doc);
  CHECK(file[2].attrs["ref_inputs"] == nlohmann::json::array({0}));
  const auto facts = rw::read_facts(file);
  const auto out = tf_like::rewritten_graph_def(doc, facts, rw::relax_allocator_constraints(facts));
  CHECK(node_named(out, "assign")["attr"]["_grappler_relax_allocator_constraints"] == nlohmann::json{{"b", true}});
  CHECK_FALSE(node_named(out, "exp").contains("attr"));
}
