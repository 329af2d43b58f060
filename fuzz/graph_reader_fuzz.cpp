// memopt-graph/1 text → io::parse_graph, in both memory models. A malformed
// file must be refused with a memopt::error; anything else that escapes (a
// crash, a sanitizer report, another exception) is a finding. A graph that is
// read must have a peak in its own order or be refused as having no order.
#include "fuzz_input.hpp"

#include <memopt/io/graph_file.hpp>
#include <memopt/liveness.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = memopt::fuzz::text_of(data, size);
  for (const bool storage_aliases : {true, false}) {
    try {
      const auto g = memopt::io::parse_graph(text, {.storage_aliases = storage_aliases});
      (void)memopt::liveness(g, memopt::program_order(g));
    } catch (const memopt::error&) {
    }
  }
  return 0;
}
