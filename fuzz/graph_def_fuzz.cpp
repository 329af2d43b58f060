// TF GraphDef JSON → tf_like::read_graph_def: a bad GraphDef is refused with a
// memopt::error naming what is wrong.
#include "fuzz_input.hpp"

#include <tf_like/graph_def.hpp>

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto doc = nlohmann::json::parse(memopt::fuzz::text_of(data, size), nullptr, false);
  if (doc.is_discarded()) return 0;
  try {
    (void)tf_like::read_graph_def(doc);
  } catch (const memopt::error&) {
  }
  return 0;
}
