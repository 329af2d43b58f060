#pragma once
// Reader for memopt-graph/1 files (.json, or .json.gz by content), the JSON
// interchange format of docs/graph-format.md. Part of the memopt::io
// component, beside the core (which needs neither JSON nor zlib): it builds a
// boost::adjacency_list whose bundles derive from memopt's own, so every
// memopt algorithm runs on it through the default tensor_traits.
//
// Every defect of the file, a cycle included, is a format_error naming the
// nodes at fault.

#include <memopt/error.hpp>
#include <memopt/graph/tensor_traits.hpp>
#include <memopt/graph/topology.hpp>

#include <boost/graph/adjacency_list.hpp>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memopt::io {

/// A node of a memopt-graph/1 file: memopt's tensor bundle plus what the file says.
struct file_node : tensor_node {
  std::string name;
  std::string op;
  std::string device;
  std::optional<double> flops;
  nlohmann::json attrs;
};

struct file_info {
  std::string name;
  std::string source;
};

/// Vertices in file order (vertex i = the file's i-th node); an edge per data
/// input in operand order, then one per control predecessor.
using file_graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                         file_node, tensor_edge, file_info>;

/// The file (or its content) is not a valid memopt-graph/1 graph.
class format_error : public error {
 public:
  format_error(std::string at_node, const std::string& problem)
      : error(at_node.empty() ? problem : "node '" + at_node + "': " + problem),
        node(std::move(at_node)) {}
  std::string node;  ///< the node at fault, empty when the fault is not a node's
  [[nodiscard]] std::string describe(const vertex_namer&) const override { return what(); }
};

/// Names vertices of a file_graph by their node names, for error::describe.
[[nodiscard]] inline vertex_namer node_namer(const file_graph& g) {
  return [&g](std::size_t v) {
    return v < num_vertices(g) ? "'" + g[v].name + "'" : index_name(v);
  };
}

namespace detail {

/// The whole file, gunzipped when it is gzip (zlib reads plain files as they are).
inline std::string read_file(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw format_error("", "cannot open " + path);
  std::string content;
  char chunk[1 << 16];
  int got = 0;
  while ((got = gzread(file, chunk, sizeof chunk)) > 0) content.append(chunk, static_cast<std::size_t>(got));
  int status = Z_OK;
  const std::string problem = gzerror(file, &status);
  gzclose(file);
  if (got < 0 || (status != Z_OK && status != Z_STREAM_END)) {
    throw format_error("", "cannot read " + path + ": " +
                               (status == Z_BUF_ERROR ? "truncated gzip data" : problem));
  }
  return content;
}

inline std::string kind_of(const nlohmann::json& value) { return value.type_name(); }

/// Why `value` is not a byte size, as a predicate ("is negative"), or
/// nothing when it is one: a whole number from 0 to 2^64 - 1. An integral float
/// is taken up to 2^53, the last integer every float above it may have been
/// rounded to.
inline std::optional<std::string> size_problem(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return std::nullopt;
  if (value.is_number_integer()) return "is negative";
  if (!value.is_number_float()) return "is not a number";
  const double d = value.get<double>();
  if (d < 0) return "is negative";
  if (std::floor(d) != d) return "is not a whole number of bytes";
  // JSON integers beyond 2^64 - 1 arrive here as floats.
  if (d >= 18446744073709551616.0) return "is larger than 2^64 - 1 bytes";
  if (d > 9007199254740992.0) return "is a float above 2^53, which may have been rounded: write it in digits";
  return std::nullopt;
}

/// A byte size (size_problem says which), else a format_error naming `node` and `what`.
inline std::uint64_t parse_size(const nlohmann::json& value, const std::string& node, const std::string& what = "size") {
  if (const auto problem = size_problem(value)) throw format_error(node, what + " " + value.dump() + " " + *problem);
  return value.is_number_unsigned() ? value.get<std::uint64_t>() : static_cast<std::uint64_t>(value.get<double>());
}

}  // namespace detail

/// How to read a file.
struct read_options {
  /// Views and in-place results (attrs.alias) live in their source's storage
  /// (tensor_output::shares). Off: every output apart, as if each were a copy;
  /// with in_place_reuse, the alias becomes an in-place candidate instead.
  bool storage_aliases = true;
  /// In-place reuse (the memory model's rule, graph/buffers.hpp): attrs.may_alias
  /// (and, without storage_aliases, attrs.alias) are recorded as may-aliases
  /// (tensor_output::alias), so an output takes over its input's storage where
  /// its op is the last reader. Off: no may-alias is recorded, the graph
  /// counts as before. memopt-plan turns it on for ONNX models.
  bool in_place_reuse = false;
};

