#pragma once
// place(g, devices, kernels): TF's placer over any dag. Ops that must share a
// device are merged in a colocation_graph, in TF's order:
//   1. each vertex: its op's kernel types, requested and assigned devices (a
//      resource generator's requested device is kept like an assigned one);
//   2. reference/resource edges, in vertex-then-edge order: the ends share a
//      device, the destination following the source's request;
//   3. colocation groups, in vertex order: each vertex joins every group it
//      names, then the group of its own name (so "loc:@x" reaches x).
// Then every group gets a device: the first, in the order (kernel priority,
// type preference, name), of the devices matching its merged request and
// having a kernel for all its ops. Pre-assigned devices are kept. Two of TF's
// heuristics refine the choice: a metadata op (Shape, Size, ...) goes to its
// first input's device when it may, and a generator (no data input, one
// non-reference output) is placed last, with its consumers when they all sit
// on one device it may use.
//
// With soft_placement, a group that fails to join another is left out of it,
// conflicting requested device types and ids are dropped, and a request no
// device meets is relaxed to its job, replica and task; assigned devices,
// jobs, replicas, tasks and kernel support are never relaxed.
//
// O((V + E) α(V) + G·D) for G groups of distinct constraints and D devices.
// Throws malformed_device_error, no_devices_error, no_kernel_error,
// unsatisfiable_device_error, no_common_device_type_error,
// device_conflict_error, reference_edge_error, naming vertices by index.

#include <memopt/colocate/colocation_graph.hpp>
#include <memopt/colocate/device_name.hpp>
#include <memopt/colocate/devices.hpp>
#include <memopt/colocate/errors.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/index_map.hpp>

#include <algorithm>
#include <functional>
#include <cstddef>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memopt {

/// memopt's vertex bundle for placement (see bundled_placement_traits).
struct placement_node {
  std::string name;                        ///< also the colocation group it implicitly heads
  std::string op;                          ///< op type: its kernels come from the registry
  std::string device;                      ///< requested device ("" = none)
  std::string assigned_device;             ///< fixed before placement ("" = none)
  std::vector<std::string> colocation;     ///< groups it must share a device with
  std::vector<std::size_t> reference_outputs;  ///< ports that are references/resources
};

/// memopt's edge bundle for placement.
struct placement_edge {
  bool control = false;    ///< orders ops, carries nothing
  bool reference = false;  ///< reads a reference/resource: its ends share a device
};

namespace detail {

/// g[v] has the members bundled_placement_traits cannot do without.
template <class G>
concept has_bundled_placement = requires(const G& g, vertex_t<G> v) {
  { g[v].name } -> std::convertible_to<std::string_view>;
  { g[v].op } -> std::convertible_to<std::string_view>;
  { g[v].device } -> std::convertible_to<std::string_view>;
};

}  // namespace detail

/// Reads placement facts from bundled properties, by member name: g[v].name,
/// op, device, assigned_device, colocation and reference_outputs (optional),
/// g[v].outputs (optional: its size is the number of outputs, else 1), and
/// g[e].control and g[e].reference (optional, default false).
template <class G>
struct bundled_placement_traits {
  using vertex = vertex_t<G>;
  using edge = edge_t<G>;
  static std::string_view name(const G& g, vertex v)
    requires detail::has_bundled_placement<G> { return g[v].name; }
  static std::string_view op_type(const G& g, vertex v)
    requires detail::has_bundled_placement<G> { return g[v].op; }
  static std::string_view requested_device(const G& g, vertex v)
    requires detail::has_bundled_placement<G> { return g[v].device; }
  static std::string_view assigned_device(const G& g, vertex v) {
    if constexpr (requires { g[v].assigned_device; }) {
      return g[v].assigned_device;
    } else {
      return {};
    }
  }
  /// A range of group names (each convertible to std::string_view).
  static const auto& colocation_groups(const G& g, vertex v) {
    if constexpr (requires { g[v].colocation; }) {
      return g[v].colocation;
    } else {
      static const std::vector<std::string> none;
      return none;
    }
  }
  static std::size_t num_outputs(const G& g, vertex v) {
    if constexpr (requires { std::size(g[v].outputs); }) {
      return std::size(g[v].outputs);
    } else {
      return 1;
    }
  }
  static bool is_reference_output(const G& g, vertex v, std::size_t port) {
    if constexpr (requires { g[v].reference_outputs; }) {
      return std::ranges::count(g[v].reference_outputs, port) > 0;
    } else {
      return false;
    }
  }
  static bool is_control(const G& g, edge e) {
    if constexpr (requires { g[e].control; }) {
      return static_cast<bool>(g[e].control);
    } else {
      return false;
    }
  }
  static bool is_reference_edge(const G& g, edge e) {
    if constexpr (requires { g[e].reference; }) {
      return static_cast<bool>(g[e].reference);
    } else {
      return false;
    }
  }
};

