#pragma once
// check_sharing: every way a sharing_plan is wrong for g (empty = valid).
// Both forms check the bookkeeping: each transient buffer in one storage and
// each persistent one in none, every alias in its root's storage, storage
// bytes the largest member's, the totals, static buffers alone, one device per
// storage. Then, two graph storages (roots: an alias lives as long as its
// root's storage, buffer_table) sharing a blob must never be live together:
// - check_sharing(g, plan, order): under that order (liveness intervals and
//   the order's storages: an output that takes over a dying input's storage,
//   in-place reuse, is an alias of it there);
// - check_sharing(g, plan): under every order: of two members, one's producer
//   and all its readers reach the other's producer by a path of the graph.
// Members of a storage are checked in producer order, neighbour to neighbour
// (the relation is transitive). Reachability is computed 64 targets at a
// time, sweeping only the vertices between the earliest reader involved and
// the latest target: O(V + E + B log B) per batch in the worst case, far less
// when shared buffers are close in the graph. Throws what liveness throws for
// a bad order, cycle_error for a cyclic graph.

#include <memopt/detail/checked.hpp>
#include <memopt/detail/kahn.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/graph/topology.hpp>
#include <memopt/liveness/liveness.hpp>
#include <memopt/share/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace memopt {

enum class sharing_fault {
  wrong_size,        ///< storage_of does not have one entry per buffer
  unstored,          ///< a transient `buffer` is in no storage (or an unknown one)
  persistent_stored, ///< a persistent `buffer` is in a storage
  bad_bytes,         ///< the storage of `buffer` is not as large as its largest member
  bad_totals,        ///< total_bytes or unshared_bytes is not the sum it should be
  static_shared,     ///< a static `buffer` shares its storage with `other`
  devices_mixed,     ///< `buffer` and `other` share a storage across devices
  overlap,           ///< `buffer` and `other` share a storage and can be live together
  split_storage      ///< `buffer` lives in `other`'s storage (an alias) but not in its blob
};

struct sharing_violation {
  sharing_fault fault;
  buffer_id buffer = 0;
  buffer_id other = 0;
  friend bool operator==(const sharing_violation&, const sharing_violation&) = default;
};

namespace detail {

/// The bookkeeping checks; appends to `out`. Returns the members of each storage.
inline csr_rows<buffer_id> check_sharing_books(const compact_graph& c, const sharing_plan& plan,
                                               const share_options& options,
                                               std::vector<sharing_violation>& out) {
  const buffer_table& buffers = c.buffers;
  if (plan.storage_of.size() != buffers.size()) {
    out.push_back({sharing_fault::wrong_size});
    return {};
  }
  check_option_sizes(options, buffers.size());
  std::uint64_t unshared = 0;
  bool overflow = false;
  for (buffer_id b = 0; b < buffers.size(); ++b) {
    const bool stored = plan.storage_of[b] < plan.num_storages();
    if (buffers.persistent[b]) {
      if (plan.storage_of[b] != no_storage) out.push_back({sharing_fault::persistent_stored, b});
      continue;
    }
    if (!stored) out.push_back({sharing_fault::unstored, b});
    const buffer_id root = buffers.storage[b];
    if (stored && root != b && plan.storage_of[b] != plan.storage_of[root]) {
      out.push_back({sharing_fault::split_storage, b, root});
    }
    overflow = overflow || detail::add_overflows(unshared, buffers.bytes[b], unshared);
  }
  std::uint64_t total = 0;
  for (const std::uint64_t bytes : plan.storage_bytes) {
    overflow = overflow || detail::add_overflows(total, bytes, total);
  }
  if (overflow || total != plan.total_bytes || unshared != plan.unshared_bytes) {
    out.push_back({sharing_fault::bad_totals});
  }
  auto members = storage_members(plan);
  for (std::size_t s = 0; s < plan.num_storages(); ++s) {
    const auto m = members[s];
    std::uint64_t largest = 0;
    for (const buffer_id b : m) largest = std::max(largest, buffers.bytes[b]);
    if (m.empty() || largest != plan.storage_bytes[s]) {
      out.push_back({sharing_fault::bad_bytes, m.empty() ? 0 : m.front()});
    }
    for (std::size_t k = 1; k < m.size(); ++k) {
      if (buffers.owns_storage(m[k]) && device_of(options, m[k]) != device_of(options, buffers.storage[m[0]])) {
        out.push_back({sharing_fault::devices_mixed, buffers.storage[m[0]], m[k]});
      }
    }
    const auto other_root = [&](buffer_id b) {
      const auto it = std::ranges::find_if(m, [&](buffer_id x) { return buffers.storage[x] != buffers.storage[b]; });
      return it == m.end() ? no_buffer : *it;
    };
    for (const buffer_id b : m) {
      if (!is_static(c, options, b)) continue;
      if (const buffer_id other = other_root(b); other != no_buffer) {
        out.push_back({sharing_fault::static_shared, b, other});
      }
    }
  }
  return members;
}

/// The roots (graph storages) among the members of storage s, in the order
/// of `key` (ties by id).
template <class Key>
std::vector<buffer_id> members_by(const buffer_table& buffers, std::span<const buffer_id> members,
                                  Key&& key) {
  std::vector<buffer_id> sorted;
  for (const buffer_id b : members) {
    if (buffers.owns_storage(b)) sorted.push_back(b);
  }
  std::ranges::sort(sorted, [&](buffer_id a, buffer_id b) {
    return std::pair(key(a), a) < std::pair(key(b), b);
  });
  return sorted;
}

/// Does `from` reach `to` by a path of at least one edge? Answered for all
/// queries, 64 distinct targets at a time.
struct reach_query {
  std::size_t from, to;
  bool reaches = false;
};

inline void answer_reach_queries(const compact_graph& c, const std::vector<std::size_t>& order,
                                 std::span<reach_query> queries) {
  const std::size_t n = c.num_vertices();
  std::vector<std::size_t> position(n);
  for (std::size_t t = 0; t < n; ++t) position[order[t]] = t;
  std::vector<std::size_t> by_target(queries.size());
  for (std::size_t q = 0; q < queries.size(); ++q) by_target[q] = q;
  std::ranges::sort(by_target, [&](std::size_t a, std::size_t b) {
    return position[queries[a].to] < position[queries[b].to];
  });
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> slot(n, none);  // bit of a target within its batch
  std::vector<std::uint64_t> reach(n, 0);  // bit k: reaches target k of the batch
  std::vector<std::size_t> batch;
  for (std::size_t begin = 0, end = 0; begin < by_target.size(); begin = end) {
    std::size_t lowest = n;
    batch.clear();
    for (; end < by_target.size(); ++end) {
      const reach_query& q = queries[by_target[end]];
      if (slot[q.to] == none) {
        if (batch.size() == 64) break;
        slot[q.to] = batch.size();
        batch.push_back(q.to);
      }
      lowest = std::min(lowest, position[q.from]);
    }
    const std::size_t highest = position[batch.back()];
    for (std::size_t t = highest + 1; t-- > lowest;) {
      std::uint64_t bits = 0;
      for (const std::size_t w : c.successors[order[t]]) {
        if (position[w] > highest) continue;
        bits |= reach[w] | (slot[w] == none ? 0 : std::uint64_t{1} << slot[w]);
      }
      reach[order[t]] = bits;
    }
    for (std::size_t k = begin; k < end; ++k) {
      reach_query& q = queries[by_target[k]];
      q.reaches = ((reach[q.from] >> slot[q.to]) & 1U) != 0;
    }
    for (std::size_t t = lowest; t <= highest; ++t) reach[order[t]] = 0;
    for (const std::size_t to : batch) slot[to] = none;
  }
}

}  // namespace detail

