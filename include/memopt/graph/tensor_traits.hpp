#pragma once
// tensor_traits<G>: what memopt needs to know about the tensors of a graph.
//
// A vertex is an op with num_outputs output tensors (ports 0..k-1), each of
// output_bytes. An edge is either a data edge that reads output port(e) of its
// source, or a control edge (is_control) that orders two ops and carries no
// bytes. Persistent vertices (weights, constants) hold memory for the whole run;
// live-out outputs (graph outputs) are never freed. An op may also need
// scratch_bytes of its own while it runs (a workspace, im2col columns, a
// reordered copy of a weight), live during its step only; the member is
// optional (0 when absent).
//
// Two kinds of aliasing:
// - shares_storage_of (a *must*-alias): the output lives in the storage of an
//   input tensor (by vertex index and port) of the same vertex: a view (reshape, transpose, split, ...)
//   or an in-place result (relu_, add_, ...), which also overwrites it. The
//   memory model counts a storage once (graph/storage.hpp).
// - alias_of (a *may*-alias, by vertex index and port): an input tensor whose
//   storage the output takes over when this op is that storage's last reader
//   in the order (an element-wise op run in place, as ONNX Runtime does). The
//   memory model applies it (buffer_table::takes_over); a graph that declares
//   none is unchanged, so declaring them is the switch.
//
// One convention for every member: the vertex asked about comes by its
// descriptor (v), and any other vertex (the source of alias_of and
// shares_storage_of) is named by its index in the vertex index map the
// algorithm is called with (on a vecS graph, the same number).
//
// The default, bundled_tensor_traits<G>, reads bundled properties by member
// name; memopt's own bundles (tensor_node, tensor_edge) have all of them.
// Specialise tensor_traits<G> for your graph, inheriting the default to
// override one member (examples/own_bundle.cpp writes every member for a
// bundle of its own):
//
//   template <>
//   struct memopt::tensor_traits<my::net> : memopt::bundled_tensor_traits<my::net> {
//     static bool is_persistent(const my::net& g, memopt::vertex_t<my::net> v) {
//       return g[v].kind == my::op_kind::weight;
//     }
//   };

#include <memopt/graph/concepts.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

namespace memopt {

/// One output of one vertex: the unit of memory.
template <class V>
struct buffer_ref {
  V vertex;
  std::size_t port = 0;
  friend bool operator==(const buffer_ref&, const buffer_ref&) = default;
};

/// An output that lives in the storage of `source`, an input tensor of its
/// own vertex: a view, or (in_place) a result written over the source.
/// tensor_traits::shares_storage_of names the source vertex by its index (the
/// algorithm's vertex index map), so that any graph type can state it.
template <class V>
struct shared_storage {
  buffer_ref<V> source;
  bool in_place = false;  ///< the op overwrites the storage (else a view: it only reads)
  friend bool operator==(const shared_storage&, const shared_storage&) = default;
};

/// One output tensor of memopt's default vertex bundle.
struct tensor_output {
  std::uint64_t bytes = 0;
  bool live_out = false;  ///< a graph output: never freed
  /// An input buffer (producer index, port) this output may overwrite in place.
  std::optional<buffer_ref<std::size_t>> alias;
  /// The input tensor whose storage this output is (a view or an in-place result).
  std::optional<shared_storage<std::size_t>> shares;
};

/// memopt's default vertex bundle.
struct tensor_node {
  std::vector<tensor_output> outputs;
  bool persistent = false;  ///< weights, variables, constants
  std::uint64_t scratch_bytes = 0;  ///< memory the op allocates and frees while it runs
};

/// memopt's default edge bundle.
struct tensor_edge {
  std::size_t port = 0;   ///< the output of the source this data edge reads
  bool control = false;   ///< a control edge carries no bytes
};

namespace detail {

/// g[v].outputs is a sized range: what bundled_tensor_traits needs at least.
template <class G>
concept has_bundled_outputs = requires(const G& g, vertex_t<G> v) {
  std::size(g[v].outputs);
  std::begin(g[v].outputs);
};

}  // namespace detail

/// Reads tensors from bundled properties, by member name:
/// - g[v].outputs: a sized range, one element per port; an element is either
///   an unsigned byte count or has `bytes` (and optionally `live_out`, `alias`,
///   `shares`)
/// - g[v].persistent (optional, default false)
/// - g[v].scratch_bytes (optional, default 0)
/// - g[e].port (optional, default 0), g[e].control (optional, default false)
template <class G>
struct bundled_tensor_traits {
  using vertex = vertex_t<G>;
  using edge = edge_t<G>;

  static std::size_t num_outputs(const G& g, vertex v)
    requires detail::has_bundled_outputs<G> { return std::size(g[v].outputs); }

