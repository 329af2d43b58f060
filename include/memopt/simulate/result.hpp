#pragma once
// What a simulation reports, as a value: every run of every task (an op that
// runs twice, like a Merge, has two runs), per device time and memory, per
// link the transfers it carried.

#include <memopt/liveness/liveness.hpp>
#include <memopt/simulate/cost_model.hpp>
#include <memopt/simulate/task_graph.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memopt::sim {

struct task_run {
  std::size_t task = 0;
  std::size_t resource = 0;  ///< a device index, or num_devices + a link's position in links
  double start_us = 0;
  double end_us = 0;
  op_cost cost;              ///< a transfer's time is all in total_us
};

/// Bytes live on a device from time_us on.
struct memory_point {
  double time_us = 0;
  std::uint64_t bytes = 0;
};

struct device_report {
  std::string name;
  double busy_us = 0;     ///< ops and receives run on it
  double compute_us = 0;  ///< their compute parts
  double memory_us = 0;   ///< their memory parts
  double idle_us = 0;     ///< makespan - busy
  double utilisation = 0; ///< busy / makespan (0 for an empty run)
  std::size_t runs = 0;
  /// The one memory model over the device's steps: its tasks' runs by time
  /// (a send at its end, when it stops reading), ties in run order. Buffer ids
  /// are the device's own; buffer_ids maps them to task_graph::buffers.
  liveness_result memory;
  std::vector<std::size_t> buffer_ids;
  std::vector<std::size_t> steps;       ///< the task of each step
  std::vector<memory_point> timeline;   ///< memory.timeline at its steps' times
  [[nodiscard]] std::uint64_t peak_bytes() const { return memory.peak_bytes; }
  [[nodiscard]] std::uint64_t persistent_bytes() const { return memory.persistent_bytes; }
};

struct link_report {
  std::size_t from = 0;
  std::size_t to = 0;
  double busy_us = 0;
  std::size_t transfers = 0;
  std::uint64_t bytes = 0;
};

struct simulation_result {
  std::string policy;                 ///< the ready policy's name
  task_graph graph;
  std::vector<task_run> runs;         ///< in the order the policy chose them
  double makespan_us = 0;
  std::vector<device_report> devices; ///< by device index
  std::vector<link_report> links;     ///< links used, first use first
  std::vector<std::size_t> transfer_runs;  ///< positions in runs of the created sends
  std::vector<std::size_t> not_run;   ///< tasks that never became ready (a cycle through a Merge)
};

/// A tensor of the graph live at a device's peak: output `port` of `vertex`,
/// buffer `buffer` of the device's memory.
struct peak_tensor {
  std::size_t vertex = 0;
  std::size_t port = 0;
  buffer_id buffer = 0;
};

/// The graph's tensors live at the peak of `device` (received copies, control
/// tokens and transfers' buffers left out), in the device's buffer order.
[[nodiscard]] inline std::vector<peak_tensor> tensors_at_peak(const simulation_result& r, std::size_t device) {
  const device_report& d = r.devices.at(device);
  std::vector<peak_tensor> live;
  for (const buffer_id b : d.memory.live_at_peak) {
    const task_buffer& tb = r.graph.buffers[d.buffer_ids[b]];
    const task& producer = r.graph.tasks[tb.task];
    if (producer.kind != task_kind::op || tb.port < 0) continue;
    live.push_back({producer.vertex, static_cast<std::size_t>(tb.port), b});
  }
  return live;
}

}  // namespace memopt::sim
