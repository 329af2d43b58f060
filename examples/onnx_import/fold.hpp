#pragma once
// Constant evaluation of the small integer tensors of an ONNX model's shape
// arithmetic (Shape -> Gather -> Concat -> Reshape, Slice bounds from Div,
// Range, ConstantOfShape, Where, Transpose ...), where ONNX 1.12's shape inference
// stops: fold_node computes a node's outputs from its inputs' values and
// shapes. Integer and bool tensors of at most max_folded_elements elements
// are folded; anything else (floats, unknown inputs, other ops) is not.
// Arithmetic that overflows or divides by zero, indices out of range and
// shapes that do not fit are format_errors naming the node.

#include "ops.hpp"

#include <memopt/io/graph_file.hpp>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace onnx_import {

/// An integer or bool tensor whose value the importer knows.
struct constant_tensor {
  std::int32_t element = onnx::TensorProto::INT64;  ///< TensorProto data type
  shape dims;
  std::vector<std::int64_t> values;  ///< row-major, bools as 0 and 1
};

/// Folded tensors are at most this large: shapes and indices, not data.
inline constexpr std::size_t max_folded_elements = 1 << 16;

namespace detail {

using memopt::io::format_error;

/// Bytes per element of an ONNX TensorProto data type; 0 when it has no fixed size.
[[nodiscard]] inline std::uint64_t element_bytes(std::int32_t type) {
  using T = onnx::TensorProto;
  switch (type) {
    case T::BOOL: case T::INT8: case T::UINT8: return 1;
    case T::INT16: case T::UINT16: case T::FLOAT16: case T::BFLOAT16: return 2;
    case T::INT32: case T::UINT32: case T::FLOAT: return 4;
    case T::INT64: case T::UINT64: case T::DOUBLE: case T::COMPLEX64: return 8;
    case T::COMPLEX128: return 16;
    default: return 0;  // UNDEFINED, STRING
  }
}

[[nodiscard]] inline bool is_foldable_type(std::int32_t type) {
  using T = onnx::TensorProto;
  return type == T::INT64 || type == T::INT32 || type == T::INT16 || type == T::INT8 || type == T::UINT32 ||
         type == T::UINT16 || type == T::UINT8 || type == T::BOOL;
}

/// The element count of `dims` if it is at most max_folded_elements.
[[nodiscard]] inline std::optional<std::size_t> foldable_count(const shape& dims) {
  std::size_t n = 1;
  for (const std::int64_t d : dims) {
    if (d < 0 || (d > 0 && n > max_folded_elements / static_cast<std::size_t>(d))) return std::nullopt;
    n *= static_cast<std::size_t>(d);
  }
  if (n > max_folded_elements) return std::nullopt;
  return n;
}

/// `v` as an element of `type`: C++20 conversions wrap, bool is v != 0.
[[nodiscard]] inline std::int64_t convert_to(std::int32_t type, std::int64_t v) {
  using T = onnx::TensorProto;
  switch (type) {
    case T::BOOL: return v != 0;
    case T::INT8: return static_cast<std::int8_t>(v);
    case T::UINT8: return static_cast<std::uint8_t>(v);
    case T::INT16: return static_cast<std::int16_t>(v);
    case T::UINT16: return static_cast<std::uint16_t>(v);
    case T::INT32: return static_cast<std::int32_t>(v);
    case T::UINT32: return static_cast<std::uint32_t>(v);
    default: return v;
  }
}

/// The value of a tensor stored in the model, if it is foldable and not external.
/// A data field whose length does not match the dims is refused.
[[nodiscard]] inline std::optional<constant_tensor> tensor_value(const onnx::TensorProto& t, const std::string& where) {
  if (!is_foldable_type(t.data_type()) || t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  constant_tensor c{.element = t.data_type(), .dims = {t.dims().begin(), t.dims().end()}, .values = {}};
  const auto count = foldable_count(c.dims);
  if (!count) return std::nullopt;
  const auto mismatch = [&](std::size_t got) {
    return format_error(where, "tensor '" + t.name() + "' holds " + std::to_string(got) + " values where its dims say " +
                                   std::to_string(*count));
  };
  if (t.has_raw_data()) {
    const std::size_t width = element_bytes(t.data_type());
    if (t.raw_data().size() != *count * width) throw mismatch(t.raw_data().size() / width);
    for (std::size_t i = 0; i < *count; ++i) {
      std::uint64_t bits = 0;  // little-endian, as ONNX stores raw data
      std::memcpy(&bits, t.raw_data().data() + i * width, width);
      c.values.push_back(convert_to(t.data_type(), static_cast<std::int64_t>(bits)));
    }
    return c;
  }
  if (t.data_type() == onnx::TensorProto::INT64) {
    c.values.assign(t.int64_data().begin(), t.int64_data().end());
  } else if (t.data_type() == onnx::TensorProto::UINT32) {
    for (const std::uint64_t v : t.uint64_data()) c.values.push_back(convert_to(t.data_type(), static_cast<std::int64_t>(v)));
  } else {
    for (const std::int32_t v : t.int32_data()) c.values.push_back(convert_to(t.data_type(), v));
  }
  if (c.values.size() != *count) throw mismatch(c.values.size());
  return c;
}

/// `value` as a TensorProto named `name`, in the data field ONNX reads for its type.
[[nodiscard]] inline onnx::TensorProto tensor_proto(const std::string& name, const constant_tensor& value) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(value.element);
  for (const std::int64_t d : value.dims) t.add_dims(d);
  for (const std::int64_t v : value.values) {
    if (value.element == onnx::TensorProto::INT64) t.add_int64_data(v);
    else if (value.element == onnx::TensorProto::UINT32) t.add_uint64_data(static_cast<std::uint64_t>(v));
    else t.add_int32_data(static_cast<std::int32_t>(v));
  }
  return t;
}

/// Row-major strides of `dims`.
[[nodiscard]] inline std::vector<std::size_t> strides_of(const shape& dims) {
  std::vector<std::size_t> strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * static_cast<std::size_t>(dims[i]);
  return strides;
}

/// Evaluates one node; see fold_node.
class node_folder {
 public:
  using value_lookup = std::function<const constant_tensor*(const std::string&)>;
  using shape_lookup = std::function<const shape*(const std::string&)>;