  static std::uint64_t output_bytes(const G& g, vertex v, std::size_t port)
    requires detail::has_bundled_outputs<G> {
    const auto& out = *std::next(std::begin(g[v].outputs), static_cast<std::ptrdiff_t>(port));
    if constexpr (requires { out.bytes; }) {
      return static_cast<std::uint64_t>(out.bytes);
    } else {
      return static_cast<std::uint64_t>(out);
    }
  }

  static bool is_live_out(const G& g, vertex v, std::size_t port)
    requires detail::has_bundled_outputs<G> {
    const auto& out = *std::next(std::begin(g[v].outputs), static_cast<std::ptrdiff_t>(port));
    if constexpr (requires { out.live_out; }) {
      return static_cast<bool>(out.live_out);
    } else {
      return false;
    }
  }

  static std::optional<buffer_ref<std::size_t>> alias_of(const G& g, vertex v, std::size_t port)
    requires detail::has_bundled_outputs<G> {
    const auto& out = *std::next(std::begin(g[v].outputs), static_cast<std::ptrdiff_t>(port));
    if constexpr (requires { out.alias; }) {
      if (!out.alias) return std::nullopt;
      return buffer_ref<std::size_t>{static_cast<std::size_t>(out.alias->vertex), out.alias->port};
    } else {
      return std::nullopt;
    }
  }

  static std::optional<shared_storage<std::size_t>> shares_storage_of(const G& g, vertex v,
                                                                      std::size_t port)
    requires detail::has_bundled_outputs<G> {
    const auto& out = *std::next(std::begin(g[v].outputs), static_cast<std::ptrdiff_t>(port));
    if constexpr (requires { out.shares; }) {
      if (!out.shares) return std::nullopt;
      return shared_storage<std::size_t>{
          {static_cast<std::size_t>(out.shares->source.vertex), out.shares->source.port},
          static_cast<bool>(out.shares->in_place)};
    } else {
      return std::nullopt;
    }
  }

  static bool is_persistent(const G& g, vertex v) {
    if constexpr (requires { g[v].persistent; }) {
      return static_cast<bool>(g[v].persistent);
    } else {
      return false;
    }
  }

  static std::uint64_t scratch_bytes(const G& g, vertex v) {
    if constexpr (requires { g[v].scratch_bytes; }) {
      return static_cast<std::uint64_t>(g[v].scratch_bytes);
    } else {
      return 0;
    }
  }

  static std::size_t port(const G& g, edge e) {
    if constexpr (requires { g[e].port; }) {
      return static_cast<std::size_t>(g[e].port);
    } else {
      return 0;
    }
  }

  static bool is_control(const G& g, edge e) {
    if constexpr (requires { g[e].control; }) {
      return static_cast<bool>(g[e].control);
    } else {
      return false;
    }
  }
};

/// The customisation point; see the header comment.
template <class G>
struct tensor_traits : bundled_tensor_traits<G> {};

namespace detail {

/// Traits that declare scratch_bytes must declare it usably.
template <class G, class Traits>
concept scratch_absent_or_usable =
    !requires { &Traits::scratch_bytes; } ||
    requires(const G& g, vertex_t<G> v) { { Traits::scratch_bytes(g, v) } -> std::convertible_to<std::uint64_t>; };

}  // namespace detail

/// The scratch bytes of vertex v: Traits::scratch_bytes, or 0 for traits without it.
template <class G, class Traits = tensor_traits<G>>
[[nodiscard]] std::uint64_t scratch_bytes_of(const G& g, vertex_t<G> v) {
  if constexpr (requires { Traits::scratch_bytes(g, v); }) {
    return static_cast<std::uint64_t>(Traits::scratch_bytes(g, v));
  } else {
    return 0;
  }
}

/// A dag whose tensor_traits answer every question memopt asks (scratch_bytes is optional).
template <class G, class Traits = tensor_traits<G>>
concept tensor_graph =
    dag<G> && detail::scratch_absent_or_usable<G, Traits> &&
    requires(const G& g, vertex_t<G> v, edge_t<G> e, std::size_t port) {
      { Traits::num_outputs(g, v) } -> std::convertible_to<std::size_t>;
      { Traits::output_bytes(g, v, port) } -> std::convertible_to<std::uint64_t>;
      { Traits::is_live_out(g, v, port) } -> std::convertible_to<bool>;
      { Traits::alias_of(g, v, port) } -> std::convertible_to<std::optional<buffer_ref<std::size_t>>>;
      { Traits::shares_storage_of(g, v, port) }
          -> std::convertible_to<std::optional<shared_storage<std::size_t>>>;
      { Traits::is_persistent(g, v) } -> std::convertible_to<bool>;
      { Traits::port(g, e) } -> std::convertible_to<std::size_t>;
      { Traits::is_control(g, e) } -> std::convertible_to<bool>;
    };

}  // namespace memopt
