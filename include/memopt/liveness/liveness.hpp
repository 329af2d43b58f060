#pragma once
// The memory model, written once (DESIGN.md). For an order of the vertices:
// - buffer b, produced at step def(b), is live on [def(b), last_use(b)], the
//   step of its last reader; a vertex reading b twice is one reader;
// - a buffer nobody reads is live on [def, def]; a live-out buffer to the end;
// - during a step the op's inputs and outputs are live together;
// - control edges order ops and carry no bytes;
// - persistent buffers live for the whole run and are reported apart:
//   peak_bytes and timeline count transient buffers only;
// - storages (graph/buffers.hpp): a view or in-place result lives in the
//   storage of the tensor it aliases. A storage counts its root's bytes once
//   and is live from the root's step to the last step that reads or defines
//   any of its tensors; every buffer of a storage gets the storage's interval
//   (the aliases add no bytes). An order must keep the hazards of in-place
//   writes (graph/storage.hpp) as it keeps edges;
// - one option (liveness_options): count_unread_outputs = false drops every
//   storage no op reads (grappler's accounting of fetched results); by
//   default they count, for a step or to the end when live-out;
// - an op's scratch (tensor_traits::scratch_bytes) is a buffer nobody reads,
//   live during its step only, counted under either option;
// - in-place reuse (order-dependent): an output with a may-alias
//   (buffer_table::takes_over) takes over its source's storage when its op is
//   that storage's last reader in the order: it adds no bytes at its step and
//   the storage lives on as its (liveness_result::reused lists them).
// O(V + E) for one order. Every family takes its peaks from here. It runs on
// the caller's graph, or on a compact_graph snapshot of it (the schedulers
// evaluate every order they try on the one snapshot they took).
//
// Throws cycle_error (with the cycle) when g has one, else
// not_topological_error (the order, edges or storage hazards),
// bad_port_error (an edge reading a port its source lacks), bad_alias_error
// (an alias its vertex does not read, or a loop of aliases),
// size_overflow_error (a live sum beyond 64 bits).

#include <memopt/detail/checked.hpp>
#include <memopt/detail/edge_walk.hpp>
#include <memopt/error.hpp>
#include <memopt/graph/buffers.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/storage.hpp>
#include <memopt/graph/tensor_traits.hpp>
#include <memopt/graph/topology.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