  node_folder(const onnx::NodeProto& node, std::string where, value_lookup value, shape_lookup shape_of)
      : node_(node), where_(std::move(where)), value_(std::move(value)), shape_of_(std::move(shape_of)) {}

  std::optional<std::vector<constant_tensor>> run() {
    const std::string& op = node_.op_type();
    if (!node_.domain().empty() && node_.domain() != "ai.onnx") return std::nullopt;
    if (op == "Constant") return one(constant());
    if (op == "Shape") return one(shape_value());
    if (op == "Size") return one(size_value());
    for (int i = 0; i < node_.input_size(); ++i) {
      if (!node_.input(i).empty() && value_(node_.input(i)) == nullptr) return std::nullopt;
    }
    if (op == "Identity") return one(*input(0));
    if (op == "Cast") return one(cast());
    if (op == "Gather") return one(gather());
    if (op == "Slice") return one(slice());
    if (op == "Concat") return one(concat());
    if (op == "Unsqueeze") return one(unsqueeze());
    if (op == "Squeeze") return one(squeeze());
    if (op == "Reshape") return one(reshape());
    if (op == "Expand") return one(broadcast_to(*input(0), int_list(1)));
    if (op == "Transpose") return one(transpose());
    if (op == "Range") return one(range());
    if (op == "ConstantOfShape") return one(constant_of_shape());
    if (op == "Where") return one(where());
    if (op == "Not") return one(map(*input(0), onnx::TensorProto::BOOL, [](std::int64_t v) { return v == 0; }));
    if (op == "Neg") return one(map(*input(0), input(0)->element, [this](std::int64_t v) { return checked(0, v, '-'); }));
    if (op == "Abs") return one(map(*input(0), input(0)->element, [this](std::int64_t v) { return v < 0 ? checked(0, v, '-') : v; }));
    if (op == "Min") return one(variadic([](std::int64_t a, std::int64_t b) { return std::min(a, b); }));
    if (op == "Max") return one(variadic([](std::int64_t a, std::int64_t b) { return std::max(a, b); }));
    if (const auto arithmetic = arithmetic_of(op)) return one(binary(input(0)->element, [&](std::int64_t a, std::int64_t b) {
      return checked(a, b, *arithmetic);
    }));
    if (const auto comparison = comparison_of(op)) return one(binary(onnx::TensorProto::BOOL, *comparison));
    return std::nullopt;
  }

