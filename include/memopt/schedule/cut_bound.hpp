#pragma once
// memory_at_least_at_each_step: for each vertex u of a segment, the least
// memory of u's step over every set of vertices that may run before it (all
// of u's ancestors, none of its descendants), by one minimum cut per vertex;
// never below memory_every_order_sees (exact_bounds.hpp), which weighs each
// vertex unordered with u apart. Where u may reuse an input in place it
// counts the saving as if u read that input last. sharpen_by_cuts raises a
// search's bounds to it where that is affordable. docs/design.md, "The
// exact scheduler", has the closure problem behind it.

#include <memopt/detail/budget.hpp>
#include <memopt/schedule/segments.hpp>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memopt::detail {

/// Whether buffer x may be live after a step (kept, or read later).
inline bool outlives_its_step(const segment& seg, std::size_t x) { return seg.keep[x] || !seg.readers[x].empty(); }

/// What memory_at_least_at_each_step costs: vertices times arcs, one cut
/// problem per vertex.
inline std::uint64_t cut_work(const segment& seg) {
  std::uint64_t arcs = 2 * seg.size();
  for (const auto& preds : seg.preds) arcs += preds.size();
  for (std::size_t x = 0; x < seg.bytes.size(); ++x) {
    if (!outlives_its_step(seg, x)) continue;
    arcs += 2 + seg.triggers[x].size();
    if (!seg.keep[x]) arcs += 2 + seg.readers[x].size();
  }
  return arcs * seg.size();
}