/// Violations of `plan` when g runs in `order`.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::vector<sharing_violation> check_sharing(const G& g, const sharing_plan& plan,
                                                           std::span<const vertex_t<G>> order,
                                                           const share_options& options = {},
                                                           Index index = {}) {
  const auto live = liveness(g, order, index);
  compact_graph c = make_compact_graph(g, index);
  c.buffers = live.buffers;  // the order's storages: in-place reuse included
  std::vector<sharing_violation> out;
  const auto members = detail::check_sharing_books(c, plan, options, out);
  if (plan.storage_of.size() != c.buffers.size()) return out;
  for (std::size_t s = 0; s < plan.num_storages(); ++s) {
    const auto sorted = detail::members_by(c.buffers, members[s],
                                           [&](buffer_id b) { return live.intervals[b].first; });
    for (std::size_t k = 1; k < sorted.size(); ++k) {
      if (live.intervals[sorted[k - 1]].last >= live.intervals[sorted[k]].first) {
        out.push_back({sharing_fault::overlap, sorted[k - 1], sorted[k]});
      }
    }
  }
  return out;
}

/// Violations of `plan` under some order of g (DAG sharing).
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::vector<sharing_violation> check_sharing(const G& g, const sharing_plan& plan,
                                                           const share_options& options = {},
                                                           Index index = {}) {
  const compact_graph c = make_compact_graph(g, index);
  const auto order = detail::kahn_order(c);
  if (order.size() != c.num_vertices()) require_acyclic(g, index);
  std::vector<sharing_violation> out;
  const auto members = detail::check_sharing_books(c, plan, options, out);
  if (plan.storage_of.size() != c.buffers.size()) return out;
  std::vector<std::size_t> position(order.size());
  for (std::size_t t = 0; t < order.size(); ++t) position[order[t]] = t;

  // For neighbours a, b: the producer of a (when unread) or each reader of a
  // must reach the producer of b.
  struct pair_check {
    buffer_id a, b;
    std::size_t first_query, end_query;
  };
  std::vector<pair_check> pairs;
  std::vector<detail::reach_query> queries;
  const buffer_table& buffers = c.buffers;
  for (std::size_t s = 0; s < plan.num_storages(); ++s) {
    const auto sorted = detail::members_by(
        buffers, members[s], [&](buffer_id b) { return position[buffers.owner[b]]; });
    for (std::size_t k = 1; k < sorted.size(); ++k) {
      const buffer_id a = sorted[k - 1], b = sorted[k];
      const std::size_t target = buffers.owner[b];
      pair_check pair{a, b, queries.size(), 0};
      if (c.readers.size(a) == 0) queries.push_back({buffers.owner[a], target});
      for (const std::size_t r : c.readers[a]) queries.push_back({r, target});
      pair.end_query = queries.size();
      pairs.push_back(pair);
    }
  }
  detail::answer_reach_queries(c, order, queries);
  for (const auto& pair : pairs) {
    for (std::size_t q = pair.first_query; q < pair.end_query; ++q) {
      if (!queries[q].reaches) {
        out.push_back({sharing_fault::overlap, pair.a, pair.b});
        break;
      }
    }
  }
  return out;
}

}  // namespace memopt