namespace detail {

struct file_reader {
  const nlohmann::json& doc;
  read_options options;
  file_graph& g;  ///< the caller's, so that no copy is made: adjacency_list has no move constructor
  std::unordered_map<std::string, std::size_t> index_of{};

  const nlohmann::json& field(const nlohmann::json& object, const char* key,
                              nlohmann::json::value_t type, const std::string& node,
                              bool required) {
    static const nlohmann::json absent;
    const auto it = object.find(key);
    if (it == object.end() || (it->is_null() && !required)) {
      if (required) throw format_error(node, std::string("missing \"") + key + "\"");
      return absent;
    }
    const bool ok = type == nlohmann::json::value_t::number_float ? it->is_number()
                                                                  : it->type() == type;
    if (!ok) {
      throw format_error(node, std::string("\"") + key + "\" must be " +
                                   nlohmann::json(type).type_name() + ", not " + kind_of(*it));
    }
    return *it;
  }

  /// "node:port" naming an existing output.
  buffer_ref<std::size_t> parse_ref(const nlohmann::json& ref, const std::string& node,
                                    const char* what) {
    if (!ref.is_string()) throw format_error(node, std::string(what) + " " + ref.dump() + " is not a string");
    const std::string& text = ref.get_ref<const std::string&>();
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) {
      throw format_error(node, std::string(what) + " \"" + text + "\" is not of the form node:port");
    }
    const std::string producer = text.substr(0, colon);
    std::size_t port = 0;
    const char* begin = text.data() + colon + 1;
    const char* end = text.data() + text.size();
    const auto [stop, code] = std::from_chars(begin, end, port);
    if (begin == end || code != std::errc{} || stop != end) {
      throw format_error(node, std::string(what) + " \"" + text + "\" has no valid port number");
    }
    const auto it = index_of.find(producer);
    if (it == index_of.end()) {
      throw format_error(node, std::string(what) + " \"" + text + "\" names node '" + producer +
                                   "', which does not exist");
    }
    const std::size_t outputs = g[it->second].outputs.size();
    if (port >= outputs) {
      throw format_error(node, std::string(what) + " \"" + text + "\" reads port " +
                                   std::to_string(port) + " of '" + producer + "', which has " +
                                   std::to_string(outputs) + (outputs == 1 ? " output" : " outputs"));
    }
    return {it->second, port};
  }

  void add_node(const nlohmann::json& spec, std::size_t position) {
    const std::string where = "#" + std::to_string(position);
    if (!spec.is_object()) throw format_error("", "nodes[" + std::to_string(position) + "] is not an object");
    const std::string name = field(spec, "name", nlohmann::json::value_t::string, where, true);
    if (name.empty()) throw format_error(where, "empty node name");
    if (!index_of.emplace(name, position).second) throw format_error(name, "duplicate node name");
    file_node node;
    node.name = name;
    if (const auto& op = field(spec, "op", nlohmann::json::value_t::string, name, false); !op.is_null()) {
      node.op = op;
    }
    for (const auto& size : field(spec, "outputs", nlohmann::json::value_t::array, name, true)) {
      node.outputs.push_back({.bytes = parse_size(size, name)});
    }
    if (const auto& p = field(spec, "persistent", nlohmann::json::value_t::boolean, name, false); !p.is_null()) {
      node.persistent = p.get<bool>();
    }
    if (const auto& f = field(spec, "flops", nlohmann::json::value_t::number_float, name, false); !f.is_null()) {
      node.flops = f.get<double>();
    }
    if (const auto it = spec.find("scratch_bytes"); it != spec.end() && !it->is_null()) {
      node.scratch_bytes = parse_size(*it, name, "scratch_bytes");
    }
    if (const auto& d = field(spec, "device", nlohmann::json::value_t::string, name, false); !d.is_null()) {
      node.device = d;
    }
    if (const auto& a = field(spec, "attrs", nlohmann::json::value_t::object, name, false); !a.is_null()) {
      node.attrs = a;
    }
    g[add_vertex(g)] = std::move(node);  // add_vertex(node, g) would copy it
  }

  void add_edges(const nlohmann::json& spec, std::size_t v) {
    const std::string& name = g[v].name;
    std::vector<buffer_ref<std::size_t>> inputs;
    for (const auto& input : field(spec, "inputs", nlohmann::json::value_t::array, name, false)) {
      inputs.push_back(parse_ref(input, name, "input"));
      add_edge(inputs.back().vertex, v, tensor_edge{.port = inputs.back().port}, g);
    }
    for (const auto& pred : field(spec, "control", nlohmann::json::value_t::array, name, false)) {
      if (!pred.is_string()) throw format_error(name, "control predecessor " + pred.dump() + " is not a string");
      const auto it = index_of.find(pred.get<std::string>());
      if (it == index_of.end()) {
        throw format_error(name, "control predecessor '" + pred.get<std::string>() + "' does not exist");
      }
      add_edge(it->second, v, tensor_edge{.control = true}, g);
    }
    add_aliases(v, inputs);
  }

