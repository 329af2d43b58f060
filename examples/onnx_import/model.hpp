#pragma once
// The ONNX adapter: an ONNX model (onnx::ModelProto, from Debian's
// libonnx-dev and libprotobuf-dev) as a memopt-graph/1 document, so that
// every memopt-plan subcommand reads .onnx files and `convert` writes them
// out. Only shapes matter: initializers stored as external data are read
// without their data files.
//
// The model is checked (every node's op known to ONNX's schema registry or a
// model-local function, its attributes and arity valid, every input defined
// by an earlier node, a graph input or an initializer, every tensor produced
// once), dynamic dimensions are fixed from import_options::dims, and ONNX's
// shape inference (strict, with data propagation) gives every tensor's shape.
// Every defect is a memopt::io::format_error naming the node or tensor.
//
// The graph: a "parameter" node per initializer (persistent, just before its
// first reader), an "input" node per other graph input, then a node per ONNX
// node in the model's order, one output port per ONNX output (an omitted
// optional output is a port of 0 bytes), inputs in operand order (omitted
// optional inputs left out). Constant nodes, and nodes that read only
// persistent tensors (weights an exporter transposes or casts, which runtimes
// fold when they load the model), are persistent. Views (ops::is_view) alias
// their input in the storage-aware model; element-wise outputs may alias an
// input of their size (attrs.may_alias). Subgraphs (If, Loop, Scan) are
// refused by name.

#include "fold.hpp"
#include "ops.hpp"

#include <memopt/io/graph_file.hpp>

#include <nlohmann/json.hpp>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace onnx_import {

using memopt::io::format_error;

struct import_options {
  /// Values of named dynamic dimensions (dim_param), as --dim name=value gives them.
  std::map<std::string, std::int64_t> dims;
};

/// Whether `path` names an ONNX model (by its extension).
[[nodiscard]] inline bool is_onnx_path(const std::string& path) { return path.ends_with(".onnx"); }

/// An ONNX model from its serialised bytes. Throws format_error.
[[nodiscard]] inline onnx::ModelProto parse_model(const std::string& bytes) {
  if (bytes.empty()) throw format_error("", "empty file");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw format_error("", "not an ONNX model: the protobuf is malformed or truncated");
  }
  if (!model.has_graph()) throw format_error("", "not an ONNX model: it has no graph");
  return model;
}

namespace detail {

[[nodiscard]] inline std::string dtype_name(std::int32_t type) {
  using T = onnx::TensorProto;
  switch (type) {
    case T::BOOL: return "bool";
    case T::INT8: return "int8";
    case T::UINT8: return "uint8";
    case T::INT16: return "int16";
    case T::UINT16: return "uint16";
    case T::FLOAT16: return "float16";
    case T::BFLOAT16: return "bfloat16";
    case T::INT32: return "int32";
    case T::UINT32: return "uint32";
    case T::FLOAT: return "float32";
    case T::INT64: return "int64";
    case T::UINT64: return "uint64";
    case T::DOUBLE: return "float64";
    case T::COMPLEX64: return "complex64";
    case T::COMPLEX128: return "complex128";
    case T::STRING: return "string";
    default: return "undefined";
  }
}

/// A tensor's type as the graph needs it: element type and static shape.
struct tensor_type {
  std::int32_t element = 0;
  shape dims;
};

/// The byte size of a tensor; refuses sizes past 2^63.
[[nodiscard]] inline std::uint64_t byte_size(const tensor_type& t, const std::string& tensor) {
  const std::uint64_t element = element_bytes(t.element);
  if (element == 0) {
    throw format_error("", "tensor '" + tensor + "' has element type " + dtype_name(t.element) +
                               ", which has no fixed size");
  }
  std::uint64_t bytes = element;
  for (const std::int64_t d : t.dims) {
    const auto dim = static_cast<std::uint64_t>(d);
    if (dim != 0 && bytes > (std::uint64_t{1} << 63) / dim) {
      throw format_error("", "tensor '" + tensor + "' is larger than 2^63 bytes");
    }
    bytes *= dim;
  }
  return bytes;
}

/// The node that makes a tensor, as a memopt-graph/1 "node:port" is built from.
struct producer {
  std::string node;
  std::size_t port = 0;
  bool persistent = false;
};

struct converter {
  onnx::ModelProto& model;
  const import_options& options;

