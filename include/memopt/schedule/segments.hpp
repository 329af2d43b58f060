#pragma once
// Splitting a scheduling problem where every order agrees: the exact
// scheduler's first stage (exact.hpp), and the lower bound's.
//
// Inert vertices (no transient outputs, no transient reads, only inert
// predecessors: weights, constants, views of them) change no step's memory
// wherever they run, so they run first. Floating vertices (only inert
// predecessors, every transient output read or a graph output, at least one
// successor) are best run right before the first of their successors: later
// only shortens their outputs' lives, and their own step never exceeds that
// successor's. So their outputs are modelled as materialising when the first
// successor runs, and they are placed there. Among the remaining vertices, a cut vertex
// is comparable with every one of them (each is its ancestor or descendant):
// every order puts it at the same position. Cut vertices split the order into
// segments that can be ordered independently; memory within a segment is a
// constant base (buffers crossing the whole segment) plus what the segment's
// own order decides.
//
// A vertex that makes no bytes (its outputs are views, or none), has only
// inert or floating predecessors, and reads only floating storages that one
// of its successors reads too (an index into a weight's sigmoid, a view of a
// cast weight) floats as well: its step adds nothing, and its read is never
// a storage's last. Otherwise such side chains would be incomparable with the
// vertices around them and leave no cut vertex in a whole network.
//
// In-place reuse (buffer_table::takes_over) changes only the step of the op
// that takes a storage over, by the bytes of its output (the bytes are equal,
// so what stays live after the step is the same): a segment's step at v
// saves each of v's reuses whose buffer v is the last reader of, which the
// set of vertices run decides. Inert and floating vertices never save (they
// read nothing transient, make nothing, or never read a storage last).

#include <memopt/graph/compact.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace memopt::detail {

enum class vertex_role : unsigned char { normal, inert, floating };

/// The role of each vertex (see above); `order` is topological.
inline std::vector<vertex_role> vertex_roles(const compact_graph& g, const std::vector<std::size_t>& order) {
  std::vector<vertex_role> role(g.num_vertices(), vertex_role::normal);
  const auto& buffers = g.buffers;
  const auto transient = [&](buffer_id b) { return !buffers.persistent[b] && buffers.bytes[b] > 0; };
  for (const auto v : order) {  // predecessors are decided first
    bool after_inert_only = true, after_quiet_only = true;
    for (const auto p : g.predecessors[v]) {
      after_inert_only = after_inert_only && role[p] == vertex_role::inert;
      after_quiet_only = after_quiet_only && role[p] != vertex_role::normal;
    }
    if (!after_quiet_only) continue;
    bool makes = false, reads = false, all_used = true, reads_floating_only = true;
    for (buffer_id b = buffers.first[v]; b < buffers.first[v + 1]; ++b) {
      if (!transient(b)) continue;
      makes = true;
      all_used = all_used && (g.readers.size(b) > 0 || buffers.live_out[b]);
    }
    for (const auto b : g.reads[v]) {
      if (!transient(b)) continue;
      reads = true;
      const auto read_later = [&](auto s) { return std::ranges::count(g.reads[s], b) > 0; };
      reads_floating_only = reads_floating_only && role[buffers.owner[b]] == vertex_role::floating &&
                            std::ranges::any_of(g.successors[v], read_later);
    }
    if (after_inert_only && !makes && !reads) {
      role[v] = vertex_role::inert;
    } else if (g.successors.size(v) > 0 && ((!reads && all_used) || (!makes && reads_floating_only))) {
      role[v] = vertex_role::floating;
    }
  }
  return role;
}

/// The normal vertices a floating vertex runs for: its normal successors and
/// those of its floating successors. It runs right before the first of them.
inline std::vector<std::size_t> floating_anchors(const compact_graph& g, const std::vector<vertex_role>& role,
                                                 std::size_t floating) {
  std::vector<std::size_t> anchors, pending{floating};
  std::unordered_set<std::size_t> seen{floating};
  while (!pending.empty()) {
    const std::size_t u = pending.back();
    pending.pop_back();
    for (const std::size_t s : g.successors[u]) {
      if (seen.insert(s).second) (role[s] == vertex_role::floating ? pending : anchors).push_back(s);
    }
  }
  return anchors;
}