  /// attrs.alias: "node:port" for the first output, or one entry (or null) per
  /// output; each names an input of the node whose storage the output lives
  /// in (attrs.inplace: the node writes it). attrs.may_alias, in the same
  /// form: an input whose storage the output may take over where it dies (an
  /// in-place candidate, tensor_output::alias, under read_options::in_place_reuse).
  void add_aliases(std::size_t v, const std::vector<buffer_ref<std::size_t>>& inputs) {
    const std::string& name = g[v].name;
    const auto& attrs = g[v].attrs;
    const auto inplace = attrs.find("inplace");
    if (inplace != attrs.end() && !inplace->is_boolean()) {
      throw format_error(name, "attrs.inplace must be boolean, not " + kind_of(*inplace));
    }
    const bool in_place = inplace != attrs.end() && inplace->get<bool>();
    for (const char* key : {"may_alias", "alias"}) {
      const auto it = attrs.find(key);
      if (it == attrs.end() || it->is_null()) continue;
      const bool must = std::string_view(key) == "alias";
      const bool per_port = it->is_array();
      const std::size_t count = per_port ? it->size() : 1;
      if (count > g[v].outputs.size()) {
        throw format_error(name, std::string("attrs.") + key + " names more outputs than the node has");
      }
      for (std::size_t port = 0; port < count; ++port) {
        const auto& ref = per_port ? (*it)[port] : *it;
        if (ref.is_null()) continue;
        const auto source = parse_ref(ref, name, key);
        if (std::ranges::find(inputs, source) == inputs.end()) {
          throw format_error(name, std::string(key) + " " + ref.dump() + " is not an input of the node");
        }
        if (options.in_place_reuse) g[v].outputs[port].alias = source;
        if (must && options.storage_aliases) g[v].outputs[port].shares = shared_storage<std::size_t>{source, in_place};
      }
    }
  }

  void read() {
    if (!doc.is_object()) throw format_error("", "the top level is " + kind_of(doc) + ", not an object");
    const auto& format = field(doc, "format", nlohmann::json::value_t::string, "", true);
    if (format != "memopt-graph/1") {
      throw format_error("", "format is " + format.dump() + ", expected \"memopt-graph/1\"");
    }
    if (const auto& n = field(doc, "name", nlohmann::json::value_t::string, "", false); !n.is_null()) {
      g[boost::graph_bundle].name = n;
    }
    if (const auto& s = field(doc, "source", nlohmann::json::value_t::string, "", false); !s.is_null()) {
      g[boost::graph_bundle].source = s;
    }
    const auto& nodes = field(doc, "nodes", nlohmann::json::value_t::array, "", true);
    for (std::size_t i = 0; i < nodes.size(); ++i) add_node(nodes[i], i);
    for (std::size_t i = 0; i < nodes.size(); ++i) add_edges(nodes[i], i);
    for (const auto& out : field(doc, "outputs", nlohmann::json::value_t::array, "", false)) {
      const auto ref = parse_ref(out, "", "graph output");
      g[ref.vertex].outputs[ref.port].live_out = true;
    }
    if (const auto cycle = find_cycle(g)) {
      std::string text = "the graph has a cycle: ";
      for (const std::size_t v : *cycle) text += "'" + g[v].name + "' -> ";
      throw format_error("", text + "'" + g[cycle->front()].name + "'");
    }
  }
};

}  // namespace detail

/// The graph of a parsed memopt-graph/1 document, as adapters build them.
/// Throws format_error.
[[nodiscard]] inline file_graph graph_from_json(const nlohmann::json& doc, const read_options& options = {}) {
  file_graph g;
  detail::file_reader{doc, options, g}.read();
  return g;
}

/// The JSON document of memopt-graph/1 text (nlohmann::json, or another
/// basic_json such as ordered_json), not yet checked as a graph. Throws
/// format_error when the text is empty or not JSON.
template <class Json = nlohmann::json>
[[nodiscard]] Json parse_document(const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw format_error("", "empty file");
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range: a number too large
    throw format_error("", std::string("not JSON: ") + e.what());
  }
}

/// Parses memopt-graph/1 text. Throws format_error.
[[nodiscard]] inline file_graph parse_graph(const std::string& text, const read_options& options = {}) {
  return graph_from_json(parse_document(text), options);
}

/// Reads a memopt-graph/1 file, gzipped or not.
[[nodiscard]] inline file_graph read_graph(const std::string& path, const read_options& options = {}) {
  return parse_graph(detail::read_file(path), options);
}

}  // namespace memopt::io
