#pragma once
// A Caffe2-like NetDef read from JSON: name, type, op[] (type, input[] and
// output[] blob names, optional device_option {device_type, device_id} and
// arg[]), external_input[], external_output[]; a net-level device_option is
// the default of its ops. The document itself is kept so that a rewritten net
// keeps every field this adapter does not read.
//
// Every defect is a net_error naming the op (by index and type) and field.

#include <memopt/error.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace caffe2_like {

/// The NetDef is malformed, or cannot be what it claims (a blob read before it is made).
/// A memopt::error like the library's own, so one handler serves both; it names
/// ops and blobs, not vertices, so describe() is what().
class net_error : public memopt::error {
 public:
  explicit net_error(const std::string& message) : memopt::error(message) {}
  [[nodiscard]] std::string describe(const memopt::vertex_namer&) const override { return what(); }
};

struct device_option {
  std::int64_t device_type = 0;  ///< 0: CPU, 1: CUDA, ...
  std::int64_t device_id = 0;
  friend bool operator==(const device_option&, const device_option&) = default;
};

struct op_def {
  std::string type;
  std::vector<std::string> input;
  std::vector<std::string> output;
  device_option device;
};

struct net_def {
  std::string name;
  std::string type;
  std::vector<op_def> op;
  std::vector<std::string> external_input;
  std::vector<std::string> external_output;
  nlohmann::json document;  ///< the JSON read, for writing back
};

namespace detail {

inline std::string op_label(std::size_t i, const std::string& type) {
  return "op #" + std::to_string(i) + (type.empty() ? "" : " (" + type + ")");
}

inline std::vector<std::string> names(const nlohmann::json& object, const char* key,
                                      const std::string& where) {
  std::vector<std::string> out;
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return out;
  if (!it->is_array()) throw net_error(where + ": \"" + key + "\" must be an array of blob names");
  for (const auto& name : *it) {
    if (!name.is_string() || name.get_ref<const std::string&>().empty()) {
      throw net_error(where + ": \"" + key + "\" holds " + name.dump() + ", not a blob name");
    }
    out.push_back(name.get<std::string>());
  }
  return out;
}

inline std::string text(const nlohmann::json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return {};
  if (!it->is_string()) throw net_error(where + ": \"" + key + "\" must be a string");
  return it->get<std::string>();
}

inline device_option parse_device(const nlohmann::json& object, const std::string& where,
                                  device_option fallback) {
  const auto it = object.find("device_option");
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_object()) throw net_error(where + ": \"device_option\" must be an object");
  device_option d;
  for (const auto& [key, field] : {std::pair{"device_type", &d.device_type}, {"device_id", &d.device_id}}) {
    const auto f = it->find(key);
    if (f == it->end() || f->is_null()) continue;
    if (!f->is_number_integer()) throw net_error(where + ": device_option." + key + " must be an integer");
    *field = f->get<std::int64_t>();
  }
  return d;
}

}  // namespace detail

/// The net in `document`. Throws net_error.
[[nodiscard]] inline net_def parse_net(const nlohmann::json& document) {
  if (!document.is_object()) throw net_error("the NetDef is " + std::string(document.type_name()) + ", not an object");
  net_def net;
  net.document = document;
  net.name = detail::text(document, "name", "net");
  net.type = detail::text(document, "type", "net");
  net.external_input = detail::names(document, "external_input", "net");
  net.external_output = detail::names(document, "external_output", "net");
  const device_option net_device = detail::parse_device(document, "net", {});
  const auto ops = document.find("op");
  if (ops == document.end() || !ops->is_array()) throw net_error("net: \"op\" must be an array of ops");
  for (std::size_t i = 0; i < ops->size(); ++i) {
    const auto& spec = (*ops)[i];
    if (!spec.is_object()) throw net_error(detail::op_label(i, "") + " is not an object");
    op_def op;
    op.type = detail::text(spec, "type", detail::op_label(i, ""));
    const std::string where = detail::op_label(i, op.type);
    if (op.type.empty()) throw net_error(where + ": missing \"type\"");
    op.input = detail::names(spec, "input", where);
    op.output = detail::names(spec, "output", where);
    op.device = detail::parse_device(spec, where, net_device);
    if (const auto arg = spec.find("arg"); arg != spec.end() && !arg->is_null() && !arg->is_array()) {
      throw net_error(where + ": \"arg\" must be an array");
    }
    net.op.push_back(std::move(op));
  }
  return net;
}

/// Parses NetDef JSON text. Throws net_error.
[[nodiscard]] inline net_def parse_net(const std::string& text) {
  try {
    return parse_net(nlohmann::json::parse(text));
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range: a number too large
    throw net_error(std::string("not JSON: ") + e.what());
  }
}

/// `net`'s document with each op's inputs and outputs replaced by `ops`'.
[[nodiscard]] inline nlohmann::json with_ops(const net_def& net, const std::vector<op_def>& ops) {
  nlohmann::json out = net.document;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto& spec = out["op"][i];
    if (!ops[i].input.empty() || spec.contains("input")) spec["input"] = ops[i].input;
    if (!ops[i].output.empty() || spec.contains("output")) spec["output"] = ops[i].output;
  }
  return out;
}

}  // namespace caffe2_like