  std::unordered_map<std::string, int> opsets{};            ///< domain → version
  std::unordered_set<std::string> local_functions{};         ///< "domain:name"
  std::unordered_map<std::string, tensor_type> types{};      ///< tensor → inferred type
  std::unordered_map<std::string, producer> producers{};     ///< tensor → where it is made
  std::unordered_map<std::string, const onnx::TensorProto*> initializers{};
  std::unordered_map<std::string, constant_tensor> folded{};          ///< tensor → value computed by fold_node
  std::unordered_map<std::string, std::set<std::string>> roots{};     ///< folded tensor → nodes its folding reads
  std::unordered_set<std::string> graph_outputs{};
  std::unordered_set<std::string> node_names{};
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  std::vector<int> onnx_nodes{};  ///< per memopt node, the ONNX node's index (-1: initializer, input)

  [[nodiscard]] static std::string domain_of(const onnx::NodeProto& node) {
    return node.domain() == "ai.onnx" ? std::string() : node.domain();
  }

  /// A unique memopt node name: the ONNX name, else the first output's, else the op's.
  std::string unique_name(std::string wanted) {
    if (wanted.empty()) wanted = "node";
    std::string name = wanted;
    for (std::size_t k = 2; !node_names.insert(name).second; ++k) name = wanted + "#" + std::to_string(k);
    return name;
  }

  [[nodiscard]] static std::string display_name(const onnx::NodeProto& node, int index) {
    if (!node.name().empty()) return node.name();
    return node.op_type() + " #" + std::to_string(index);
  }

  void read_opsets() {
    for (const auto& import : model.opset_import()) {
      opsets[import.domain() == "ai.onnx" ? std::string() : import.domain()] = static_cast<int>(import.version());
    }
    if (model.ir_version() < 3 && opsets.empty()) opsets[""] = 1;  // IR 1-2 models predate opset_import
    for (const auto& f : model.functions()) local_functions.insert(f.domain() + ":" + f.name());
  }

