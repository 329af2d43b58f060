#pragma once
// buffer_table: dense ids for the buffers of a tensor graph. Buffer b is one
// output (vertex, port); the outputs of the vertex with index i are the ids
// first[i] .. first[i + 1] - 1, port order. O(V) to build.
//
// A vertex with scratch bytes (tensor_traits::scratch_bytes) has one more
// buffer after its outputs, with no port: its scratch, which no op reads, so
// that every family counts it as it counts an unread output, live during the
// vertex's step only, and the arena gives it an address.
//
// It also records storages (tensor_traits::shares_storage_of): a buffer that
// is a view or an in-place result lives in the storage of the tensor it
// names, transitively; storage[b] is the root, the one buffer that owns the
// memory. The table states the memory model's facts by storage: a buffer in
// another's storage adds no bytes, and persistent and live_out hold for every
// buffer of a storage (an alias of a weight is free; an alias of a graph
// output keeps the storage to the end). Throws bad_alias_error for an alias
// naming a port that does not exist or a chain of aliases that loops.
//
// In-place reuse (tensor_traits::alias_of, a may-alias): takes_over[b] is the
// storage output b takes over when its vertex turns out to be that storage's
// last reader in an order (liveness applies it). The order-free half of the
// rule is settled here: b owns its storage, is transient and no graph output
// (ONNX Runtime allocates those apart); the source's
// storage is transient, holds no graph output, is no graph input (an output
// of a vertex without predecessors: the caller's buffer, which ONNX Runtime
// never reuses either), has exactly b's bytes, and no other output of b's
// vertex lives in it or claims it at a lower port.

