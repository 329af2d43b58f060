#pragma once
// The colocation family's errors: malformed device names, missing devices or
// kernels, and groups whose constraints conflict. Like every memopt::error
// they carry vertex indices as fields and describe(name) renders them with a
// caller's names.

#include <memopt/error.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memopt {

/// A part of a device name, in the order names are compared.
enum class device_part { job, replica, task, type, id };

[[nodiscard]] inline const char* to_string(device_part part) noexcept {
  constexpr const char* names[] = {"job", "replica", "task", "type", "id"};
  return names[static_cast<int>(part)];
}

/// Which device constraint of a node (or of its colocation group).
enum class device_constraint {
  requested,  ///< the device the user asked for (soft placement may relax it)
  assigned,   ///< a device fixed before placement: never moved
  resource    ///< the requested device of a resource generator, kept as if assigned
};

[[nodiscard]] inline const char* to_string(device_constraint c) noexcept {
  constexpr const char* names[] = {"requested", "assigned", "resource"};
  return names[static_cast<int>(c)];
}

/// Why a device name is malformed.
enum class device_name_fault {
  unknown_part,      ///< not /job:, /replica:, /task:, /device:, /cpu: or /gpu:
  repeated_part,     ///< a part given twice
  bad_job,           ///< empty, or not a letter then letters, digits, '_'
  bad_type,          ///< likewise for the device type
  bad_number,        ///< replica, task or id is not a number (nor *)
  number_too_large,  ///< replica, task or id beyond 2^31 - 1
  incomplete         ///< a device of the set must name every part
};

/// A device name that cannot be parsed. `vertex` is set when the name is a
/// node's (`constraint` says which of its devices); `position` is the offset of
/// the fault in `name`.
class malformed_device_error : public error {
 public:
  malformed_device_error(std::string device, std::size_t at, device_name_fault why,
                         std::string what_is_wrong, std::optional<std::size_t> of_vertex = {},
                         device_constraint which = device_constraint::requested)
      : error(message(device, at, what_is_wrong, of_vertex, which, index_name)),
        name(std::move(device)), position(at), fault(why), problem(std::move(what_is_wrong)),
        vertex(of_vertex), constraint(which) {}
  std::string name;
  std::size_t position;
  device_name_fault fault;
  std::string problem;
  std::optional<std::size_t> vertex;
  device_constraint constraint;
  /// The same fault, now known to be `v`'s `which` device.
  [[nodiscard]] malformed_device_error of(std::size_t v, device_constraint which) const {
    return {name, position, fault, problem, v, which};
  }
  [[nodiscard]] std::string describe(const vertex_namer& namer) const override {
    return message(name, position, problem, vertex, constraint, namer);
  }

 private:
  static std::string message(const std::string& device, std::size_t at, const std::string& problem,
                             std::optional<std::size_t> v, device_constraint which,
                             const vertex_namer& namer) {
    std::string text = "malformed device name '" + device + "'";
    if (v) text += " (" + std::string(to_string(which)) + " device of " + namer(*v) + ")";
    return text + " at offset " + std::to_string(at) + ": " + problem;
  }
};

/// Placement needs at least one device.
class no_devices_error : public error {
 public:
  no_devices_error() : error("no devices to place on: the device set is empty") {}
  [[nodiscard]] std::string describe(const vertex_namer&) const override { return what(); }
};

/// Why two vertices had to share a device.
struct colocation_reason {
  bool reference_edge = false;  ///< a reference/resource edge joins them
  std::string group;            ///< else the colocation group both are in
};

namespace detail {
inline std::string because(const colocation_reason& reason) {
  return reason.reference_edge ? "a reference/resource edge joins them"
                               : "both are in colocation group '" + reason.group + "'";
}
inline std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return "[" + text + "]";
}
}  // namespace detail

/// `first` and `second` must share a device, but no device type has kernels
/// for both groups: first's group supports `first_types`, second's `second_types`.
class no_common_device_type_error : public error {
 public:
  no_common_device_type_error(std::size_t a, std::size_t b, std::vector<std::string> a_types,
                              std::vector<std::string> b_types, colocation_reason why)
      : error(message(a, b, a_types, b_types, why, index_name)), first(a), second(b),
        first_types(std::move(a_types)), second_types(std::move(b_types)), reason(std::move(why)) {}
  std::size_t first;
  std::size_t second;
  std::vector<std::string> first_types;
  std::vector<std::string> second_types;
  colocation_reason reason;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(first, second, first_types, second_types, reason, name);
  }

 private:
  static std::string message(std::size_t a, std::size_t b, const std::vector<std::string>& at,
                             const std::vector<std::string>& bt, const colocation_reason& why,
                             const vertex_namer& name) {
    return "cannot colocate " + name(a) + " and " + name(b) + " (" + detail::because(why) +
           "): no device type supports both of them and the nodes colocated with them; " +
           name(a) + "'s group runs on " + detail::join(at) + ", " + name(b) + "'s on " +
           detail::join(bt);
  }
};

