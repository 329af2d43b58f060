#pragma once
// The machine a simulation runs on: devices (each runs one op at a time), the
// links between them (each carries one transfer at a time), and the time of a
// transfer. Times are microseconds everywhere in the simulation family; rates
// are per second.

#include <memopt/simulate/errors.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
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

}  // namespace memopt::sim
