#pragma once
// check_placement: every way a placement_result breaks g's constraints (empty
// = valid).

#include <memopt/colocate/devices.hpp>
#include <memopt/colocate/placement.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/index_map.hpp>

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memopt {

/// What is wrong with a placement.
enum class placement_fault {
  bad_device,       ///< `vertex` has no device of the set (or the result is short)
  no_kernel,        ///< `vertex`'s device type has no kernel for its op
  group_split,      ///< `vertex` and `other` share a group but not a device
  reference_split,  ///< a reference/resource edge `vertex` -> `other` spans two devices
  colocation_split, ///< `vertex` names the group `other` heads (by name), on another device
  assigned_moved    ///< `vertex` is not on its assigned device
};

struct placement_violation {
  placement_fault fault;
  std::size_t vertex = 0;
  std::size_t other = 0;
  friend bool operator==(const placement_violation&, const placement_violation&) = default;
};

/// Checks `result` against g's constraints: every vertex on a device with a
/// kernel for its op, groups and reference edges on one device, assigned
/// devices kept, and (without soft placement) every colocation group named by
/// a vertex on the device of the vertex of that name. O((V + E) + V·K) for K
/// kernels per op. Empty when valid.
template <dag G, class Traits = placement_traits<G>, vertex_index_map<G> Index = identity_index>
  requires placement_graph<G, Traits>
[[nodiscard]] std::vector<placement_violation> check_placement(
    const G& g, const device_set& devices, const kernel_registry& kernels,
    const placement_result& result, const placement_options& options = {}, Index index = {}) {
  std::vector<placement_violation> faults;
  const std::size_t n = num_vertices(g);
  if (result.device.size() != n || result.group.size() != n) {
    return {{placement_fault::bad_device, std::min(result.device.size(), result.group.size())}};
  }
  const auto vertex_at = vertices_by_index(g, index);
  std::unordered_map<std::string_view, std::size_t> named;
  for (std::size_t i = 0; i < n; ++i) named.emplace(Traits::name(g, vertex_at[i]), i);
  std::vector<std::size_t> first_of_group(n, n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = vertex_at[i];
    const std::size_t d = result.device[i];
    if (d >= devices.size()) {
      faults.push_back({placement_fault::bad_device, i});
      continue;
    }
    const auto* ops = kernels.find(Traits::op_type(g, v));
    const auto& type = devices.types()[devices.type_of(d)];
    if (ops == nullptr || std::ranges::find(*ops, type, &kernel::device_type) == ops->end()) {
      faults.push_back({placement_fault::no_kernel, i});
    }
    if (result.group[i] < n) {
      auto& first = first_of_group[result.group[i]];
      if (first == n) first = i;
      if (result.device[first] != d) faults.push_back({placement_fault::group_split, i, first});
    }
    if (const auto assigned = Traits::assigned_device(g, v);
        !assigned.empty() && devices.full_name(d) != to_string(parse_device_name(assigned))) {
      faults.push_back({placement_fault::assigned_moved, i});
    }
    for (const auto e : boost::make_iterator_range(out_edges(v, g))) {
      const std::size_t j = index(target(e, g));
      if (!Traits::is_control(g, e) && Traits::is_reference_edge(g, e) && result.device[j] != d) {
        faults.push_back({placement_fault::reference_split, i, j});
      }
    }
    if (options.soft_placement) continue;
    for (const auto& group : Traits::colocation_groups(g, v)) {
      const auto it = named.find(std::string_view(group));
      if (it != named.end() && result.device[it->second] != d) {
        faults.push_back({placement_fault::colocation_split, i, it->second});
      }
    }
  }
  return faults;
}

}  // namespace memopt
