#pragma once
// The task graph a simulation runs, as values: its tasks (ops, sends and
// receives), the buffers they hold in each device's memory, the arcs between
// them, and the options that prune it. make_task_graph (simulate/tasks.hpp)
// builds one from a graph; simulate() reads it.

#include <memopt/graph/compact.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace memopt::sim {

inline constexpr std::size_t no_task = std::numeric_limits<std::size_t>::max();

enum class task_kind : unsigned char { op, send, recv };

/// A task's facts; its name and op type are its task_graph's (name(t), op_type(t)).
/// (64 bytes, one cache line: the small fields first, side by side.)
struct task {
  task_kind kind = task_kind::op;
  bool merge = false;               ///< runs on its first ready input, once per input
  bool created = false;             ///< a send or receive the simulation added
  std::int32_t port = 0;            ///< a transfer's port of the producer, -1 for a control token
  std::uint32_t device = 0;         ///< whose memory it uses and where it runs (a send: the source)
  std::uint32_t to_device = 0;      ///< a transfer's destination
  std::size_t vertex = 0;           ///< the op's vertex index; a transfer's producer
  std::size_t rank = 0;             ///< position in the program: the program policy's key
  double flops = 0;
  double bytes_read = 0;            ///< every data input counted (the cost models' input)
  double bytes_written = 0;
  std::uint64_t transfer_bytes = 0; ///< what a send moves
};

/// A tensor in a device's memory: an output of a task, or (port -1) its token
/// or its op's scratch (live during the op's run only).
/// (The flags last, side by side: 48 bytes where interleaved they took 56.)
struct task_buffer {
  std::size_t task = 0;
  std::ptrdiff_t port = 0;
  std::uint64_t bytes = 0;
  std::size_t shares = no_task;  ///< the buffer whose storage it lives in, or no_task
  std::size_t takes_over = no_task;  ///< the buffer whose storage it takes over where that dies, or no_task
  bool persistent = false;
  bool live_out = false;
  bool in_place = false;
  bool scratch = false;  ///< the op's scratch (port -1)
};

struct task_graph {
  std::vector<task> tasks;  ///< added with add_task, which records their names
  compact_rows successors;                           ///< by task, one arc per input of the successor
  std::vector<compact_index> num_inputs;             ///< by task
  std::vector<bool> starts_ready;                    ///< by task: no input, or fed
  std::vector<std::size_t> first_buffer;             ///< by task, and one past the last
  std::vector<task_buffer> buffers;
  compact_rows reads;                                ///< by task: the buffers it reads
  std::vector<std::size_t> task_of_vertex;           ///< by vertex index: its task, no_task when pruned
  std::size_t transfers = 0;                         ///< send/receive pairs created

  /// Appends `t`, named `name`, of op type `op_type`; returns its index.
  std::size_t add_task(const task& t, std::string_view name, std::string_view op_type) {
    tasks.push_back(t);
    text_.append(name);
    text_ends_.push_back(text_.size());
    text_.append(op_type);
    text_ends_.push_back(text_.size());
    return tasks.size() - 1;
  }
  /// Room for `count` tasks in all (their names and op types included).
  void reserve(std::size_t count) {
    tasks.reserve(count);
    text_ends_.reserve(2 * count + 1);
  }
  /// Task t's name: its node's ("v<index>" when that has none); a transfer's
  /// as the seed names it.
  [[nodiscard]] std::string_view name(std::size_t t) const { return text(2 * t); }
  /// Task t's op type ("_Send", "_Recv" for a transfer the simulation added).
  [[nodiscard]] std::string_view op_type(std::size_t t) const { return text(2 * t + 1); }

 private:
  // Every task's name and op type, back to back in one string: a string of
  // its own each cost a task 64 bytes and a transfer two allocations.
  [[nodiscard]] std::string_view text(std::size_t k) const {
    return {text_.data() + text_ends_[k], text_ends_[k + 1] - text_ends_[k]};
  }
  std::string text_;
  std::vector<std::size_t> text_ends_ = {0};  ///< where each name and op type ends, after a 0
};

struct task_options {
  std::vector<std::size_t> fetch;  ///< vertex indices; empty: every op runs
  std::vector<std::size_t> feed;   ///< vertex indices that start ready
  std::uint64_t control_token_bytes = 0;
};

/// A device name as the seed writes it inside a node name.
[[nodiscard]] inline std::string sanitized_device_name(std::string_view device) {
  std::string s(device);
  for (char& c : s) {
    if (c == '/' || c == ':') c = '_';
  }
  return s;
}

}  // namespace memopt::sim