  /// Refuses what the graph cannot model before ONNX's own checks run: an
  /// unknown op, a subgraph, an op whose attributes or arity its schema refuses.
  void check_node(const onnx::NodeProto& node, int index) {
    const std::string where = display_name(node, index);
    const std::string domain = domain_of(node);
    for (const auto& attr : node.attribute()) {
      if (attr.has_g() || attr.graphs_size() > 0 || attr.type() == onnx::AttributeProto::GRAPH ||
          attr.type() == onnx::AttributeProto::GRAPHS) {
        throw format_error(where, "op '" + node.op_type() + "' has a subgraph (attribute '" + attr.name() +
                                      "'); control flow (If, Loop, Scan) is not supported");
      }
    }
    check_positive_attributes(node, where);
    if (local_functions.contains(node.domain() + ":" + node.op_type())) return;
    const auto opset = opsets.find(domain);
    if (opset == opsets.end()) {
      throw format_error(where, "op '" + node.op_type() + "' is in domain '" + node.domain() +
                                    "', which the model does not import (opset_import)");
    }
    const auto* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), opset->second, domain);
    if (schema == nullptr || schema->Deprecated()) {
      throw format_error(where, "unknown op '" + node.op_type() + "'" +
                                    (domain.empty() ? "" : " in domain '" + domain + "'") + " at opset " +
                                    std::to_string(opset->second));
    }
    try {
      schema->Verify(node);
    } catch (const std::exception& e) {
      throw format_error(where, "op '" + node.op_type() + "' is malformed: " + first_line(e.what()) +
                                    newer_opset_note(domain, opset->second));
    }
  }

  /// Attributes ONNX's shape inference divides by (fuzzing found a zero
  /// stride crash it): sizes, strides, dilations, groups and block sizes
  /// must be at least 1, whatever the op.
  static void check_positive_attributes(const onnx::NodeProto& node, const std::string& where) {
    static constexpr std::string_view positive[] = {"kernel_shape", "strides", "dilations", "group", "blocksize"};
    for (const auto& attr : node.attribute()) {
      if (std::ranges::find(positive, attr.name()) == std::end(positive)) continue;
      const bool bad = (attr.type() == onnx::AttributeProto::INT && attr.i() < 1) ||
                       std::ranges::any_of(attr.ints(), [](std::int64_t v) { return v < 1; });
      if (bad) throw format_error(where, "op '" + node.op_type() + "' has attribute '" + attr.name() + "' below 1");
    }
  }

  [[nodiscard]] static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

  /// Why a newer model may look malformed: its op may have changed after the
  /// last opset the ONNX library knows (the schema used is that opset's).
  [[nodiscard]] static std::string newer_opset_note(const std::string& domain, int version) {
    const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    const auto it = known.find(domain);
    if (it == known.end() || version <= it->second.second) return {};
    return " (the model's opset " + std::to_string(version) + " is newer than the " +
           std::to_string(it->second.second) + " this build's ONNX library knows)";
  }

  /// Graph inputs' dim_params set from options.dims; a --dim the model does not name is refused.
  void fix_dims() {
    std::unordered_set<std::string> used;
    const auto fix = [&](onnx::ValueInfoProto& value) {
      if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape()) return;
      for (auto& dim : *value.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
        if (!dim.has_dim_param()) continue;
        if (const auto it = options.dims.find(dim.dim_param()); it != options.dims.end()) {
          used.insert(it->first);
          dim.set_dim_value(it->second);
        }
      }
    };
    auto& graph = *model.mutable_graph();
    for (auto& value : *graph.mutable_input()) fix(value);
    for (auto& value : *graph.mutable_output()) fix(value);
    for (auto& value : *graph.mutable_value_info()) fix(value);
    for (const auto& [name, value] : options.dims) {
      if (used.contains(name)) continue;
      std::string problem = "--dim " + name;
      problem.append(": the model has no dimension named '").append(name).append("'");
      throw format_error("", problem);
    }
  }

  /// The static type of a value, or a message saying what is unknown.
  [[nodiscard]] static std::optional<tensor_type> static_type(const onnx::TypeProto& type, std::string& problem) {
    if (!type.has_tensor_type()) {
      problem = type.has_sequence_type() ? "is a sequence" : type.has_map_type() ? "is a map"
              : type.has_optional_type() ? "is an optional" : type.has_sparse_tensor_type() ? "is a sparse tensor"
                                                                                            : "has no type";
      return std::nullopt;
    }
    const auto& tensor = type.tensor_type();
    if (!tensor.has_shape()) {
      problem = "has no known shape";
      return std::nullopt;
    }
    tensor_type t{.element = tensor.elem_type()};
    for (int i = 0; i < tensor.shape().dim_size(); ++i) {
      const auto& dim = tensor.shape().dim(i);
      if (dim.has_dim_value() && dim.dim_value() >= 0) {
        t.dims.push_back(dim.dim_value());
      } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
        problem = "has dimension '" + dim.dim_param() + "' of unknown size (give it with --dim " + dim.dim_param() + "=N)";
        return std::nullopt;
      } else {
        problem = "has dimension " + std::to_string(i) + " of unknown size";
        return std::nullopt;
      }
    }
    return t;
  }

  void record_types() {
    const auto& graph = model.graph();
    for (const auto& init : graph.initializer()) {
      tensor_type t{.element = init.data_type()};
      for (const std::int64_t d : init.dims()) {
        if (d < 0) throw format_error("", "initializer '" + init.name() + "' has a negative dimension");
        t.dims.push_back(d);
      }
      types[init.name()] = std::move(t);
    }
    const auto record = [&](const onnx::ValueInfoProto& value) {
      std::string problem;
      if (auto t = static_type(value.type(), problem)) types.emplace(value.name(), std::move(*t));
    };
    for (const auto& value : graph.input()) record(value);
    for (const auto& value : graph.value_info()) record(value);
    for (const auto& value : graph.output()) record(value);
    for (const auto& [tensor, value] : folded) types[tensor] = {.element = value.element, .dims = value.dims};
  }

  /// The type of `tensor`, made by `maker` (a node or graph input); refuses an unknown one.
  const tensor_type& type_of(const std::string& tensor, const std::string& maker) {
    if (const auto it = types.find(tensor); it != types.end()) return it->second;
    std::string problem = "has no known shape";
    const auto explain = [&](const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values) {
      for (const auto& value : values) {
        if (value.name() == tensor) (void)static_type(value.type(), problem);
      }
    };
    explain(model.graph().input());
    explain(model.graph().value_info());
    explain(model.graph().output());
    throw format_error(maker, "tensor '" + tensor + "' " + problem);
  }

  /// ONNX shape inference, strict, with type checks and data propagation,
  /// alternating with fold_node until neither learns more, in a child
  /// process: ONNX 1.12's inference functions crash on some malformed models
  /// (fuzzing found weights of the wrong rank and constants whose data does
  /// not match their dims), and a crash there must be a refusal, not ours.
  /// The child sees initializers stored as external data as typed graph
  /// inputs (their data is not here, and inference would read it) and sends
  /// back the value infos and outputs it inferred and the tensors it folded,
  /// or the refusal.
  void infer_shapes() {
    int channel[2];
    if (pipe(channel) != 0) throw std::runtime_error("cannot create a pipe for ONNX shape inference");
    const pid_t child = fork();
    if (child < 0) {
      close(channel[0]);
      close(channel[1]);
      throw std::runtime_error("cannot fork for ONNX shape inference");
    }
    if (child == 0) {
      close(channel[0]);
      // Quiet: what a crash prints (a sanitizer's report in checked builds) is not the user's.
      if (const int null = open("/dev/null", O_WRONLY); null >= 0) dup2(null, STDERR_FILENO);
      const std::string reply = inferred_shapes();
      for (std::size_t at = 0; at < reply.size();) {
        const ssize_t wrote = write(channel[1], reply.data() + at, reply.size() - at);
        if (wrote <= 0) _exit(1);
        at += static_cast<std::size_t>(wrote);
      }
      _exit(0);
    }
    close(channel[1]);
    std::string reply;
    char chunk[1 << 16];
    for (ssize_t got = 0; (got = read(channel[0], chunk, sizeof chunk)) != 0;) {
      if (got > 0) reply.append(chunk, static_cast<std::size_t>(got));
      else if (errno != EINTR) break;
    }
    close(channel[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    onnx::GraphProto inferred;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty()) {
      throw format_error("", "ONNX shape inference crashed on the model (it is malformed)");
    }
    if (reply[0] == 'E') throw format_error("", "shape inference failed: " + reply.substr(1));
    if (reply[0] == 'F') {  // a folding refusal: the node, a newline, the message
      const auto end = reply.find('\n');
      throw format_error(reply.substr(1, end - 1), reply.substr(end + 1));
    }
    if (reply[0] != 'O' || !inferred.ParseFromArray(reply.data() + 1, static_cast<int>(reply.size() - 1))) {
      throw format_error("", "ONNX shape inference crashed on the model (it is malformed)");
    }
    auto& graph = *model.mutable_graph();
    graph.mutable_value_info()->Swap(inferred.mutable_value_info());
    graph.mutable_output()->Swap(inferred.mutable_output());
    for (const auto& t : inferred.initializer()) folded.emplace(t.name(), *tensor_value(t, ""));
  }

  /// One round of folding over the model's nodes in order, each seeing what
  /// earlier ones folded: the nodes it folds (also added to `done`), their outputs added to `known`.
  [[nodiscard]] static std::vector<int> fold_round(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& all,
                                       std::unordered_map<std::string, constant_tensor>& known,
                                       const std::unordered_map<std::string, shape>& shapes, std::unordered_set<int>& done) {
    std::vector<int> round;
    const auto value = [&](const std::string& t) {
      const auto it = known.find(t);
      return it == known.end() ? nullptr : &it->second;
    };
    const auto shape_of = [&](const std::string& t) -> const shape* {
      if (const auto it = known.find(t); it != known.end()) return &it->second.dims;
      const auto it = shapes.find(t);
      return it == shapes.end() ? nullptr : &it->second;
    };
    for (int i = 0; i < all.size(); ++i) {
      const auto& node = all.Get(i);
      if (node.output_size() == 0 || done.contains(i)) continue;
      auto outputs = fold_node(node, display_name(node, i), value, shape_of);
      if (!outputs || outputs->size() != static_cast<std::size_t>(node.output_size())) continue;
      for (int port = 0; port < node.output_size(); ++port) {
        if (!node.output(port).empty()) known[node.output(port)] = std::move((*outputs)[static_cast<std::size_t>(port)]);
      }
      done.insert(i);
      round.push_back(i);
    }
    return round;
  }

  /// The static shapes of `graph`'s tensors: its initializers' dims and what ONNX's inference gave.
  [[nodiscard]] static std::unordered_map<std::string, shape> static_shapes(const onnx::GraphProto& graph) {
    std::unordered_map<std::string, shape> shapes;
    for (const auto& init : graph.initializer()) shapes.emplace(init.name(), shape(init.dims().begin(), init.dims().end()));
    const auto record = [&](const onnx::ValueInfoProto& value) {
      std::string problem;
      if (auto t = static_type(value.type(), problem)) shapes.emplace(value.name(), std::move(t->dims));
    };
    for (const auto& value : graph.input()) record(value);
    for (const auto& value : graph.value_info()) record(value);
    for (const auto& value : graph.output()) record(value);
    return shapes;
  }

  /// In the child: 'O' and a graph holding the inferred value infos and
  /// outputs, or 'E' and ONNX's message.
  std::string inferred_shapes() {
    try {
      auto& graph = *model.mutable_graph();
      for (const auto& init : graph.initializer()) {
        if (init.data_location() != onnx::TensorProto::EXTERNAL) continue;
        auto& input = *graph.add_input();
        input.set_name(init.name());
        auto& type = *input.mutable_type()->mutable_tensor_type();
        type.set_elem_type(init.data_type());
        for (const std::int64_t d : init.dims()) type.mutable_shape()->add_dim()->set_dim_value(d);
      }
      auto& all = *graph.mutable_initializer();
      all.erase(std::remove_if(all.begin(), all.end(),
                               [](const onnx::TensorProto& t) { return t.data_location() == onnx::TensorProto::EXTERNAL; }),
                all.end());
      std::unordered_map<std::string, constant_tensor> known;
      for (const auto& init : graph.initializer()) {
        if (auto value = tensor_value(init, "")) known.emplace(init.name(), std::move(*value));
      }
      const auto original = graph.node();
      std::unordered_set<int> done;
      onnx::GraphProto shapes;  // the reply: value infos, outputs, and the folded tensors as initializers
      onnx::ShapeInferenceOptions strict(/*check_type=*/true, /*error_mode=*/1, /*data_propagation=*/true);
      for (;;) {
        graph.clear_value_info();
        onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), strict);
        const auto round = fold_round(original, known, static_shapes(graph), done);
        if (round.empty()) break;
        // Folded nodes leave the graph ONNX infers; their outputs become initializers it reads.
        for (const int i : round) {
          for (const auto& tensor : original.Get(i).output()) {
            if (tensor.empty()) continue;
            *graph.add_initializer() = tensor_proto(tensor, known.at(tensor));
            *shapes.add_initializer() = tensor_proto(tensor, known.at(tensor));
          }
        }
        graph.clear_node();
        for (int i = 0; i < original.size(); ++i) {
          if (!done.contains(i)) *graph.add_node() = original.Get(i);
        }
      }
      shapes.mutable_value_info()->Swap(graph.mutable_value_info());
      shapes.mutable_output()->Swap(graph.mutable_output());
      std::string reply = "O";
      return shapes.AppendToString(&reply) ? reply : "Ecannot serialise the inferred shapes";
    } catch (const format_error& e) {
      const std::string what = e.what();
      return "F" + e.node + "\n" + (e.node.empty() ? what : what.substr(what.find("': ") + 3));
    } catch (const std::exception& e) {
      return "E" + first_line(e.what());
    }
  }

  static nlohmann::ordered_json shape_json(const shape& s) { return nlohmann::ordered_json(s); }

  /// Shape and dtype attrs, as the shipped graphs carry them (shapes/dtypes when several).
  static void describe_outputs(nlohmann::ordered_json& attrs, const std::vector<const tensor_type*>& outs) {
    if (outs.size() == 1) {
      attrs["shape"] = shape_json(outs[0]->dims);
      attrs["dtype"] = dtype_name(outs[0]->element);
      return;
    }
    nlohmann::ordered_json shapes = nlohmann::ordered_json::array();
    nlohmann::ordered_json dtypes = nlohmann::ordered_json::array();
    for (const auto* t : outs) {
      shapes.push_back(t ? shape_json(t->dims) : nlohmann::ordered_json());
      dtypes.push_back(t ? nlohmann::ordered_json(dtype_name(t->element)) : nlohmann::ordered_json());
    }
    attrs["shapes"] = std::move(shapes);
    attrs["dtypes"] = std::move(dtypes);
  }

  [[nodiscard]] static std::string ref(const producer& p) { return p.node + ":" + std::to_string(p.port); }

  /// A one-output source node (graph input or initializer) for `tensor`.
  void add_source(const std::string& tensor, bool persistent) {
    const tensor_type& t = type_of(tensor, "");
    nlohmann::ordered_json j;
    const std::string name = unique_name(tensor);
    j["name"] = name;
    j["op"] = persistent ? "parameter" : "input";
    j["outputs"] = {byte_size(t, tensor)};
    if (persistent) j["persistent"] = true;
    j["attrs"] = {{"shape", shape_json(t.dims)}, {"dtype", dtype_name(t.element)}};
    if (name != tensor) j["attrs"]["tensor"] = tensor;
    nodes.push_back(std::move(j));
    onnx_nodes.push_back(-1);
    producers[tensor] = {name, 0, persistent};
  }

  /// The producer of `tensor`, read by node `where`; an initializer is added on its first read.
  const producer& producer_of(const std::string& tensor, const std::string& where) {
    if (const auto it = producers.find(tensor); it != producers.end()) return it->second;
    if (initializers.contains(tensor)) {
      add_source(tensor, true);
      return producers.at(tensor);
    }
    throw format_error(where, "input '" + tensor +
                                  "' is not a graph input, an initializer or the output of an earlier node");
  }

  [[nodiscard]] std::vector<std::int64_t> ints_attribute(const onnx::NodeProto& node, const char* name) const {
    for (const auto& attr : node.attribute()) {
      if (attr.name() != name) continue;
      if (attr.type() == onnx::AttributeProto::INT) return {attr.i()};
      return {attr.ints().begin(), attr.ints().end()};
    }
    return {};
  }

  /// Whether `node` only computes folded values: it leaves the graph, unless it makes a graph output.
  [[nodiscard]] bool is_shape_only(const onnx::NodeProto& node) const {
    return node.output_size() > 0 && std::ranges::all_of(node.output(), [&](const std::string& t) {
             return t.empty() || (folded.contains(t) && !graph_outputs.contains(t));
           });
  }

  /// The nodes a folded tensor's computation reads, for the control edges
  /// that keep the ONNX file's order valid: its node when that is in the
  /// graph, else what its node's inputs need.
  void record_roots(const onnx::NodeProto& node) {
    std::set<std::string> needs;
    for (const auto& tensor : node.input()) {
      if (const auto it = roots.find(tensor); it != roots.end()) {
        needs.insert(it->second.begin(), it->second.end());
      } else if (const auto made = producers.find(tensor); made != producers.end() && !made->second.persistent) {
        needs.insert(made->second.node);
      }
    }
    for (const auto& tensor : node.output()) {
      if (!tensor.empty()) roots[tensor] = needs;
    }
  }

  void add_node(const onnx::NodeProto& node, int index) {
    if (is_shape_only(node)) {
      record_roots(node);
      return;
    }
    const std::string where = display_name(node, index);
    nlohmann::ordered_json j;
    const std::string name =
        unique_name(!node.name().empty() ? node.name() : node.output_size() > 0 && !node.output(0).empty() ? node.output(0)
                                                                                                          : node.op_type());
    j["name"] = name;
    j["op"] = node.op_type();

    nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
    std::vector<shape> input_shapes;
    std::vector<std::optional<producer>> operands;  // per ONNX input, empty when omitted or folded
    std::set<std::string> control;
    bool reads_only_persistent = true;
    bool reads_any = false;
    for (const auto& tensor : node.input()) {
      if (tensor.empty()) {
        operands.emplace_back();
        continue;
      }
      reads_any = true;
      if (const auto it = roots.find(tensor); it != roots.end()) {
        control.insert(it->second.begin(), it->second.end());
        input_shapes.push_back(type_of(tensor, where).dims);
        operands.emplace_back();
        continue;
      }
      const producer p = producer_of(tensor, where);
      inputs.push_back(ref(p));
      input_shapes.push_back(type_of(tensor, where).dims);
      reads_only_persistent = reads_only_persistent && p.persistent;
      operands.push_back(p);
    }
    const bool persistent = node.op_type() == "Constant" || (reads_any && reads_only_persistent);

    nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
    std::vector<shape> output_shapes;
    std::vector<const tensor_type*> output_types;
    for (int port = 0; port < node.output_size(); ++port) {
      const std::string& tensor = node.output(port);
      if (tensor.empty()) {
        sizes.push_back(0);
        output_types.push_back(nullptr);
        continue;
      }
      const tensor_type& t = type_of(tensor, where);
      sizes.push_back(byte_size(t, tensor));
      output_shapes.push_back(t.dims);
      output_types.push_back(&t);
      const auto [it, fresh] = producers.emplace(tensor, producer{name, static_cast<std::size_t>(port), persistent});
      if (!fresh) {
        throw format_error(where, "output '" + tensor + "' is also made by '" + it->second.node +
                                      "' (a tensor is made once)");
      }
    }
    for (const auto& read : operands) {
      if (read) control.erase(read->node);
    }
    if (!inputs.empty()) j["inputs"] = std::move(inputs);
    if (!control.empty()) j["control"] = control;
    j["outputs"] = std::move(sizes);
    if (persistent) j["persistent"] = true;
    const double flops = estimate_flops(node.op_type(), input_shapes, output_shapes,
                                        [&](const char* attr) { return ints_attribute(node, attr); });
    if (flops > 0) j["flops"] = flops;

    nlohmann::ordered_json attrs = nlohmann::ordered_json::object();
    if (!output_types.empty() && output_types[0] != nullptr) describe_outputs(attrs, output_types);
    if (!domain_of(node).empty()) attrs["domain"] = node.domain();
    if (!node.name().empty() && name != node.name()) attrs["onnx_name"] = node.name();
    add_aliases(node, operands, attrs);
    if (!attrs.empty()) j["attrs"] = std::move(attrs);
    nodes.push_back(std::move(j));
    onnx_nodes.push_back(index);
  }

  /// A view's output 0 lives in its first input's storage; an element-wise
  /// output 0 may take over its first input when that has the output's shape
  /// and element size (ONNX Runtime's CPU kernels declare MayInplace(0, 0)
  /// only: a broadcast Add never runs in its second input).
  void add_aliases(const onnx::NodeProto& node, const std::vector<std::optional<producer>>& operands,
                   nlohmann::ordered_json& attrs) {
    if (node.output_size() == 0 || node.output(0).empty() || operands.empty()) return;
    const tensor_type& out = types.at(node.output(0));
    if (is_view(node.op_type()) && operands[0]) {
      attrs["alias"] = ref(*operands[0]);
      attrs["view"] = true;
      return;
    }
    if (!is_elementwise(node.op_type()) || !operands[0]) return;
    const tensor_type& in = types.at(node.input(0));
    if (in.dims == out.dims && element_bytes(in.element) == element_bytes(out.element)) {
      attrs["may_alias"] = ref(*operands[0]);
    }
  }

  nlohmann::ordered_json convert() {
    read_opsets();
    const auto& graph = model.graph();
    for (int i = 0; i < graph.node_size(); ++i) check_node(graph.node(i), i);
    fix_dims();
    infer_shapes();
    record_types();
    for (const auto& init : graph.initializer()) {
      if (init.name().empty()) throw format_error("", "an initializer has no name");
      initializers.emplace(init.name(), &init);
    }
    for (const auto& output : graph.output()) graph_outputs.insert(output.name());
    // Graph inputs that are also initializers (IR < 4) are weights with a default.
    for (const auto& input : graph.input()) {
      if (!initializers.contains(input.name()) && !producers.contains(input.name())) add_source(input.name(), false);
    }
    for (int i = 0; i < graph.node_size(); ++i) add_node(graph.node(i), i);
    nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
    for (const auto& output : graph.output()) outputs.push_back(ref(producer_of(output.name(), "")));
    // Initializers nobody reads still hold memory: they go last.
    for (const auto& init : graph.initializer()) {
      if (!producers.contains(init.name())) add_source(init.name(), true);
    }
    nlohmann::ordered_json doc;
    doc["format"] = "memopt-graph/1";
    doc["name"] = graph.name();
    doc["source"] = "ONNX model, graph '" + graph.name() + "' (IR " + std::to_string(model.ir_version()) + ", producer " +
                    (model.producer_name().empty() ? "unknown" : model.producer_name() + " " + model.producer_version()) +
                    "), imported by memopt's ONNX adapter with ONNX shape inference";
    doc["nodes"] = std::move(nodes);
    doc["outputs"] = std::move(outputs);
    return doc;
  }
};

}  // namespace detail