/// The customisation point: specialise for your graph, inheriting the default.
template <class G>
struct placement_traits : bundled_placement_traits<G> {};

/// A dag whose placement_traits answer every question place() asks.
template <class G, class Traits = placement_traits<G>>
concept placement_graph =
    dag<G> && requires(const G& g, vertex_t<G> v, edge_t<G> e, std::size_t port) {
      { Traits::name(g, v) } -> std::convertible_to<std::string_view>;
      { Traits::op_type(g, v) } -> std::convertible_to<std::string_view>;
      { Traits::requested_device(g, v) } -> std::convertible_to<std::string_view>;
      { Traits::assigned_device(g, v) } -> std::convertible_to<std::string_view>;
      { *std::begin(Traits::colocation_groups(g, v)) } -> std::convertible_to<std::string_view>;
      { Traits::num_outputs(g, v) } -> std::convertible_to<std::size_t>;
      { Traits::is_reference_output(g, v, port) } -> std::convertible_to<bool>;
      { Traits::is_control(g, e) } -> std::convertible_to<bool>;
      { Traits::is_reference_edge(g, e) } -> std::convertible_to<bool>;
    };

struct placement_options {
  bool soft_placement = false;
  /// Ops that read only their input's metadata (TF's list).
  std::vector<std::string> metadata_ops = {"Shape", "ShapeN", "Rank", "Size"};
};

/// A colocation request soft placement dropped: `vertex` stays out of `group`.
struct ignored_colocation {
  std::size_t vertex = 0;
  std::string group;
  friend bool operator==(const ignored_colocation&, const ignored_colocation&) = default;
};

struct placement_result {
  std::vector<std::size_t> device;  ///< by vertex index: index into the device set
  std::vector<std::size_t> group;   ///< by vertex index: dense group id, by first member
  std::size_t num_groups = 0;
  std::vector<ignored_colocation> ignored;  ///< soft placement only
};

namespace detail {

/// Hashes std::string and std::string_view alike (lookups without a copy).
struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const noexcept { return std::hash<std::string_view>{}(text); }
};

/// Per vertex: data in-degree, first data input, data consumers (CSR).
struct data_edges {
  std::vector<std::size_t> in_degree;
  std::vector<std::size_t> first_input;
  std::vector<std::size_t> consumer_first{0};
  std::vector<std::size_t> consumers;
};

template <class G, class Traits, class Index>
data_edges collect_data_edges(const G& g, Index index) {
  constexpr auto none = std::numeric_limits<std::size_t>::max();
  const std::size_t n = num_vertices(g);
  data_edges d{std::vector<std::size_t>(n, 0), std::vector<std::size_t>(n, none)};
  d.consumer_first.assign(n + 1, 0);
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    for (const auto e : boost::make_iterator_range(out_edges(v, g))) {
      if (!Traits::is_control(g, e)) ++d.consumer_first[index(v) + 1];
    }
  }
  for (std::size_t i = 0; i < n; ++i) d.consumer_first[i + 1] += d.consumer_first[i];
  d.consumers.resize(d.consumer_first[n]);
  auto next = d.consumer_first;
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    const std::size_t i = index(v);
    for (const auto e : boost::make_iterator_range(out_edges(v, g))) {
      if (Traits::is_control(g, e)) continue;
      const std::size_t j = index(target(e, g));
      d.consumers[next[i]++] = j;
      ++d.in_degree[j];
      if (d.first_input[j] == none) d.first_input[j] = i;
    }
  }
  return d;
}

}  // namespace detail

