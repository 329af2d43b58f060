#pragma once
// The rewrite family on GraphDefs. to_file_graph gives a GraphDef's own marks
// the memopt-graph/1 attributes the rewrite passes read, so memopt-plan
// rewrite runs on a GraphDef as on any graph:
//   _recompute_hint                  -> attrs.recompute_hint
//   _swap_to_host (input indices)    -> attrs.swap_to_host
//   ref/resource inputs and outputs  -> attrs.ref_inputs, attrs.ref_outputs
// With memory_model::tf_cost_model, to_file_graph counts memory as TF's
// cost model does and takes references from TF's op signatures, which is how
// the memory optimizer sees a GraphDef (see tf_cost_model_marks below).
// rewritten_graph_def writes a plan back as a GraphDef, as the memory
// optimizer would have: the original nodes in their order (redirected inputs
// renamed, added control inputs last, a changed node with its new op, inputs
// and only the seed's attributes), then the added nodes, with TF's input
// syntax ("x" for port 0, "x:1", "^x") and the seed's attributes: a copy
// takes its original's; swap pairs and the node they feed share the class
// "loc@<node>_<input>"; accumulation nodes carry T, dtype, shape, var_name,
// use_locking and validate_shape as the seed sets them; relaxed assignments
// _grappler_relax_allocator_constraints. Added nodes also carry
// _output_shapes where the shape is known (a copy's original's, the swapped
// tensor's, the sum's), so their sizes read back. Attribute values are
// written in TF's AttrValue form with plain (not base64) strings, as
// read_graph_def reads them. Read back, the accumulator's updates count as
// tensors of their own (TF knows they are references from its op registry;
// the adapter only from ref_inputs/ref_outputs, which TF would refuse on
// these ops), so the GraphDef's memory reads a little high there; the
// memopt-graph/1 output is exact.

#include <tf_like/graph_def.hpp>

#include <memopt/io/graph_file.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>

#include <nlohmann/json.hpp>

#include <boost/graph/topological_sort.hpp>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tf_like {

/// How to_file_graph counts a GraphDef's memory.
enum class memory_model {
  /// memopt's (the default): a forwarding op's output (Identity, Reshape, ...)
  /// is a view of its input and a reference output shares its reference
  /// input's storage, as read_graph_def declares them.
  storage_aware,
  /// TF's cost model, as the memory optimizer sees the graph: every output its
  /// own buffer (no views), constants and variables persistent, and the
  /// references TF's op signatures declare marked (tf_cost_model_marks).
  tf_cost_model,
};

struct file_graph_options {
  memory_model memory = memory_model::storage_aware;
};