 private:
  using result = std::optional<constant_tensor>;
  using binary_function = std::function<std::int64_t(std::int64_t, std::int64_t)>;

  const onnx::NodeProto& node_;
  std::string where_;
  value_lookup value_;
  shape_lookup shape_of_;

  static std::optional<std::vector<constant_tensor>> one(result r) {
    if (!r) return std::nullopt;
    return std::vector<constant_tensor>{std::move(*r)};
  }

  [[nodiscard]] format_error fault(const std::string& problem) const {
    return format_error(where_, "op '" + node_.op_type() + "' " + problem);
  }

  /// Input i's value; run() checked every given input has one.
  [[nodiscard]] const constant_tensor* input(int i) const {
    return i < node_.input_size() && !node_.input(i).empty() ? value_(node_.input(i)) : nullptr;
  }

  [[nodiscard]] const onnx::AttributeProto* attribute(const char* name) const {
    for (const auto& a : node_.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }

  [[nodiscard]] std::int64_t int_attribute(const char* name, std::int64_t otherwise) const {
    const auto* a = attribute(name);
    return a != nullptr ? a->i() : otherwise;
  }

  /// A 1-D (or scalar) integer operand i as a list.
  [[nodiscard]] std::vector<std::int64_t> int_list(int i) const {
    const auto* c = input(i);
    if (c == nullptr) throw fault("has no input " + std::to_string(i));
    if (c->dims.size() > 1) throw fault("input " + std::to_string(i) + " is not a list");
    return c->values;
  }

  /// Axes from input `i` when it is given (newer opsets), else from attribute "axes".
  [[nodiscard]] std::optional<std::vector<std::int64_t>> axes(int i) const {
    if (input(i) != nullptr) return int_list(i);
    if (const auto* a = attribute("axes")) return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
    return std::nullopt;
  }

  /// `axis` in [-rank, rank) as [0, rank).
  [[nodiscard]] std::size_t normalised_axis(std::int64_t axis, std::size_t rank) const {
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis >= r) throw fault("has axis " + std::to_string(axis) + " outside rank " + std::to_string(rank));
    return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
  }

  /// A tensor of `dims` and `element`, if small enough to fold.
  [[nodiscard]] static result sized(std::int32_t element, shape dims) {
    const auto count = foldable_count(dims);
    if (!count) return std::nullopt;
    return constant_tensor{.element = element, .dims = std::move(dims), .values = std::vector<std::int64_t>(*count)};
  }

  [[nodiscard]] std::int64_t checked(std::int64_t a, std::int64_t b, char op) const {
    std::int64_t r = 0;
    bool overflow = false;
    switch (op) {
      case '+': overflow = __builtin_add_overflow(a, b, &r); break;
      case '-': overflow = __builtin_sub_overflow(a, b, &r); break;
      case '*': overflow = __builtin_mul_overflow(a, b, &r); break;
      default:
        if (b == 0) throw fault("divides by zero");
        overflow = a == INT64_MIN && b == -1;
        if (overflow) break;
        r = op == '/' ? a / b : a % b;
        if (op == '%' && r != 0 && (r < 0) != (b < 0)) r += b;  // ONNX Mod takes the divisor's sign
    }
    if (overflow) throw fault("overflows 64-bit integers");
    return r;
  }

