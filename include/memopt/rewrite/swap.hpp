#pragma once
// Swapping to host, as the memory optimizer does it, as a plan. A request
// names data inputs of a vertex to swap; each becomes a swap-out of the tensor
// to host memory (swap_out_<node>_<input>, op _CopyFromGpuToHost, on the
// vertex's device) and a swap-in back (swap_in_<node>_<input>,
// _CopyFromHostToGpu) that the vertex reads instead. Two control triggers
// make the transfer overlap compute, placed as the seed places them from the
// ops' completion times (a simulation's): the earliest other reader of the
// tensor waits for the swap-out, so the copy leaves early; the swap-in waits
// for the input of the vertex that completes last before the copy must start
// to arrive in time (host_bytes_per_us), so it comes back late. A vertex with
// no such trigger keeps its inputs, and an input with no other reader is not
// swapped, as in the seed. Reference inputs, tensors already swapped (a
// swap-out of that name exists: running the pass twice changes nothing) and
// tensors in a storage some op overwrites in place (the copy would read the
// new value) are never swapped.
//
// choose_swaps is the seed's heuristic: on each device whose peak exceeds its
// capacity, the tensors live at the peak, longest idle around it first
// (fitness: distance of the next use and of the allocation from the peak),
// skipping small ones, persistent ones, references and those idle too briefly
// to move, until the savings cover the excess; each is swapped before each of
// its uses after the peak. A reader that ends as the peak's op starts is
// done before the peak; the seed's op completes 1 ns after it ends, which
// makes it a use after the peak (completion_delay_us = 0.001 runs it so).

#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/simulate/result.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace memopt::rewrite {

/// Swap data inputs `operands` of `vertex`.
struct swap_request {
  std::size_t vertex = 0;
  std::vector<std::size_t> operands;
};

struct swap_options {
  /// Data input `operand` of `vertex` reads a reference (never swapped).
  std::function<bool(std::size_t vertex, std::size_t operand)> is_reference_input;
  /// Output `port` of `vertex` is a reference (never swapped).
  std::function<bool(std::size_t vertex, std::size_t port)> is_reference_output;
  double host_bytes_per_us = 16'000;  ///< the seed's PCIe figure: 16 GB/s
  std::uint64_t min_bytes = 1025;     ///< the heuristic skips smaller tensors (the seed: 1 KiB)
  double min_idle_us = 1000;          ///< ... and tensors live for no longer than this (the seed: 1 ms)
  double completion_delay_us = 0;     ///< the heuristic's reader completes this long after its op ends (the seed: 0.001, 1 ns)
};

/// An is_reference_output for the graph `plan` makes of a graph of `n`
/// vertices: the references the plan's nodes make (accumulators), and what
/// `original` says of the original vertices (none when empty). It reads
/// `plan`, which must outlive it.
[[nodiscard]] inline std::function<bool(std::size_t, std::size_t)> plan_references(
    const rewrite_plan& plan, std::size_t n, std::function<bool(std::size_t, std::size_t)> original = {}) {
  return [&plan, n, original = std::move(original)](std::size_t v, std::size_t port) {
    if (v >= n) return plan.nodes.at(v - n).outputs.at(port).reference;
    return original && original(v, port);
  };
}

/// The completion time of each vertex's op in a simulation (its last run), by vertex index.
[[nodiscard]] inline std::vector<double> completion_times(const sim::simulation_result& r, std::size_t n) {
  std::vector<double> done(n, std::numeric_limits<double>::quiet_NaN());
  for (const sim::task_run& run : r.runs) {
    const sim::task& t = r.graph.tasks[run.task];
    if (t.kind == sim::task_kind::op && !t.created) done[t.vertex] = run.end_us;
  }
  return done;
}

