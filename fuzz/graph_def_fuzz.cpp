// TF GraphDef JSON → tf_like::read_graph_def: a bad GraphDef is refused with a
// memopt::error naming what is wrong. A good one goes through the rewrite
// passes (recomputation, accumulation of every sum, manual swaps, relaxed
// marks), whose plans must validate, and is written back as a GraphDef that
// reads again; read as TF's cost model counts it, it reads too.
#include "fuzz_input.hpp"

#include <tf_like/graph_def.hpp>
#include <tf_like/rewrite.hpp>

#include <memopt/rewrite.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <numeric>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto doc = nlohmann::json::parse(memopt::fuzz::text_of(data, size), nullptr, false);
  if (doc.is_discarded()) return 0;
  memopt::io::file_graph file;
  try {
    file = tf_like::to_file_graph(tf_like::read_graph_def(doc), doc);
  } catch (const memopt::error&) {
    return 0;
  }
  // Read as TF's cost model counts it, the same GraphDef reads too.
  (void)tf_like::to_file_graph(tf_like::read_graph_def(doc), doc, {.memory = tf_like::memory_model::tf_cost_model});
  namespace rw = memopt::rewrite;
  const auto facts = rw::read_facts(file);
  rw::recompute_options options;
  options.has_hint = [&](std::size_t v) { return file[v].attrs.contains("recompute_hint"); };
  auto plan = rw::recompute(facts, options);
  std::vector<std::size_t> all(facts.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  const auto now = rw::read_facts(rw::apply(facts, plan));
  plan = rw::then(plan, rw::accumulate(now, std::vector<std::size_t>(all)), facts.size());
  // The manual swaps, with the graph's own order as completion times.
  std::vector<rw::swap_request> requests;
  for (std::size_t v = 0; v < facts.size(); ++v) {
    if (file[v].attrs.contains("swap_to_host")) requests.push_back({v, file[v].attrs["swap_to_host"]});
  }
  const auto swapped = rw::read_facts(rw::apply(facts, plan));
  std::vector<double> done(swapped.size());
  std::iota(done.begin(), done.end(), 1.0);
  try {
    rw::swap_options references;
    references.is_reference_output = rw::plan_references(plan, facts.size());
    plan = rw::then(plan, rw::swap(swapped, requests, done, references), facts.size());
  } catch (const memopt::error&) {  // a request naming an input the node lacks
  }
  plan = rw::then(plan, rw::relax_allocator_constraints(rw::read_facts(rw::apply(facts, plan))), facts.size());
  if (!rw::check_plan(facts, plan).empty()) std::abort();
  (void)tf_like::read_graph_def(tf_like::rewritten_graph_def(doc, facts, plan));  // must read again
  return 0;
}