  [[nodiscard]] static std::optional<char> arithmetic_of(const std::string& op) {
    if (op == "Add") return '+';
    if (op == "Sub") return '-';
    if (op == "Mul") return '*';
    if (op == "Div") return '/';
    if (op == "Mod") return '%';
    return std::nullopt;
  }

  [[nodiscard]] static std::optional<binary_function> comparison_of(const std::string& op) {
    if (op == "Equal") return binary_function([](std::int64_t a, std::int64_t b) { return a == b; });
    if (op == "Less") return binary_function([](std::int64_t a, std::int64_t b) { return a < b; });
    if (op == "LessOrEqual") return binary_function([](std::int64_t a, std::int64_t b) { return a <= b; });
    if (op == "Greater") return binary_function([](std::int64_t a, std::int64_t b) { return a > b; });
    if (op == "GreaterOrEqual") return binary_function([](std::int64_t a, std::int64_t b) { return a >= b; });
    if (op == "And") return binary_function([](std::int64_t a, std::int64_t b) { return a != 0 && b != 0; });
    if (op == "Or") return binary_function([](std::int64_t a, std::int64_t b) { return a != 0 || b != 0; });
    return std::nullopt;
  }

  result constant() const {
    if (const auto* a = attribute("value")) return tensor_value(a->t(), where_);
    if (const auto* a = attribute("value_int")) return constant_tensor{.element = onnx::TensorProto::INT64, .dims = {}, .values = {a->i()}};
    if (const auto* a = attribute("value_ints")) {
      return constant_tensor{.element = onnx::TensorProto::INT64,
                             .dims = {a->ints_size()},
                             .values = {a->ints().begin(), a->ints().end()}};
    }
    return std::nullopt;
  }

  result shape_value() const {
    const shape* dims = node_.input_size() > 0 ? shape_of_(node_.input(0)) : nullptr;
    if (dims == nullptr) return std::nullopt;
    const auto rank = static_cast<std::int64_t>(dims->size());
    const auto clamp = [&](std::int64_t i) { return std::clamp(i < 0 ? i + rank : i, std::int64_t{0}, rank); };
    const std::int64_t start = clamp(int_attribute("start", 0));
    const std::int64_t end = std::max(start, clamp(int_attribute("end", rank)));
    return constant_tensor{.element = onnx::TensorProto::INT64, .dims = {end - start},
                           .values = {dims->begin() + start, dims->begin() + end}};
  }

  result size_value() const {
    const shape* dims = node_.input_size() > 0 ? shape_of_(node_.input(0)) : nullptr;
    if (dims == nullptr) return std::nullopt;
    std::int64_t n = 1;
    for (const std::int64_t d : *dims) n = checked(n, d, '*');
    return constant_tensor{.element = onnx::TensorProto::INT64, .dims = {}, .values = {n}};
  }

  result cast() const {
    const std::int64_t to = int_attribute("to", 0);
    if (to > INT32_MAX || !is_foldable_type(static_cast<std::int32_t>(to))) return std::nullopt;
    return map(*input(0), static_cast<std::int32_t>(to), [](std::int64_t v) { return v; });
  }

  template <class F>
  static constant_tensor map(const constant_tensor& in, std::int32_t element, F f) {
    constant_tensor out{.element = element, .dims = in.dims, .values = {}};
    for (const std::int64_t v : in.values) out.values.push_back(convert_to(element, f(v)));
    return out;
  }