/// Places every vertex of g on a device of `devices`; see the header comment.
template <dag G, class Traits = placement_traits<G>, vertex_index_map<G> Index = identity_index>
  requires placement_graph<G, Traits>
[[nodiscard]] placement_result place(const G& g, const device_set& devices,
                                     const kernel_registry& kernels,
                                     const placement_options& options = {}, Index index = {}) {
  if (devices.empty()) throw no_devices_error();
  const std::size_t n = num_vertices(g);
  const auto vertex_at = vertices_by_index(g, index);
  const auto edges = detail::collect_data_edges<G, Traits>(g, index);
  const auto is_generator = [&](std::size_t i) {
    return edges.in_degree[i] == 0 && Traits::num_outputs(g, vertex_at[i]) == 1 &&
           !Traits::is_reference_output(g, vertex_at[i], 0);
  };

  // 1. members
  colocation_graph groups(n, devices, kernels, options.soft_placement);
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = vertex_at[i];
    const bool resource_generator = edges.in_degree[i] == 0 && Traits::num_outputs(g, v) == 1 &&
                                    Traits::is_reference_output(g, v, 0);
    groups.initialize(i, Traits::op_type(g, v), Traits::requested_device(g, v),
                      Traits::assigned_device(g, v), resource_generator);
  }
  // 2. reference/resource edges
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto e : boost::make_iterator_range(out_edges(vertex_at[i], g))) {
      if (!Traits::is_control(g, e) && Traits::is_reference_edge(g, e)) {
        groups.colocate_reference(i, index(target(e, g)));
      }
    }
  }
  // 3. colocation groups; the first vertex to name a group heads it
  placement_result result;
  std::unordered_map<std::string, std::size_t, detail::string_hash, std::equal_to<>> head;
  head.reserve(n);
  const auto join = [&](std::size_t i, std::string_view group) {
    const auto it = head.find(group);
    if (it == head.end()) {
      head.emplace(std::string(group), i);
      return;
    }
    if (it->second == i) return;
    if (groups.try_colocate(i, it->second)) {  // refused, nothing changed
      if (!options.soft_placement) groups.colocate(i, it->second, {.group = std::string(group)});
      result.ignored.push_back({i, std::string(group)});
    }
  };
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& group : Traits::colocation_groups(g, vertex_at[i])) join(i, group);
    if (const std::string_view own = Traits::name(g, vertex_at[i]); !own.empty()) join(i, own);
  }

  // Placement: a device per group, chosen when its first member is placed.
  constexpr auto unplaced = std::numeric_limits<std::size_t>::max();
  result.device.assign(n, unplaced);
  std::vector<std::size_t> chosen(n, unplaced);  // by root
  std::unordered_map<std::size_t, std::vector<std::size_t>> unnamed_candidates;  // by support id
  const auto matching = [&](std::size_t root, const device_name& spec) {
    std::vector<std::size_t> found;
    for (const auto& t : groups.supported_types(root)) {
      for (const auto d : devices.ranked()) {
        if (devices.type_of(d) == t.type && is_specification(spec, devices.name(d))) found.push_back(d);
      }
    }
    return found;
  };
  const auto own_device = [&](std::size_t i) -> std::pair<device_constraint, std::string_view> {
    const auto v = vertex_at[i];
    if (const std::string_view assigned = Traits::assigned_device(g, v); !assigned.empty()) {
      return {device_constraint::assigned, assigned};
    }
    return {device_constraint::requested, Traits::requested_device(g, v)};
  };
  // No device suits i's group, which requires `required`: name i's own device.
  const auto refuse = [&](std::size_t i, const device_name& required) {
    const auto [which, text] = own_device(i);
    const device_name own = text.empty() ? device_name{} : parse_device_name(text);
    const auto fault = own != required                ? device_fault::incompatible_group
                       : !devices.any_matches(own) ? device_fault::no_such_device
                                                   : device_fault::no_kernel;
    return unsatisfiable_device_error(i, std::string(Traits::op_type(g, vertex_at[i])), which,
                                      std::string(text), fault, to_string(required));
  };
  std::vector<std::size_t> found;  // candidates of the group being placed
  // The devices i may go to, best first (valid until the next call).
  const auto candidates = [&](std::size_t i) -> const std::vector<std::size_t>& {
    const std::size_t root = groups.find(i);
    if (const std::size_t d = chosen[root]; d != unplaced) {
      // A member fixed the device; every member needs a kernel there.
      if (std::ranges::count(groups.supported_types(root), devices.type_of(d), &prioritized_type::type) == 0) {
        throw refuse(i, devices.name(d));
      }
      found.assign(1, d);
      return found;
    }
    const auto& spec = groups.devices_of(root);
    if (!has_details(spec.requested)) {
      auto [it, fresh] = unnamed_candidates.try_emplace(groups.support_id(root));
      if (fresh) it->second = matching(root, {});
      return it->second;
    }
    found = matching(root, spec.requested);
    if (found.empty() && options.soft_placement) {
      // Relax type and id, first keeping what resource devices fix, then not.
      for (const bool keep_resource : {true, false}) {
        device_name soft = spec.requested;
        const bool keep_type = spec.assigned.type || (keep_resource && spec.resource.type);
        const bool keep_id = spec.assigned.id || (keep_resource && spec.resource.id);
        if (!keep_type) soft.type.reset();
        if (!keep_id) soft.id.reset();
        found = matching(root, soft);
        if (!found.empty()) break;
      }
    }
    if (found.empty()) throw refuse(i, spec.requested);
    return found;
  };
  const auto assign = [&](std::size_t i, std::size_t d) {
    result.device[i] = d;
    chosen[groups.find(i)] = d;
  };
  const auto may_use = [](const std::vector<std::size_t>& choice, std::size_t d) {
    return d != unplaced && std::ranges::find(choice, d) != choice.end();
  };

  std::vector<std::size_t> generators;
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = vertex_at[i];
    if (const auto assigned = Traits::assigned_device(g, v); !assigned.empty()) {
      assign(i, *devices.find(parse_device_name(assigned)));  // checked by initialize
      continue;
    }
    if (is_generator(i)) {
      generators.push_back(i);
      continue;
    }
    const auto& choice = candidates(i);
    std::size_t d = choice.front();
    const bool metadata = std::ranges::count(options.metadata_ops, Traits::op_type(g, v)) > 0;
    if (metadata && edges.in_degree[i] > 0 && may_use(choice, result.device[edges.first_input[i]])) {
      d = result.device[edges.first_input[i]];
    }
    assign(i, d);
  }
  for (const std::size_t i : generators) {
    const auto& choice = candidates(i);
    std::size_t d = choice.front();
    const auto consumers = std::span(edges.consumers).subspan(
        edges.consumer_first[i], edges.consumer_first[i + 1] - edges.consumer_first[i]);
    if (!consumers.empty()) {
      const std::size_t theirs = result.device[consumers.front()];
      const bool together = std::ranges::all_of(consumers, [&](std::size_t c) { return result.device[c] == theirs; });
      if (together && may_use(choice, theirs)) d = theirs;
    }
    assign(i, d);
  }

  result.group.assign(n, 0);
  std::vector<std::size_t> group_of_root(n, unplaced);
  for (std::size_t i = 0; i < n; ++i) {
    auto& id = group_of_root[groups.find(i)];
    if (id == unplaced) id = result.num_groups++;
    result.group[i] = id;
  }
  return result;
}

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
