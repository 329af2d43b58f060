// The extension _memopt: memopt.Graph, reading graphs, errors, and the
// families that need no search (peak, sharing, simulation). The package
// memopt (python/memopt/) wraps its results.

#include "bindings.hpp"
#include "json_value.hpp"
#include "released.hpp"

#include <plan/convert.hpp>
#include <plan/peak.hpp>
#include <plan/share.hpp>
#include <plan/simulate.hpp>

#include <pybind11/stl.h>

#include <algorithm>
#include <map>

namespace memopt::python {

namespace {

/// "node:port" as the format writes it; a bare node name means its port 0.
std::string tensor_ref(const std::string& text) {
  const auto colon = text.rfind(':');
  const bool has_port = colon != std::string::npos && colon + 1 < text.size() &&
                        text.find_first_not_of("0123456789", colon + 1) == std::string::npos;
  return has_port ? text : text + ":0";
}

void add_node(graph_document& d, const std::string& name, const std::string& op, const py::object& outputs,
              const std::vector<std::string>& inputs, const std::vector<std::string>& control, bool persistent,
              std::optional<double> flops, const py::object& scratch_bytes, const std::string& device,
              const py::object& attrs) {
  const std::string where = "node '" + name + "'";
  nlohmann::ordered_json node{{"name", name}};
  if (!op.empty()) node["op"] = op;
  if (!inputs.empty()) {
    auto& refs = node["inputs"] = nlohmann::ordered_json::array();
    for (const auto& input : inputs) refs.push_back(tensor_ref(input));
  }
  if (!control.empty()) node["control"] = control;
  node["outputs"] = to_json(outputs, where + " outputs");
  if (persistent) node["persistent"] = true;
  if (flops) node["flops"] = *flops;
  if (!scratch_bytes.is_none()) node["scratch_bytes"] = to_json(scratch_bytes, where + " scratch_bytes");
  if (!device.empty()) node["device"] = device;
  if (!attrs.is_none()) node["attrs"] = to_json(attrs, where + " attrs");
  d.edit()["nodes"].push_back(std::move(node));
}

/// Graph.from_json: a memopt-graph/1 document as a dict, or its text; checked now.
graph_document from_json(const py::object& doc) {
  graph_document d(py::isinstance<py::str>(doc) ? [&] {
    try {
      return io::parse_document<nlohmann::ordered_json>(doc.cast<std::string>());
    } catch (const io::format_error& e) {
      throw python_error(error_kind::format, std::string("graph: ") + e.what());
    }
  }() : to_json(doc, "the document"), "");
  static_cast<void>(d.graph(true));
  return d;
}

/// memopt.read_graph: a memopt-graph/1 file, or an ONNX model with `dims` its
/// dynamic dimensions; errors as memopt-plan words them.
graph_document read_graph(const std::string& path, const std::map<std::string, std::int64_t>& dims) {
  plan::graph_argument arg{.path = path};
  for (const auto& [name, size] : dims) {
    if (size < 1) throw python_error(error_kind::general, "dims: '" + name + "' is " + std::to_string(size) + ", not a size from 1");
    arg.dims.push_back(name + "=" + std::to_string(size));
  }
  auto doc = [&] {
    if (plan::is_onnx(arg)) {
      try {
        return plan::onnx_document(arg);
      } catch (const plan::cli_error& e) {
        throw python_error(error_kind::format, e.what());
      }
    }
    if (!dims.empty()) throw python_error(error_kind::general, "dims apply to ONNX models only, and " + path + " is not one");
    plan::check_memory_for(path);
    try {
      return io::parse_document<nlohmann::ordered_json>(io::detail::read_file(path));
    } catch (const io::format_error& e) {
      throw python_error(error_kind::format, path + ": " + e.what());
    }
  }();
  graph_document d(std::move(doc), path);
  static_cast<void>(d.graph(true));
  return d;
}

py::object peak(graph_document& d, const std::optional<std::vector<std::string>>& order, bool timeline, bool alias) {
  std::atomic<bool> stop{false};
  return to_python(run_on_graph(d.graph(alias), d.label(), stop, on_interrupt::raise, [&](const io::file_graph& g) {
    return plan::peak_json(g, order_named(g, order), timeline);
  }));
}

py::object share(graph_document& d, const std::string& algo, const std::optional<std::vector<std::string>>& order,
               const std::string& policy, bool alias, std::optional<std::size_t> exact_precedence_vertices,
               std::optional<std::size_t> exact_block_vertices) {
  share_options options;
  if (exact_precedence_vertices) options.exact_precedence_vertices = *exact_precedence_vertices;
  if (exact_block_vertices) options.exact_block_vertices = *exact_block_vertices;
  std::atomic<bool> stop{false};
  return to_python(run_on_graph(d.graph(alias), d.label(), stop, on_interrupt::raise, [&](const io::file_graph& g) {
    return plan::share_json(g, order_named(g, order), algo, policy, options);
  }));
}

py::object simulate(graph_document& d, const py::object& config, const std::string& policy, bool arena, bool alias) {
  check_name("simulation policy", policy, plan::simulation_policy_names());
  const auto c = config.is_none() ? plan::simulation_config{}
                                  : plan::parse_simulation_config(nlohmann::json(to_json(config, "config")), "config");
  std::atomic<bool> stop{false};
  return to_python(run_on_graph(d.graph(alias), d.label(), stop, on_interrupt::raise, [&](const io::file_graph& g) {
    return plan::simulation_json(g, plan::run_simulation(g, c, policy, "", d.label()), c, arena);
  }));
}

void bind_graph(py::module_& m) {
  py::class_<graph_document>(m, "Graph", R"(A computation graph in memopt-graph/1 terms (docs/graph-format.md).

Graph(name="") is empty; add_node and add_output build it in program order.
The graph is checked (names, ports, cycles) when an algorithm first runs on
it, and kept built until it changes.)")
      .def(py::init<const std::string&>(), py::arg("name") = "")
      .def("add_node", &add_node, py::arg("name"), py::kw_only(), py::arg("op") = "",
           py::arg("outputs") = py::list(), py::arg("inputs") = std::vector<std::string>{},
           py::arg("control") = std::vector<std::string>{}, py::arg("persistent") = false,
           py::arg("flops") = std::nullopt, py::arg("scratch_bytes") = py::none(), py::arg("device") = "",
           py::arg("attrs") = py::none(),
           R"(Adds a node after the others. outputs: the byte size of each output port;
inputs: data inputs "node:port" in operand order ("node" alone is port 0);
control: names of control predecessors; persistent: weights and constants;
flops, scratch_bytes, device, attrs: as in the format (attrs.alias and attrs.inplace for views
and in-place results).)")
      .def("add_output", [](graph_document& d, const std::string& tensor) {
             d.edit()["outputs"].push_back(tensor_ref(tensor));
           }, py::arg("tensor"), "Marks a tensor (\"node:port\", or \"node\" for port 0) as a graph output, live to the end.")
      .def("__len__", [](const graph_document& d) { return d.document()["nodes"].size(); })
      .def_property_readonly("name", [](const graph_document& d) { return to_python(d.document()["name"]); },
                             "The graph's name.")
      .def_property_readonly("nodes", [](const graph_document& d) {
             const auto& nodes = d.document()["nodes"];
             py::list names(nodes.size());
             for (std::size_t k = 0; k < nodes.size(); ++k) names[k] = to_python(nodes[k]["name"]);
             return names;
           }, "Node names in program order.")
      .def("to_json", [](const graph_document& d) { return to_python(d.document()); },
           "The memopt-graph/1 document, as a dict.")
      .def_static("from_json", &from_json, py::arg("document"),
                  "A graph from a memopt-graph/1 document (a dict, or its JSON text); FormatError if it is not one.")
      .def("write", [](const graph_document& d, const std::string& path) {
             plan::write_text(path, plan::graph_text(d.document()));
           }, py::arg("path"), "Writes the graph as memopt-graph/1, one node a line; gzipped when path ends in .gz.")
      .def("__repr__", [](const graph_document& d) {
        const auto& doc = d.document();
        return "<memopt.Graph " + doc["name"].dump() + ", " + std::to_string(doc["nodes"].size()) + " nodes>";
      })
      .attr("__module__") = "memopt";

  m.def("read_graph", &read_graph, py::arg("path"), py::arg("dims") = std::map<std::string, std::int64_t>{});
  m.def("peak", &peak, py::arg("graph"), py::arg("order"), py::arg("timeline"), py::arg("alias"));
  m.def("share", &share, py::arg("graph"), py::arg("algo"), py::arg("order"), py::arg("policy"), py::arg("alias"),
        py::arg("exact_precedence_vertices"), py::arg("exact_block_vertices"));
  m.def("simulate", &simulate, py::arg("graph"), py::arg("config"), py::arg("policy"), py::arg("arena"), py::arg("alias"));
}

}  // namespace

void check_name(const std::string& what, const std::string& name, const std::vector<std::string>& known) {
  if (std::ranges::find(known, name) == known.end()) {
    throw python_error(error_kind::unknown_algorithm, "unknown " + what + " '" + name + "'; known: " + plan::joined(known, " "));
  }
}

std::vector<std::size_t> order_named(const io::file_graph& g, const std::optional<std::vector<std::string>>& names) {
  if (!names) return program_order(g);
  return plan::vertices_named(g, *names, "the order");
}

void register_errors(py::module_& m) {
  static py::exception<python_error> base(m, "Error", PyExc_Exception);
  static py::exception<python_error> format(m, "FormatError", base.ptr());
  static py::exception<python_error> order(m, "OrderError", base.ptr());
  static py::exception<python_error> unknown(m, "UnknownAlgorithmError", base.ptr());
  for (const auto* type : {&base, &format, &order, &unknown}) type->attr("__module__") = "memopt";
  py::register_exception_translator([](std::exception_ptr p) {
    const auto raise = [](error_kind kind, const char* what) {
      const auto& type = kind == error_kind::format              ? format
                         : kind == error_kind::order             ? order
                         : kind == error_kind::unknown_algorithm ? unknown
                                                                 : base;
      PyErr_SetString(type.ptr(), what);
    };
    try {
      if (p) std::rethrow_exception(p);
    } catch (const python_error& e) {
      raise(e.kind, e.what());
    } catch (const plan::cli_error& e) {
      raise(error_kind::general, e.what());
    } catch (const error& e) {
      raise(kind_of(e), e.what());
    }
  });
}

}  // namespace memopt::python

PYBIND11_MODULE(_memopt, m) {
  m.doc() = "memopt's library from Python: use the package memopt, which wraps this module's results.";
  memopt::python::register_errors(m);
  memopt::python::bind_graph(m);
  memopt::python::bind_searches(m);
  memopt::python::bind_rewrites(m);
}