  result gather() const {
    const constant_tensor& data = *input(0);
    const constant_tensor& indices = *input(1);
    if (data.dims.empty()) throw fault("gathers from a scalar");
    const std::size_t axis = normalised_axis(int_attribute("axis", 0), data.dims.size());
    shape dims(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis));
    dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
    dims.insert(dims.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end());
    auto out = sized(data.element, std::move(dims));
    if (!out) return std::nullopt;
    const std::int64_t extent = data.dims[axis];
    std::size_t inner = 1;
    for (std::size_t i = axis + 1; i < data.dims.size(); ++i) inner *= static_cast<std::size_t>(data.dims[i]);
    const std::size_t outer = inner * static_cast<std::size_t>(extent) == 0 ? 0 : data.values.size() / (inner * static_cast<std::size_t>(extent));
    std::size_t at = 0;
    for (std::size_t o = 0; o < outer; ++o) {
      for (std::int64_t index : indices.values) {
        if (index < -extent || index >= extent) throw fault("has index " + std::to_string(index) + " outside 0.." + std::to_string(extent - 1));
        if (index < 0) index += extent;
        const std::size_t from = (o * static_cast<std::size_t>(extent) + static_cast<std::size_t>(index)) * inner;
        for (std::size_t k = 0; k < inner; ++k) out->values[at++] = data.values[from + k];
      }
    }
    return out;
  }

