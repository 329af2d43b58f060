#pragma once
// The placement environment: a device_set (the devices, by full name, and a
// device type preference) and a kernel_registry (which device types have a
// kernel for each op type, with optional priorities).
//
// Devices are ranked as TF's placer ranks them: by type preference (types the
// preference list leaves out come after, by name), then by name (job, replica,
// task, type, id; ids compare as numbers). Building a device_set is
// O(D log D); matching a specification is O(D).
//
// Throws malformed_device_error for a device name that does not parse or is
// not complete (fault `incomplete`), and for a name given twice (fault
// `repeated_part`, position 0).

#include <memopt/colocate/device_name.hpp>
#include <memopt/colocate/errors.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace memopt {

/// One device type with a kernel for an op; a higher priority wins over the
/// type preference (TF's kernel priorities).
struct kernel {
  std::string device_type;
  int priority = 0;
  friend bool operator==(const kernel&, const kernel&) = default;
};

/// Op type -> the device types with a kernel for it. Ops missing from
/// `kernels` use `fallback` when it is set, and have no kernel otherwise.
struct kernel_registry {
  std::unordered_map<std::string, std::vector<kernel>> kernels;
  std::optional<std::vector<kernel>> fallback;

  /// The kernels of `op`, or null when it has none.
  [[nodiscard]] const std::vector<kernel>* find(std::string_view op) const {
    if (const auto it = kernels.find(std::string(op)); it != kernels.end()) return &it->second;
    return fallback ? &*fallback : nullptr;
  }
};

/// The devices placement may choose from.
class device_set {
 public:
  /// `names`: complete device names; `preference`: device types, most
  /// preferred first (e.g. {"GPU", "CPU"}).
  explicit device_set(const std::vector<std::string>& names,
                      const std::vector<std::string>& preference = {}) {
    for (const auto& text : names) {
      device_name d = parse_device_name(text);
      if (!is_complete(d)) {
        throw malformed_device_error(text, 0, device_name_fault::incomplete,
                                     "a device must name its job, replica, task, type and id");
      }
      const auto type = intern_type(*d.type);
      devices_.push_back({std::move(d), type});
    }
    rank_types(preference);
    ranked_.resize(devices_.size());
    std::iota(ranked_.begin(), ranked_.end(), std::size_t{0});
    std::ranges::sort(ranked_, [&](std::size_t a, std::size_t b) {
      return std::tuple(type_rank_[devices_[a].type], key(a)) <
             std::tuple(type_rank_[devices_[b].type], key(b));
    });
    for (std::size_t k = 1; k < ranked_.size(); ++k) {
      if (devices_[ranked_[k]].name == devices_[ranked_[k - 1]].name) {
        throw malformed_device_error(to_string(devices_[ranked_[k]].name), 0,
                                     device_name_fault::repeated_part, "the device is listed twice");
      }
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return devices_.size(); }
  [[nodiscard]] bool empty() const noexcept { return devices_.empty(); }
  /// Device i's parsed name (i in the order given).
  [[nodiscard]] const device_name& name(std::size_t i) const { return devices_[i].name; }
  [[nodiscard]] std::string full_name(std::size_t i) const { return to_string(devices_[i].name); }
  /// Device i's type, as an index into types().
  [[nodiscard]] std::size_t type_of(std::size_t i) const { return devices_[i].type; }
  /// The distinct device types, in the order first seen.
  [[nodiscard]] const std::vector<std::string>& types() const noexcept { return types_; }
  [[nodiscard]] std::optional<std::size_t> find_type(std::string_view type) const {
    const auto it = std::ranges::find(types_, type);
    if (it == types_.end()) return std::nullopt;
    return static_cast<std::size_t>(it - types_.begin());
  }
  /// 0 for the most preferred type.
  [[nodiscard]] std::size_t type_rank(std::size_t type) const { return type_rank_[type]; }
  /// Every device, best first.
  [[nodiscard]] const std::vector<std::size_t>& ranked() const noexcept { return ranked_; }
  /// The device named exactly `d`, if any.
  [[nodiscard]] std::optional<std::size_t> find(const device_name& d) const {
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].name == d) return i;
    }
    return std::nullopt;
  }
  /// Whether some device matches the specification `spec`.
  [[nodiscard]] bool any_matches(const device_name& spec) const {
    return std::ranges::any_of(devices_, [&](const auto& d) { return is_specification(spec, d.name); });
  }

 private:
  struct entry {
    device_name name;
    std::size_t type;
  };
  std::vector<entry> devices_;
  std::vector<std::string> types_;
  std::vector<std::size_t> type_rank_;
  std::vector<std::size_t> ranked_;

  std::size_t intern_type(const std::string& type) {
    if (const auto t = find_type(type)) return *t;
    types_.push_back(type);
    return types_.size() - 1;
  }
  std::tuple<const std::string&, const std::uint32_t&, const std::uint32_t&, const std::string&,
             const std::uint32_t&>
  key(std::size_t i) const {
    const auto& d = devices_[i].name;
    return std::tie(*d.job, *d.replica, *d.task, *d.type, *d.id);
  }
  void rank_types(const std::vector<std::string>& preference) {
    std::vector<std::size_t> order(types_.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto position = [&](std::size_t t) {
      const auto it = std::ranges::find(preference, types_[t]);
      return static_cast<std::size_t>(it - preference.begin());
    };
    std::ranges::sort(order, [&](std::size_t a, std::size_t b) {
      return std::tuple(position(a), types_[a]) < std::tuple(position(b), types_[b]);
    });
    type_rank_.assign(types_.size(), 0);
    for (std::size_t r = 0; r < order.size(); ++r) type_rank_[order[r]] = r;
  }
};

}  // namespace memopt
