#pragma once
// Orders that in-place writes impose (the storage half of the memory model;
// buffer_table resolves which storage each tensor lives in).
//
// An in-place op overwrites a storage, so every other op touching that storage
// (reading any of its tensors) keeps its place relative to the write as in the
// graph's own order, the order vertices(g) lists them: readers before a write
// stay before it, readers after it stay after, writes keep their order. These
// are constraints as binding as edges; storage_hazards returns them as pairs
// (before, after) of vertex indices, O(accesses) of them (readers between two
// writes are ordered against those two writes only). Graphs that declare no
// in-place write have none.
//
// It also checks what buffer_table cannot without the edges: every alias names
// a tensor its own vertex reads (bad_alias_error otherwise). O(V + E + A log A)
// for A accesses to overwritten storages; O(1) for a graph without aliases.

#include <memopt/detail/edge_walk.hpp>
#include <memopt/error.hpp>
#include <memopt/graph/buffers.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/tensor_traits.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace memopt {

/// `before` (a vertex index) must run before `after`: an in-place write orders them.
struct storage_hazard {
  std::size_t before = 0;
  std::size_t after = 0;
  bool after_writes = true;  ///< `after` is the write (else `before` is, and `after` reads)
  friend bool operator==(const storage_hazard&, const storage_hazard&) = default;

  /// The fault of an order that runs `after` first.
  [[nodiscard]] order_fault fault() const noexcept {
    return after_writes ? order_fault::write_too_early : order_fault::read_too_early;
  }
};

namespace detail {

/// One read of an overwritten storage: by `vertex`, at `position` in the graph's order.
struct storage_access {
  buffer_id storage;
  std::size_t position;
  std::size_t vertex;
  bool writes;
  friend auto operator<=>(const storage_access&, const storage_access&) = default;
};

/// The hazards among the accesses of one storage, sorted by position.
inline void order_accesses(std::span<const storage_access> accesses, std::vector<storage_hazard>& out) {
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::size_t last_write = none;
  std::vector<std::size_t> readers_since;  // readers after last_write (or from the start)
  for (const storage_access& a : accesses) {
    if (last_write != none) out.push_back({last_write, a.vertex, a.writes});
    if (!a.writes) {
      readers_since.push_back(a.vertex);
      continue;
    }
    for (const std::size_t r : readers_since) out.push_back({r, a.vertex, true});
    readers_since.clear();
    last_write = a.vertex;
  }
}

}  // namespace detail

/// The order constraints of in-place writes on g (see the header comment).
/// Throws bad_alias_error for an alias its vertex does not read, bad_port_error
/// for a data edge reading a port its source lacks.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::vector<storage_hazard> storage_hazards(const G& g, const buffer_table& table,
                                                          Index index = {}) {
  using traits = tensor_traits<G>;
  if (table.aliased == 0) return {};
  const std::size_t n = table.num_vertices();

  // Every alias must be read by its own vertex: a claim per alias, found in
  // buffer order, so by reader (the alias's owner), in rows by vertex.
  std::vector<std::size_t> first_claim(n + 1, 0);
  std::vector<bool> overwritten(table.size(), false);  // by root
  for (buffer_id b = 0; b < table.size(); ++b) {
    if (table.shares[b] == no_buffer) continue;
    ++first_claim[table.owner[b] + 1];
    if (table.in_place[b]) overwritten[table.storage[b]] = true;
  }
  for (std::size_t v = 0; v < n; ++v) first_claim[v + 1] += first_claim[v];
  std::vector<buffer_id> claim_alias;  // by claim, in reader order
  claim_alias.reserve(first_claim[n]);
  for (buffer_id b = 0; b < table.size(); ++b) {
    if (table.shares[b] != no_buffer) claim_alias.push_back(b);
  }
  std::vector<bool> found(claim_alias.size(), false);
  // Does vertex j write storage `root` in place?
  const auto writes = [&](std::size_t j, buffer_id root) {
    for (buffer_id b = table.first[j]; b < table.first[j + 1]; ++b) {
      if (table.in_place[b] && table.storage[b] == root) return true;
    }
    return false;
  };

  std::vector<std::size_t> position(n);
  std::size_t next = 0;
  for (const auto v : boost::make_iterator_range(vertices(g))) position[index(v)] = next++;

  std::vector<detail::storage_access> accesses;
  const auto out_edges_of = [&g](vertex_t<G> u) { return out_edges(u, g); };
  detail::for_each_vertex_fetching_edges(g, out_edges_of, [&](vertex_t<G> u) {
    const std::size_t i = index(u);
    for (const auto e : boost::make_iterator_range(out_edges(u, g))) {
      if (traits::is_control(g, e)) continue;
      const std::size_t j = index(target(e, g));
      const std::size_t port = traits::port(g, e);
      if (port >= table.num_outputs(i)) throw bad_port_error(i, j, port, table.num_outputs(i));
      const buffer_id b = table.id(i, port);
      for (std::size_t k = first_claim[j]; k < first_claim[j + 1]; ++k) {
        if (table.shares[claim_alias[k]] == b) found[k] = true;
      }
      const buffer_id root = table.storage[b];
      if (overwritten[root]) accesses.push_back({root, position[j], j, writes(j, root)});
    }
  });
  for (std::size_t k = 0; k < claim_alias.size(); ++k) {
    if (found[k]) continue;
    const buffer_id b = claim_alias[k];
    const buffer_id s = table.shares[b];
    throw bad_alias_error(alias_fault::not_an_input, table.owner[b], table.port_of(b),
                          table.owner[s], table.port_of(s));
  }

  std::ranges::sort(accesses);
  accesses.erase(std::unique(accesses.begin(), accesses.end(),
                             [](const auto& a, const auto& b) {
                               return a.storage == b.storage && a.vertex == b.vertex;
                             }),
                 accesses.end());
  std::vector<storage_hazard> hazards;
  for (std::size_t first = 0; first < accesses.size();) {
    std::size_t last = first;
    while (last < accesses.size() && accesses[last].storage == accesses[first].storage) ++last;
    detail::order_accesses(std::span(accesses).subspan(first, last - first), hazards);
    first = last;
  }
  return hazards;
}

}  // namespace memopt
