#pragma once
// The parts of the extension _memopt, one translation unit each so that they
// compile in parallel: the graph, peak, sharing and simulation (module.cpp);
// schedules and arenas (searches.cpp); rewrites and rematerialisation
// (rewrites.cpp). Every function takes a memopt.Graph and returns the dict of
// the memopt-plan subcommand's JSON; python/memopt/__init__.py wraps them.

#include "graph_document.hpp"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memopt::python {

namespace py = pybind11;

void bind_searches(py::module_& m);
void bind_rewrites(py::module_& m);

/// An UnknownAlgorithmError unless `name` is one of `known` (`what` says of what).
void check_name(const std::string& what, const std::string& name, const std::vector<std::string>& known);

/// Node names to vertices, as memopt-plan reads --order; an unknown name is an
/// Error naming it; `names` absent: the graph's own order.
std::vector<std::size_t> order_named(const io::file_graph& g, const std::optional<std::vector<std::string>>& names);

}  // namespace memopt::python