namespace detail {

/// Data inputs and outputs TF types as references (`Ref(T)` in the op's
/// signature), for the ops that have them: variables, assignments, scatters,
/// the training Apply ops and the Ref* control-flow ops. TF reads this from
/// its op registry; the adapter has only this table, and the GraphDef's own
/// ref_inputs/ref_outputs marks for other ops.
struct reference_signature {
  std::vector<std::size_t> inputs;
  std::vector<std::size_t> outputs;
  bool all_inputs = false;  ///< every data input (RefMerge)
};

inline const reference_signature* reference_signature_of(const std::string& op) {
  static const std::map<std::string, reference_signature, std::less<>> table = [] {
    std::map<std::string, reference_signature, std::less<>> t;
    for (const char* o : {"Variable", "VariableV2", "TemporaryVariable"}) t[o] = {{}, {0}};
    for (const char* o : {"Assign", "AssignAdd", "AssignSub", "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv",
                          "ScatterMin", "ScatterMax", "ScatterUpdate", "ScatterNdAdd", "ScatterNdSub",
                          "ScatterNdUpdate", "ApplyGradientDescent", "RefIdentity", "RefEnter", "RefExit",
                          "RefNextIteration"}) {
      t[o] = {{0}, {0}};
    }
    for (const char* o : {"CountUpTo", "IsVariableInitialized", "DestroyTemporaryVariable"}) t[o] = {{0}, {}};
    for (const char* o : {"ApplyMomentum", "ApplyAdagrad"}) t[o] = {{0, 1}, {0}};
    for (const char* o : {"ApplyAdam", "ApplyRMSProp", "ApplyAdadelta", "ApplyFtrl"}) t[o] = {{0, 1, 2}, {0}};
    t["RefSwitch"] = {{0}, {0, 1}};
    t["RefMerge"] = {{}, {0}, true};
    return t;
  }();
  const auto it = table.find(op);
  return it == table.end() ? nullptr : &it->second;
}

/// Ops whose outputs live for the whole run in TF's cost model (grappler's
/// IsPersistent: constants and variables).
inline bool tf_persistent(const std::string& op) {
  static const std::vector<std::string> ops = {"Const",          "HostConst",   "Variable",      "VariableV2",
                                               "AutoReloadVariable", "VarHandleOp", "ReadVariableOp"};
  return std::ranges::find(ops, op) != ops.end();
}

/// Appends `index` to the index list attrs[key] unless it is there.
inline void add_index(nlohmann::json& attrs, const char* key, std::size_t index) {
  auto& list = attrs[key];
  if (!list.is_array()) list = nlohmann::json::array();
  if (std::ranges::find(list, nlohmann::json(index)) == list.end()) list.push_back(index);
}

inline bool has_index(const nlohmann::json& attrs, const char* key, std::size_t index) {
  const auto it = attrs.find(key);
  return it != attrs.end() && it->is_array() && std::ranges::find(*it, nlohmann::json(index)) != it->end();
}

/// The marks of memory_model::tf_cost_model on `file`, read from g: no
/// views; persistent constants and variables; the reference inputs and
/// outputs of reference_signature_of; and, as the memory optimizer decides
/// whether a tensor may go to the host, an Identity or Reshape on its input's
/// device forwards that input, so its output is marked a reference when the
/// input is persistent or a reference (an Identity of a variable hands on the
/// variable's buffer). Throws format_error when g and file differ in size.
inline void tf_cost_model_marks(const graph& g, memopt::io::file_graph& file) {
  if (num_vertices(g) != num_vertices(file)) {
    throw format_error("", "the TF cost model's marks need the GraphDef's " + std::to_string(num_vertices(g)) +
                               " nodes, the graph has " + std::to_string(num_vertices(file)));
  }
  const auto data_inputs = [&g](std::size_t v) {
    std::vector<std::pair<std::size_t, std::size_t>> in;  // (producer, port) in operand order
    for (const auto e : boost::make_iterator_range(in_edges(v, g))) {
      if (!g[e].control) in.emplace_back(source(e, g), g[e].port);
    }
    return in;
  };
  std::vector<std::size_t> order;  // reverse topological
  boost::topological_sort(g, std::back_inserter(order));
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t v = *it;
    auto& n = file[v];
    if (!n.attrs.is_object()) n.attrs = nlohmann::json::object();
    for (auto& out : n.outputs) out.shares.reset();
    if (tf_persistent(n.op)) n.persistent = true;
    const auto in = data_inputs(v);
    if (const auto* signature = reference_signature_of(n.op)) {
      for (std::size_t k = 0; k < in.size(); ++k) {
        if (signature->all_inputs || std::ranges::count(signature->inputs, k) > 0) add_index(n.attrs, "ref_inputs", k);
      }
      for (const std::size_t port : signature->outputs) {
        if (port < n.outputs.size()) add_index(n.attrs, "ref_outputs", port);
      }
    }
    if ((n.op == "Identity" || n.op == "Reshape") && !in.empty() && !n.outputs.empty()) {
      const auto [u, port] = in.front();
      if (file[u].device == n.device && (file[u].persistent || has_index(file[u].attrs, "ref_outputs", port))) {
        add_index(n.attrs, "ref_outputs", 0);
      }
    }
  }
}

}  // namespace detail

