#pragma once
// The TF-like adapter: a TensorFlow GraphDef read from JSON, or a
// memopt-graph/1 file, as a graph memopt's placement reads through its
// default traits.
//
// GraphDef JSON: {"node": [{"name", "op", "input": ["x", "x:1", "^ctrl"],
// "device", "attr": {...}}]}, nodes in any order. memopt-graph/1: the file's
// nodes, "device" as the requested device. Both take the same attributes, as
// plain JSON or in TF's AttrValue form ({"s": ...}, {"list": {"s": [...]}},
// base64 strings, int64 as strings):
//   _class            ["loc:@name", ...]: colocation groups (other entries ignored)
//   assigned_device   a device fixed before placement
//   ref_inputs, resource_inputs    data input indices reading a reference/resource
//   ref_outputs, resource_outputs  output ports that are references/resources
//   _output_shapes    the outputs' shapes (TF's add_shapes); with the type in
//                     T, dtype or out_type they give the outputs' sizes (0
//                     where a dimension, the rank or the type is unknown)
// A GraphDef node has as many outputs as its highest port read plus one (at
// least one). Every defect, a cycle included, is a memopt::io::format_error naming
// the node.
//
// Storages, where TF shares a buffer instead of making one: the k-th
// reference output (ref_outputs) is the k-th reference input (ref_inputs),
// written in place unless the op only forwards it; and the forwarding ops
// (Identity, RefIdentity, StopGradient, PreventGradient, Reshape, Squeeze,
// ExpandDims) output a view of their first data input.

#include <memopt/io/graph_file.hpp>

#include <memopt/colocate/placement.hpp>
#include <memopt/graph/tensor_traits.hpp>
#include <memopt/graph/topology.hpp>

#include <boost/graph/adjacency_list.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tf_like {

struct node : memopt::tensor_node, memopt::placement_node {};
struct edge : memopt::tensor_edge {
  bool reference = false;  ///< reads a reference/resource
};
/// Vertices in the file's node order.
using graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, node, edge, std::string>;

/// Names vertices by node name, for error::describe.
[[nodiscard]] inline memopt::vertex_namer node_namer(const graph& g) {
  return [&g](std::size_t v) { return v < num_vertices(g) ? "'" + g[v].name + "'" : memopt::index_name(v); };
}

