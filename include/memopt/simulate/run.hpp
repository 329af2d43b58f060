#pragma once
// simulate(): runs a task graph as grappler's virtual scheduler does. Tasks
// with no input (and fed ones) are ready at time 0. The policy picks one ready
// task at a time; it starts when its device (or link, for a send) is free and
// it is ready, and ends its cost later; its successors whose inputs have all
// run become ready at that end (a Merge on each input). One pass, O((V + E)
// log V) with the heap policies.
//
// Memory per device is the one memory model (liveness/) over the device's
// steps; with options.memory.count_unread_outputs = false an output no task
// reads costs nothing, as the seed counts. Throws no_ready_node_error when no
// task can start, and what make_task_graph throws.

#include <memopt/detail/checked.hpp>
#include <memopt/detail/edge_walk.hpp>
#include <memopt/graph/buffers.hpp>
#include <memopt/liveness/liveness.hpp>
#include <memopt/simulate/cost_model.hpp>
#include <memopt/simulate/errors.hpp>
#include <memopt/simulate/machine.hpp>
#include <memopt/simulate/ready_policy.hpp>
#include <memopt/simulate/result.hpp>
#include <memopt/simulate/tasks.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memopt::sim {

struct simulation_options {
  task_options tasks;         ///< fetch, feed, control token bytes
  liveness_options memory{};  ///< the memory model's option
};

namespace detail {

/// The policy's name: its static `name`, else "custom".
template <class Policy>
std::string policy_name() {
  if constexpr (requires { std::string(Policy::name); }) {
    return Policy::name;
  } else {
    return "custom";
  }
}

/// A run as a step of its device: (the time it holds the step at, its task).
/// A send holds it when it ends, when it stops reading; a run otherwise when
/// it starts.
using keyed_run = std::pair<double, std::size_t>;

/// Buffers read by a task that never ran: kept to the end of every device's run.
inline std::vector<bool> read_by_waiting_tasks(const simulation_result& r) {
  std::vector<bool> read(r.graph.buffers.size(), false);
  for (const std::size_t t : r.not_run) {
    for (const std::size_t b : r.graph.reads[t]) read[b] = true;
  }
  return read;
}

/// A device's own numbering of the tasks and buffers it holds, by task and
/// by buffer of the whole graph (no_task elsewhere). One pair serves every
/// device: each leaves it as it found it.
struct local_numbering {
  std::vector<std::size_t> task;
  std::vector<std::size_t> buffer;
  explicit local_numbering(const task_graph& tg)
      : task(tg.tasks.size(), no_task), buffer(tg.buffers.size(), no_task) {}
};

/// Device d's memory: its runs (keyed, in run order) as steps by time, then run
/// order, the one model over them.
inline void device_memory(const simulation_result& r, std::vector<keyed_run> keyed,
                          const std::vector<bool>& read_by_waiting, const liveness_options& options,
                          local_numbering& numbering, device_report& out) {
  const task_graph& tg = r.graph;
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::size_t n = keyed.size();
  std::vector<std::size_t>& local = numbering.task;            // task -> its local index
  std::vector<std::size_t> tasks;                              // local index -> task
  std::vector<std::size_t> step;                               // by local task: its first step
  tasks.reserve(n);
  step.reserve(n);
  out.steps.resize(n);
  out.timeline.resize(n);
  // A device's tasks lie anywhere in the graph's arrays: each pass below
  // asks for what it will read `lead` tasks ahead (two levels of lookup,
  // 2 * lead ahead for the first).
  constexpr std::size_t lead = 8;
  for (std::size_t s = 0; s < n; ++s) {
    if (s + lead < n) memopt::detail::prefetch(&local[keyed[s + lead].second]);
    const std::size_t t = keyed[s].second;
    out.steps[s] = t;
    if (local[t] == no_task) {
      local[t] = tasks.size();
      tasks.push_back(t);
      step.push_back(s);
    }
  }
  // Tasks of d that never ran hold nothing; their reads keep buffers to the end.
  liveness_result& live = out.memory;
  buffer_table& table = live.buffers;
  std::vector<std::size_t>& local_buffer = numbering.buffer;
  std::size_t count = 0;
  for (const std::size_t t : tasks) count += tg.first_buffer[t + 1] - tg.first_buffer[t];
  for (auto* ids : {&out.buffer_ids, &table.owner, &table.shares}) ids->reserve(count);
  table.bytes.reserve(count);
  for (auto* flags : {&table.persistent, &table.live_out, &table.in_place, &table.scratch}) flags->reserve(count);
  table.first.assign(tasks.size() + 1, 0);
  std::vector<std::size_t> aliases;  // local buffers that share or take over a storage
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (i + 2 * lead < tasks.size()) memopt::detail::prefetch(&tg.first_buffer[tasks[i + 2 * lead]]);
    if (i + lead < tasks.size()) memopt::detail::prefetch(tg.buffers.data() + tg.first_buffer[tasks[i + lead]]);
    table.first[i] = out.buffer_ids.size();
    for (std::size_t b = tg.first_buffer[tasks[i]]; b < tg.first_buffer[tasks[i] + 1]; ++b) {
      local_buffer[b] = out.buffer_ids.size();
      out.buffer_ids.push_back(b);
      const task_buffer& tb = tg.buffers[b];
      table.owner.push_back(i);
      table.bytes.push_back(tb.bytes);
      table.persistent.push_back(tb.persistent);
      table.live_out.push_back(tb.live_out || read_by_waiting[b]);
      table.in_place.push_back(tb.in_place);
      table.scratch.push_back(tb.scratch);
      table.shares.push_back(no_buffer);
      if (tb.shares != no_task || tb.takes_over != no_task) aliases.push_back(local_buffer[b]);
    }
  }
  table.first[tasks.size()] = out.buffer_ids.size();
  table.takes_over.assign(out.buffer_ids.size(), no_buffer);
  const auto local_of = [&](std::size_t b) { return b == no_task ? no_task : local_buffer[b]; };
  for (const std::size_t lb : aliases) {
    const task_buffer& tb = tg.buffers[out.buffer_ids[lb]];
    if (const std::size_t source = local_of(tb.shares); source != no_task) table.shares[lb] = source;
    if (const std::size_t source = local_of(tb.takes_over); source != no_task) table.takes_over[lb] = source;
  }
  if (aliases.empty()) {  // every buffer its own storage, as make_buffer_table leaves them
    table.storage.resize(table.size());
    std::iota(table.storage.begin(), table.storage.end(), buffer_id{0});
  } else {
    memopt::detail::settle_storages(table);
    // Graph inputs were left out in the graph's table; a task here is never one.
    memopt::detail::settle_reuse(table, std::vector<bool>(tasks.size(), true));
  }