/// A model as memopt sees it: its memopt-graph/1 document and, for each node
/// of the document, the index of the ONNX node it stands for (-1 for an
/// initializer or a graph input). ONNX nodes of shape arithmetic have no node.
struct imported_model {
  nlohmann::ordered_json doc;
  std::vector<int> onnx_nodes;
};

/// `model` imported. Throws format_error.
[[nodiscard]] inline imported_model import_model(onnx::ModelProto model, const import_options& options = {}) {
  detail::converter converter{model, options};
  auto doc = converter.convert();
  return {std::move(doc), std::move(converter.onnx_nodes)};
}

/// The memopt-graph/1 document of an ONNX model. Throws format_error.
[[nodiscard]] inline nlohmann::ordered_json to_graph_json(onnx::ModelProto model, const import_options& options = {}) {
  return import_model(std::move(model), options).doc;
}

/// The ONNX model in the file at `path`. Throws format_error.
[[nodiscard]] inline onnx::ModelProto read_model(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw format_error("", "cannot open " + path);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return parse_model(bytes.str());
}

/// The model in the file at `path` imported, its graph named after the file
/// (exporters give every graph the same name: torch's are all "torch_jit").
/// Throws format_error.
[[nodiscard]] inline imported_model import_file(const std::string& path, const import_options& options = {}) {
  auto imported = import_model(read_model(path), options);
  imported.doc["name"] = std::filesystem::path(path).stem().string();
  return imported;
}