namespace detail {

/// The input of `v` completing last before the swap-in must start, searching
/// back through the inputs that complete too late; none past a Switch or Merge.
inline std::optional<std::size_t> swap_in_trigger(const graph_facts& f, std::size_t v,
                                                  const std::vector<std::size_t>& swapped, double swap_us,
                                                  const std::vector<double>& done) {
  std::set<std::string> possible;
  std::map<std::string, std::size_t> by_name;
  double latest = 0;
  for (const std::size_t u : inputs_of(f, v)) {
    if (std::isnan(done[u])) return std::nullopt;
    latest = std::max(latest, done[u]);
    possible.insert(f.name[u]);
    by_name[f.name[u]] = u;
  }
  for (const std::size_t k : swapped) possible.erase(f.name[f.operands[v][k].vertex]);
  if (possible.empty()) return std::nullopt;
  const double deadline = latest - swap_us;
  std::map<double, std::size_t> candidates;
  std::unordered_set<std::string> processed;
  while (!possible.empty()) {
    const std::string name = *possible.begin();
    possible.erase(possible.begin());
    processed.insert(name);
    const std::size_t u = by_name.at(name);
    if (f.op[u] == "Switch" || f.op[u] == "Merge" || f.op[u] == "Enter" || f.op[u] == "Exit" ||
        f.op[u] == "NextIteration") {
      continue;
    }
    if (std::isnan(done[u])) return std::nullopt;
    if (done[u] < deadline) {
      candidates[done[u]] = u;
    } else {
      for (const std::size_t w : inputs_of(f, u)) {
        if (processed.contains(f.name[w])) continue;
        possible.insert(f.name[w]);
        by_name[f.name[w]] = w;
      }
    }
  }
  if (candidates.empty()) return std::nullopt;
  return candidates.rbegin()->second;
}

/// The reader of `t` other than `v` completing first.
inline std::optional<std::size_t> swap_out_trigger(const graph_facts& f, std::size_t v, operand t,
                                                   const std::vector<double>& done) {
  std::optional<std::size_t> trigger;
  for (const std::size_t c : f.consumers[t.vertex]) {
    if (c == v || std::isnan(done[c]) || std::ranges::find(f.operands[c], t) == f.operands[c].end()) continue;
    if (!trigger || done[c] < done[*trigger]) trigger = c;
  }
  return trigger;
}

}  // namespace detail

/// The swaps of `requests` (see the header comment), with `done` the
/// completion time of each vertex's op. Throws bad_plan_error for a request
/// naming a vertex or data input that does not exist, or for `done` not
/// holding one time per vertex.
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] rewrite_plan swap(const graph_facts& f, const std::vector<swap_request>& requests,
                                const std::vector<double>& done, const swap_options& options = {},
                                const Naming& naming = {}) {
  rewrite_plan plan;
  const std::unordered_set<std::string> names(f.name.begin(), f.name.end());
  if (done.size() != f.size()) {
    throw bad_plan_error({"swap needs a completion time for each of the " + std::to_string(f.size()) +
                          " vertices, not " + std::to_string(done.size())});
  }
  for (const swap_request& request : requests) {
    if (request.vertex >= f.size()) {
      throw bad_plan_error({"a swap request names vertex " + std::to_string(request.vertex) + ", which does not exist"});
    }
    for (const std::size_t k : request.operands) {
      if (k >= f.operands[request.vertex].size()) {
        throw bad_plan_error({"a swap request names data input " + std::to_string(k) + " of '" + f.name[request.vertex] +
                              "', which has " + std::to_string(f.operands[request.vertex].size())});
      }
    }
  }
  const auto overwritten = detail::overwritten_storages(f);
  std::set<std::pair<std::size_t, std::size_t>> handled;
  for (const swap_request& request : requests) {
    const std::size_t v = request.vertex;
    std::uint64_t bytes = 0;
    for (const std::size_t k : request.operands) {
      const operand t = f.operands[v][k];
      bytes += f.outputs[t.vertex][t.port].bytes;
    }
    const auto in_trigger = detail::swap_in_trigger(f, v, request.operands, static_cast<double>(bytes) / options.host_bytes_per_us, done);
    if (!in_trigger) continue;
    for (const std::size_t k : request.operands) {
      if (!handled.insert({v, k}).second) continue;
      const operand t = f.operands[v][k];
      const std::string out_name = naming.swap_out(f.name[v], k);
      const std::string in_name = naming.swap_in(f.name[v], k);
      if (names.contains(out_name) || names.contains(in_name)) continue;  // already swapped
      if ((options.is_reference_input && options.is_reference_input(v, k)) ||
          (options.is_reference_output && options.is_reference_output(t.vertex, t.port)) ||
          overwritten[t.vertex][t.port]) {
        continue;
      }
      const auto out_trigger = detail::swap_out_trigger(f, v, t, done);
      if (!out_trigger) continue;
      const std::uint64_t size = f.outputs[t.vertex][t.port].bytes;
      const std::size_t out = plan.nodes.size();
      plan.nodes.push_back({.name = out_name,
                            .op = "_CopyFromGpuToHost",
                            .device = f.device[v],
                            .role = node_role::swap_out,
                            .outputs = {{.bytes = size}},
                            .on_host = true,
                            .inputs = {{original(t.vertex), t.port}}});
      plan.nodes.push_back({.name = in_name,
                            .op = "_CopyFromHostToGpu",
                            .device = f.device[v],
                            .role = node_role::swap_in,
                            .outputs = {{.bytes = size}},
                            .inputs = {{added(out), 0}},
                            .control = {original(*in_trigger)}});
      plan.redirects.push_back({v, k, {added(out + 1), 0}});
      plan.controls.push_back({added(out), original(*out_trigger)});
    }
  }
  return plan;
}