/// `first` and `second` must share a device, but their groups' `constraint`
/// devices differ in `part`: `first_device` vs `second_device`.
class device_conflict_error : public error {
 public:
  device_conflict_error(std::size_t a, std::size_t b, device_constraint which, device_part where,
                        std::string a_device, std::string b_device, colocation_reason why)
      : error(message(a, b, which, where, a_device, b_device, why, index_name)), first(a),
        second(b), constraint(which), part(where), first_device(std::move(a_device)),
        second_device(std::move(b_device)), reason(std::move(why)) {}
  std::size_t first;
  std::size_t second;
  device_constraint constraint;
  device_part part;
  std::string first_device;
  std::string second_device;
  colocation_reason reason;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(first, second, constraint, part, first_device, second_device, reason, name);
  }

 private:
  static std::string message(std::size_t a, std::size_t b, device_constraint which,
                             device_part where, const std::string& ad, const std::string& bd,
                             const colocation_reason& why, const vertex_namer& name) {
    return "cannot colocate " + name(a) + " and " + name(b) + " (" + detail::because(why) +
           "): incompatible " + to_string(which) + " devices '" + ad + "' and '" + bd +
           "' differ in " + to_string(where);
  }
};

/// A reference/resource edge `source -> target` joins groups whose
/// `constraint` (assigned or resource) devices are incompatible.
class reference_edge_error : public error {
 public:
  reference_edge_error(std::size_t from, std::size_t to, device_constraint which,
                       std::string from_device, std::string to_device)
      : error(message(from, to, which, from_device, to_device, index_name)), source(from),
        target(to), constraint(which), source_device(std::move(from_device)),
        target_device(std::move(to_device)) {}
  std::size_t source;
  std::size_t target;
  device_constraint constraint;
  std::string source_device;
  std::string target_device;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(source, target, constraint, source_device, target_device, name);
  }

 private:
  static std::string message(std::size_t s, std::size_t t, device_constraint which,
                             const std::string& sd, const std::string& td, const vertex_namer& name) {
    return "the reference/resource edge " + name(s) + " -> " + name(t) +
           " joins groups with incompatible " + to_string(which) + " devices: '" + sd + "' (" +
           name(s) + ") vs '" + td + "' (" + name(t) + ")";
  }
};

/// Why a node's explicit device cannot be honoured.
enum class device_fault {
  no_such_device,     ///< no device of the set matches it
  no_kernel,          ///< matching devices exist, but none has a kernel for the op
  incompatible_group  ///< the node's group requires another device
};

/// `vertex` (op `op`) names `device` as its `constraint` device, which cannot
/// be honoured (`fault`); `group_device` is what its whole group requires.
class unsatisfiable_device_error : public error {
 public:
  unsatisfiable_device_error(std::size_t v, std::string op_type, device_constraint which,
                             std::string explicit_device, device_fault why, std::string group)
      : error(message(v, op_type, which, explicit_device, why, group, index_name)), vertex(v),
        op(std::move(op_type)), constraint(which), device(std::move(explicit_device)), fault(why),
        group_device(std::move(group)) {}
  std::size_t vertex;
  std::string op;
  device_constraint constraint;
  std::string device;
  device_fault fault;
  std::string group_device;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(vertex, op, constraint, device, fault, group_device, name);
  }

 private:
  static std::string message(std::size_t v, const std::string& op, device_constraint which,
                             const std::string& d, device_fault why, const std::string& group,
                             const vertex_namer& name) {
    std::string text = "cannot place " + name(v) + " (op '" + op + "')";
    if (d.empty()) {
      return text + ": its colocation group requires device '" + group +
             "', which no device with kernels for all its ops matches";
    }
    text += " on its " + std::string(to_string(which)) + " device '" + d + "': ";
    switch (why) {
      case device_fault::no_such_device: return text + "no device of the set matches it";
      case device_fault::no_kernel: return text + "no matching device has a kernel for the op";
      case device_fault::incompatible_group:
        return text + "its colocation group requires the incompatible device '" + group + "'";
    }
    return text;
  }
};

/// No device of the set can run `vertex`'s op (or, for a group, every op of
/// the group): `op` has kernels for `kernel_types`, the set has `device_types`.
class no_kernel_error : public error {
 public:
  no_kernel_error(std::size_t v, std::string op_type, std::vector<std::string> kernels,
                  std::vector<std::string> devices)
      : error(message(v, op_type, kernels, devices, index_name)), vertex(v),
        op(std::move(op_type)), kernel_types(std::move(kernels)), device_types(std::move(devices)) {}
  std::size_t vertex;
  std::string op;
  std::vector<std::string> kernel_types;
  std::vector<std::string> device_types;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(vertex, op, kernel_types, device_types, name);
  }

 private:
  static std::string message(std::size_t v, const std::string& op,
                             const std::vector<std::string>& kernels,
                             const std::vector<std::string>& devices, const vertex_namer& name) {
    return "no device can run " + name(v) + " (op '" + op + "'): its group has kernels for " +
           detail::join(kernels) + ", the devices are of types " + detail::join(devices);
  }
};

}  // namespace memopt
