// Bytes → a small tensor graph (multi-port nodes, control edges, weights,
// graph outputs, views and in-place results, some aliases invalid on purpose)
// → every scheduler, heap algorithm and sharing pass of the registries → the
// validators. The graph is either refused up front with a memopt::error, or
// every algorithm must return a result its validator accepts: an order that
// is topological and keeps the in-place hazards, the peak liveness gives it,
// never below the lower bound; an arena plan check_heap_plan accepts, never
// below max-live; a sharing plan check_sharing accepts.
#include "fuzz_input.hpp"

#include <graph_spec.hpp>

#include <memopt/heap.hpp>
#include <memopt/liveness.hpp>
#include <memopt/schedule.hpp>
#include <memopt/rewrite.hpp>
#include <memopt/share.hpp>
#include <memopt/simulate.hpp>

#include <algorithm>
#include <cstdlib>
#include <span>
#include <tuple>
#include <utility>

namespace {

using memopt::testing::graph_spec;
using memopt::testing::node_spec;

graph_spec spec_of(memopt::fuzz::byte_reader& in) {
  graph_spec spec;
  const std::size_t n = 1 + in.below(16);
  for (std::size_t i = 0; i < n; ++i) {
    node_spec node;
    node.persistent = in.below(8) == 0;
    for (std::size_t p = in.below(4); p > 0; --p) {
      node.outputs.push_back(in.below(5) * 64);
      if (in.below(8) == 0) node.live_out.push_back(node.outputs.size() - 1);
    }
    if (i > 0) {
      for (std::size_t k = in.below(4); k > 0; --k) {
        const std::size_t producer = in.below(i);
        const auto ports = spec.nodes[producer].outputs.size();
        if (ports > 0) node.inputs.push_back({producer, in.below(ports)});
      }
      for (std::size_t k = in.below(3); k > 0; --k) node.control.push_back(in.below(i));
      // Mostly an alias of an input; now and then of any earlier tensor, which
      // the library must refuse when the node does not read it.
      for (std::size_t p = 0; p < node.outputs.size(); ++p) {
        if (in.below(4) != 0) continue;
        auto [source, port] = std::pair<std::size_t, std::size_t>{in.below(i), 0};
        if (!node.inputs.empty() && in.below(8) != 0) {
          std::tie(source, port) = node.inputs[in.below(node.inputs.size())];
        } else if (const auto ports = spec.nodes[source].outputs.size(); ports > 0) {
          port = in.below(ports);
        } else {
          continue;
        }
        node.aliases.push_back({.port = p, .node = source, .node_port = port, .in_place = in.flag()});
      }
    }
    spec.nodes.push_back(std::move(node));
  }
  return spec;
}

void require(bool ok) {
  if (!ok) std::abort();
}

void require_valid_run(const memopt::sim::simulation_result& r) {
  const auto& tasks = r.graph;
  require(r.not_run.empty() && r.runs.size() == tasks.tasks.size());
  for (const auto& run : r.runs) {
    for (const std::size_t s : tasks.successors[run.task]) {
      const auto successor = std::find_if(r.runs.begin(), r.runs.end(), [&](const auto& x) { return x.task == s; });
      require(successor->start_us >= run.end_us);
    }
  }
}

template <class G>
void recompute_somewhere(const G& g, memopt::fuzz::byte_reader& in) {
  namespace rw = memopt::rewrite;
  const auto facts = rw::read_facts(g);
  std::vector<bool> target(facts.size());
  for (std::size_t v = 0; v < target.size(); ++v) target[v] = in.flag();
  rw::recompute_options options;
  options.target_scope.clear();
  options.is_target = [&](std::size_t v) { return target[v]; };
  options.cheap_ops = {""};
  const auto plan = rw::recompute(facts, options);
  require(rw::check_plan(facts, plan).empty());
  const auto report = rw::evaluate(facts, plan, {.time_limit_seconds = std::nullopt, .work_limit = 500});
  require(memopt::liveness(report.graph, report.order_after).peak_bytes == report.peak_after);
}

template <class G>
void simulate_everywhere(const G& g, memopt::fuzz::byte_reader& in, std::uint64_t program_peak) {
  namespace sim = memopt::sim;
  sim::machine m;
  m.devices = {{.name = "a"}, {.name = "b"}, {.name = "c"}};
  m.default_link.latency_us = static_cast<double>(in.below(4));
  std::vector<std::size_t> placement(num_vertices(g));
  const std::size_t devices = 1 + in.below(3);
  for (auto& d : placement) d = in.below(devices);
  sim::simulation_options options;
  options.tasks.control_token_bytes = in.below(3) * 4;
  const sim::sum_cost cost;
  require_valid_run(sim::simulate(g, m, placement, cost, sim::fifo{}, options));
  require_valid_run(sim::simulate(g, m, placement, cost, sim::lifo{}, options));
  require_valid_run(sim::simulate(g, m, placement, cost, sim::first_ready{}, options));
  require_valid_run(sim::simulate(g, m, placement, cost, sim::composite{}, options));
  require_valid_run(sim::simulate(g, m, placement, cost, sim::program{}, options));
  const auto one = sim::simulate(g, m, sim::one_device(g), cost, sim::program{});
  require(one.devices[0].peak_bytes() == program_peak);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  memopt::fuzz::byte_reader in(data, size);
  const graph_spec spec = spec_of(in);
  const auto [g, vertex] = memopt::testing::build<memopt::testing::bidir_graph>(spec);
  std::uint64_t program_peak = 0;
  try {
    program_peak = memopt::liveness(g, memopt::program_order(g)).peak_bytes;
  } catch (const memopt::error&) {
    return 0;  // refused: a bad alias, or in-place orders that contradict the edges
  }
  const memopt::search_limits limits{.work_limit = 2000};
  const std::uint64_t bound = memopt::lower_bound(g);
  std::vector<std::size_t> order;
  for (const auto& scheduler : memopt::schedule::entries()) {
    const auto r = scheduler(g, limits);
    require(memopt::check_topological_order(g, std::span<const std::size_t>(r.order)).empty());
    require(memopt::liveness(g, r.order).peak_bytes == r.peak_bytes);
    require(r.peak_bytes >= bound);
    order = r.order;
  }
  const std::span<const std::size_t> steps(order);
  const auto problem = memopt::make_arena_problem(g, steps);
  const auto max_live = memopt::max_live_bytes(problem.buffers);
  for (const auto& algorithm : memopt::heap::entries()) {
    auto r = algorithm(problem.buffers, limits);
    require(memopt::check_heap_plan(problem.buffers, r.plan).empty());
    require(r.plan.arena_bytes >= max_live);
  }
  for (const auto& pass : memopt::share::entries()) {
    for (const auto& policy : memopt::share::policies()) {
      const auto plan = pass(g, steps, policy.name);
      require((pass.every_order ? memopt::check_sharing(g, plan) : memopt::check_sharing(g, plan, steps)).empty());
    }
  }
  simulate_everywhere(g, in, program_peak);
  recompute_somewhere(g, in);
  return 0;
}
