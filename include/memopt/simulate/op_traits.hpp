#pragma once
// What simulate() asks of a graph beyond its tensors: op_traits<G> (default:
// bundled properties by member name, bundled_op_traits), the op types whose
// meaning the seed fixes (seed_op_types), and the simulation_graph concept.

#include <memopt/graph/concepts.hpp>
#include <memopt/graph/tensor_traits.hpp>

#include <algorithm>
#include <array>
#include <concepts>
#include <string_view>

namespace memopt::sim {

/// Reads op facts from bundled properties, each optional: g[v].name, g[v].op
/// (op type), g[v].flops (a number, or an optional one), g[v].device (the
/// requested device's name) and g[v].tensor_name (the key pairing a _Send with
/// its _Recv in a graph that has them). Missing ones are empty or 0.
template <class G>
struct bundled_op_traits {
  using vertex = vertex_t<G>;
  static std::string_view name(const G& g, vertex v) {
    if constexpr (requires { std::string_view(g[v].name); }) return g[v].name;
    return {};
  }
  static std::string_view op_type(const G& g, vertex v) {
    if constexpr (requires { std::string_view(g[v].op); }) return g[v].op;
    return {};
  }
  static double flops(const G& g, vertex v) {
    if constexpr (requires { g[v].flops.value_or(0.0); }) {
      return g[v].flops.value_or(0.0);
    } else if constexpr (requires { static_cast<double>(g[v].flops); }) {
      return static_cast<double>(g[v].flops);
    }
    return 0;
  }
  static std::string_view device(const G& g, vertex v) {
    if constexpr (requires { std::string_view(g[v].device); }) return g[v].device;
    return {};
  }
  static std::string_view transfer_key(const G& g, vertex v) {
    if constexpr (requires { std::string_view(g[v].tensor_name); }) return g[v].tensor_name;
    return {};
  }
};

/// The customisation point: specialise for your graph, inheriting the default.
template <class G>
struct op_traits : bundled_op_traits<G> {};

template <class G, class Traits = op_traits<G>>
concept simulation_graph = tensor_graph<G> && requires(const G& g, vertex_t<G> v) {
  { Traits::name(g, v) } -> std::convertible_to<std::string_view>;
  { Traits::op_type(g, v) } -> std::convertible_to<std::string_view>;
  { Traits::flops(g, v) } -> std::convertible_to<double>;
  { Traits::device(g, v) } -> std::convertible_to<std::string_view>;
  { Traits::transfer_key(g, v) } -> std::convertible_to<std::string_view>;
};

/// The op types grappler's virtual scheduler treats apart, by TensorFlow name.
struct seed_op_types {
  /// Variables and constants: their outputs are persistent memory.
  static bool persistent(std::string_view op) {
    constexpr std::array<std::string_view, 7> types = {"Const",       "HostConst",          "Variable",
                                                       "VariableV2",  "AutoReloadVariable", "VarHandleOp",
                                                       "_VarHandlesOp"};
    return std::ranges::find(types, op) != types.end();
  }
  /// Runs as soon as any one input is ready, once per input.
  static bool merge(std::string_view op) { return op == "Merge" || op == "RefMerge"; }
  static bool send(std::string_view op) { return op == "_Send" || op == "_HostSend"; }
  static bool recv(std::string_view op) { return op == "_Recv" || op == "_HostRecv"; }
};

}  // namespace memopt::sim
