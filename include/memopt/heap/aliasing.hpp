#pragma once
// May-aliasing (tensor_traits::alias_of): which storages may take over the
// storage of an input that dies where they are born. The graph's own storages
// (views and in-place results, buffer_table::storage) are facts and come
// first; on top of them, the storage of output b of vertex v takes the
// storage of b's may-alias i when, in this schedule, i's storage dies at v's
// step, is neither persistent nor a graph output, is no smaller than b's, and
// was not taken by another output already. Chains share one storage: its
// root, the first buffer of the chain.
//
// alias_storage gives storage[b] (the root whose storage b lives in); pass it
// to heap_buffers_of (options.storage) to plan one buffer per storage, then
// share_offsets to give each member its root's offset. O(V + buffers).

#include <memopt/graph/concepts.hpp>
#include <memopt/graph/index_map.hpp>
#include <memopt/graph/tensor_traits.hpp>
#include <memopt/heap/lifetimes.hpp>
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
  std::vector<buffer_id> storage = table.storage;
  std::vector<bool> taken(table.size(), false);  // a storage already taken over
  // Producers before consumers: by step, so a chain's root is settled first.
  std::vector<buffer_id> by_step(table.size());
  std::iota(by_step.begin(), by_step.end(), buffer_id{0});
  std::ranges::stable_sort(by_step, {}, [&](buffer_id b) { return live.intervals[b].first; });
  const auto vertex_of = vertices_by_index(g, index);
  for (const buffer_id b : by_step) {
    if (table.persistent[b] || table.scratch[b]) continue;
    const auto alias = traits::alias_of(g, vertex_of[table.owner[b]], table.port_of(b));
    if (!alias) continue;
    const buffer_id i = table.storage[table.id(index(alias->vertex), alias->port)];
    const buffer_id own = table.storage[b];
    if (table.persistent[i] || table.live_out[i] || taken[i] || i == own || storage[own] != own ||
        table.bytes[own] > table.bytes[i] || live.intervals[i].last != live.intervals[own].first) {
      continue;
    }
    taken[i] = true;
    storage[own] = storage[i];
  }
  // Members of a storage that was taken over follow its new root.
  for (buffer_id b = 0; b < storage.size(); ++b) storage[b] = storage[storage[b]];
  return storage;
}

/// Gives every buffer its storage root's offset.
inline void share_offsets(heap_plan& plan, std::span<const buffer_id> storage) {
  for (buffer_id b = 0; b < storage.size(); ++b) plan.offsets[b] = plan.offsets[storage[b]];
}

}  // namespace memopt