  result slice() const {
    const constant_tensor& data = *input(0);
    const auto from_inputs = input(1) != nullptr;
    // Opset 10 on: starts, ends, axes and steps are inputs; before: attributes, no steps.
    const auto list = [&](int i, const char* name) {
      if (from_inputs) return input(i) != nullptr ? int_list(i) : std::vector<std::int64_t>{};
      const auto* a = name != nullptr ? attribute(name) : nullptr;
      return a != nullptr ? std::vector<std::int64_t>(a->ints().begin(), a->ints().end()) : std::vector<std::int64_t>{};
    };
    const auto starts = list(1, "starts");
    const auto ends = list(2, "ends");
    auto axes_given = list(3, "axes");
    auto steps = list(4, nullptr);
    if (ends.size() != starts.size()) throw fault("has " + std::to_string(starts.size()) + " starts and " + std::to_string(ends.size()) + " ends");
    if (axes_given.empty()) {
      for (std::size_t i = 0; i < starts.size(); ++i) axes_given.push_back(static_cast<std::int64_t>(i));
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (axes_given.size() != starts.size() || steps.size() != starts.size()) throw fault("has axes or steps of another length than its starts");
    const std::size_t rank = data.dims.size();
    std::vector<std::int64_t> first(rank, 0), step(rank, 1);
    shape dims = data.dims;
    for (std::size_t i = 0; i < starts.size(); ++i) {
      const std::size_t axis = normalised_axis(axes_given[i], rank);
      const std::int64_t d = data.dims[axis];
      if (steps[i] == 0) throw fault("has step 0");
      if (d == 0) continue;
      const bool forward = steps[i] > 0;
      const auto bound = [&](std::int64_t v, std::int64_t low, std::int64_t high) {
        return std::clamp(v < 0 ? v + d : v, low, high);  // v + d cannot overflow: v < 0
      };
      const std::int64_t s = forward ? bound(starts[i], 0, d) : bound(starts[i], 0, d - 1);
      const std::int64_t e = forward ? bound(ends[i], 0, d) : bound(ends[i], -1, d - 1);
      const std::int64_t span = forward ? e - s : s - e;
      const std::int64_t magnitude = forward ? steps[i] : -(steps[i] == INT64_MIN ? INT64_MAX : steps[i]);
      dims[axis] = span <= 0 ? 0 : (span - 1) / magnitude + 1;
      first[axis] = s;
      step[axis] = steps[i];
    }
    auto out = sized(data.element, dims);
    if (!out) return std::nullopt;
    const auto in_strides = strides_of(data.dims);
    const auto out_strides = strides_of(dims);
    for (std::size_t k = 0; k < out->values.size(); ++k) {
      std::size_t from = 0;
      for (std::size_t a = 0; a < rank; ++a) {
        const auto i = static_cast<std::int64_t>(k / out_strides[a] % static_cast<std::size_t>(dims[a]));
        from += static_cast<std::size_t>(first[a] + i * step[a]) * in_strides[a];
      }
      out->values[k] = data.values[from];
    }
    return out;
  }

  result concat() const {
    const constant_tensor& head = *input(0);
    if (head.dims.empty()) throw fault("concatenates scalars");
    const std::size_t axis = normalised_axis(int_attribute("axis", 0), head.dims.size());
    shape dims = head.dims;
    dims[axis] = 0;
    for (int i = 0; i < node_.input_size(); ++i) {
      const constant_tensor& part = *input(i);
      for (std::size_t a = 0; a < dims.size(); ++a) {
        if (part.dims.size() != dims.size() || (a != axis && part.dims[a] != dims[a])) {
          throw fault("concatenates inputs of shapes that differ off axis " + std::to_string(axis));
        }
      }
      dims[axis] += part.dims[axis];
    }
    auto out = sized(head.element, dims);
    if (!out) return std::nullopt;
    std::size_t outer = 1;
    for (std::size_t a = 0; a < axis; ++a) outer *= static_cast<std::size_t>(dims[a]);
    out->values.clear();
    for (std::size_t o = 0; o < outer; ++o) {
      for (int i = 0; i < node_.input_size(); ++i) {
        const constant_tensor& part = *input(i);
        const std::size_t block = outer == 0 ? 0 : part.values.size() / outer;
        out->values.insert(out->values.end(), part.values.begin() + static_cast<std::ptrdiff_t>(o * block),
                           part.values.begin() + static_cast<std::ptrdiff_t>((o + 1) * block));
      }
    }
    return out;
  }

  result unsqueeze() const {
    const auto given = axes(1);
    if (!given) throw fault("has no axes");
    const std::size_t rank = input(0)->dims.size() + given->size();
    std::vector<bool> inserted(rank, false);
    for (const std::int64_t a : *given) {
      const std::size_t axis = normalised_axis(a, rank);
      if (inserted[axis]) throw fault("repeats axis " + std::to_string(a));
      inserted[axis] = true;
    }
    constant_tensor out{.element = input(0)->element, .dims = {}, .values = input(0)->values};
    auto dim = input(0)->dims.begin();
    for (std::size_t a = 0; a < rank; ++a) out.dims.push_back(inserted[a] ? 1 : *dim++);
    return out;
  }

  result squeeze() const {
    const constant_tensor& in = *input(0);
    std::vector<bool> removed(in.dims.size(), false);
    if (const auto given = axes(1)) {
      for (const std::int64_t a : *given) {
        const std::size_t axis = normalised_axis(a, in.dims.size());
        if (in.dims[axis] != 1) throw fault("squeezes axis " + std::to_string(a) + " of size " + std::to_string(in.dims[axis]));
        removed[axis] = true;
      }
    } else {
      for (std::size_t a = 0; a < in.dims.size(); ++a) removed[a] = in.dims[a] == 1;
    }
    constant_tensor out{.element = in.element, .dims = {}, .values = in.values};
    for (std::size_t a = 0; a < in.dims.size(); ++a) {
      if (!removed[a]) out.dims.push_back(in.dims[a]);
    }
    return out;
  }

  result transpose() const {
    const constant_tensor& in = *input(0);
    const std::size_t rank = in.dims.size();
    std::vector<std::size_t> perm;
    if (const auto* given = attribute("perm")) {
      std::vector<bool> used(rank, false);
      for (const std::int64_t axis : given->ints()) {
        if (axis < 0 || static_cast<std::size_t>(axis) >= rank || used[static_cast<std::size_t>(axis)]) {
          throw fault("has a perm that is not a permutation of its " + std::to_string(rank) + " axes");
        }
        used[static_cast<std::size_t>(axis)] = true;
        perm.push_back(static_cast<std::size_t>(axis));
      }
      if (perm.size() != rank) throw fault("has a perm that is not a permutation of its " + std::to_string(rank) + " axes");
    } else {
      for (std::size_t a = rank; a-- > 0;) perm.push_back(a);
    }
    shape dims;
    for (const std::size_t a : perm) dims.push_back(in.dims[a]);
    constant_tensor out{.element = in.element, .dims = dims, .values = std::vector<std::int64_t>(in.values.size())};
    const auto in_strides = strides_of(in.dims);
    const auto out_strides = strides_of(dims);
    for (std::size_t k = 0; k < out.values.size(); ++k) {
      std::size_t from = 0;
      for (std::size_t a = 0; a < rank; ++a) from += k / out_strides[a] % static_cast<std::size_t>(dims[a]) * in_strides[perm[a]];
      out.values[k] = in.values[from];
    }
    return out;
  }

  result reshape() const {
    const constant_tensor& in = *input(0);
    const auto wanted = int_list(1);
    const bool allow_zero = int_attribute("allowzero", 0) != 0;
    shape dims;
    std::optional<std::size_t> inferred;
    std::int64_t known = 1;
    for (std::size_t a = 0; a < wanted.size(); ++a) {
      std::int64_t d = wanted[a];
      if (d == 0 && !allow_zero) {
        if (a >= in.dims.size()) throw fault("copies dimension " + std::to_string(a) + " its input does not have");
        d = in.dims[a];
      }
      if (d == -1) {
        if (inferred) throw fault("has two dimensions of -1");
        inferred = a;
      } else if (d < 0) {
        throw fault("has dimension " + std::to_string(d));
      } else {
        known = checked(known, d, '*');
      }
      dims.push_back(d);
    }
    const auto count = static_cast<std::int64_t>(in.values.size());
    if (inferred) {
      if (known == 0 || count % known != 0) throw fault("cannot reshape " + std::to_string(count) + " elements");
      dims[*inferred] = count / known;
    } else if (known != count) {
      throw fault("reshapes " + std::to_string(count) + " elements into " + std::to_string(known));
    }
    return constant_tensor{.element = in.element, .dims = std::move(dims), .values = in.values};
  }

  /// Numpy broadcasting of two shapes.
  [[nodiscard]] shape broadcast(const shape& a, const shape& b) const {
    shape dims(std::max(a.size(), b.size()), 1);
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const std::int64_t x = i < dims.size() - a.size() ? 1 : a[i - (dims.size() - a.size())];
      const std::int64_t y = i < dims.size() - b.size() ? 1 : b[i - (dims.size() - b.size())];
      if (x != y && x != 1 && y != 1) throw fault("has operands of dimensions " + std::to_string(x) + " and " + std::to_string(y) + " that do not broadcast");
      dims[i] = x == 1 ? y : x;
    }
    return dims;
  }