/// A segment: the vertices at positions [first, last) of the reference order
/// of non-inert vertices, with its memory accounting in local terms.
struct segment {
  std::vector<std::size_t> vertices;                ///< global ids, reference order
  std::vector<std::vector<std::size_t>> preds;      ///< local predecessors within the segment
  std::uint64_t base = 0;                           ///< bytes live throughout the segment
  std::vector<std::uint64_t> bytes;                 ///< tracked buffers' sizes
  std::vector<std::vector<std::size_t>> readers;    ///< tracked buffer -> local readers
  std::vector<char> keep;                           ///< tracked buffer outlives its readers (escapes)
  std::vector<std::vector<std::size_t>> reads;      ///< local vertex -> tracked buffers it reads
  std::vector<std::vector<std::size_t>> produces;   ///< local vertex -> tracked buffers it makes
  std::vector<std::vector<std::size_t>> triggers;   ///< tracked floating buffer -> local vertices
                                                    ///< the first of which to run materialises it
  std::vector<std::vector<std::size_t>> materialises;  ///< local vertex -> floating buffers it may materialise
  std::vector<std::uint64_t> step_bytes;            ///< local vertex -> transient bytes of its outputs
  /// local vertex -> (tracked buffer, bytes): an output of it that takes over
  /// that buffer's storage when it is the buffer's last reader (in-place reuse)
  std::vector<std::vector<std::pair<std::size_t, std::uint64_t>>> reuses;
  std::vector<std::uint64_t> reusable_bytes;        ///< local vertex -> the most its reuses save
  std::uint64_t start_bytes = 0;                    ///< base + tracked inputs, before the first step

  /// The least memory v's step adds to what is live: its outputs, less what
  /// they may reuse.
  [[nodiscard]] std::uint64_t least_step_bytes(std::size_t v) const { return step_bytes[v] - reusable_bytes[v]; }

  [[nodiscard]] std::size_t size() const { return vertices.size(); }

  /// Whether local vertex v is in `set` (a bit per local vertex).
  static bool has(const std::uint64_t* set, std::size_t v) { return (set[v / 64] >> (v % 64)) & 1U; }

  /// Running v right after the vertices of `ran`, which leave `live` bytes:
  /// the memory of v's step and the bytes live after it.
  [[nodiscard]] std::pair<std::uint64_t, std::uint64_t> step_after(const std::uint64_t* ran, std::uint64_t live,
                                                                   std::size_t v) const {
    const auto last_reader = [&](std::size_t x) {
      return std::ranges::all_of(readers[x], [&](std::size_t r) { return r == v || has(ran, r); });
    };
    for (const auto x : materialises[v]) {
      if (std::ranges::none_of(triggers[x], [&](std::size_t t) { return has(ran, t); })) live += bytes[x];
    }
    std::uint64_t step = live + step_bytes[v];
    for (const auto& [x, saved] : reuses[v]) {
      if (last_reader(x)) step -= saved;  // reuses name no kept buffer
    }
    for (const auto x : produces[v]) {
      if (keep[x] || !readers[x].empty()) live += bytes[x];
    }
    for (const auto x : reads[v]) {
      if (!keep[x] && last_reader(x)) live -= bytes[x];
    }
    return {step, live};
  }

  /// Peak of a local order, by the memory model restricted to the segment.
  [[nodiscard]] std::uint64_t peak_of(const std::vector<std::size_t>& local_order) const {
    return profile(local_order).first;
  }

  /// Peak of a local order and the position in it of the first step reaching it.
  [[nodiscard]] std::pair<std::uint64_t, std::size_t> profile(const std::vector<std::size_t>& local_order) const {
    std::vector<std::size_t> pending(bytes.size());
    for (std::size_t x = 0; x < bytes.size(); ++x) pending[x] = readers[x].size();
    std::vector<char> materialised(bytes.size(), 0);
    std::uint64_t live = start_bytes, peak = start_bytes;
    std::size_t peak_at = 0;
    for (std::size_t t = 0; t < local_order.size(); ++t) {
      const std::size_t v = local_order[t];
      for (const auto x : materialises[v]) {
        if (!materialised[x]) live += bytes[x];
        materialised[x] = 1;
      }
      std::uint64_t step = live + step_bytes[v];
      for (const auto& [x, saved] : reuses[v]) {
        if (pending[x] == 1 && !keep[x]) step -= saved;
      }
      if (step > peak) {
        peak = step;
        peak_at = t;
      }
      for (const auto x : produces[v]) {
        if (keep[x] || !readers[x].empty()) live += bytes[x];
      }
      for (const auto x : reads[v]) {
        if (--pending[x] == 0 && !keep[x]) live -= bytes[x];
      }
    }
    return {peak, peak_at};
  }
};

