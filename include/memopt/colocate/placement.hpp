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
// What place() reads from a graph is in placement_traits.hpp; check_placement
// (check.hpp) verifies a result.
//
// O((V + E) α(V) + G·D) for G groups of distinct constraints and D devices.
// Throws malformed_device_error, no_devices_error, no_kernel_error,
// unsatisfiable_device_error, no_common_device_type_error,
// device_conflict_error, reference_edge_error, naming vertices by index.

#include <memopt/colocate/colocation_graph.hpp>
#include <memopt/colocate/device_name.hpp>
#include <memopt/colocate/devices.hpp>
#include <memopt/colocate/errors.hpp>
#include <memopt/colocate/placement_traits.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/index_map.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memopt {

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

/// The groups of g, merged in TF's order (steps 1 to 3 of the header
/// comment); with soft placement, refused colocations go to `ignored`.
template <class G, class Traits, class Index>
colocation_graph colocation_groups_of(const G& g, const device_set& devices, const kernel_registry& kernels,
                                      const placement_options& options, const std::vector<vertex_t<G>>& vertex_at,
                                      const data_edges& edges, Index index, std::vector<ignored_colocation>& ignored) {
  const std::size_t n = vertex_at.size();
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
  std::unordered_map<std::string, std::size_t, string_hash, std::equal_to<>> head;
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
      ignored.push_back({i, std::string(group)});
    }
  };
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& group : Traits::colocation_groups(g, vertex_at[i])) join(i, group);
    if (const std::string_view own = Traits::name(g, vertex_at[i]); !own.empty()) join(i, own);
  }
  return groups;
}

/// The devices each group may go to: a device per group, chosen when its
/// first member is placed.
template <class G, class Traits>
class device_chooser {
 public:
  static constexpr auto unplaced = std::numeric_limits<std::size_t>::max();

  device_chooser(const G& g, const std::vector<vertex_t<G>>& vertex_at, const device_set& devices,
                        colocation_graph& groups, bool soft_placement)
      : g_(g), vertex_at_(vertex_at), devices_(devices), groups_(groups), soft_(soft_placement),
        chosen_(vertex_at.size(), unplaced) {}

  /// The devices i may go to, best first (valid until the next call).
  const std::vector<std::size_t>& candidates(std::size_t i) {
    const std::size_t root = groups_.find(i);
    if (const std::size_t d = chosen_[root]; d != unplaced) {
      // A member fixed the device; every member needs a kernel there.
      if (std::ranges::count(groups_.supported_types(root), devices_.type_of(d), &prioritized_type::type) == 0) {
        throw refuse(i, devices_.name(d));
      }
      found_.assign(1, d);
      return found_;
    }
    const auto& spec = groups_.devices_of(root);
    if (!has_details(spec.requested)) {
      auto [it, fresh] = unnamed_candidates_.try_emplace(groups_.support_id(root));
      if (fresh) it->second = matching(root, {});
      return it->second;
    }
    found_ = matching(root, spec.requested);
    if (found_.empty() && soft_) {
      // Relax type and id, first keeping what resource devices fix, then not.
      for (const bool keep_resource : {true, false}) {
        device_name soft = spec.requested;
        const bool keep_type = spec.assigned.type || (keep_resource && spec.resource.type);
        const bool keep_id = spec.assigned.id || (keep_resource && spec.resource.id);
        if (!keep_type) soft.type.reset();
        if (!keep_id) soft.id.reset();
        found_ = matching(root, soft);
        if (!found_.empty()) break;
      }
    }
    if (found_.empty()) throw refuse(i, spec.requested);
    return found_;
  }
  /// Fixes i's group on device d.
  void choose(std::size_t i, std::size_t d) { chosen_[groups_.find(i)] = d; }

 private:
  std::vector<std::size_t> matching(std::size_t root, const device_name& spec) const {
    std::vector<std::size_t> found;
    for (const auto& t : groups_.supported_types(root)) {
      for (const auto d : devices_.ranked()) {
        if (devices_.type_of(d) == t.type && is_specification(spec, devices_.name(d))) found.push_back(d);
      }
    }
    return found;
  }
  std::pair<device_constraint, std::string_view> own_device(std::size_t i) const {
    const auto v = vertex_at_[i];
    if (const std::string_view assigned = Traits::assigned_device(g_, v); !assigned.empty()) {
      return {device_constraint::assigned, assigned};
    }
    return {device_constraint::requested, Traits::requested_device(g_, v)};
  }
  /// No device suits i's group, which requires `required`: name i's own device.
  unsatisfiable_device_error refuse(std::size_t i, const device_name& required) const {
    const auto [which, text] = own_device(i);
    const device_name own = text.empty() ? device_name{} : parse_device_name(text);
    const auto fault = own != required                  ? device_fault::incompatible_group
                       : !devices_.any_matches(own) ? device_fault::no_such_device
                                                      : device_fault::no_kernel;
    return unsatisfiable_device_error(i, std::string(Traits::op_type(g_, vertex_at_[i])), which,
                                      std::string(text), fault, to_string(required));
  }

  const G& g_;
  const std::vector<vertex_t<G>>& vertex_at_;
  const device_set& devices_;
  colocation_graph& groups_;
  bool soft_;
  std::vector<std::size_t> chosen_;  ///< by root
  std::unordered_map<std::size_t, std::vector<std::size_t>> unnamed_candidates_;  ///< by support id
  std::vector<std::size_t> found_;   ///< candidates of the group being placed
};

/// Dense group ids, numbered by first member.
inline void number_groups(colocation_graph& groups, placement_result& result) {
  const std::size_t n = groups.size();
  constexpr auto unnumbered = std::numeric_limits<std::size_t>::max();
  result.group.assign(n, 0);
  std::vector<std::size_t> group_of_root(n, unnumbered);
  for (std::size_t i = 0; i < n; ++i) {
    auto& id = group_of_root[groups.find(i)];
    if (id == unnumbered) id = result.num_groups++;
    result.group[i] = id;
  }
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
  placement_result result;
  auto groups = detail::colocation_groups_of<G, Traits>(g, devices, kernels, options, vertex_at, edges, index,
                                                         result.ignored);

  using chooser = detail::device_chooser<G, Traits>;
  chooser devices_for(g, vertex_at, devices, groups, options.soft_placement);
  result.device.assign(n, chooser::unplaced);
  const auto assign = [&](std::size_t i, std::size_t d) {
    result.device[i] = d;
    devices_for.choose(i, d);
  };
  const auto may_use = [](const std::vector<std::size_t>& choice, std::size_t d) {
    return d != chooser::unplaced && std::ranges::find(choice, d) != choice.end();
  };
  const auto is_generator = [&](std::size_t i) {
    return edges.in_degree[i] == 0 && Traits::num_outputs(g, vertex_at[i]) == 1 &&
           !Traits::is_reference_output(g, vertex_at[i], 0);
  };

  // Generators wait for their consumers; a metadata op follows its input.
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
    const auto& choice = devices_for.candidates(i);
    std::size_t d = choice.front();
    const bool metadata = std::ranges::count(options.metadata_ops, Traits::op_type(g, v)) > 0;
    if (metadata && edges.in_degree[i] > 0 && may_use(choice, result.device[edges.first_input[i]])) {
      d = result.device[edges.first_input[i]];
    }
    assign(i, d);
  }
  for (const std::size_t i : generators) {
    const auto& choice = devices_for.candidates(i);
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
  detail::number_groups(groups, result);
  return result;
}

}  // namespace memopt