namespace detail {

using memopt::io::format_error;

inline std::string base64_decode(const std::string& text) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (const char c : text) {
    int value = -1;
    if (c >= 'A' && c <= 'Z') value = c - 'A';
    else if (c >= 'a' && c <= 'z') value = c - 'a' + 26;
    else if (c >= '0' && c <= '9') value = c - '0' + 52;
    else if (c == '+' || c == '-') value = 62;
    else if (c == '/' || c == '_') value = 63;
    else if (c == '=') break;
    else return {};
    buffer = (buffer << 6) | static_cast<unsigned>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

/// The attribute's value without TF's AttrValue wrapping: {"s": x} -> x,
/// {"list": {"s": [..]}} -> [..] (likewise "i").
inline const nlohmann::json& unwrap(const nlohmann::json& value) {
  if (!value.is_object()) return value;
  for (const char* key : {"s", "i"}) {
    if (const auto it = value.find(key); it != value.end()) return *it;
  }
  if (const auto list = value.find("list"); list != value.end() && list->is_object()) {
    for (const char* key : {"s", "i"}) {
      if (const auto it = list->find(key); it != list->end()) return *it;
    }
    static const nlohmann::json empty = nlohmann::json::array();
    return empty;
  }
  return value;
}

inline const nlohmann::json* attr(const nlohmann::json& attrs, const char* key) {
  if (!attrs.is_object()) return nullptr;
  const auto it = attrs.find(key);
  return it == attrs.end() || it->is_null() ? nullptr : &unwrap(*it);
}

/// Colocation groups of `_class`: "loc:@name" entries, plain or base64.
inline std::vector<std::string> colocation_groups(const nlohmann::json& attrs, const std::string& name) {
  std::vector<std::string> groups;
  const auto* value = attr(attrs, "_class");
  if (value == nullptr) return groups;
  if (!value->is_array()) throw format_error(name, "attr _class must be a list of strings");
  for (const auto& entry : *value) {
    if (!entry.is_string()) throw format_error(name, "attr _class holds " + entry.dump() + ", not a string");
    std::string text = entry;
    if (!text.starts_with("loc:@")) text = base64_decode(text);
    if (text.starts_with("loc:@") && text.size() > 5) groups.push_back(text.substr(5));
  }
  return groups;
}

inline std::string string_attr(const nlohmann::json& attrs, const char* key, const std::string& name) {
  const auto* value = attr(attrs, key);
  if (value == nullptr) return {};
  if (!value->is_string()) throw format_error(name, std::string("attr ") + key + " must be a string");
  return *value;
}

/// A list of non-negative indices (numbers, or int64 strings as TF writes them).
inline std::vector<std::size_t> index_list(const nlohmann::json& attrs, const char* key, const std::string& name) {
  std::vector<std::size_t> indices;
  const auto* value = attr(attrs, key);
  if (value == nullptr) return indices;
  const auto bad = [&](const nlohmann::json& entry) {
    return format_error(name, std::string("attr ") + key + " holds " + entry.dump() + ", not an index");
  };
  if (!value->is_array()) throw format_error(name, std::string("attr ") + key + " must be a list of indices");
  for (const auto& entry : *value) {
    std::size_t index = 0;
    if (entry.is_number_unsigned()) {
      index = entry.get<std::size_t>();
    } else if (entry.is_string()) {
      const std::string& text = entry.get_ref<const std::string&>();
      const auto [stop, code] = std::from_chars(text.data(), text.data() + text.size(), index);
      if (text.empty() || code != std::errc{} || stop != text.data() + text.size()) throw bad(entry);
    } else {
      throw bad(entry);
    }
    indices.push_back(index);
  }
  return indices;
}

/// Fills the placement fields of `n` from its attributes.
inline void read_attrs(node& n, const nlohmann::json& attrs) {
  n.colocation = colocation_groups(attrs, n.name);
  n.assigned_device = string_attr(attrs, "assigned_device", n.name);
  for (const char* key : {"ref_outputs", "resource_outputs"}) {
    for (const auto port : index_list(attrs, key, n.name)) n.reference_outputs.push_back(port);
  }
}

/// Bytes of one element of a TF type ({"type": "DT_FLOAT"} or "DT_FLOAT"), 0 if unknown.
inline std::uint64_t element_bytes(const nlohmann::json& type) {
  const nlohmann::json& value = type.is_object() && type.contains("type") ? type["type"] : type;
  if (!value.is_string()) return 0;
  static const std::unordered_map<std::string, std::uint64_t> sizes = {
      {"DT_FLOAT", 4}, {"DT_DOUBLE", 8}, {"DT_HALF", 2},  {"DT_BFLOAT16", 2}, {"DT_INT8", 1},
      {"DT_UINT8", 1}, {"DT_INT16", 2},  {"DT_UINT16", 2}, {"DT_INT32", 4},   {"DT_UINT32", 4},
      {"DT_INT64", 8}, {"DT_UINT64", 8}, {"DT_BOOL", 1},  {"DT_COMPLEX64", 8}, {"DT_COMPLEX128", 16}};
  const auto it = sizes.find(value.get<std::string>());
  return it == sizes.end() ? 0 : it->second;
}

/// Bytes of an output of TF shape `shape` ({"dim": [{"size": "128"}, ...]})
/// and `element` bytes an element, 0 if the shape is not fully known; a size
/// beyond 64 bits is a format_error naming the node and port.
inline std::uint64_t shape_bytes(const nlohmann::json& shape, std::uint64_t element, const std::string& name,
                                 std::size_t port) {
  if (!shape.is_object() || shape.value("unknown_rank", false) || shape.value("unknownRank", false)) return 0;
  const auto too_large = [&] {
    return format_error(name, "_output_shapes: output " + std::to_string(port) + " is larger than 2^64 - 1 bytes");
  };
  std::uint64_t bytes = element;
  for (const auto& dim : shape.value("dim", nlohmann::json::array())) {
    const auto size = dim.is_object() ? dim.value("size", nlohmann::json(0)) : nlohmann::json(0);
    std::uint64_t value = 0;  // a negative size (-1) is an unknown one
    if (size.is_number_unsigned()) {
      value = size.get<std::uint64_t>();
    } else if (size.is_number_integer()) {
      if (size.get<std::int64_t>() < 0) return 0;
      value = size.get<std::uint64_t>();
    } else if (size.is_number_float() && size.get<double>() >= 18446744073709551616.0) {
      throw too_large();  // JSON integers beyond 64 bits arrive as floats
    } else if (size.is_string()) {
      const std::string& text = size.get_ref<const std::string&>();
      const auto [stop, code] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (code == std::errc::result_out_of_range) throw too_large();
      if (code != std::errc{} || stop != text.data() + text.size()) return 0;
    } else {
      return 0;
    }
    if (__builtin_mul_overflow(bytes, value, &bytes)) throw too_large();
  }
  return bytes;
}

/// The outputs' sizes from _output_shapes (see the header comment).
inline void read_output_sizes(node& n, const nlohmann::json& attrs) {
  if (!attrs.is_object()) return;
  const auto shapes = attrs.find("_output_shapes");
  if (shapes == attrs.end() || !shapes->is_object()) return;
  const nlohmann::json list = shapes->contains("list") ? (*shapes)["list"].value("shape", nlohmann::json::array())
                                                       : nlohmann::json::array();
  std::uint64_t element = 0;
  for (const char* key : {"T", "dtype", "out_type"}) {
    if (const auto it = attrs.find(key); element == 0 && it != attrs.end()) element = element_bytes(*it);
  }
  if (n.outputs.size() < list.size()) n.outputs.resize(list.size());
  for (std::size_t port = 0; port < list.size(); ++port) n.outputs[port].bytes = shape_bytes(list[port], element, n.name, port);
}

inline std::vector<std::size_t> reference_inputs(const nlohmann::json& attrs, const std::string& name) {
  auto inputs = index_list(attrs, "ref_inputs", name);
  for (const auto k : index_list(attrs, "resource_inputs", name)) inputs.push_back(k);
  return inputs;
}

/// Ops whose output 0 is their first data input's buffer (TF forwards it).
inline bool forwards_input(const std::string& op) {
  static const std::vector<std::string> forwarding = {"Identity",        "RefIdentity", "StopGradient",
                                                      "PreventGradient", "Reshape",     "Squeeze",
                                                      "ExpandDims"};
  return std::ranges::find(forwarding, op) != forwarding.end();
}

/// Declares the storages TF shares (see the header comment) on node `v`,
/// whose data inputs read `sources` in order.
inline void share_forwarded_storage(graph& g, std::size_t v, const nlohmann::json& attrs,
                                    const std::vector<memopt::buffer_ref<std::size_t>>& sources) {
  node& n = g[v];
  const bool forwards = forwards_input(n.op);
  if (forwards && !sources.empty()) n.outputs[0].shares = memopt::shared_storage<std::size_t>{sources[0], false};
  const auto ref_inputs = index_list(attrs, "ref_inputs", n.name);
  const auto ref_outputs = index_list(attrs, "ref_outputs", n.name);
  for (std::size_t k = 0; k < std::min(ref_inputs.size(), ref_outputs.size()); ++k) {
    if (ref_outputs[k] >= n.outputs.size()) continue;  // refused by the caller
    n.outputs[ref_outputs[k]].shares = memopt::shared_storage<std::size_t>{sources.at(ref_inputs[k]), !forwards};
  }
}

inline void require_acyclic_named(const graph& g) {
  if (const auto cycle = memopt::find_cycle(g)) {
    std::string text = "the graph has a cycle: ";
    for (const std::size_t v : *cycle) text += "'" + g[v].name + "' -> ";
    throw format_error("", text + "'" + g[cycle->front()].name + "'");
  }
}

}  // namespace detail

/// A GraphDef in JSON. Throws memopt::io::format_error.
[[nodiscard]] inline graph read_graph_def(const nlohmann::json& doc) {
  using detail::format_error;
  if (!doc.is_object() || !doc.contains("node") || !doc["node"].is_array()) {
    throw format_error("", "a GraphDef needs a \"node\" array");
  }
  graph g;
  std::unordered_map<std::string, std::size_t> index_of;
  const auto& nodes = doc["node"];
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto& spec = nodes[i];
    if (!spec.is_object() || !spec.contains("name") || !spec["name"].is_string() ||
        spec["name"].get_ref<const std::string&>().empty()) {
      throw format_error("", "node[" + std::to_string(i) + "] has no name");
    }
    node n;
    n.name = spec["name"];
    if (n.name.find(':') != std::string::npos || n.name.starts_with('^')) {
      throw format_error(n.name, "a node name cannot hold ':' or start with '^' (inputs could not name it)");
    }
    if (!index_of.emplace(n.name, i).second) throw format_error(n.name, "duplicate node name");
    for (const auto& [key, field] : {std::pair{"op", &n.op}, std::pair{"device", &n.device}}) {
      if (const auto it = spec.find(key); it != spec.end() && !it->is_null()) {
        if (!it->is_string()) throw format_error(n.name, std::string("\"") + key + "\" must be a string");
        *field = *it;
      }
    }
    if (const auto it = spec.find("attr"); it != spec.end()) detail::read_attrs(n, *it);
    g[add_vertex(g)] = std::move(n);  // add_vertex(n, g) would copy it
  }
  std::vector<std::vector<memopt::buffer_ref<std::size_t>>> all_sources;  // data inputs of each node
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto& name = g[i].name;
    const auto attrs = nodes[i].value("attr", nlohmann::json::object());
    const auto references = detail::reference_inputs(attrs, name);
    const auto inputs = nodes[i].value("input", nlohmann::json::array());
    if (!inputs.is_array()) throw format_error(name, "\"input\" must be a list");
    std::size_t data_inputs = 0;
    std::vector<memopt::buffer_ref<std::size_t>> sources;
    for (const auto& input : inputs) {
      if (!input.is_string()) throw format_error(name, "input " + input.dump() + " is not a string");
      std::string text = input;
      const bool control = text.starts_with("^");
      if (control) text.erase(0, 1);
      std::size_t port = 0;
      if (const auto colon = text.rfind(':'); !control && colon != std::string::npos) {
        const char* begin = text.data() + colon + 1;
        const char* end = text.data() + text.size();
        const auto [stop, code] = std::from_chars(begin, end, port);
        if (begin == end || code != std::errc{} || stop != end) {
          throw format_error(name, "input \"" + input.get<std::string>() + "\" has no valid port");
        }
        text.resize(colon);
      }
      const auto producer = index_of.find(text);
      if (producer == index_of.end()) {
        throw format_error(name, "input \"" + input.get<std::string>() + "\" names no node");
      }
      edge e;
      e.control = control;
      e.port = port;
      if (!control) {
        e.reference = std::ranges::count(references, data_inputs++) > 0;
        auto& outputs = g[producer->second].outputs;
        if (outputs.size() <= port) outputs.resize(port + 1);
        sources.push_back({producer->second, port});
      }
      add_edge(producer->second, i, e, g);
    }
    if (std::ranges::any_of(references, [&](std::size_t k) { return k >= data_inputs; })) {
      throw format_error(name, "ref_inputs/resource_inputs name an input it does not have");
    }
    all_sources.push_back(std::move(sources));
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (g[i].outputs.empty()) g[i].outputs.resize(1);
    detail::read_output_sizes(g[i], nodes[i].value("attr", nlohmann::json::object()));
    for (const auto port : g[i].reference_outputs) {
      if (port >= g[i].outputs.size()) g[i].outputs.resize(port + 1);
    }
    detail::share_forwarded_storage(g, i, nodes[i].value("attr", nlohmann::json::object()), all_sources[i]);
  }
  detail::require_acyclic_named(g);
  return g;
}