#include <memopt/error.hpp>
#include <memopt/graph/buffer_id.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/index_map.hpp>
#include <memopt/graph/tensor_traits.hpp>

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace memopt {

struct buffer_table {
  std::vector<buffer_id> first;        ///< num_vertices + 1 offsets, by vertex index
  std::vector<std::size_t> owner;      ///< vertex index of each buffer
  std::vector<std::uint64_t> bytes;    ///< bytes it adds: its size, 0 in another's storage
  std::vector<bool> persistent;        ///< by buffer: its storage's root is persistent
  std::vector<bool> live_out;          ///< by buffer: its storage holds a graph output
  std::vector<buffer_id> storage;      ///< by buffer: the root owning its storage (b itself)
  std::vector<buffer_id> shares;       ///< by buffer: the input tensor it aliases, or no_buffer
  std::vector<bool> in_place;          ///< by buffer: an in-place result (it overwrites shares)
  std::vector<bool> scratch;           ///< by buffer: its owner's scratch, not an output
  std::vector<buffer_id> takes_over;   ///< by buffer: the storage it reuses where it dies, or no_buffer
  std::size_t aliased = 0;             ///< buffers living in another's storage

  [[nodiscard]] std::size_t size() const noexcept { return bytes.size(); }
  [[nodiscard]] std::size_t num_vertices() const noexcept { return first.size() - 1; }
  /// Output ports of vertex i (its scratch buffer, the last of its ids, has none).
  [[nodiscard]] std::size_t num_outputs(std::size_t i) const {
    const std::size_t ids = first[i + 1] - first[i];
    return ids > 0 && scratch[first[i + 1] - 1] ? ids - 1 : ids;
  }
  [[nodiscard]] buffer_id id(std::size_t i, std::size_t port) const { return first[i] + port; }
  [[nodiscard]] std::size_t port_of(buffer_id b) const { return b - first[owner[b]]; }
  [[nodiscard]] bool owns_storage(buffer_id b) const { return storage[b] == b; }
};

namespace detail {

/// Sets table.storage to each buffer's root (table.shares followed to a buffer
/// that shares nothing), iteratively; throws bad_alias_error on a loop.
inline void resolve_storage_roots(buffer_table& table) {
  enum class state : unsigned char { unseen, on_path, done };
  std::vector<state> states(table.size(), state::unseen);
  std::vector<buffer_id> path;
  for (buffer_id start = 0; start < table.size(); ++start) {
    buffer_id b = start;
    while (states[b] == state::unseen && table.shares[b] != no_buffer) {
      states[b] = state::on_path;
      path.push_back(b);
      b = table.shares[b];
    }
    if (states[b] == state::on_path) {
      const buffer_id looped = path.back();
      throw bad_alias_error(alias_fault::loop, table.owner[looped], table.port_of(looped),
                            table.owner[b], table.port_of(b));
    }
    const buffer_id root = states[b] == state::done ? table.storage[b] : b;
    states[b] = state::done;
    table.storage[b] = root;
    for (const buffer_id member : path) {
      states[member] = state::done;
      table.storage[member] = root;
    }
    path.clear();
  }
}

/// Once table.shares names each alias's source: roots, and the model's facts
/// by storage (an alias adds no bytes; persistent and live_out hold for every
/// buffer of a storage). Throws bad_alias_error on a loop of aliases.
inline void settle_storages(buffer_table& table) {
  table.storage.resize(table.size());
  std::iota(table.storage.begin(), table.storage.end(), buffer_id{0});
  resolve_storage_roots(table);
  table.aliased = 0;
  for (buffer_id b = 0; b < table.size(); ++b) {
    if (table.shares[b] == no_buffer) continue;
    ++table.aliased;
    const buffer_id root = table.storage[b];
    table.bytes[b] = 0;
    table.persistent[b] = table.persistent[root];
    if (table.live_out[b]) table.live_out[root] = true;
  }
  for (buffer_id b = 0; b < table.size(); ++b) table.live_out[b] = table.live_out[table.storage[b]];
}

/// Keeps, of the may-aliases in table.takes_over (source tensors), the
/// storages their outputs may take over in some order (see the preamble);
/// has_predecessor is by vertex index.
inline void settle_reuse(buffer_table& table, const std::vector<bool>& has_predecessor) {
  for (std::size_t i = 0; i < table.num_vertices(); ++i) {
    const buffer_id begin = table.first[i];
    const buffer_id end = begin + table.num_outputs(i);
    for (buffer_id b = begin; b < end; ++b) {
      if (table.takes_over[b] == no_buffer) continue;
      const buffer_id source = table.storage[table.takes_over[b]];
      bool claimed = false;  // by another output of the vertex (earlier ports are settled already)
      for (buffer_id o = begin; o < end; ++o) {
        claimed = claimed || table.storage[o] == source || (o < b && table.takes_over[o] == source);
      }
      const bool allowed = table.owns_storage(b) && !table.persistent[b] && !table.live_out[b] &&
                           !table.persistent[source] &&
                           !table.live_out[source] && has_predecessor[table.owner[source]] &&
                           table.bytes[source] == table.bytes[b] && !claimed;
      table.takes_over[b] = allowed ? source : no_buffer;
    }
  }
}

}  // namespace detail

/// The buffers of g, with vertex `v` numbered index(v). Throws
/// bad_index_error for an index map that is not one-to-one onto [0, n).
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] buffer_table make_buffer_table(const G& g, Index index = {}) {
  using traits = tensor_traits<G>;
  require_index_map(g, index);
  const std::size_t n = num_vertices(g);
  buffer_table table;
  table.first.assign(n + 1, 0);
  std::vector<std::uint64_t> scratch(n, 0);
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    const std::size_t i = index(v);
    scratch[i] = scratch_bytes_of<G>(g, v);
    table.first[i + 1] = traits::num_outputs(g, v) + (scratch[i] > 0 ? 1 : 0);
  }
  for (std::size_t i = 0; i < n; ++i) table.first[i + 1] += table.first[i];
  const std::size_t count = table.first[n];
  table.owner.resize(count);
  table.bytes.resize(count);
  table.persistent.resize(count);
  table.live_out.resize(count);
  table.shares.assign(count, no_buffer);
  table.in_place.resize(count);
  table.scratch.resize(count);
  table.takes_over.assign(count, no_buffer);
  std::vector<std::pair<buffer_id, buffer_ref<std::size_t>>> aliases, may_aliases;
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    const std::size_t i = index(v);
    const bool persistent = traits::is_persistent(g, v);
    if (scratch[i] > 0) {
      const buffer_id b = table.first[i + 1] - 1;
      table.owner[b] = i;
      table.bytes[b] = scratch[i];
      table.scratch[b] = true;
    }
    for (std::size_t port = 0, k = table.num_outputs(i); port < k; ++port) {
      const buffer_id b = table.first[i] + port;
      table.owner[b] = i;
      table.bytes[b] = traits::output_bytes(g, v, port);
      table.persistent[b] = persistent;
      table.live_out[b] = traits::is_live_out(g, v, port);
      if (const auto shared = traits::shares_storage_of(g, v, port)) {
        aliases.push_back({b, shared->source});
        table.in_place[b] = shared->in_place;
      }
      if (const auto reusable = traits::alias_of(g, v, port)) {
        may_aliases.push_back({b, *reusable});
      }
    }
  }
  table.storage.resize(count);
  std::iota(table.storage.begin(), table.storage.end(), buffer_id{0});

  // Sources are read once every owner is numbered.
  const auto source_id = [&](buffer_id b, buffer_ref<std::size_t> source) {
    const std::size_t s = source.vertex;
    if (s >= n || source.port >= table.num_outputs(s)) {
      throw bad_alias_error(s >= n ? alias_fault::unknown_source : alias_fault::no_such_port,
                            table.owner[b], table.port_of(b), s, source.port);
    }
    return table.id(s, source.port);
  };
  for (const auto& [b, source] : aliases) table.shares[b] = source_id(b, source);
  if (!aliases.empty()) detail::settle_storages(table);
  for (const auto& [b, source] : may_aliases) table.takes_over[b] = source_id(b, source);
  if (!may_aliases.empty()) {
    std::vector<bool> has_predecessor(n);
    for (const auto v : boost::make_iterator_range(vertices(g))) {
      for (const auto e : boost::make_iterator_range(out_edges(v, g))) has_predecessor[index(target(e, g))] = true;
    }
    detail::settle_reuse(table, has_predecessor);
  }
  return table;
}

}  // namespace memopt
