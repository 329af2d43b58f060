// tf_like/: where TensorFlow shares a buffer, the GraphDef adapter declares a
// storage: reference outputs written in place, forwarding ops as views.
#include <tf_like/graph_def.hpp>
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