/// Where the normal vertices fall among the segments.
struct segment_map {
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> pos;         ///< vertex -> position among the normal vertices (none: not normal)
  std::vector<std::size_t> segment_of;  ///< position -> segment
  std::vector<std::size_t> local;       ///< vertex -> index within its segment
};

/// The first position of each segment, then m: position 0, every cut and
/// each position of `also_start`. `sigma` lists the normal vertices in order.
inline std::vector<std::size_t> segment_starts(const compact_graph& g, const std::vector<std::size_t>& sigma,
                                               const std::vector<std::size_t>& pos,
                                               const std::vector<std::size_t>& also_start) {
  const std::size_t m = sigma.size();
  // Position p is a cut when sigma[p] is the only source of positions >= p and
  // the only sink of positions <= p. A vertex u is a source of the suffix from
  // p for p in (latest predecessor, pos(u)], a sink of the prefix to p for p in
  // [pos(u), earliest successor): count both with difference arrays.
  std::vector<long> sources(m + 1, 0), sinks(m + 1, 0);
  for (std::size_t p = 0; p < m; ++p) {
    const std::size_t u = sigma[p];
    std::size_t latest_pred = 0;
    bool has_pred = false;
    for (const auto q : g.predecessors[u]) {
      if (pos[q] == segment_map::none) continue;
      latest_pred = has_pred ? std::max(latest_pred, pos[q]) : pos[q];
      has_pred = true;
    }
    ++sources[has_pred ? latest_pred + 1 : 0];
    --sources[p + 1];
    std::size_t earliest_succ = m;
    for (const auto s : g.successors[u]) {
      if (pos[s] != segment_map::none) earliest_succ = std::min(earliest_succ, pos[s]);
    }
    ++sinks[p];
    --sinks[earliest_succ];
  }
  std::vector<std::size_t> starts;
  long open_sources = 0, open_sinks = 0;
  for (std::size_t p = 0; p < m; ++p) {
    open_sources += sources[p];
    open_sinks += sinks[p];
    if (p == 0 || (open_sources == 1 && open_sinks == 1)) starts.push_back(p);
  }
  for (const auto p : also_start) {
    if (p < m) starts.push_back(p);
  }
  std::ranges::sort(starts);
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  starts.push_back(m);
  return starts;
}

/// Each segment's local predecessors and step bytes.
inline void add_local_structure(const compact_graph& g, const segment_map& map, std::vector<segment>& segments) {
  for (auto& seg : segments) {
    const std::size_t k = seg.size();
    seg.preds.resize(k);
    seg.reads.resize(k);
    seg.produces.resize(k);
    seg.materialises.resize(k);
    seg.reuses.resize(k);
    seg.step_bytes.assign(k, 0);
    seg.reusable_bytes.assign(k, 0);
    for (std::size_t i = 0; i < k; ++i) {
      const auto v = seg.vertices[i];
      for (const auto q : g.predecessors[v]) {
        const std::size_t at = map.pos[q];
        if (at != segment_map::none && map.segment_of[at] == map.segment_of[map.pos[v]]) {
          seg.preds[i].push_back(map.local[q]);
        }
      }
      for (buffer_id b = g.buffers.first[v]; b < g.buffers.first[v + 1]; ++b) {
        if (!g.buffers.persistent[b]) seg.step_bytes[i] += g.buffers.bytes[b];
      }
    }
  }
}

