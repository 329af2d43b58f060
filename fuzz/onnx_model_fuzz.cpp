// Bytes → an ONNX model (onnx_import::parse_model) → its memopt-graph/1
// document → the graph in both memory models. A malformed model must be
// refused with a memopt::error; anything else that escapes (a crash, a
// sanitizer report, another exception) is a finding. A graph that is read
// must have a peak in its own order.
#include "fuzz_input.hpp"

#include <onnx_import/model.hpp>

#include <memopt/liveness.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = memopt::fuzz::text_of(data, size);
  try {
    const auto doc = onnx_import::to_graph_json(onnx_import::parse_model(bytes));
    for (const bool storage_aliases : {true, false}) {
      const auto g = memopt::io::graph_from_json(doc, {.storage_aliases = storage_aliases});
      (void)memopt::liveness(g, memopt::program_order(g));
    }
  } catch (const memopt::error&) {
  }
  return 0;
}
