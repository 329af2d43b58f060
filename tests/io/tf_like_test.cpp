// tf_like/: where TensorFlow shares a buffer, the GraphDef adapter declares a
// storage: reference outputs written in place, forwarding ops as views.
#include <tf_like/graph_def.hpp>

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
  for (const auto& run : r.runs) names.push_back(r.graph.tasks[run.task].name);
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