  /// The element of `in` that output element k of `dims` reads under broadcasting.
  [[nodiscard]] static std::int64_t element_at(const constant_tensor& in, const shape& dims, std::size_t k) {
    const std::size_t offset = dims.size() - in.dims.size();
    std::size_t from = 0;
    std::size_t stride = 1;
    for (std::size_t i = dims.size(); i-- > offset;) {
      const auto extent = static_cast<std::size_t>(dims[i]);
      const auto own = static_cast<std::size_t>(in.dims[i - offset]);
      if (own != 1) from += k % extent * stride;
      k /= extent;
      stride *= own;
    }
    return in.values[from];
  }

  result broadcast_to(const constant_tensor& in, const std::vector<std::int64_t>& wanted) const {
    auto out = sized(in.element, broadcast(in.dims, wanted));
    if (!out) return std::nullopt;
    for (std::size_t k = 0; k < out->values.size(); ++k) out->values[k] = element_at(in, out->dims, k);
    return out;
  }

  result binary(std::int32_t element, const binary_function& f) const {
    const constant_tensor& a = *input(0);
    const constant_tensor& b = *input(1);
    auto out = sized(element, broadcast(a.dims, b.dims));
    if (!out) return std::nullopt;
    for (std::size_t k = 0; k < out->values.size(); ++k) {
      out->values[k] = convert_to(element, f(element_at(a, out->dims, k), element_at(b, out->dims, k)));
    }
    return out;
  }

