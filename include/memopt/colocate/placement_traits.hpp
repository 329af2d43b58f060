#pragma once
// What place() asks of a graph: placement_traits<G> (default: bundled
// properties by member name, bundled_placement_traits), memopt's own bundles
// placement_node and placement_edge, and the placement_graph concept.

#include <memopt/graph/concepts.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace memopt {

/// memopt's vertex bundle for placement (see bundled_placement_traits).
struct placement_node {
  std::string name;                        ///< also the colocation group it implicitly heads
  std::string op;                          ///< op type: its kernels come from the registry
  std::string device;                      ///< requested device ("" = none)
  std::string assigned_device;             ///< fixed before placement ("" = none)
  std::vector<std::string> colocation;     ///< groups it must share a device with
  std::vector<std::size_t> reference_outputs;  ///< ports that are references/resources
};

/// memopt's edge bundle for placement.
struct placement_edge {
  bool control = false;    ///< orders ops, carries nothing
  bool reference = false;  ///< reads a reference/resource: its ends share a device
};

namespace detail {

/// g[v] has the members bundled_placement_traits cannot do without.
template <class G>
concept has_bundled_placement = requires(const G& g, vertex_t<G> v) {
  { g[v].name } -> std::convertible_to<std::string_view>;
  { g[v].op } -> std::convertible_to<std::string_view>;
  { g[v].device } -> std::convertible_to<std::string_view>;
};

}  // namespace detail

/// Reads placement facts from bundled properties, by member name: g[v].name,
/// op, device, assigned_device, colocation and reference_outputs (optional),
/// g[v].outputs (optional: its size is the number of outputs, else 1), and
/// g[e].control and g[e].reference (optional, default false).
template <class G>
struct bundled_placement_traits {
  using vertex = vertex_t<G>;
  using edge = edge_t<G>;
  static std::string_view name(const G& g, vertex v)
    requires detail::has_bundled_placement<G> { return g[v].name; }
  static std::string_view op_type(const G& g, vertex v)
    requires detail::has_bundled_placement<G> { return g[v].op; }
  static std::string_view requested_device(const G& g, vertex v)
    requires detail::has_bundled_placement<G> { return g[v].device; }
  static std::string_view assigned_device(const G& g, vertex v) {
    if constexpr (requires { g[v].assigned_device; }) {
      return g[v].assigned_device;
    } else {
      return {};
    }
  }
  /// A range of group names (each convertible to std::string_view).
  static const auto& colocation_groups(const G& g, vertex v) {
    if constexpr (requires { g[v].colocation; }) {
      return g[v].colocation;
    } else {
      static const std::vector<std::string> none;
      return none;
    }
  }
  static std::size_t num_outputs(const G& g, vertex v) {
    if constexpr (requires { std::size(g[v].outputs); }) {
      return std::size(g[v].outputs);
    } else {
      return 1;
    }
  }
  static bool is_reference_output(const G& g, vertex v, std::size_t port) {
    if constexpr (requires { g[v].reference_outputs; }) {
      return std::ranges::count(g[v].reference_outputs, port) > 0;
    } else {
      return false;
    }
  }
  static bool is_control(const G& g, edge e) {
    if constexpr (requires { g[e].control; }) {
      return static_cast<bool>(g[e].control);
    } else {
      return false;
    }
  }
  static bool is_reference_edge(const G& g, edge e) {
    if constexpr (requires { g[e].reference; }) {
      return static_cast<bool>(g[e].reference);
    } else {
      return false;
    }
  }
};

/// The customisation point: specialise for your graph, inheriting the default.
template <class G>
struct placement_traits : bundled_placement_traits<G> {};

/// A dag whose placement_traits answer every question place() asks.
template <class G, class Traits = placement_traits<G>>
concept placement_graph =
    dag<G> && requires(const G& g, vertex_t<G> v, edge_t<G> e, std::size_t port) {
      { Traits::name(g, v) } -> std::convertible_to<std::string_view>;
      { Traits::op_type(g, v) } -> std::convertible_to<std::string_view>;
      { Traits::requested_device(g, v) } -> std::convertible_to<std::string_view>;
      { Traits::assigned_device(g, v) } -> std::convertible_to<std::string_view>;
      { *std::begin(Traits::colocation_groups(g, v)) } -> std::convertible_to<std::string_view>;
      { Traits::num_outputs(g, v) } -> std::convertible_to<std::size_t>;
      { Traits::is_reference_output(g, v, port) } -> std::convertible_to<bool>;
      { Traits::is_control(g, e) } -> std::convertible_to<bool>;
      { Traits::is_reference_edge(g, e) } -> std::convertible_to<bool>;
    };

}  // namespace memopt