/// A memopt-graph/1 graph with its placement attributes. Throws memopt::io::format_error.
[[nodiscard]] inline graph from_file_graph(const memopt::io::file_graph& file) {
  graph g;
  g[boost::graph_bundle] = file[boost::graph_bundle].name;
  for (const auto v : boost::make_iterator_range(vertices(file))) {
    node n;
    static_cast<memopt::tensor_node&>(n) = file[v];
    n.name = file[v].name;
    n.op = file[v].op;
    n.device = file[v].device;
    detail::read_attrs(n, file[v].attrs);
    for (const auto port : n.reference_outputs) {
      if (port >= n.outputs.size()) throw detail::format_error(n.name, "ref_outputs/resource_outputs name a port it does not have");
    }
    g[add_vertex(g)] = std::move(n);  // add_vertex(n, g) would copy it
  }
  for (const auto v : boost::make_iterator_range(vertices(file))) {
    // In-edges come in the file's operand order, control edges last.
    const auto references = detail::reference_inputs(file[v].attrs, file[v].name);
    std::size_t data_inputs = 0;
    for (const auto e : boost::make_iterator_range(in_edges(v, file))) {
      edge copy;
      static_cast<memopt::tensor_edge&>(copy) = file[e];
      if (!copy.control) copy.reference = std::ranges::count(references, data_inputs++) > 0;
      add_edge(source(e, file), v, copy, g);
    }
    if (std::ranges::any_of(references, [&](std::size_t k) { return k >= data_inputs; })) {
      throw detail::format_error(file[v].name, "ref_inputs/resource_inputs name an input it does not have");
    }
  }
  return g;
}

/// Reads either format, by content (gzip or not). Throws memopt::io::format_error.
[[nodiscard]] inline graph read_graph(const std::string& path) {
  const std::string text = memopt::io::detail::read_file(path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range: a number too large
    throw memopt::io::format_error("", std::string("not JSON: ") + e.what());
  }
  if (doc.is_object() && doc.contains("format")) return from_file_graph(memopt::io::parse_graph(text));
  auto g = read_graph_def(doc);
  const auto name = doc.find("name");
  g[boost::graph_bundle] = name != doc.end() && name->is_string() ? name->get<std::string>() : "graphdef";
  return g;
}

}  // namespace tf_like
