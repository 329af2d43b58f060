#pragma once
// In-place and view aliasing: which buffers may live in the storage of an
// input (tensor_traits::alias_of). Output b of vertex v takes the storage of
// its alias i when, in this schedule, v is i's last reader (i dies where b is
// born), i is neither persistent nor a graph output, b is no larger than i,
// and no other output of v took i already. Chains share one storage: its
// root, the first buffer of the chain.
//
// alias_storage gives storage[b] (b itself when b keeps its own); pass it to
// heap_buffers_of (options.storage) to plan one buffer per storage, then
// share_offsets to give each member its root's offset. O(V + buffers).

#include <memopt/graph/concepts.hpp>
#include <memopt/graph/tensor_traits.hpp>
#include <memopt/heap/problem.hpp>
#include <memopt/liveness/liveness.hpp>

#include <algorithm>
#include <numeric>
#include <span>
#include <vector>

namespace memopt {

template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::vector<buffer_id> alias_storage(const G& g, const liveness_result& live,
                                                   Index index = {}) {
  using traits = tensor_traits<G>;
  const buffer_table& table = live.buffers;
  std::vector<buffer_id> storage(table.size());
  std::iota(storage.begin(), storage.end(), buffer_id{0});
  std::vector<bool> taken(table.size(), false);  // an input already overwritten
  // Producers before consumers: by step, so a chain's root is settled first.
  std::vector<buffer_id> by_step(table.size());
  std::iota(by_step.begin(), by_step.end(), buffer_id{0});
  std::ranges::stable_sort(by_step, {}, [&](buffer_id b) { return live.intervals[b].first; });
  std::vector<vertex_t<G>> vertex_of(table.num_vertices());
  for (const auto v : boost::make_iterator_range(vertices(g))) vertex_of[index(v)] = v;
  for (const buffer_id b : by_step) {
    if (table.persistent[b]) continue;
    const auto alias = traits::alias_of(g, vertex_of[table.owner[b]], table.port_of(b));
    if (!alias) continue;
    const buffer_id i = table.id(index(alias->vertex), alias->port);
    if (table.persistent[i] || table.live_out[i] || taken[i] || table.bytes[b] > table.bytes[i] ||
        live.intervals[i].last != live.intervals[b].first || i == b) {
      continue;
    }
    taken[i] = true;
    storage[b] = storage[i];
  }
  return storage;
}

/// Gives every buffer its storage root's offset.
inline void share_offsets(heap_plan& plan, std::span<const buffer_id> storage) {
  for (buffer_id b = 0; b < storage.size(); ++b) plan.offsets[b] = plan.offsets[storage[b]];
}

}  // namespace memopt
