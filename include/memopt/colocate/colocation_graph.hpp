#pragma once
// colocation_graph: TF's ColocationGraph over dense vertex indices. A
// union-find (union by rank, path halving) whose every root carries its
// group's merged constraints: requested, assigned and resource devices
// (device_name) and the device types with a kernel for every member, in
// priority order. Merges are checked first and applied only when they
// succeed: a failed merge leaves every member and root as it was.
//
// Group constraints are interned: a group without device names shares entry
// 0, and the intersection of two kernel-type lists is computed once per pair
// of distinct lists, so a merge costs O(α(n)) amortised plus O(1) hash
// look-ups; n vertices take O(n) memory.
//
// Kernel priorities merge as TF merges them for two ops (an unprioritised side
// takes the other's, agreeing priorities stay, disagreeing ones are dropped for
// the type preference), judged on the whole group at once: the ops whose
// priorities still order the group's common types must all agree. Unlike
// TF's pairwise rule, the result does not depend on the order of merges.
//
// Throws (initialize) malformed_device_error, unsatisfiable_device_error,
// no_kernel_error; (colocate, colocate_reference) no_common_device_type_error,
// device_conflict_error, reference_edge_error.

#include <memopt/colocate/device_name.hpp>
#include <memopt/colocate/devices.hpp>
#include <memopt/error.hpp>

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memopt {

/// A device type (index into device_set::types()) with its kernel priority.
struct prioritized_type {
  std::size_t type = 0;
  int priority = 0;
  friend auto operator<=>(const prioritized_type&, const prioritized_type&) = default;
};

/// A group's device-name constraints. `requested` is always a specification
/// of `assigned` and `resource`: the sum of every wish.
struct group_devices {
  device_name requested;
  device_name assigned;
  device_name resource;
};

/// What stops two groups from merging.
struct colocation_conflict {
  std::optional<device_constraint> constraint;  ///< none: no device type supports both
  device_part part = device_part::job;          ///< the part the devices differ in
};

class colocation_graph {
 public:
  /// n singletons that support every device type of `devices` and name no device.
  colocation_graph(std::size_t n, const device_set& devices, const kernel_registry& kernels,
                   bool soft_placement = false)
      : devices_(&devices), kernels_(&kernels), soft_(soft_placement), parent_(n), rank_(n, 0),
        support_(n, 0), specs_index_(n, 0), specs_(1) {
    for (std::size_t v = 0; v < n; ++v) parent_[v] = v;
    std::vector<std::size_t> all(devices.types().size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    intern_support(std::move(all), {});
  }

  [[nodiscard]] std::size_t size() const noexcept { return parent_.size(); }

  /// Sets singleton v's constraints, as TF initialises a member: the kernel
  /// types of `op` present in the device set; an `assigned` device must exist
  /// and have a kernel for `op`; else `op` needs a kernel on some device, and
  /// `requested` is kept, as the resource device when v generates a
  /// resource (it is then never overridden across reference edges).
  void initialize(std::size_t v, std::string_view op, std::string_view requested,
                  std::string_view assigned, bool resource_generator = false) {
    assert(parent_[v] == v && rank_[v] == 0);
    support_[v] = support_of(op);
    group_devices spec;
    if (!assigned.empty()) {
      spec.assigned = parse(assigned, v, device_constraint::assigned);
      const auto device = devices_->find(spec.assigned);
      const auto fault = !device ? std::optional(device_fault::no_such_device)
                         : supports(support_[v], devices_->type_of(*device))
                             ? std::nullopt
                             : std::optional(device_fault::no_kernel);
      if (fault) {
        throw unsatisfiable_device_error(v, std::string(op), device_constraint::assigned,
                                         std::string(assigned), *fault, std::string(assigned));
      }
      spec.requested = spec.assigned;
    } else {
      if (supports_.at(support_[v]).types.empty()) {
        throw no_kernel_error(v, std::string(op), registered_types(op), devices_->types());
      }
      if (!requested.empty()) {
        spec.requested = parse(requested, v, device_constraint::requested);
        if (resource_generator) spec.resource = spec.requested;
      }
    }
    if (has_details(spec.requested)) {
      specs_index_[v] = specs_.size();
      specs_.push_back(std::move(spec));
    }
  }

  /// The root of v's group.
  [[nodiscard]] std::size_t find(std::size_t v) {
    while (parent_[v] != v) {
      parent_[v] = parent_[parent_[v]];
      v = parent_[v];
    }
    return v;
  }

  /// Merges the groups of u and v when their constraints allow it; otherwise
  /// returns what conflicts and changes nothing.
  [[nodiscard]] std::optional<colocation_conflict> try_colocate(std::size_t u, std::size_t v) {
    const std::size_t ru = find(u), rv = find(v);
    if (ru == rv) return std::nullopt;
    return try_link(ru, rv, specs_[specs_index_[ru]], specs_[specs_index_[rv]]);
  }

  /// try_colocate, throwing no_common_device_type_error or
  /// device_conflict_error (naming u, v and `reason`) on a conflict.
  void colocate(std::size_t u, std::size_t v, const colocation_reason& reason) {
    if (const auto conflict = try_colocate(u, v)) throw_conflict(u, v, *conflict, reason);
  }

  /// Colocates the ends of a reference/resource edge src -> dst as TF does:
  /// their groups' assigned and resource devices must be compatible
  /// (reference_edge_error otherwise); if their requested devices are not,
  /// dst's group follows src's request. Unchanged on any error.
  void colocate_reference(std::size_t src, std::size_t dst) {
    const std::size_t rs = find(src), rd = find(dst);
    if (rs == rd) return;
    const group_devices& s = specs_[specs_index_[rs]];
    group_devices d = specs_[specs_index_[rd]];
    for (const auto which : {device_constraint::assigned, device_constraint::resource}) {
      if (!are_compatible(names(s, which), names(d, which))) {
        throw reference_edge_error(src, dst, which, to_string(names(s, which)),
                                   to_string(names(d, which)));
      }
    }
    if (!are_compatible(s.requested, d.requested)) {
      d.requested = s.requested;
      ensure_specification(d.requested, d.assigned);
      ensure_specification(d.requested, d.resource);
    }
    if (const auto conflict = try_link(rs, rd, s, d)) {
      throw_conflict(src, dst, *conflict, {.reference_edge = true, .group = {}});
    }
  }

  /// The device names of root r's group.
  [[nodiscard]] const group_devices& devices_of(std::size_t r) const {
    return specs_[specs_index_[r]];
  }
  /// The device types with a kernel for every member of root r's group, best
  /// first (priority, then type preference).
  [[nodiscard]] const std::vector<prioritized_type>& supported_types(std::size_t r) const {
    return supports_[support_[r]].types;
  }
  /// An id shared by roots with equal supported_types (for caching).
  [[nodiscard]] std::size_t support_id(std::size_t r) const { return support_[r]; }
  /// supported_types(r) by name.
  [[nodiscard]] std::vector<std::string> type_names(std::size_t r) const {
    std::vector<std::string> names;
    for (const auto& t : supported_types(r)) names.push_back(devices_->types()[t.type]);
    return names;
  }
  [[nodiscard]] bool soft_placement() const noexcept { return soft_; }

 private:
  struct type_support {
    std::vector<std::size_t> common;         ///< the types every member supports, ascending
    std::vector<std::uint32_t> prioritized;  ///< the members' op-level entries with priorities
    std::vector<prioritized_type> types;     ///< `common`, best first
  };

  const device_set* devices_;
  const kernel_registry* kernels_;
  bool soft_;
  std::vector<std::size_t> parent_;
  std::vector<std::uint8_t> rank_;
  std::vector<std::uint32_t> support_;     ///< by root: index into supports_
  std::vector<std::size_t> specs_index_;   ///< by root: index into specs_ (0: no names)
  std::vector<group_devices> specs_;
  std::vector<type_support> supports_;
  std::map<std::pair<std::vector<std::size_t>, std::vector<std::uint32_t>>, std::uint32_t> support_ids_;
  std::unordered_map<std::string, std::uint32_t> op_support_;
  std::unordered_map<std::uint64_t, std::uint32_t> merged_support_;  ///< (a, b) -> a ∩ b, or ~0

  static const device_name& names(const group_devices& g, device_constraint which) {
    switch (which) {
      case device_constraint::requested: return g.requested;
      case device_constraint::assigned: return g.assigned;
      case device_constraint::resource: return g.resource;
    }
    return g.requested;
  }

  static bool has_priorities(const std::vector<prioritized_type>& types) {
    return std::ranges::any_of(types, [](const auto& t) { return t.priority != 0; });
  }

  /// Priority first, then type preference.
  std::vector<prioritized_type> sorted(std::vector<prioritized_type> types) const {
    std::ranges::sort(types, [&](const auto& a, const auto& b) {
      if (a.priority != b.priority) return a.priority > b.priority;
      return devices_->type_rank(a.type) < devices_->type_rank(b.type);
    });
    return types;
  }

  /// The entry for these common types and prioritised members, ranking the
  /// types by the members' priorities when they all agree on them.
  std::uint32_t intern_support(std::vector<std::size_t> common, std::vector<std::uint32_t> prioritized) {
    auto key = std::pair(std::move(common), std::move(prioritized));
    if (const auto it = support_ids_.find(key); it != support_ids_.end()) return it->second;
    std::optional<std::vector<prioritized_type>> agreed;
    bool disagree = false;
    for (const auto member : key.second) {
      std::vector<prioritized_type> ranked;  // the member's ranking of the common types
      for (const auto& t : supports_[member].types) {
        if (std::ranges::binary_search(key.first, t.type)) ranked.push_back(t);
      }
      if (!has_priorities(ranked)) continue;
      const auto same_order = [&] {
        return std::ranges::equal(*agreed, ranked, {}, &prioritized_type::type, &prioritized_type::type);
      };
      if (!agreed) {
        agreed = std::move(ranked);
      } else if (!same_order()) {
        disagree = true;
      }
    }
    std::vector<prioritized_type> types;
    if (agreed && !disagree) {
      types = std::move(*agreed);
    } else {
      for (const auto t : key.first) types.push_back({t, 0});
      types = sorted(std::move(types));
    }
    const auto id = static_cast<std::uint32_t>(supports_.size());
    supports_.push_back({key.first, key.second, std::move(types)});
    support_ids_.emplace(std::move(key), id);
    return id;
  }

  bool supports(std::uint32_t support, std::size_t type) const {
    return std::ranges::any_of(supports_[support].types, [&](const auto& t) { return t.type == type; });
  }

  std::vector<std::string> registered_types(std::string_view op) const {
    std::vector<std::string> names;
    if (const auto* found = kernels_->find(op)) {
      for (const auto& k : *found) names.push_back(k.device_type);
    }
    return names;
  }

  /// The kernel types of `op` that the device set has (highest priority per type).
  std::uint32_t support_of(std::string_view op) {
    const std::string key(op);
    if (const auto it = op_support_.find(key); it != op_support_.end()) return it->second;
    std::vector<prioritized_type> types;
    if (const auto* found = kernels_->find(op)) {
      for (const auto& k : *found) {
        const auto type = devices_->find_type(k.device_type);
        if (!type) continue;
        const auto same = std::ranges::find(types, *type, &prioritized_type::type);
        if (same == types.end()) {
          types.push_back({*type, k.priority});
        } else {
          same->priority = std::max(same->priority, k.priority);
        }
      }
    }
    std::vector<std::size_t> common;
    for (const auto& t : types) common.push_back(t.type);
    std::ranges::sort(common);
    std::uint32_t id = 0;
    if (has_priorities(types)) {  // its own prioritised member
      id = static_cast<std::uint32_t>(supports_.size());
      supports_.push_back({common, {id}, sorted(std::move(types))});
      support_ids_.emplace(std::pair(std::move(common), std::vector{id}), id);
    } else {
      id = intern_support(std::move(common), {});
    }
    op_support_.emplace(key, id);
    return id;
  }

  /// a ∩ b with merged priorities; ~0 when empty.
  std::uint32_t merge_support(std::uint32_t a, std::uint32_t b) {
    if (a == b) return a;
    if (a > b) std::swap(a, b);
    const std::uint64_t key = (std::uint64_t{a} << 32) | b;
    if (const auto it = merged_support_.find(key); it != merged_support_.end()) return it->second;
    std::vector<std::size_t> common;
    std::ranges::set_intersection(supports_[a].common, supports_[b].common, std::back_inserter(common));
    std::vector<std::uint32_t> prioritized;
    std::ranges::set_union(supports_[a].prioritized, supports_[b].prioritized, std::back_inserter(prioritized));
    const auto result = common.empty() ? ~std::uint32_t{0}
                                       : intern_support(std::move(common), std::move(prioritized));
    merged_support_.emplace(key, result);
    return result;
  }

  /// Links roots ru and rv if specs su, sv and their kernel types merge.
  std::optional<colocation_conflict> try_link(std::size_t ru, std::size_t rv, const group_devices& su,
                                              const group_devices& sv) {
    group_devices merged = su;
    const auto strict = merge_policy::strict;
    if (const auto part = merge_device_names(merged.assigned, sv.assigned, strict)) {
      return colocation_conflict{device_constraint::assigned, *part};
    }
    if (const auto part = merge_device_names(merged.resource, sv.resource, strict)) {
      return colocation_conflict{device_constraint::resource, *part};
    }
    if (const auto part = merge_device_names(merged.requested, sv.requested,
                                             soft_ ? merge_policy::soft : strict)) {
      return colocation_conflict{device_constraint::requested, *part};
    }
    ensure_specification(merged.requested, merged.assigned);
    ensure_specification(merged.requested, merged.resource);
    const auto support = merge_support(support_[ru], support_[rv]);
    if (support == ~std::uint32_t{0}) return colocation_conflict{};
    // Checked: now link the shallower tree under the deeper one.
    if (rank_[ru] < rank_[rv]) std::swap(ru, rv);
    if (rank_[ru] == rank_[rv]) ++rank_[ru];
    parent_[rv] = ru;
    support_[ru] = support;
    const group_devices& kept = specs_[specs_index_[ru]];
    if (!has_details(merged.requested)) {  // requested specifies assigned and resource
      specs_index_[ru] = 0;
    } else if (kept.requested != merged.requested || kept.assigned != merged.assigned ||
               kept.resource != merged.resource) {
      specs_index_[ru] = specs_.size();
      specs_.push_back(std::move(merged));
    }
    return std::nullopt;
  }

  device_name parse(std::string_view text, std::size_t v, device_constraint which) const {
    try {
      return parse_device_name(text);
    } catch (const malformed_device_error& e) {
      throw e.of(v, which);
    }
  }

  /// Throws the error for a conflict between u's and v's (unmerged) groups.
  [[noreturn]] void throw_conflict(std::size_t u, std::size_t v, const colocation_conflict& c,
                                   const colocation_reason& reason) {
    const std::size_t ru = find(u), rv = find(v);
    if (!c.constraint) {
      throw no_common_device_type_error(u, v, type_names(ru), type_names(rv), reason);
    }
    throw device_conflict_error(u, v, *c.constraint, c.part,
                                to_string(names(specs_[specs_index_[ru]], *c.constraint)),
                                to_string(names(specs_[specs_index_[rv]], *c.constraint)), reason);
  }
};

}  // namespace memopt
