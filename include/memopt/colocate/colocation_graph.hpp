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
#include <memopt/colocate/errors.hpp>
#include <memopt/detail/union_find.hpp>

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
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
      : devices_(&devices), kernels_(&kernels), soft_(soft_placement), sets_(n), members_(n), specs_(1) {
    std::vector<std::size_t> all(devices.types().size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    intern_support(std::move(all), {});
  }

  [[nodiscard]] std::size_t size() const noexcept { return members_.size(); }

  /// Sets singleton v's constraints, as TF initialises a member: the kernel
  /// types of `op` present in the device set; an `assigned` device must exist
  /// and have a kernel for `op`; else `op` needs a kernel on some device, and
  /// `requested` is kept, as the resource device when v generates a
  /// resource (it is then never overridden across reference edges).
  void initialize(std::size_t v, std::string_view op, std::string_view requested,
                  std::string_view assigned, bool resource_generator = false) {
    assert(sets_.is_root(v));
    members_[v].support = support_of(op);
    group_devices spec;
    if (!assigned.empty()) {
      spec.assigned = parse(assigned, v, device_constraint::assigned);
      const auto device = devices_->find(spec.assigned);
      const auto fault = !device ? std::optional(device_fault::no_such_device)
                         : supports(members_[v].support, devices_->type_of(*device))
                             ? std::nullopt
                             : std::optional(device_fault::no_kernel);
      if (fault) {
        throw unsatisfiable_device_error(v, std::string(op), device_constraint::assigned,
                                         std::string(assigned), *fault, std::string(assigned));
      }
      spec.requested = spec.assigned;
    } else {
      if (supports_[members_[v].support].types.empty()) {
        throw no_kernel_error(v, std::string(op), registered_types(op), devices_->types());
      }
      if (!requested.empty()) {
        spec.requested = parse(requested, v, device_constraint::requested);
        if (resource_generator) spec.resource = spec.requested;
      }
    }
    if (has_details(spec.requested)) {
      members_[v].spec = static_cast<std::uint32_t>(specs_.size());
      specs_.push_back(std::move(spec));
    }
  }

  /// The root of v's group.
  [[nodiscard]] std::size_t find(std::size_t v) { return sets_.find(v); }

  /// Merges the groups of u and v when their constraints allow it; otherwise
  /// returns what conflicts and changes nothing.
  [[nodiscard]] std::optional<colocation_conflict> try_colocate(std::size_t u, std::size_t v) {
    const std::size_t ru = find(u), rv = find(v);
    if (ru == rv) return std::nullopt;
    return try_link(ru, rv, members_[ru].spec, members_[rv].spec);
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
    const group_devices& s = specs_[members_[rs].spec];
    const group_devices& d = specs_[members_[rd].spec];
    for (const auto which : {device_constraint::assigned, device_constraint::resource}) {
      if (!are_compatible(names(s, which), names(d, which))) {
        throw reference_edge_error(src, dst, which, to_string(names(s, which)),
                                   to_string(names(d, which)));
      }
    }
    std::size_t followed = members_[rd].spec;
    if (!are_compatible(s.requested, d.requested)) {
      group_devices follower = d;
      follower.requested = s.requested;
      ensure_specification(follower.requested, d.assigned);
      ensure_specification(follower.requested, d.resource);
      specs_.push_back(std::move(follower));  // unused, and harmless, if the merge fails
      followed = specs_.size() - 1;
    }
    if (const auto conflict = try_link(rs, rd, members_[rs].spec, followed)) {
      throw_conflict(src, dst, *conflict, {.reference_edge = true, .group = {}});
    }
  }

  /// The device names of root r's group.
  [[nodiscard]] const group_devices& devices_of(std::size_t r) const {
    return specs_[members_[r].spec];
  }
  /// The device types with a kernel for every member of root r's group, best
  /// first (priority, then type preference).
  [[nodiscard]] const std::vector<prioritized_type>& supported_types(std::size_t r) const {
    return supports_[members_[r].support].types;
  }
  /// An id shared by roots with equal supported_types (for caching).
  [[nodiscard]] std::size_t support_id(std::size_t r) const { return members_[r].support; }
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
  detail::union_find sets_;
  /// One vertex's constraints, meaningful at roots.
  struct member {
    std::uint32_t support = 0;  ///< index into supports_
    std::uint32_t spec = 0;     ///< index into specs_ (0: names no device)
  };
  std::vector<member> members_;
  std::vector<group_devices> specs_;
  std::vector<type_support> supports_;
  std::map<std::pair<std::vector<std::size_t>, std::vector<std::uint32_t>>, std::uint32_t> support_ids_;
  std::unordered_map<std::string, std::uint32_t> op_support_;
  static constexpr std::uint32_t none = ~std::uint32_t{0};  ///< an empty intersection
  static constexpr std::uint32_t unknown = none - 1;        ///< not merged yet
  static constexpr std::uint32_t small_table = 64;
  std::vector<std::uint32_t> small_merged_ = std::vector<std::uint32_t>(std::size_t{small_table} * small_table, unknown);
  std::unordered_map<std::uint64_t, std::uint32_t> merged_support_;  ///< (a, b) -> a ∩ b, or none

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
    for (const auto op_entry : key.second) {
      std::vector<prioritized_type> ranked;  // the member's ranking of the common types
      for (const auto& t : supports_[op_entry].types) {
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
    common.reserve(types.size());
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

  /// a ∩ b with merged priorities; ~0 when empty. Memoised: a table for the
  /// first few entries (most graphs have few kernel lists), a hash map beyond.
  std::uint32_t merge_support(std::uint32_t a, std::uint32_t b) {
    if (a == b) return a;
    if (a > b) std::swap(a, b);
    std::uint32_t* cached = nullptr;
    if (b < small_table) {
      cached = &small_merged_[a * small_table + b];
    } else {
      cached = &merged_support_.try_emplace((std::uint64_t{a} << 32) | b, unknown).first->second;
    }
    if (*cached != unknown) return *cached;
    std::vector<std::size_t> common;
    std::ranges::set_intersection(supports_[a].common, supports_[b].common, std::back_inserter(common));
    std::vector<std::uint32_t> prioritized;
    std::ranges::set_union(supports_[a].prioritized, supports_[b].prioritized, std::back_inserter(prioritized));
    // (map elements stay put when the map grows)
    *cached = common.empty() ? none : intern_support(std::move(common), std::move(prioritized));
    return *cached;
  }

  /// The index of su and sv merged (0 when neither names a device; one of
  /// them when the other names none), or what conflicts.
  std::variant<std::size_t, colocation_conflict> merge_specs(std::size_t iu, std::size_t iv) {
    if (iv == 0 || iu == iv) return iu;
    if (iu == 0) return iv;
    group_devices merged = specs_[iu];
    const group_devices& other = specs_[iv];
    const auto strict = merge_policy::strict;
    if (const auto part = merge_device_names(merged.assigned, other.assigned, strict)) {
      return colocation_conflict{device_constraint::assigned, *part};
    }
    if (const auto part = merge_device_names(merged.resource, other.resource, strict)) {
      return colocation_conflict{device_constraint::resource, *part};
    }
    if (const auto part = merge_device_names(merged.requested, other.requested,
                                             soft_ ? merge_policy::soft : strict)) {
      return colocation_conflict{device_constraint::requested, *part};
    }
    ensure_specification(merged.requested, merged.assigned);
    ensure_specification(merged.requested, merged.resource);
    const group_devices& kept = specs_[iu];
    if (!has_details(merged.requested)) return std::size_t{0};  // soft placement dropped every part
    if (kept.requested == merged.requested && kept.assigned == merged.assigned &&
        kept.resource == merged.resource) {
      return iu;
    }
    specs_.push_back(std::move(merged));
    return specs_.size() - 1;
  }

  /// Links roots ru and rv, whose names are specs_[iu] and specs_[iv], if
  /// their names and kernel types merge.
  std::optional<colocation_conflict> try_link(std::size_t ru, std::size_t rv, std::size_t iu, std::size_t iv) {
    const auto spec = merge_specs(iu, iv);
    if (const auto* conflict = std::get_if<colocation_conflict>(&spec)) return *conflict;
    const auto support = merge_support(members_[ru].support, members_[rv].support);
    if (support == none) return colocation_conflict{};
    // Checked: now link the shallower tree under the deeper one.
    const std::size_t root = sets_.unite_roots(ru, rv);
    members_[root].support = support;
    members_[root].spec = static_cast<std::uint32_t>(std::get<std::size_t>(spec));
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
                                to_string(names(specs_[members_[ru].spec], *c.constraint)),
                                to_string(names(specs_[members_[rv].spec], *c.constraint)), reason);
  }
};

}  // namespace memopt