namespace memopt {

/// Steps of a schedule, both ends included.
struct live_interval {
  std::size_t first = 0;
  std::size_t last = 0;
  [[nodiscard]] bool contains(std::size_t t) const noexcept { return first <= t && t <= last; }
  friend bool operator==(const live_interval&, const live_interval&) = default;
};

/// The memory model's one option.
struct liveness_options {
  /// false: a storage no op reads costs nothing, even a live-out one (a
  /// fetched result), as grappler's virtual scheduler counts.
  bool count_unread_outputs = true;
};

struct liveness_result {
  buffer_table buffers;
  std::vector<live_interval> intervals;  ///< by buffer; persistent ones span the whole run
  std::vector<std::uint64_t> timeline;   ///< transient bytes live at each step
  std::uint64_t peak_bytes = 0;          ///< max of timeline (0 for an empty graph)
  std::size_t peak_step = 0;             ///< first step reaching peak_bytes
  std::vector<buffer_id> live_at_peak;   ///< transient storages (roots) live at peak_step, by id
  std::uint64_t persistent_bytes = 0;    ///< sum of the persistent buffers
  std::vector<buffer_id> reused;         ///< outputs that took over a dying storage, by step
};

namespace detail {

/// In-place reuse, once each storage's interval is known: output b takes over
/// the storage buffers.takes_over[b] names when b's step is that storage's
/// last (its vertex is the storage's last reader); b then adds no bytes and
/// the storage, under its root, lives on as long as b's does. Outputs are
/// settled in step order, so a chain of reuses ends at its first storage.
/// Since the bytes are equal, the timeline only drops at the taking step.
inline void take_over_dying_storages(liveness_result& r) {
  buffer_table& buffers = r.buffers;
  std::vector<buffer_id> takers;
  for (buffer_id b = 0; b < buffers.size(); ++b) {
    const buffer_id source = buffers.takes_over[b];
    if (source != no_buffer && r.intervals[source].last == r.intervals[b].first) takers.push_back(b);
  }
  if (takers.empty()) return;
  std::ranges::stable_sort(takers, {}, [&](buffer_id b) { return r.intervals[b].first; });
  std::vector<buffer_id> root(buffers.size());
  std::iota(root.begin(), root.end(), buffer_id{0});
  for (const buffer_id b : takers) {
    const buffer_id into = root[buffers.takes_over[b]];
    root[b] = into;
    r.intervals[into].last = std::max(r.intervals[into].last, r.intervals[b].last);
    buffers.bytes[b] = 0;
    r.reused.push_back(b);
  }
  for (buffer_id b = 0; b < buffers.size(); ++b) {
    const buffer_id into = root[buffers.storage[b]];
    if (into != buffers.storage[b] && buffers.owns_storage(b)) ++buffers.aliased;
    buffers.storage[b] = into;
    if (buffers.live_out[b]) buffers.live_out[into] = true;
  }
  for (buffer_id b = 0; b < buffers.size(); ++b) buffers.live_out[b] = buffers.live_out[buffers.storage[b]];
}

/// The model once each buffer's own interval is known (its step and last
/// reading step, or the whole run when persistent): storages, timeline, peak.
/// vertex_at(t) names the vertex of step t in an overflow error (called only
/// then); read[b] says whether an op reads buffer b (used when unread outputs
/// are not counted).
template <class VertexAt>
void finish_liveness(liveness_result& r, std::size_t n, VertexAt&& vertex_at, const std::vector<bool>& read,
                     const liveness_options& options) {
  std::vector<bool> counted;
  if (!options.count_unread_outputs) {
    counted.assign(r.buffers.size(), false);
    for (buffer_id b = 0; b < r.buffers.size(); ++b) {
      if (read[b] || r.buffers.scratch[b]) counted[r.buffers.storage[b]] = true;
    }
  }
  // A storage lives until its last tensor does; each tensor lives as long.
  // (Without aliases every buffer is its own storage.)
  if (r.buffers.aliased > 0) {
    for (buffer_id b = 0; b < r.buffers.size(); ++b) {
      const buffer_id root = r.buffers.storage[b];
      r.intervals[root].last = std::max(r.intervals[root].last, r.intervals[b].last);
    }
  }
  take_over_dying_storages(r);
  if (r.buffers.aliased > 0) {
    for (buffer_id b = 0; b < r.buffers.size(); ++b) r.intervals[b] = r.intervals[r.buffers.storage[b]];
  }
  const buffer_table& buffers = r.buffers;
  const auto counts = [&](buffer_id b) { return counted.empty() || counted[buffers.storage[b]]; };

  // Bytes allocated at each step (first held in the timeline) and freed after
  // it; their running sum is the timeline. Each partial sum is bounded by some
  // step's live bytes, so checking every addition finds exactly the
  // overflowing live sums.
  std::vector<std::uint64_t>& allocated = r.timeline;
  allocated.assign(n, 0);
  std::vector<std::uint64_t> freed(n, 0);
  for (buffer_id b = 0; b < buffers.size(); ++b) {
    const std::uint64_t bytes = counts(b) ? buffers.bytes[b] : 0;
    const std::size_t owner = buffers.owner[b];
    if (buffers.persistent[b]) {
      r.persistent_bytes = checked_add(r.persistent_bytes, bytes, owner);
      continue;
    }
    const live_interval live = r.intervals[b];
    allocated[live.first] = checked_add(allocated[live.first], bytes, owner);
    freed[live.last] = checked_add(freed[live.last], bytes, [&] { return vertex_at(live.last); });
  }
  std::uint64_t live_bytes = 0;
  for (std::size_t t = 0; t < n; ++t) {
    if (t > 0) live_bytes -= freed[t - 1];
    live_bytes = checked_add(live_bytes, allocated[t], [&] { return vertex_at(t); });
    r.timeline[t] = live_bytes;
    if (live_bytes > r.peak_bytes) {
      r.peak_bytes = live_bytes;
      r.peak_step = t;
    }
  }
  for (buffer_id b = 0; b < buffers.size(); ++b) {
    if (!buffers.persistent[b] && buffers.owns_storage(b) && counts(b) && r.intervals[b].contains(r.peak_step) &&
        n > 0) {
      r.live_at_peak.push_back(b);
    }
  }
}

/// Each buffer's interval before any read, in a run of n steps: its owner's
/// step, to the end when live-out, the whole run when persistent.
inline void start_intervals(liveness_result& r, const std::vector<std::size_t>& step, std::size_t n) {
  const buffer_table& buffers = r.buffers;
  r.intervals.resize(buffers.size());
  for (buffer_id b = 0; b < buffers.size(); ++b) {
    const std::size_t def = step[buffers.owner[b]];
    if (buffers.persistent[b]) {
      r.intervals[b] = {0, n - 1};
    } else {
      r.intervals[b] = {def, buffers.live_out[b] ? n - 1 : def};
    }
  }
}

/// Throws not_topological_error for the first hazard `step` breaks.
inline void require_hazards_kept(std::span<const storage_hazard> hazards, const std::vector<std::size_t>& step) {
  for (const storage_hazard& h : hazards) {
    if (step[h.after] <= step[h.before]) throw not_topological_error(h.fault(), h.after, h.before);
  }
}

}  // namespace detail

/// Live intervals, timeline and peak of `order` on g.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] liveness_result liveness(const G& g, std::span<const vertex_t<G>> order,
                                       Index index = {}, const liveness_options& options = {}) {
  using traits = tensor_traits<G>;
  liveness_result r;
  r.buffers = make_buffer_table(g, index);  // checks the index map first
  const auto step = detail::positions_of(g, order, index, [&](const order_violation& fault) {
    detail::throw_order_fault(g, fault, index);
  });
  const buffer_table& buffers = r.buffers;
  detail::start_intervals(r, step, step.size());
  std::vector<bool> read(buffers.size(), false);

  const auto out_edges_of = [&g](vertex_t<G> u) { return out_edges(u, g); };
  detail::for_each_vertex_fetching_edges(g, out_edges_of, [&](vertex_t<G> u) {
    const std::size_t i = index(u);
    for (const auto e : boost::make_iterator_range(out_edges(u, g))) {
      const std::size_t j = index(target(e, g));
      if (step[j] <= step[i]) detail::throw_order_fault(g, {order_fault::before_predecessor, j, i}, index);
      if (traits::is_control(g, e)) continue;
      const std::size_t port = traits::port(g, e);
      if (port >= buffers.num_outputs(i)) {
        throw bad_port_error(i, j, port, buffers.num_outputs(i));
      }
      const buffer_id b = buffers.id(i, port);
      read[b] = true;
      if (!buffers.persistent[b]) r.intervals[b].last = std::max(r.intervals[b].last, step[j]);
    }
  });
  detail::require_hazards_kept(storage_hazards(g, buffers, index), step);
  detail::finish_liveness(r, step.size(), [&](std::size_t t) { return index(order[t]); }, read, options);
  return r;
}

