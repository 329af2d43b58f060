#pragma once
// What the ONNX adapter knows of each operator besides its schema: which ops
// make views (their output lives in their first input's storage), which are
// element-wise (their output may take over the storage of an input of the
// same size that dies there: an in-place candidate for the heap family), and
// an estimate of the floating-point operations of a node from its tensors'
// shapes (documented in docs/onnx.md).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string_view>
#include <vector>

namespace onnx_import {

/// The shape of a tensor, every dimension known.
using shape = std::vector<std::int64_t>;

[[nodiscard]] inline double numel(const shape& s) {
  return std::accumulate(s.begin(), s.end(), 1.0, [](double n, std::int64_t d) { return n * static_cast<double>(d); });
}

/// Ops whose output 0 is a view of input 0 in every ONNX runtime.
[[nodiscard]] inline bool is_view(std::string_view op) {
  static constexpr std::string_view views[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
  return std::ranges::find(views, op) != std::end(views);
}

/// Element-wise ops: output 0 may be written over an input of its size.
[[nodiscard]] inline bool is_elementwise(std::string_view op) {
  static constexpr std::string_view ops[] = {
      // unary
      "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cast", "Ceil", "Celu", "Clip", "Cos", "Cosh",
      "Dropout", "Elu", "Erf", "Exp", "Floor", "HardSigmoid", "HardSwish", "IsInf", "IsNaN", "LeakyRelu", "Log",
      "Mish", "Neg", "Not", "PRelu", "Reciprocal", "Relu", "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin",
      "Sinh", "Softplus", "Softsign", "Sqrt", "Tan", "Tanh", "ThresholdedRelu",
      // n-ary, with broadcasting
      "Add", "And", "BitShift", "Div", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Max",
      "Mean", "Min", "Mod", "Mul", "Or", "Pow", "Sub", "Sum", "Where", "Xor"};
  return std::ranges::find(ops, op) != std::end(ops);
}

/// Ops that make no tensor data of their own: views and shape queries.
[[nodiscard]] inline bool costs_nothing(std::string_view op) {
  return is_view(op) || op == "Shape" || op == "Size" || op == "Constant";
}

/// The estimated flops of one node: convolutions and matrix products 2 x
/// multiply-adds, pooling a window per output, normalisation 4 per element,
/// global pooling and reductions one per input element, views and shape
/// queries 0, everything else the larger of its largest input and output.
/// `attr_ints(name)` gives a node's integer-list attribute (empty if absent).
[[nodiscard]] inline double estimate_flops(std::string_view op, const std::vector<shape>& inputs,
                                           const std::vector<shape>& outputs,
                                           const std::function<std::vector<std::int64_t>(const char*)>& attr_ints) {
  if (costs_nothing(op)) return 0;
  const double out = outputs.empty() ? 0 : numel(outputs[0]);
  const auto product_from = [](const shape& s, std::size_t first) {
    double p = 1;
    for (std::size_t i = first; i < s.size(); ++i) p *= static_cast<double>(s[i]);
    return p;
  };
  const bool has_weight = inputs.size() >= 2 && inputs[1].size() >= 2;
  if (op == "Conv" && has_weight) return 2 * out * product_from(inputs[1], 1);  // W: [M, C/group, k...]
  if (op == "ConvTranspose" && has_weight) {  // W: [C, M/group, k...]; each input element feeds a window
    return 2 * numel(inputs[0]) * product_from(inputs[1], 1);
  }
  if ((op == "MatMul" || op == "Gemm" || op == "MatMulInteger") && !inputs.empty() && !inputs[0].empty()) {
    const shape& a = inputs[0];
    const bool transposed = op == "Gemm" && !attr_ints("transA").empty() && attr_ints("transA")[0] != 0;
    const double k = static_cast<double>(transposed || a.size() == 1 ? a[a.size() == 1 ? 0 : a.size() - 2] : a.back());
    return 2 * out * k;
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") {
    const auto kernel = attr_ints("kernel_shape");
    return out * std::accumulate(kernel.begin(), kernel.end(), 1.0,
                                 [](double p, std::int64_t k) { return p * static_cast<double>(k); });
  }
  if (op == "BatchNormalization" || op == "LayerNormalization" || op == "InstanceNormalization" ||
      op == "GroupNormalization" || op == "LpNormalization") {
    return 4 * out;
  }
  double largest = out;
  for (const auto& s : inputs) largest = std::max(largest, numel(s));
  for (const auto& s : outputs) largest = std::max(largest, numel(s));
  return largest;
}

}  // namespace onnx_import