/// g, read from the GraphDef `doc`, as a memopt-graph/1 graph with the marks
/// above; `options` say how its memory is counted. Throws format_error when
/// doc does not hold g's nodes.
[[nodiscard]] inline memopt::io::file_graph to_file_graph(const graph& g, const nlohmann::json& doc,
                                                          const file_graph_options& options = {}) {
  if (!doc.is_object() || !doc.contains("node") || !doc["node"].is_array() || doc["node"].size() != num_vertices(g)) {
    throw memopt::io::format_error("", "to_file_graph needs the GraphDef the graph was read from (" +
                                           std::to_string(num_vertices(g)) + " nodes)");
  }
  memopt::io::file_graph file;
  file[boost::graph_bundle] = {.name = g[boost::graph_bundle], .source = "GraphDef"};
  const auto& nodes = doc["node"];
  for (std::size_t v = 0; v < num_vertices(g); ++v) {
    memopt::io::file_node n;
    static_cast<memopt::tensor_node&>(n) = g[v];
    n.name = g[v].name;
    n.op = g[v].op;
    n.device = g[v].device;
    n.attrs = nlohmann::json::object();
    const auto attrs = nodes[v].value("attr", nlohmann::json::object());
    if (attrs.contains("_recompute_hint")) n.attrs["recompute_hint"] = true;
    if (const auto swaps = detail::index_list(attrs, "_swap_to_host", n.name); !swaps.empty()) n.attrs["swap_to_host"] = swaps;
    if (!g[v].reference_outputs.empty()) n.attrs["ref_outputs"] = g[v].reference_outputs;
    std::vector<std::size_t> reference_inputs;
    std::size_t operand = 0;
    for (const auto e : boost::make_iterator_range(in_edges(v, g))) {
      if (g[e].control) continue;
      if (g[e].reference) reference_inputs.push_back(operand);
      ++operand;
    }
    if (!reference_inputs.empty()) n.attrs["ref_inputs"] = reference_inputs;
    file[add_vertex(file)] = std::move(n);
  }
  for (const auto e : boost::make_iterator_range(edges(g))) {
    add_edge(source(e, g), target(e, g), static_cast<const memopt::tensor_edge&>(g[e]), file);
  }
  if (options.memory == memory_model::tf_cost_model) detail::tf_cost_model_marks(g, file);
  return file;
}

namespace detail {

/// A plan's node names and what the GraphDef writer needs to know of them.
class plan_names {
 public:
  plan_names(const memopt::rewrite::graph_facts& f, const memopt::rewrite::rewrite_plan& p) : f_(f), p_(p) {
    using memopt::rewrite::node_role;
    for (const auto& r : p.redirects) note_reader(r.source, f.name[r.vertex], r.operand);
    for (const auto& node : p.nodes) {
      for (std::size_t k = 0; k < node.inputs.size(); ++k) note_reader(node.inputs[k], node.name, k);
    }
    for (const auto& c : p.changes) {  // the accumulation of sum c.vertex
      if (c.inputs.empty() || !c.inputs[0].node.added) continue;
      const std::size_t accumulator = c.inputs[0].node.index;
      sum_of_[accumulator] = c.vertex;
      for (const auto& t : p.nodes[accumulator].inputs) {
        if (t.node.added) sum_of_[t.node.index] = c.vertex;
      }
      for (std::size_t a = 0; a < p.nodes.size(); ++a) {
        const auto& node = p.nodes[a];
        if (node.role == node_role::accumulate && !node.inputs.empty() && node.inputs[0].node == c.inputs[0].node) {
          sum_of_[a] = c.vertex;
        }
      }
    }
  }