namespace detail {

/// Who made an order liveness_of_snapshot evaluates. A caller's order is
/// checked against every edge and hazard. A scheduler's, built from the
/// snapshot's own rows (which hold the hazards), keeps them by construction:
/// release builds check only that it is a permutation (the edge check is a
/// fifth of the evaluation at 10^6 vertices); debug builds check it all.
enum class order_maker { caller, scheduler };

/// snapshot_liveness's body; `buffers` is c's table, copied or moved in
/// (the model rewrites it: in-place reuse, merged storages).
inline liveness_result liveness_of_snapshot(const compact_graph& c, buffer_table buffers,
                                            std::span<const std::size_t> order, const liveness_options& options,
                                            order_maker maker = order_maker::caller) {
  liveness_result r;
  r.buffers = std::move(buffers);
  const std::size_t n = r.buffers.num_vertices();
  std::vector<std::size_t> step(n, unscheduled);
  for (std::size_t t = 0; t < order.size(); ++t) {
    const std::size_t i = order[t];
    if (i >= n) throw not_topological_error(order_fault::unknown_vertex, i);
    if (step[i] != unscheduled) throw not_topological_error(order_fault::duplicate, i);
    step[i] = t;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (step[i] == unscheduled) throw not_topological_error(order_fault::missing, i);
  }
#ifdef NDEBUG
  constexpr bool trust_schedulers = true;
#else
  constexpr bool trust_schedulers = false;
#endif
  if (maker == order_maker::caller || !trust_schedulers) {
    require_hazards_kept(c.hazards, step);
    for (std::size_t i = 0; i < n; ++i) {
      for (const std::size_t j : c.successors[i]) {
        if (step[j] <= step[i]) throw not_topological_error(order_fault::before_predecessor, j, i);
      }
    }
  }
  start_intervals(r, step, step.size());
  std::vector<bool> read(r.buffers.size(), false);
  for (buffer_id b = 0; b < r.buffers.size(); ++b) {
    read[b] = !c.readers[b].empty();
    if (r.buffers.persistent[b]) continue;
    for (const std::size_t j : c.readers[b]) r.intervals[b].last = std::max(r.intervals[b].last, step[j]);
  }
  finish_liveness(r, n, [&](std::size_t t) { return order[t]; }, read, options);
  return r;
}

}  // namespace detail

/// Live intervals, timeline and peak of `order` (dense vertex indices) on the
/// snapshot c of a graph: the same result as liveness() on the graph itself.
[[nodiscard]] inline liveness_result snapshot_liveness(const compact_graph& c,
                                                       std::span<const std::size_t> order,
                                                       const liveness_options& options = {}) {
  return detail::liveness_of_snapshot(c, c.buffers, order, options);
}

/// The same, taking c's buffer table rather than a copy (c's other rows stay
/// as they were; its table is left empty).
[[nodiscard]] inline liveness_result snapshot_liveness(compact_graph&& c, std::span<const std::size_t> order,
                                                       const liveness_options& options = {}) {
  return detail::liveness_of_snapshot(c, std::move(c.buffers), order, options);
}

}  // namespace memopt