  result variadic(const binary_function& f) const {
    constant_tensor acc = *input(0);
    for (int i = 1; i < node_.input_size(); ++i) {
      const constant_tensor& next = *input(i);
      auto out = sized(acc.element, broadcast(acc.dims, next.dims));
      if (!out) return std::nullopt;
      for (std::size_t k = 0; k < out->values.size(); ++k) {
        out->values[k] = f(element_at(acc, out->dims, k), element_at(next, out->dims, k));
      }
      acc = std::move(*out);
    }
    return acc;
  }

  result where() const {
    const constant_tensor& c = *input(0);
    const constant_tensor& x = *input(1);
    const constant_tensor& y = *input(2);
    auto out = sized(x.element, broadcast(c.dims, broadcast(x.dims, y.dims)));
    if (!out) return std::nullopt;
    for (std::size_t k = 0; k < out->values.size(); ++k) {
      out->values[k] = element_at(c, out->dims, k) != 0 ? element_at(x, out->dims, k) : element_at(y, out->dims, k);
    }
    return out;
  }

  result range() const {
    for (int i = 0; i < 3; ++i) {
      if (!input(i)->dims.empty()) throw fault("has a non-scalar input " + std::to_string(i));
    }
    const std::int64_t start = input(0)->values[0];
    const std::int64_t limit = input(1)->values[0];
    const std::int64_t delta = input(2)->values[0];
    if (delta == 0) throw fault("has delta 0");
    // ceil(|limit - start| / |delta|) elements when delta points from start to limit, else none;
    // unsigned, as the difference of two int64 may not fit in one.
    const bool empty = delta > 0 ? limit <= start : limit >= start;
    const std::uint64_t span = delta > 0 ? static_cast<std::uint64_t>(limit) - static_cast<std::uint64_t>(start)
                                         : static_cast<std::uint64_t>(start) - static_cast<std::uint64_t>(limit);
    const std::uint64_t step = delta > 0 ? static_cast<std::uint64_t>(delta) : 0 - static_cast<std::uint64_t>(delta);
    const std::uint64_t n = empty ? 0 : (span - 1) / step + 1;
    if (n > max_folded_elements) return std::nullopt;
    constant_tensor out{.element = input(0)->element, .dims = {static_cast<std::int64_t>(n)}, .values = {}};
    for (std::int64_t k = 0; k < out.dims[0]; ++k) out.values.push_back(start + k * delta);
    return out;
  }

  result constant_of_shape() const {
    const auto dims = int_list(0);
    for (const std::int64_t d : dims) {
      if (d < 0) throw fault("has negative dimension " + std::to_string(d));
    }
    const auto* a = attribute("value");
    if (a == nullptr) return std::nullopt;  // float 0 by default: not folded
    const auto fill = tensor_value(a->t(), where_);
    if (!fill || fill->values.size() != 1) return std::nullopt;
    auto out = sized(fill->element, dims);
    if (!out) return std::nullopt;
    std::ranges::fill(out->values, fill->values[0]);
    return out;
  }
};

}  // namespace detail

/// The outputs of `node` (named `where` in errors) when every input it needs
/// has a known value (`value(tensor)`, null when unknown) or, for Shape and
/// Size, a static shape (`shape_of(tensor)`); nullopt when the node cannot be
/// folded (an unknown input, a float result, an unsupported op, a result
/// larger than max_folded_elements). Throws format_error on arithmetic that
/// overflows or divides by zero, out-of-range indices and axes, and shapes
/// that do not fit.
[[nodiscard]] inline std::optional<std::vector<constant_tensor>> fold_node(
    const onnx::NodeProto& node, const std::string& where,
    const std::function<const constant_tensor*(const std::string&)>& value,
    const std::function<const shape*(const std::string&)>& shape_of) {
  return detail::node_folder(node, where, value, shape_of).run();
}

}  // namespace onnx_import