  [[nodiscard]] const std::string& name(memopt::rewrite::node_ref r) const {
    return r.added ? p_.nodes[r.index].name : f_.name[r.index];
  }
  /// TF's name of a tensor: "x" for port 0, else "x:port".
  [[nodiscard]] std::string tensor(memopt::rewrite::tensor_ref t) const {
    return t.port == 0 ? name(t.node) : name(t.node) + ":" + std::to_string(t.port);
  }
  /// The swap class of added node a: "loc@<node>_<input>" of the input its pair feeds.
  [[nodiscard]] std::optional<std::string> swap_class(std::size_t a) const {
    using memopt::rewrite::node_role;
    const auto& node = p_.nodes[a];
    if (node.role == node_role::swap_out) {
      for (std::size_t b = 0; b < p_.nodes.size(); ++b) {
        const auto& in = p_.nodes[b];
        if (in.role == node_role::swap_in && !in.inputs.empty() && in.inputs[0].node == memopt::rewrite::added(a)) return swap_class(b);
      }
    }
    const auto it = first_reader_.find(a);
    if (node.role != node_role::swap_in || it == first_reader_.end()) return std::nullopt;
    return "loc@" + it->second.first + "_" + std::to_string(it->second.second);
  }
  /// The sum an accumulation node serves.
  [[nodiscard]] std::optional<std::size_t> sum_of(std::size_t a) const {
    const auto it = sum_of_.find(a);
    return it == sum_of_.end() ? std::nullopt : std::optional(it->second);
  }

 private:
  void note_reader(memopt::rewrite::tensor_ref t, const std::string& reader, std::size_t operand) {
    if (t.node.added) first_reader_.try_emplace(t.node.index, reader, operand);
  }
  const memopt::rewrite::graph_facts& f_;
  const memopt::rewrite::rewrite_plan& p_;
  std::map<std::size_t, std::pair<std::string, std::size_t>> first_reader_;  // added node -> (reader, operand)
  std::map<std::size_t, std::size_t> sum_of_;
};

inline void add_class(nlohmann::json& node, const std::string& group) {
  auto& list = node["attr"]["_class"]["list"]["s"];
  if (!list.is_array()) list = nlohmann::json::array();
  list.push_back(group);
}

}  // namespace detail

