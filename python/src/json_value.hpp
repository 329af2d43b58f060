#pragma once
// Python values <-> JSON (nlohmann::ordered_json): None, bool, int, float,
// str, dict with str keys, list and tuple. Results reach Python as dicts (in
// the JSON's field order) and lists; a value JSON has no form for is a
// TypeError naming where it was found.

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace memopt::python {

namespace py = pybind11;

/// The Python value of a JSON value.
inline py::object to_python(const nlohmann::ordered_json& j) {
  using kind = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case kind::boolean: return py::bool_(j.get<bool>());
    case kind::number_integer: return py::int_(j.get<std::int64_t>());
    case kind::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case kind::number_float: return py::float_(j.get<double>());
    case kind::string: return py::str(j.get_ref<const std::string&>());
    case kind::array: {
      py::list list(j.size());
      for (std::size_t k = 0; k < j.size(); ++k) list[k] = to_python(j[k]);
      return list;
    }
    case kind::object: {
      py::dict dict;
      for (const auto& [key, value] : j.items()) dict[py::str(key)] = to_python(value);
      return dict;
    }
    default: return py::none();  // null, and the discarded and binary values memopt never makes
  }
}

/// The JSON value of a Python value; `where` names it in the TypeError of a value JSON cannot hold.
inline nlohmann::ordered_json to_json(py::handle value, const std::string& where) {
  if (value.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) {
    int overflow = 0;
    const long long small = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    // As nlohmann's parser stores them: the reader takes a signed integer for a negative one.
    if (overflow == 0) return small < 0 ? nlohmann::ordered_json(small) : nlohmann::ordered_json(static_cast<std::uint64_t>(small));
    if (overflow > 0) {
      const unsigned long long large = PyLong_AsUnsignedLongLong(value.ptr());
      if (!PyErr_Occurred()) return static_cast<std::uint64_t>(large);
      PyErr_Clear();
    }
    throw py::type_error(where + " is " + py::str(value).cast<std::string>() + ", which does not fit 64 bits");
  }
  if (py::isinstance<py::float_>(value)) {
    const double d = value.cast<double>();
    if (!std::isfinite(d)) throw py::type_error(where + " is " + py::str(value).cast<std::string>() + ", which JSON cannot hold");
    return d;
  }
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::dict>(value)) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const auto& [key, item] : value.cast<py::dict>()) {
      if (!py::isinstance<py::str>(key)) {
        throw py::type_error(where + " has the key " + py::repr(key).cast<std::string>() + ": JSON keys are strings");
      }
      const auto name = key.cast<std::string>();
      object[name] = to_json(item, where + "." + name);
    }
    return object;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    nlohmann::ordered_json array = nlohmann::ordered_json::array();
    std::size_t k = 0;
    for (const auto item : value) array.push_back(to_json(item, where + "[" + std::to_string(k++) + "]"));
    return array;
  }
  throw py::type_error(where + " is a " + std::string(Py_TYPE(value.ptr())->tp_name) + ", which JSON has no form for");
}

}  // namespace memopt::python