  memopt::detail::start_intervals(live, step, n);
  std::vector<bool> read(table.size(), false);
  for (std::size_t s = 0; s < n; ++s) {
    if (s + 2 * lead < n) memopt::detail::prefetch(&tg.reads.first[out.steps[s + 2 * lead]]);
    if (s + lead < n) {
      for (const std::size_t b : tg.reads[out.steps[s + lead]]) memopt::detail::prefetch(&local_buffer[b]);
    }
    for (const std::size_t b : tg.reads[out.steps[s]]) {
      const std::size_t lb = local_buffer[b];
      if (lb == no_task) continue;  // read on another device: not this one's memory
      read[lb] = true;
      if (!table.persistent[lb]) live.intervals[lb].last = std::max(live.intervals[lb].last, s);
    }
  }
  for (const std::size_t t : r.not_run) {
    for (const std::size_t b : tg.reads[t]) {
      if (local_buffer[b] != no_task) read[local_buffer[b]] = true;
    }
  }
  memopt::detail::finish_liveness(
      live, n, [&](std::size_t s) { return tg.tasks[out.steps[s]].vertex; }, read, options);
  for (std::size_t s = 0; s < n; ++s) out.timeline[s] = {keyed[s].first, live.timeline[s]};
  for (const std::size_t t : tasks) local[t] = no_task;
  for (const std::size_t b : out.buffer_ids) local_buffer[b] = no_task;
}

}  // namespace detail

