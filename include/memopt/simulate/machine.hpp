#pragma once
// The machine a simulation runs on: devices (each runs one op at a time), the
// links between them (each carries one transfer at a time), and the time of a
// transfer. Times are microseconds everywhere in the simulation family; rates
// are per second. devices_matching and device_field_matcher map a vertex's
// device field to a device with TensorFlow's rule for partial device names.

#include <memopt/colocate/device_name.hpp>
#include <memopt/simulate/errors.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memopt::sim {

struct device_spec {
  std::string name;
  std::string kind = "device";         ///< free text: "GPU", "CPU", ...
  double flops_per_s = 1e12;           ///< peak arithmetic rate
  double bytes_per_s = 1e11;           ///< memory bandwidth
  std::uint64_t memory_bytes = 0;      ///< capacity, 0 = not given (reported, not enforced)
};

/// A directed link; the machine's default_link serves pairs not listed.
struct link_spec {
  std::size_t from = 0;  ///< device index
  std::size_t to = 0;
  double bytes_per_s = 1e10;
  double latency_us = 0;
};

struct machine {
  std::vector<device_spec> devices = {device_spec{.name = "device"}};
  std::vector<link_spec> links;
  link_spec default_link{};

  [[nodiscard]] std::optional<std::size_t> find_device(const std::string& name) const {
    for (std::size_t d = 0; d < devices.size(); ++d) {
      if (devices[d].name == name) return d;
    }
    return std::nullopt;
  }

  /// The devices a vertex placed on `requested` may run on, as TensorFlow
  /// matches names: the device named exactly so; else every device whose name,
  /// read as a TF device specification, is a specification of `requested` or
  /// the other way round ("/gpu:0" and
  /// "/job:localhost/replica:0/task:0/device:GPU:0"). A name that is not a TF
  /// device specification matches itself only.
  [[nodiscard]] std::vector<std::size_t> devices_matching(const std::string& requested) const {
    if (const auto d = find_device(requested)) return {*d};
    const auto spec = try_parse_device_name(requested);
    std::vector<std::size_t> matches;
    if (!spec) return matches;
    for (std::size_t d = 0; d < devices.size(); ++d) {
      const auto name = try_parse_device_name(devices[d].name);
      if (name && (is_specification(*spec, *name) || is_specification(*name, *spec))) matches.push_back(d);
    }
    return matches;
  }

  /// The link from device `from` to device `to`: a listed one, or the default.
  [[nodiscard]] link_spec link(std::size_t from, std::size_t to) const {
    for (const link_spec& l : links) {
      if (l.from == from && l.to == to) return l;
    }
    link_spec l = default_link;
    l.from = from;
    l.to = to;
    return l;
  }

  /// Throws bad_machine_error for no device, a rate that is not positive and
  /// finite, a latency below 0, or a link naming a device that does not exist.
  void check() const {
    if (devices.empty()) throw bad_machine_error("the machine has no device");
    const auto rate = [](double r) { return r > 0 && r < 1e300; };
    for (const device_spec& d : devices) {
      if (!rate(d.flops_per_s) || !rate(d.bytes_per_s)) {
        throw bad_machine_error("device '" + d.name + "': flops_per_s and bytes_per_s must be positive");
      }
    }
    const auto check_link = [&](const link_spec& l, const std::string& which) {
      if (!rate(l.bytes_per_s) || !(l.latency_us >= 0) || !(l.latency_us < 1e300)) {
        throw bad_machine_error(which + ": bytes_per_s must be positive and latency_us at least 0");
      }
    };
    check_link(default_link, "the default link");
    for (const link_spec& l : links) {
      if (l.from >= devices.size() || l.to >= devices.size()) {
        throw bad_machine_error("a link names device " + std::to_string(std::max(l.from, l.to)) + " of " +
                                std::to_string(devices.size()));
      }
      check_link(l, "the link " + devices[l.from].name + " -> " + devices[l.to].name);
    }
  }
};

/// Microseconds to move `bytes` over `l`: its latency plus bytes / bandwidth.
[[nodiscard]] inline double transfer_us(const link_spec& l, std::uint64_t bytes) {
  return l.latency_us + static_cast<double>(bytes) / l.bytes_per_s * 1e6;
}

/// The device each vertex's device field asks for, on machine `m`, as
/// placement_by_device_field places them; each distinct field is matched once.
class device_field_matcher {
 public:
  explicit device_field_matcher(const machine& m) : machine_(m) {}

  /// Device 0 for an empty field, else the one device `requested` matches
  /// (machine::devices_matching). Throws unmatched_device_error naming vertex
  /// `v` when it matches none or several.
  [[nodiscard]] std::size_t operator()(std::size_t v, const std::string& requested) {
    if (requested.empty()) return 0;
    auto it = matches_.find(requested);
    if (it == matches_.end()) it = matches_.emplace(requested, machine_.devices_matching(requested)).first;
    const std::vector<std::size_t>& devices = it->second;
    if (devices.size() != 1) {
      std::vector<std::string> names;
      names.reserve(devices.size());
      for (const std::size_t d : devices) names.push_back(machine_.devices[d].name);
      throw unmatched_device_error(v, requested, std::move(names));
    }
    return devices.front();
  }

 private:
  const machine& machine_;
  std::unordered_map<std::string, std::vector<std::size_t>> matches_;
};

}  // namespace memopt::sim
