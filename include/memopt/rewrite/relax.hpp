#pragma once
// Relaxed allocator constraints, as the memory optimizer marks them: an
// assignment's output normally goes to memory another device can read
// (pinned host memory); when nothing downstream of it, data or control, is a
// send or runs across a task or CPU/accelerator boundary from it, the runtime
// may allocate it anywhere (grappler's _grappler_relax_allocator_constraints).
// Crossing is TF's: another job, replica or task, or exactly one of the two
// devices a CPU (two GPUs of one task do not cross; a node without a device
// crosses from a CPU, not from a GPU, as in TF). A mark in the plan, no change to the graph's memory.
//
// The seed walks each assignment's transitive fan-out; since "does not cross"
// is an equivalence, one pass in reverse topological order decides every
// vertex at once: O(V + E). Unlike the seed, assignments listed after the
// first send are considered too (the seed stops collecting them there).

#include <memopt/colocate/device_name.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace memopt::rewrite {

struct relax_options {
  std::vector<std::string> assign_ops = {"Assign", "AssignVariableOp"};
  std::vector<std::string> send_ops = {"_Send", "_HostSend"};
};

namespace detail {

/// What crossing compares of a device, as TF splits its name: job, replica,
/// task, and whether its type names a CPU. A name without a type and id, or
/// not a device name, compares as the empty name.
inline std::tuple<std::optional<std::string>, std::optional<std::uint32_t>, std::optional<std::uint32_t>, bool>
device_class(const std::string& device) {
  device_name d;
  try {
    d = parse_device_name(device);
  } catch (const malformed_device_error&) {
    return {};
  }
  if (!d.type || !d.id) return {};
  std::string type = *d.type;
  std::ranges::transform(type, type.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return {d.job, d.replica, d.task, type.find("CPU") != std::string::npos};
}

}  // namespace detail

/// The marks (see the header comment), assignments in vertex order.
[[nodiscard]] inline rewrite_plan relax_allocator_constraints(const graph_facts& f, const relax_options& options = {}) {
  const std::size_t n = f.size();
  const auto is_one_of = [](const std::vector<std::string>& ops, const std::string& op) {
    return std::ranges::find(ops, op) != ops.end();
  };
  std::vector<decltype(detail::device_class(""))> cls;
  cls.reserve(n);
  for (std::size_t v = 0; v < n; ++v) cls.push_back(detail::device_class(f.device[v]));
  // stays[v]: nothing downstream of v is a send or crosses from v's class.
  std::vector<bool> stays(n, true);
  std::vector<std::size_t> order(n);
  const auto position = detail::topological_positions(f);
  for (std::size_t v = 0; v < n; ++v) order[position[v]] = v;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t v = *it;
    for (const std::size_t w : f.consumers[v]) {
      if (!stays[w] || is_one_of(options.send_ops, f.op[w]) || cls[w] != cls[v]) {
        stays[v] = false;
        break;
      }
    }
  }
  rewrite_plan plan;
  for (std::size_t v = 0; v < n; ++v) {
    if (stays[v] && is_one_of(options.assign_ops, f.op[v])) plan.relaxed_allocation.push_back(original(v));
  }
  return plan;
}

}  // namespace memopt::rewrite