/// The seed's heuristic on one device of a simulation of the graph (the
/// requests to pass to swap); nothing when the device's peak fits `capacity`.
/// Throws bad_plan_error for a completion delay that is negative or not finite.
[[nodiscard]] inline std::vector<swap_request> choose_swaps(const graph_facts& f, const sim::simulation_result& r,
                                                     std::size_t device, std::uint64_t capacity,
                                                     const swap_options& options = {}) {
  if (!std::isfinite(options.completion_delay_us) || options.completion_delay_us < 0) {
    throw bad_plan_error({"choose_swaps needs a completion delay from 0 us, finite, not " +
                          std::to_string(options.completion_delay_us)});
  }
  const sim::device_report& d = r.devices.at(device);
  const std::uint64_t used = d.peak_bytes();
  if (used <= capacity) return {};
  std::int64_t required = static_cast<std::int64_t>(used - capacity);
  const auto done = completion_times(r, f.size());
  const auto time_of_step = [&](std::size_t s) { return d.timeline[s].time_us; };
  struct candidate {
    operand tensor;
    std::uint64_t bytes;
    std::vector<std::pair<std::size_t, std::size_t>> uses_left;  // (vertex, operand)
    double fitness;
  };
  double peak_time = 0;
  for (const buffer_id b : d.memory.live_at_peak) peak_time = std::max(peak_time, time_of_step(d.memory.intervals[b].first));
  std::vector<candidate> candidates;
  for (const sim::peak_tensor& live : sim::tensors_at_peak(r, device)) {
    const operand t{live.vertex, live.port};
    const buffer_id b = live.buffer;
    const std::uint64_t bytes = d.memory.buffers.bytes[b];
    const double allocated = time_of_step(d.memory.intervals[b].first);
    const double freed = time_of_step(d.memory.intervals[b].last);
    if (bytes < options.min_bytes || freed - allocated <= options.min_idle_us || f.persistent[t.vertex]) continue;
    if (options.is_reference_output && options.is_reference_output(t.vertex, t.port)) continue;
    candidate c{t, bytes, {}, 0};
    double earliest_use = std::numeric_limits<double>::infinity();
    bool valid = true;
    for (const std::size_t reader : f.consumers[t.vertex]) {
      for (std::size_t k = 0; k < f.operands[reader].size(); ++k) {
        if (f.operands[reader][k] != t) continue;
        if (std::isnan(done[reader])) valid = false;
        if (!valid || done[reader] + options.completion_delay_us <= peak_time) continue;
        if (options.is_reference_input && options.is_reference_input(reader, k)) valid = false;
        c.uses_left.emplace_back(reader, k);
        earliest_use = std::min(earliest_use, done[reader] + options.completion_delay_us);
      }
    }
    if (!valid || c.uses_left.empty()) continue;
    const double uses = static_cast<double>(c.uses_left.size());
    c.fitness = -((earliest_use - peak_time) * (earliest_use - peak_time) / (uses * uses) +
                  (allocated - peak_time) * (allocated - peak_time));
    candidates.push_back(std::move(c));
  }
  std::ranges::stable_sort(candidates, {}, &candidate::fitness);
  std::map<std::size_t, std::vector<std::size_t>> by_vertex;
  for (const candidate& c : candidates) {
    for (const auto& [reader, k] : c.uses_left) by_vertex[reader].push_back(k);
    required -= static_cast<std::int64_t>(c.bytes);
    if (required < 0) break;
  }
  std::vector<swap_request> requests;
  requests.reserve(by_vertex.size());
  for (auto& [vertex, operands] : by_vertex) requests.push_back({vertex, std::move(operands)});
  return requests;
}

}  // namespace memopt::rewrite