/// Runs `tg` on `m`: the policy picks, `cost` times the ops.
template <cost_model Cost, ready_policy Policy>
[[nodiscard]] simulation_result run_tasks(task_graph tg, const machine& m, const Cost& cost, Policy policy,
                                          const liveness_options& memory = {}) {
  m.check();
  simulation_result r;
  r.policy = detail::policy_name<Policy>();
  r.graph = std::move(tg);
  const task_graph& g = r.graph;
  const std::size_t count = g.tasks.size();
  const std::size_t num_devices = m.devices.size();
  std::vector<double> ready(count, 0);
  // Inputs not yet run, by task: one array to read per arc, not two. Below
  // zero (a Merge's successor, its inputs run more often than it has them)
  // it wraps and stays off zero, as a count of inputs run stays off theirs.
  std::vector<compact_index> inputs_left = g.num_inputs;
  std::vector<bool> ran(count, false);
  std::vector<bool> merge(count);  // dense: read once per arc below
  for (std::size_t t = 0; t < count; ++t) merge[t] = g.tasks[t].merge;
  const ready_view view(g, ready);
  for (std::size_t t = 0; t < count; ++t) {
    if (g.starts_ready[t]) policy.push(t, view);
  }
  if (count > 0 && policy.empty()) {
    std::vector<std::size_t> waiting;
    for (std::size_t t = 0; t < count && waiting.size() < 3; ++t) waiting.push_back(g.tasks[t].vertex);
    throw no_ready_node_error(std::move(waiting));
  }

  std::vector<double> clock(num_devices, 0);   // devices, then links as they are used
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> link_resource;
  r.devices.resize(num_devices);
  for (std::size_t d = 0; d < num_devices; ++d) r.devices[d].name = m.devices[d].name;
  r.runs.reserve(count);
  std::vector<std::vector<detail::keyed_run>> keyed(num_devices);  // by device, in run order
  while (!policy.empty()) {
    const std::size_t t = policy.pop(view);
    // The successors' records are first read when they are pushed, below:
    // asked for now, they arrive while this task is costed.
    for (const std::size_t s : g.successors[t]) {
      memopt::detail::prefetch(&inputs_left[s]);
      memopt::detail::prefetch(&g.tasks[s]);
    }
    const task& tk = g.tasks[t];
    task_run run{.task = t, .resource = tk.device};
    if (tk.kind == task_kind::send && tk.created) {
      const auto [it, added] = link_resource.try_emplace({tk.device, tk.to_device}, clock.size());
      if (added) {
        clock.push_back(0);
        r.links.push_back({.from = tk.device, .to = tk.to_device});
      }
      run.resource = it->second;
      run.cost.total_us = transfer_us(m.link(tk.device, tk.to_device), tk.transfer_bytes);
      link_report& link = r.links[run.resource - num_devices];
      link.busy_us += run.cost.total_us;
      ++link.transfers;
      link.bytes += tk.transfer_bytes;
      r.transfer_runs.push_back(r.runs.size());
    } else if (!(tk.kind == task_kind::recv && tk.created)) {
      run.cost = cost.cost({.name = g.name(t),
                            .op_type = g.op_type(t),
                            .flops = tk.flops,
                            .bytes_read = tk.bytes_read,
                            .bytes_written = tk.bytes_written},
                           m.devices[tk.device]);
    }
    run.start_us = std::max(clock[run.resource], ready[t]);
    run.end_us = run.start_us + run.cost.total_us;
    clock[run.resource] = run.end_us;
    if (run.resource < num_devices) {
      device_report& dev = r.devices[run.resource];
      dev.busy_us += run.cost.total_us;
      dev.compute_us += run.cost.compute_us;
      dev.memory_us += run.cost.memory_us;
      ++dev.runs;
    }
    r.makespan_us = std::max(r.makespan_us, run.end_us);
    keyed[tk.device].emplace_back(tk.kind == task_kind::send ? run.end_us : run.start_us, t);
    ran[t] = true;
    for (const std::size_t s : g.successors[t]) {
      if (--inputs_left[s] == 0 || merge[s]) {
        ready[s] = run.end_us;
        policy.push(s, view);
      }
    }
    r.runs.push_back(run);
  }
  for (std::size_t t = 0; t < count; ++t) {
    if (!ran[t]) r.not_run.push_back(t);
  }
  const std::vector<bool> read_by_waiting = detail::read_by_waiting_tasks(r);
  detail::local_numbering numbering(r.graph);
  for (std::size_t d = 0; d < num_devices; ++d) {
    device_report& dev = r.devices[d];
    dev.idle_us = r.makespan_us - dev.busy_us;
    dev.utilisation = r.makespan_us > 0 ? dev.busy_us / r.makespan_us : 0;
    detail::device_memory(r, std::move(keyed[d]), read_by_waiting, memory, numbering, dev);
  }
  return r;
}

/// Simulates g on `m` with vertex index(v) on device placement[index(v)].
template <simulation_graph G, cost_model Cost, ready_policy Policy, vertex_index_map<G> Index = identity_index>
[[nodiscard]] simulation_result simulate(const G& g, const machine& m, std::span<const std::size_t> placement,
                                         const Cost& cost, Policy policy, const simulation_options& options = {},
                                         Index index = {}) {
  return run_tasks(make_task_graph(g, m, placement, options.tasks, index), m, cost, std::move(policy),
                   options.memory);
}

/// Every vertex on device 0.
template <simulation_graph G>
[[nodiscard]] std::vector<std::size_t> one_device(const G& g) {
  return std::vector<std::size_t>(num_vertices(g), 0);
}

/// Each vertex on the one device its op_traits device matches
/// (machine::devices_matching), device 0 when it names none. Throws
/// unmatched_device_error for a device that matches no device or several.
template <simulation_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::vector<std::size_t> placement_by_device_field(const G& g, const machine& m, Index index = {}) {
  require_index_map(g, index);
  std::vector<std::size_t> placement(num_vertices(g), 0);
  device_field_matcher device_of(m);
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    placement[index(v)] = device_of(index(v), std::string(op_traits<G>::device(g, v)));
  }
  return placement;
}

}  // namespace memopt::sim
