#pragma once
// The placer configuration of the TF-like adapter, from JSON:
//   {"devices": ["/job:localhost/replica:0/task:0/device:CPU:0", ...],
//    "kernels": {"MatMul": ["CPU", "GPU"], "Iterator": [{"type": "CPU", "priority": 2}],
//                "*": ["CPU"]},                  // "*": ops not listed
//    "device_type_preference": ["GPU", "CPU"],  // optional
//    "soft_placement": false,                   // optional
//    "metadata_ops": ["Shape", "Size"]}         // optional, TF's list by default
// Every defect is a config_error naming the key.

#include <memopt/colocate/devices.hpp>
#include <memopt/colocate/placement.hpp>
#include <memopt/error.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tf_like {

/// A placer configuration that cannot be used. A memopt::error like the
/// library's own; it names keys, not vertices, so describe() is what().
class config_error : public memopt::error {
 public:
  explicit config_error(const std::string& message) : memopt::error(message) {}
  [[nodiscard]] std::string describe(const memopt::vertex_namer&) const override { return what(); }
};

struct placer_config {
  memopt::device_set devices;
  memopt::kernel_registry kernels;
  memopt::placement_options options;
};

namespace detail {

inline std::vector<std::string> strings_at(const nlohmann::json& doc, const char* key, bool required) {
  const auto it = doc.find(key);
  if (it == doc.end()) {
    if (required) throw config_error(std::string("missing \"") + key + "\"");
    return {};
  }
  if (!it->is_array()) throw config_error(std::string("\"") + key + "\" must be a list of strings");
  std::vector<std::string> items;
  for (const auto& item : *it) {
    if (!item.is_string()) throw config_error(std::string("\"") + key + "\" holds " + item.dump() + ", not a string");
    items.push_back(item);
  }
  return items;
}

inline std::vector<memopt::kernel> kernels_of(const std::string& op, const nlohmann::json& list) {
  const auto bad = [&](const nlohmann::json& entry) {
    return config_error("kernels." + op + ": " + entry.dump() +
                        " is neither a device type nor {\"type\": ..., \"priority\": ...}");
  };
  if (!list.is_array()) throw config_error("kernels." + op + " must be a list of device types");
  std::vector<memopt::kernel> result;
  for (const auto& entry : list) {
    if (entry.is_string()) {
      result.push_back({entry.get<std::string>()});
    } else if (entry.is_object() && entry.contains("type") && entry["type"].is_string()) {
      const auto priority = entry.value("priority", nlohmann::json(0));
      if (!priority.is_number_integer()) throw bad(entry);
      result.push_back({entry["type"].get<std::string>(), priority.get<int>()});
    } else {
      throw bad(entry);
    }
  }
  return result;
}

}  // namespace detail

/// Parses a placer configuration. Throws config_error.
[[nodiscard]] inline placer_config parse_placer_config(const nlohmann::json& doc) {
  if (!doc.is_object()) throw config_error("the configuration must be a JSON object");
  const auto names = detail::strings_at(doc, "devices", true);
  if (names.empty()) throw config_error("\"devices\" is empty: there is nothing to place on");
  const auto preference = detail::strings_at(doc, "device_type_preference", false);
  placer_config config{[&] {
                         try {
                           return memopt::device_set(names, preference);
                         } catch (const memopt::malformed_device_error& e) {
                           throw config_error(std::string("devices: ") + e.what());
                         }
                       }(),
                       {},
                       {}};
  const auto kernels = doc.find("kernels");
  if (kernels == doc.end() || !kernels->is_object()) throw config_error("\"kernels\" must be an object: op -> device types");
  for (const auto& [op, list] : kernels->items()) {
    auto entries = detail::kernels_of(op, list);
    if (op == "*") {
      config.kernels.fallback = std::move(entries);
    } else {
      config.kernels.kernels[op] = std::move(entries);
    }
  }
  if (const auto soft = doc.find("soft_placement"); soft != doc.end()) {
    if (!soft->is_boolean()) throw config_error("\"soft_placement\" must be true or false");
    config.options.soft_placement = soft->get<bool>();
  }
  if (doc.contains("metadata_ops")) config.options.metadata_ops = detail::strings_at(doc, "metadata_ops", true);
  return config;
}

}  // namespace tf_like
