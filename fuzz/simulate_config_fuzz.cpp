// JSON → memopt-plan simulate's config reader → a simulation of a small
// fork/join graph with that config. A bad config is refused with a cli_error
// naming the field, a bad placement, fetch or feed with a cli_error or a
// memopt::error; a config the reader takes always simulates.
#include "fuzz_input.hpp"

#include "../examples/plan/simulate.hpp"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto g = memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "fork_join", "nodes": [
    {"name": "x", "op": "op", "outputs": [100], "device": "A"},
    {"name": "y", "op": "op", "outputs": [40], "inputs": ["x:0"], "device": "A", "control": ["x"]},
    {"name": "z", "op": "op", "outputs": [50], "inputs": ["x:0"], "device": "B"},
    {"name": "w", "op": "op", "outputs": [10], "inputs": ["y:0", "z:0"], "device": "A"}]})");
  const auto doc = nlohmann::json::parse(memopt::fuzz::text_of(data, size), nullptr, false);
  if (doc.is_discarded()) return 0;
  try {
    const auto config = memopt::plan::parse_simulation_config(doc, "fuzz");
    for (const auto& policy : memopt::plan::simulation_policy_names()) {
      (void)memopt::plan::run_simulation(g, config, policy, "", "fuzz");
    }
  } catch (const memopt::plan::cli_error&) {
  }
  return 0;
}