/// For each vertex of `seg`, the bytes live during its step whatever ran
/// before it. O(cut_work(seg)) for each vertex's max-flow, in practice.
/// `go_on()` is asked before each vertex's cut: when it says no, the result
/// is empty (a stop flag or a deadline).
template <class GoOn = bool (*)()>
std::vector<std::uint64_t> memory_at_least_at_each_step(const segment& seg, GoOn go_on = [] { return true; }) {
  using traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using edge = traits::edge_descriptor;
  using vertex_properties = boost::property<
      boost::vertex_index_t, long,
      boost::property<boost::vertex_color_t, boost::default_color_type,
                      boost::property<boost::vertex_distance_t, long, boost::property<boost::vertex_predecessor_t, edge>>>>;
  using edge_properties = boost::property<
      boost::edge_capacity_t, std::int64_t,
      boost::property<boost::edge_residual_capacity_t, std::int64_t, boost::property<boost::edge_reverse_t, edge>>>;
  using flow_graph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, vertex_properties, edge_properties>;
  const std::size_t k = seg.size();
  // Choosing the set S run before u pays each buffer's bytes when S makes it
  // and leaves a reader out: with M_x "some vertex of S makes x" and Z_x
  // "every reader of x is in S", x costs bytes * (M_x - Z_x), Z_x implies M_x
  // and each reader, each maker implies M_x, and each vertex its predecessors.
  // A least-weight closure is a minimum s-t cut (Picard, 1976); a node on the
  // source side is in the closure. Nodes: the k vertices, then per buffer M_x
  // and Z_x, then source and sink.
  const std::size_t buffers = seg.bytes.size();
  const auto made = [&](std::size_t x) { return k + 2 * x; };
  const auto all_read = [&](std::size_t x) { return k + 2 * x + 1; };
  const std::size_t source = k + 2 * buffers, sink = source + 1;
  flow_graph g(sink + 1);
  auto capacity = boost::get(boost::edge_capacity, g);
  auto reverse = boost::get(boost::edge_reverse, g);
  const auto arc = [&](std::size_t from, std::size_t to) {
    const auto there = boost::add_edge(from, to, g).first;
    const auto back = boost::add_edge(to, from, g).first;
    capacity[there] = 0;
    capacity[back] = 0;
    reverse[there] = back;
    reverse[back] = there;
    return there;
  };
  std::int64_t forced = 1;  // more than any cut that respects the implications
  for (const auto b : seg.bytes) forced += static_cast<std::int64_t>(b);
  // "a in S implies b in S": cutting a -> b is never allowed.
  const auto implies = [&](std::size_t a, std::size_t b) { capacity[arc(a, b)] = forced; };
  for (std::size_t v = 0; v < k; ++v) {
    for (const auto p : seg.preds[v]) implies(v, p);
  }
  std::vector<std::size_t> maker(buffers, k);  // k: made before the segment
  for (std::size_t v = 0; v < k; ++v) {
    for (const auto x : seg.produces[v]) maker[x] = v;
  }
  std::int64_t constant = 0;  // bytes every set pays
  // made_at[x]: forces M_x when the step is one of x's triggers (it materialises x).
  std::vector<edge> made_at(buffers);
  for (std::size_t x = 0; x < buffers; ++x) {
    const auto bytes = static_cast<std::int64_t>(seg.bytes[x]);
    if (!outlives_its_step(seg, x)) continue;
    // M_x in S costs its bytes (M_x -> sink cut).
    capacity[arc(made(x), sink)] = bytes;
    if (!seg.triggers[x].empty()) {
      for (const auto t : seg.triggers[x]) implies(t, made(x));
      made_at[x] = arc(source, made(x));
    } else if (maker[x] < k) {
      implies(maker[x], made(x));
    } else {
      implies(source, made(x));
    }
    if (seg.keep[x]) continue;
    // Z_x in S gains its bytes back: out of S it pays them (source -> Z_x cut).
    capacity[arc(source, all_read(x))] = bytes;
    constant -= bytes;
    implies(all_read(x), made(x));
    for (const auto r : seg.readers[x]) implies(all_read(x), r);
  }
  // Per vertex u: u's ancestors forced in, u and its descendants out.
  std::vector<edge> force_in(k), force_out(k);
  for (std::size_t v = 0; v < k; ++v) {
    force_in[v] = arc(source, v);
    force_out[v] = arc(v, sink);
  }

  const auto& preds = seg.preds;
  std::vector<std::vector<std::size_t>> succs(k);
  for (std::size_t v = 0; v < k; ++v) {
    for (const auto p : seg.preds[v]) succs[p].push_back(v);
  }
  std::vector<char> side(k);
  std::vector<std::size_t> stack;
  const auto mark = [&](std::size_t u, const std::vector<std::vector<std::size_t>>& next, char value) {
    stack.assign(1, u);
    while (!stack.empty()) {
      const std::size_t v = stack.back();
      stack.pop_back();
      for (const auto w : next[v]) {
        if (side[w] == value) continue;
        side[w] = value;
        stack.push_back(w);
      }
    }
  };
  std::vector<std::uint64_t> at_least(k);
  for (std::size_t u = 0; u < k; ++u) {
    if (!go_on()) return {};
    std::ranges::fill(side, 0);
    mark(u, preds, 1);   // ancestors
    side[u] = 2;
    mark(u, succs, 2);   // descendants
    for (std::size_t v = 0; v < k; ++v) {
      capacity[force_in[v]] = side[v] == 1 ? forced : 0;
      capacity[force_out[v]] = side[v] == 2 ? forced : 0;
    }
    for (const auto x : seg.materialises[u]) {
      if (outlives_its_step(seg, x)) capacity[made_at[x]] = forced;
    }
    const std::int64_t cut = boost::boykov_kolmogorov_max_flow(g, source, sink);
    for (const auto x : seg.materialises[u]) {
      if (outlives_its_step(seg, x)) capacity[made_at[x]] = 0;
    }
    const auto least_live = static_cast<std::uint64_t>(std::max<std::int64_t>(0, cut + constant));
    at_least[u] = seg.base + seg.least_step_bytes(u) + least_live;
  }
  return at_least;
}

/// A segment's cut problems may cost this many arcs times vertices (about
/// a second); a unit of a search budget pays for 64 of them.
inline constexpr std::uint64_t max_cut_work = std::uint64_t{1} << 27;
inline constexpr std::uint64_t cut_work_per_unit = 64;

/// Raises `bounds` (per step of `seg`) to the cut bound when max_cut_work
/// and `budget`'s work limit allow it, billing the budget; a stop flag or
/// the deadline ends it between two cuts, leaving `bounds` as they were.
inline void sharpen_by_cuts(const segment& seg, std::vector<std::uint64_t>& bounds, search_budget& budget) {
  const std::uint64_t work = cut_work(seg), units = work / cut_work_per_unit + 1;
  if (work > max_cut_work || !budget.can_spend(units)) return;
  const auto at_least = memory_at_least_at_each_step(seg, [&] { return !budget.exhausted(); });
  if (at_least.empty()) return;
  budget.spend(units);
  for (std::size_t u = 0; u < seg.size(); ++u) bounds[u] = std::max(bounds[u], at_least[u]);
}

}  // namespace memopt::detail
