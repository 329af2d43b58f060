#pragma once
// buffer_table: dense ids for the buffers of a tensor graph. Buffer b is one
// output (vertex, port); the outputs of the vertex with index i are the ids
// first[i] .. first[i + 1] - 1, port order. O(V) to build.

#include <memopt/graph/concepts.hpp>
#include <memopt/graph/tensor_traits.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memopt {

using buffer_id = std::size_t;

struct buffer_table {
  std::vector<buffer_id> first;        ///< num_vertices + 1 offsets, by vertex index
  std::vector<std::size_t> owner;      ///< vertex index of each buffer
  std::vector<std::uint64_t> bytes;    ///< size of each buffer
  std::vector<bool> persistent;        ///< by buffer: its vertex is persistent
  std::vector<bool> live_out;          ///< by buffer: a graph output

  [[nodiscard]] std::size_t size() const noexcept { return bytes.size(); }
  [[nodiscard]] std::size_t num_vertices() const noexcept { return first.size() - 1; }
  [[nodiscard]] std::size_t num_outputs(std::size_t i) const { return first[i + 1] - first[i]; }
  [[nodiscard]] buffer_id id(std::size_t i, std::size_t port) const { return first[i] + port; }
  [[nodiscard]] std::size_t port_of(buffer_id b) const { return b - first[owner[b]]; }
};

/// The buffers of g, with vertex `v` numbered index(v).
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] buffer_table make_buffer_table(const G& g, Index index = {}) {
  using traits = tensor_traits<G>;
  const std::size_t n = num_vertices(g);
  buffer_table table;
  table.first.assign(n + 1, 0);
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    table.first[index(v) + 1] = traits::num_outputs(g, v);
  }
  for (std::size_t i = 0; i < n; ++i) table.first[i + 1] += table.first[i];
  const std::size_t count = table.first[n];
  table.owner.resize(count);
  table.bytes.resize(count);
  table.persistent.resize(count);
  table.live_out.resize(count);
  for (const auto v : boost::make_iterator_range(vertices(g))) {
    const std::size_t i = index(v);
    const bool persistent = traits::is_persistent(g, v);
    for (std::size_t port = 0, k = table.num_outputs(i); port < k; ++port) {
      const buffer_id b = table.first[i] + port;
      table.owner[b] = i;
      table.bytes[b] = traits::output_bytes(g, v, port);
      table.persistent[b] = persistent;
      table.live_out[b] = traits::is_live_out(g, v, port);
    }
  }
  return table;
}

}  // namespace memopt