/// Tracks transient buffer b in its producer's segment P (made there,
/// escaping when it outlives P) and in its last reader's segment L (an input
/// freed there; L is beyond the last segment for a graph output). Returns
/// {P, L}: between them b is base.
inline std::pair<std::size_t, std::size_t> track_buffer(const compact_graph& g, const std::vector<vertex_role>& role,
                                                        const segment_map& map, std::vector<segment>& segments,
                                                        buffer_id b) {
  const auto& pos = map.pos;
  const auto& local = map.local;
  const std::size_t producer = g.buffers.owner[b];
  const bool floating = role[producer] == vertex_role::floating;
  // A floating buffer starts where the first anchor of its producer runs,
  // which is in the earliest segment among theirs. Floating readers are never
  // a buffer's last (see vertex_roles).
  const auto anchors = floating ? floating_anchors(g, role, producer) : std::vector<std::size_t>{};
  std::size_t first = segment_map::none, last = 0;
  if (floating) {
    for (const auto s : anchors) first = std::min(first, pos[s]);
    last = first;
  } else {
    first = last = pos[producer];
  }
  for (const auto r : g.readers[b]) {
    if (role[r] != vertex_role::floating) last = std::max(last, pos[r]);
  }
  const std::size_t P = map.segment_of[first];
  const std::size_t L = g.buffers.live_out[b] ? segments.size() : map.segment_of[last];
  const std::uint64_t bytes = g.buffers.bytes[b];
  auto& sp = segments[P];
  const std::size_t xp = sp.bytes.size();
  sp.bytes.push_back(bytes);
  sp.keep.push_back(L != P ? 1 : 0);
  sp.readers.emplace_back();
  sp.triggers.emplace_back();
  if (floating) {
    for (const auto s : anchors) {
      if (map.segment_of[pos[s]] != P) continue;
      sp.triggers[xp].push_back(local[s]);
      sp.materialises[local[s]].push_back(xp);
    }
  } else {
    sp.produces[local[producer]].push_back(xp);
  }
  std::size_t xl = segment_map::none;
  if (L != P && L < segments.size()) {
    auto& sl = segments[L];
    xl = sl.bytes.size();
    sl.bytes.push_back(bytes);
    sl.keep.push_back(0);
    sl.readers.emplace_back();
    sl.triggers.emplace_back();
    sl.start_bytes += bytes;
  }
  for (const auto r : g.readers[b]) {
    if (role[r] == vertex_role::floating) continue;
    const std::size_t s = map.segment_of[pos[r]];
    if (s != P && s != L) continue;
    const std::size_t x = s == P ? xp : xl;
    auto& seg = segments[s];
    seg.readers[x].push_back(local[r]);
    seg.reads[local[r]].push_back(x);
    for (buffer_id out = g.buffers.first[r]; out < g.buffers.first[r + 1]; ++out) {
      if (g.buffers.takes_over[out] != b || seg.keep[x]) continue;  // a kept buffer never dies here
      seg.reuses[local[r]].push_back({x, g.buffers.bytes[out]});
      seg.reusable_bytes[local[r]] += g.buffers.bytes[out];
    }
  }
  return {P, L};
}

/// The segments of `order` (a topological order), inert and floating
/// vertices left out (floating ones' outputs are tracked where they materialise).
/// Segments start at every cut vertex and at each position of `also_start`
/// (positions among the normal vertices): keeping every vertex in its
/// segment, each segment's order is free of the others'.
inline std::vector<segment> split_into_segments(const compact_graph& g, const std::vector<std::size_t>& order,
                                                const std::vector<vertex_role>& role,
                                                const std::vector<std::size_t>& also_start = {}) {
  const std::size_t n = g.num_vertices();
  std::vector<std::size_t> sigma;  // the normal vertices in order
  for (const auto v : order) {
    if (role[v] == vertex_role::normal) sigma.push_back(v);
  }
  segment_map map;
  map.pos.assign(n, segment_map::none);
  for (std::size_t p = 0; p < sigma.size(); ++p) map.pos[sigma[p]] = p;
  const auto starts = segment_starts(g, sigma, map.pos, also_start);

  std::vector<segment> segments(starts.size() - 1);
  map.segment_of.resize(sigma.size());
  map.local.assign(n, segment_map::none);
  for (std::size_t s = 0; s + 1 < starts.size(); ++s) {
    for (std::size_t p = starts[s]; p < starts[s + 1]; ++p) {
      map.segment_of[p] = s;
      map.local[sigma[p]] = segments[s].vertices.size();
      segments[s].vertices.push_back(sigma[p]);
    }
  }
  add_local_structure(g, map, segments);

  // Buffers live throughout the segments strictly between P and L are base.
  std::vector<std::uint64_t> base_delta(segments.size() + 1, 0);
  std::vector<std::uint64_t> base_undo(segments.size() + 1, 0);
  for (buffer_id b = 0; b < g.buffers.size(); ++b) {
    if (g.buffers.persistent[b] || g.buffers.bytes[b] == 0) continue;
    const auto [P, L] = track_buffer(g, role, map, segments, b);
    if (P + 1 < L) {
      base_delta[P + 1] += g.buffers.bytes[b];
      base_undo[L] += g.buffers.bytes[b];
    }
  }
  std::uint64_t base = 0;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    base = base + base_delta[s] - base_undo[s];
    segments[s].base = base;
    segments[s].start_bytes += base;
  }
  return segments;
}

}  // namespace memopt::detail