/// The ONNX value each buffer "node:port" of `imported` (from `model`) holds.
[[nodiscard]] inline std::unordered_map<std::string, std::string> value_names(const onnx::ModelProto& model,
                                                                           const imported_model& imported) {
  std::unordered_map<std::string, std::string> names;
  const auto& nodes = imported.doc["nodes"];
  for (std::size_t v = 0; v < nodes.size(); ++v) {
    const std::string name = nodes[v]["name"];
    if (imported.onnx_nodes[v] < 0) {  // an initializer or graph input, named after its tensor unless renamed
      const auto& attrs = nodes[v]["attrs"];
      names.emplace(name + ":0", attrs.contains("tensor") ? attrs["tensor"].get<std::string>() : name);
      continue;
    }
    const auto& outputs = model.graph().node(imported.onnx_nodes[v]).output();
    for (int port = 0; port < outputs.size(); ++port) {
      if (!outputs[port].empty()) names.emplace(name + ":" + std::to_string(port), outputs[port]);
    }
  }
  return names;
}

/// The memopt-graph/1 document of an ONNX file, named after the file. Throws format_error.
[[nodiscard]] inline nlohmann::ordered_json read_graph_json(const std::string& path, const import_options& options = {}) {
  return import_file(path, options).doc;
}

/// An ONNX file as a graph memopt's algorithms run on. Throws format_error.
[[nodiscard]] inline memopt::io::file_graph read_graph(const std::string& path, const import_options& options = {},
                                                       const memopt::io::read_options& read = {}) {
  return memopt::io::graph_from_json(read_graph_json(path, options), read);
}

}  // namespace onnx_import
