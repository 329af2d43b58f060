#pragma once
// Cost models: how long an op takes on a device, in microseconds, with its
// compute part (flops / the device's flops_per_s) and memory part (bytes read
// and written / the device's bytes_per_s) reported apart. A model is any type
// with `op_cost cost(const op_profile&, const device_spec&) const`
// (the cost_model concept). Built in:
// - sum_cost: compute + memory, the seed's default (no overlap);
// - roofline_cost: max(compute, memory), the two overlapping fully;
// - fixed_cost: the same time for every op;
// - table_cost: measured times by node name, then by op type, else another model.

#include <memopt/simulate/machine.hpp>

#include <algorithm>
#include <concepts>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace memopt::sim {

/// What a cost model knows of one op run.
struct op_profile {
  std::string_view name;
  std::string_view op_type;
  double flops = 0;
  double bytes_read = 0;     ///< sum of the tensors it reads, each input counted
  double bytes_written = 0;  ///< sum of its outputs
};

/// One op's time: total_us is what the device is busy for.
struct op_cost {
  double compute_us = 0;
  double memory_us = 0;
  double total_us = 0;
};

template <class M>
concept cost_model = requires(const M& m, const op_profile& op, const device_spec& d) {
  { m.cost(op, d) } -> std::same_as<op_cost>;
};

/// The two parts with no total yet.
[[nodiscard]] inline op_cost op_parts(const op_profile& op, const device_spec& d) {
  return {.compute_us = op.flops / d.flops_per_s * 1e6,
          .memory_us = (op.bytes_read + op.bytes_written) / d.bytes_per_s * 1e6};
}

struct sum_cost {
  [[nodiscard]] op_cost cost(const op_profile& op, const device_spec& d) const {
    op_cost c = op_parts(op, d);
    c.total_us = c.compute_us + c.memory_us;
    return c;
  }
};

struct roofline_cost {
  [[nodiscard]] op_cost cost(const op_profile& op, const device_spec& d) const {
    op_cost c = op_parts(op, d);
    c.total_us = std::max(c.compute_us, c.memory_us);
    return c;
  }
};

/// Every op takes `us` (reported as compute).
struct fixed_cost {
  double us = 0;
  [[nodiscard]] op_cost cost(const op_profile&, const device_spec&) const {
    return {.compute_us = us, .memory_us = 0, .total_us = us};
  }
};

/// Measured times: by node name first, then by op type; any other op is
/// timed by `fallback`. A measured time is reported as compute.
template <cost_model Fallback = sum_cost>
struct table_cost {
  std::unordered_map<std::string, double> by_name;
  std::unordered_map<std::string, double> by_type;
  Fallback fallback{};

  [[nodiscard]] op_cost cost(const op_profile& op, const device_spec& d) const {
    const auto measured = [](double us) { return op_cost{.compute_us = us, .memory_us = 0, .total_us = us}; };
    if (const auto it = by_name.find(std::string(op.name)); it != by_name.end()) return measured(it->second);
    if (const auto it = by_type.find(std::string(op.op_type)); it != by_type.end()) return measured(it->second);
    return fallback.cost(op, d);
  }
};

}  // namespace memopt::sim