/// The GraphDef `p` makes of `doc` (see the header comment); f is what
/// read_facts read of doc's graph.
[[nodiscard]] inline nlohmann::json rewritten_graph_def(const nlohmann::json& doc, const memopt::rewrite::graph_facts& f,
                                                        const memopt::rewrite::rewrite_plan& p) {
  using memopt::rewrite::node_role;
  const detail::plan_names names(f, p);
  const auto& nodes = doc["node"];
  std::map<std::pair<std::size_t, std::size_t>, memopt::rewrite::tensor_ref> redirect;
  for (const auto& r : p.redirects) redirect[{r.vertex, r.operand}] = r.source;
  std::map<std::size_t, std::vector<std::string>> more_control;
  for (const auto& c : p.controls) {
    if (!c.to.added) more_control[c.to.index].push_back("^" + names.name(c.from));
  }
  std::map<std::size_t, const memopt::rewrite::node_change*> change;
  for (const auto& c : p.changes) change[c.vertex] = &c;
  const auto attr_of = [&](std::size_t v, const char* key) -> std::optional<nlohmann::json> {
    const auto attrs = nodes[v].value("attr", nlohmann::json::object());
    const auto it = attrs.find(key);
    return it == attrs.end() ? std::nullopt : std::optional(*it);
  };
  // The shape of original tensor (v, port) as _output_shapes holds it, or null.
  const auto shape_of = [&](std::size_t v, std::size_t port) {
    const auto shapes = attr_of(v, "_output_shapes");
    if (!shapes || !shapes->contains("list")) return nlohmann::json();
    const auto list = (*shapes)["list"].value("shape", nlohmann::json::array());
    return port < list.size() ? list[port] : nlohmann::json();
  };
  const auto inputs_of = [&](const std::vector<memopt::rewrite::tensor_ref>& data,
                             const std::vector<memopt::rewrite::node_ref>& control) {
    nlohmann::json in = nlohmann::json::array();
    for (const auto& t : data) in.push_back(names.tensor(t));
    for (const auto& c : control) in.push_back("^" + names.name(c));
    return in;
  };

  nlohmann::json out = doc;
  auto& written = out["node"] = nlohmann::json::array();
  for (std::size_t v = 0; v < nodes.size(); ++v) {
    nlohmann::json node = nodes[v];
    if (const auto it = change.find(v); it != change.end()) {
      const auto& c = *it->second;
      node["op"] = c.op;
      node["input"] = inputs_of(c.inputs, c.control);
      node["attr"] = nlohmann::json::object();
      if (const auto type = attr_of(v, "T")) node["attr"]["T"] = *type;
      if (!c.inputs.empty() && c.inputs[0].node.added && !p.nodes[c.inputs[0].node.index].inputs.empty()) {
        node["attr"]["var_name"] = {{"s", names.name(p.nodes[c.inputs[0].node.index].inputs[0].node)}};
      }
    } else {
      nlohmann::json in = nlohmann::json::array();
      std::size_t operand = 0;
      for (const auto& input : node.value("input", nlohmann::json::array())) {
        if (input.get<std::string>().starts_with("^")) {
          in.push_back(input);
          continue;
        }
        const auto r = redirect.find({v, operand});
        in.push_back(r == redirect.end() ? input : nlohmann::json(names.tensor(r->second)));
        if (r != redirect.end() && r->second.node.added) {
          if (const auto group = names.swap_class(r->second.node.index)) detail::add_class(node, *group);
        }
        ++operand;
      }
      for (const auto& c : more_control[v]) in.push_back(c);
      node["input"] = std::move(in);
    }
    written.push_back(std::move(node));
  }
  for (std::size_t a = 0; a < p.nodes.size(); ++a) {
    const auto& added = p.nodes[a];
    nlohmann::json node{{"name", added.name}, {"op", added.op}};
    if (!added.device.empty()) node["device"] = added.device;
    node["input"] = inputs_of(added.inputs, added.control);
    node["attr"] = nlohmann::json::object();
    auto& attr = node["attr"];
    if (added.copy_of) attr = nodes[*added.copy_of].value("attr", nlohmann::json::object());
    nlohmann::json shape;
    if (const auto group = names.swap_class(a)) {
      detail::add_class(node, *group);
      const auto& t = added.role == node_role::swap_out ? added.inputs[0] : p.nodes[added.inputs[0].node.index].inputs[0];
      if (!t.node.added) {
        if (const auto type = attr_of(t.node.index, "T")) attr["T"] = *type;
        shape = shape_of(t.node.index, t.port);
      }
    }
    if (const auto sum = names.sum_of(a)) {
      const auto type = attr_of(*sum, "T").value_or(nlohmann::json());
      shape = shape_of(*sum, 0);
      if (added.op == "TemporaryVariable") {
        if (!type.is_null()) attr["dtype"] = type;
        if (!shape.is_null()) attr["shape"] = {{"shape", shape}};
        attr["var_name"] = {{"s", added.name}};
      } else if (!type.is_null()) {
        attr["T"] = type;
      }
      if (added.role == node_role::accumulator) {
        attr["use_locking"] = {{"b", false}};
        attr["validate_shape"] = {{"b", false}};
      }
      if (added.role == node_role::accumulate) attr["use_locking"] = {{"b", true}};
    }
    if (!shape.is_null()) attr["_output_shapes"] = {{"list", {{"shape", nlohmann::json::array({shape})}}}};
    if (attr.empty()) node.erase("attr");
    written.push_back(std::move(node));
  }
  for (const auto& r : p.relaxed_allocation) {
    auto& node = written[r.added ? nodes.size() + r.index : r.index];
    node["attr"]["_grappler_relax_allocator_constraints"] = {{"b", true}};
  }
  return out;
}

}  // namespace tf_like
