#pragma once
// memopt's errors as Python exceptions: memopt.Error (a subclass of
// Exception) and its kinds FormatError (a graph document or file that is not
// memopt-graph/1), OrderError (an order that is not a topological order of
// the graph) and UnknownAlgorithmError. Each carries the message memopt-plan
// prints after "memopt-plan: ", nodes named by their names.

#include <memopt/error.hpp>
#include <memopt/io/graph_file.hpp>

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

namespace memopt::python {

namespace py = pybind11;

enum class error_kind { general, format, order, unknown_algorithm };

/// A fault of the caller's input, worded for them, on its way to Python as the exception of its kind.
class python_error : public std::runtime_error {
 public:
  python_error(error_kind of_kind, const std::string& message) : std::runtime_error(message), kind(of_kind) {}
  error_kind kind;
};

/// The kind of the Python exception memopt's error `e` becomes.
inline error_kind kind_of(const error& e) {
  if (dynamic_cast<const io::format_error*>(&e) != nullptr) return error_kind::format;
  if (dynamic_cast<const not_topological_error*>(&e) != nullptr) return error_kind::order;
  if (dynamic_cast<const unknown_algorithm_error*>(&e) != nullptr) return error_kind::unknown_algorithm;
  return error_kind::general;
}

/// Adds the exception classes to module m and translates python_error, and
/// memopt's errors that reach Python without naming their nodes, into them.
void register_errors(py::module_& m);

}  // namespace memopt::python
