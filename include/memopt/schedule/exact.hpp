#pragma once
// exact_schedule: the minimum peak over all topological orders, anytime.
//
// Inert vertices run first, floating ones right before their first successor,
// and the rest splits at cut vertices into segments ordered independently
// (segments.hpp). Segments are solved highest peak first by A* over
// downward-closed vertex sets: a state is the set of vertices run, whose live
// bytes it determines; a path's cost is its largest step memory; the bound is
// the most memory a remaining vertex sees in every order (made by an ancestor,
// needed by a descendant) and the next step's. Paths reaching the same set
// keep the lower cost; a move that costs no more than the path and leaves no
// more live is taken alone (it can go first in some best completion); a
// segment whose peak cannot raise the graph's bound is not searched. When the
// peak stays above the bound, windows of consecutive ops around it are
// reordered exactly with everything else fixed. With a time or state limit it
// returns its best order and a certified lower bound (the least bound left
// open). docs/design.md has the arguments.
//
// Exponential in the worst case (it solves an NP-hard problem); limits keep
// it bounded. Throws cycle_error on a cyclic graph.

#include <memopt/detail/budget.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/schedule/best_of.hpp>
#include <memopt/schedule/result.hpp>
#include <memopt/schedule/segments.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <vector>

namespace memopt {

/// With a work_limit and no time limit, the result depends on the graph alone
/// (same order on any machine, under any load).
struct exact_options {
  std::optional<double> time_limit_seconds = 10.0;  ///< for the whole search; nullopt: none
  std::optional<std::uint64_t> work_limit;          ///< states expanded in the whole search
  std::size_t state_limit = 2'000'000;              ///< states stored for one segment
};

/// An order with its peak and a lower bound on every order's peak.
struct order_bounds {
  std::vector<std::size_t> order;  ///< dense vertex indices
  std::uint64_t peak_bytes = 0;
  std::uint64_t lower_bound_bytes = 0;
  bool proved_optimal = false;  ///< peak_bytes == lower_bound_bytes
};

namespace detail {

/// For each vertex of the segment, the bytes live during its step in every
/// order: its outputs, and each buffer made by one of its ancestors (or before
/// the segment) and still needed by it or one of its descendants. Ancestry by
/// bitsets, O(k^2 / 64 + buffers * k / 64); past 8192 vertices, only the
/// vertex's own reads and outputs.
inline std::vector<std::uint64_t> memory_every_order_sees(const segment& seg) {
  const std::size_t k = seg.size();
  std::vector<std::uint64_t> sees(k, seg.base);
  for (std::size_t u = 0; u < k; ++u) sees[u] += seg.step_bytes[u];
  constexpr std::size_t max_vertices = 8192;
  if (k > max_vertices) {
    std::vector<std::size_t> counted(seg.bytes.size(), k);
    for (std::size_t u = 0; u < k; ++u) {
      for (const auto* buffers : {&seg.reads[u], &seg.materialises[u]}) {
        for (const auto x : *buffers) {
          if (counted[x] != u) sees[u] += seg.bytes[x];
          counted[x] = u;
        }
      }
    }
    return sees;
  }
  const std::size_t words = (k + 63) / 64;
  // up[u]: u and its ancestors; down[u]: u and its descendants (local indices
  // follow a topological order).
  std::vector<std::uint64_t> up(k * words, 0), down(k * words, 0);
  const auto row = [&](std::vector<std::uint64_t>& bits, std::size_t u) { return bits.data() + u * words; };
  for (std::size_t u = 0; u < k; ++u) {
    row(up, u)[u / 64] |= std::uint64_t{1} << (u % 64);
    for (const auto p : seg.preds[u]) {
      for (std::size_t w = 0; w < words; ++w) row(up, u)[w] |= row(up, p)[w];
    }
  }
  for (std::size_t u = k; u-- > 0;) {
    row(down, u)[u / 64] |= std::uint64_t{1} << (u % 64);
    for (const auto p : seg.preds[u]) {
      for (std::size_t w = 0; w < words; ++w) row(down, p)[w] |= row(down, u)[w];
    }
  }
  std::vector<std::size_t> maker(seg.bytes.size(), k);  // k: made before the segment
  for (std::size_t u = 0; u < k; ++u) {
    for (const auto x : seg.produces[u]) maker[x] = u;
  }
  std::vector<std::uint64_t> made(words), needed(words);
  for (std::size_t x = 0; x < seg.bytes.size(); ++x) {
    // Steps by which x exists in every order, and steps after which it is still needed.
    if (!seg.triggers[x].empty()) {
      std::fill(made.begin(), made.end(), 0);  // a trigger is u or an ancestor of u
      for (const auto t : seg.triggers[x]) {
        for (std::size_t w = 0; w < words; ++w) made[w] |= row(down, t)[w];
      }
    } else if (maker[x] < k) {
      std::copy_n(row(down, maker[x]), words, made.begin());
    } else {
      std::fill(made.begin(), made.end(), ~std::uint64_t{0});
    }
    if (seg.keep[x]) {
      std::fill(needed.begin(), needed.end(), ~std::uint64_t{0});
    } else {
      std::fill(needed.begin(), needed.end(), 0);
      for (const auto r : seg.readers[x]) {
        for (std::size_t w = 0; w < words; ++w) needed[w] |= row(up, r)[w];
      }
    }
    for (std::size_t u = 0; u < k; ++u) {
      if (u == maker[x]) continue;  // counted in its step bytes
      if ((made[u / 64] >> (u % 64) & 1U) && (needed[u / 64] >> (u % 64) & 1U)) sees[u] += seg.bytes[x];
    }
  }
  return sees;
}

/// The A* search of one segment.
class segment_search {
 public:

  segment_search(const segment& seg, search_budget budget, std::size_t state_limit)
      : seg_(seg), k_(seg.size()), words_((k_ + 63) / 64), budget_(budget), state_limit_(state_limit) {
    must_see_ = memory_every_order_sees(seg);
    by_must_see_.resize(k_);
    std::iota(by_must_see_.begin(), by_must_see_.end(), std::size_t{0});
    std::ranges::sort(by_must_see_, [&](auto a, auto b) { return must_see_[a] > must_see_[b]; });
    by_step_ = by_must_see_;
    std::ranges::sort(by_step_, [&](auto a, auto b) { return seg.step_bytes[a] < seg.step_bytes[b]; });
  }

  /// What the search spent (for the whole search's budget).
  [[nodiscard]] const search_budget& budget() const noexcept { return budget_; }

  /// Lower bound of the segment that needs no search.
  [[nodiscard]] std::uint64_t static_bound() const {
    return std::max(seg_.start_bytes, k_ > 0 ? must_see_[by_must_see_.front()] : 0);
  }

  struct outcome {
    std::vector<std::size_t> order;  ///< local
    std::uint64_t peak = 0;
    std::uint64_t lower_bound = 0;
  };

  /// Improves on `incumbent` (a local order) unless its peak is within
  /// `good_enough`, a bound the graph's peak cannot go under anyway.
  outcome run(std::vector<std::size_t> incumbent, std::uint64_t good_enough) {
    outcome best{std::move(incumbent), 0, static_bound()};
    best.peak = seg_.peak_of(best.order);
    if (best.peak <= std::max(good_enough, best.lower_bound)) return best;

    add_state(std::vector<std::uint64_t>(words_, 0), seg_.start_bytes, seg_.start_bytes, none, none, 0);
    std::priority_queue<entry, std::vector<entry>, std::greater<>> open;
    open.push(make_entry(0, good_enough));
    std::vector<std::uint64_t> next_set(words_);
    while (!open.empty()) {
      const entry top = open.top();
      if (!budget_.spend()) break;
      if (states_.size() > state_limit_) break;
      open.pop();
      const state s = states_[top.id];
      if (top.cost != s.cost) continue;  // superseded by a cheaper path
      if (s.depth == k_) {
        // The least key left: no path is cheaper (unless within good_enough).
        best.order = path_to(top.id);
        best.peak = s.cost;
        best.lower_bound = std::max(best.lower_bound, std::min(s.cost, top.bound));
        return best;
      }
      const std::uint64_t* set = set_of(top.id);
      moves_.clear();
      for (std::size_t v = 0; v < k_; ++v) {
        if (contains(set, v) || !ready(set, v)) continue;
        const move m = try_move(set, s, v);
        // A move that costs no more than the path so far (or than is good
        // enough) and leaves no more live is safe to take first: moving it to
        // the front of any completion lowers or keeps every later step.
        if (m.cost <= std::max(s.cost, good_enough) && m.live <= s.live) {
          moves_.assign(1, m);
          break;
        }
        moves_.push_back(m);
      }
      for (const move& m : moves_) {
        if (m.cost >= best.peak) continue;  // cannot beat the incumbent
        std::copy(set, set + words_, next_set.begin());
        next_set[m.vertex / 64] |= std::uint64_t{1} << (m.vertex % 64);
        const std::size_t id = find_or_add(next_set, m.cost, m.live, top.id, m.vertex, s.depth + 1);
        if (id != none) open.push(make_entry(id, good_enough));
        set = set_of(top.id);  // the arena may have moved
      }
    }
    // Stopped by a limit: every order is at least the least bound left open.
    std::uint64_t least_open = best.peak;
    for (; !open.empty(); open.pop()) {
      if (open.top().cost == states_[open.top().id].cost) least_open = std::min(least_open, open.top().bound);
    }
    best.lower_bound = std::max(best.lower_bound, least_open);
    return best;
  }

 private:
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
  struct state {
    std::uint64_t cost;  ///< largest step memory on the path here
    std::uint64_t live;  ///< bytes live after the vertices of the set ran
    std::size_t parent;
    std::size_t vertex;  ///< the vertex run last on the path here
    std::size_t depth;   ///< vertices in the set
  };
  struct entry {
    std::uint64_t key;    ///< max(bound, good_enough)
    std::size_t depth;    ///< deeper first among equal keys
    std::uint64_t cost;
    std::uint64_t bound;  ///< max(cost, heuristic): no completion is cheaper
    std::size_t id;
    bool operator>(const entry& o) const {
      if (key != o.key) return key > o.key;
      if (depth != o.depth) return depth < o.depth;
      return cost > o.cost;
    }
  };

  struct move {
    std::size_t vertex;
    std::uint64_t cost;  ///< the path's cost after it
    std::uint64_t live;  ///< live bytes after it
  };

  /// Running v after the vertices of `set`, reached as `s`.
  move try_move(const std::uint64_t* set, const state& s, std::size_t v) const {
    std::uint64_t live = s.live;
    for (const auto x : seg_.materialises[v]) {
      if (!any_of(set, seg_.triggers[x])) live += seg_.bytes[x];
    }
    const std::uint64_t cost = std::max(s.cost, live + seg_.step_bytes[v]);
    for (const auto x : seg_.produces[v]) {
      if (seg_.keep[x] || !seg_.readers[x].empty()) live += seg_.bytes[x];
    }
    for (const auto x : seg_.reads[v]) {
      if (!seg_.keep[x] && last_reader(set, x, v)) live -= seg_.bytes[x];
    }
    return {v, cost, live};
  }

  const std::uint64_t* set_of(std::size_t id) const { return sets_.data() + id * words_; }
  static bool contains(const std::uint64_t* set, std::size_t v) { return (set[v / 64] >> (v % 64)) & 1U; }
  bool ready(const std::uint64_t* set, std::size_t v) const {
    for (const auto p : seg_.preds[v]) {
      if (!contains(set, p)) return false;
    }
    return true;
  }
  static bool any_of(const std::uint64_t* set, const std::vector<std::size_t>& vertices) {
    for (const auto u : vertices) {
      if (contains(set, u)) return true;
    }
    return false;
  }
  bool last_reader(const std::uint64_t* set, std::size_t x, std::size_t v) const {
    for (const auto r : seg_.readers[x]) {
      if (r != v && !contains(set, r)) return false;
    }
    return true;
  }

  entry make_entry(std::size_t id, std::uint64_t good_enough) const {
    const state& s = states_[id];
    const std::uint64_t* set = set_of(id);
    std::uint64_t h = 0;
    for (const auto u : by_must_see_) {
      if (!contains(set, u)) {
        h = must_see_[u];
        break;
      }
    }
    for (const auto u : by_step_) {
      if (!contains(set, u)) {
        h = std::max(h, s.live + seg_.step_bytes[u]);
        break;
      }
    }
    const std::uint64_t bound = std::max(s.cost, h);
    return {std::max(bound, good_enough), s.depth, s.cost, bound, id};
  }

  std::size_t hash(const std::uint64_t* set) const {
    std::uint64_t h = 0;
    for (std::size_t w = 0; w < words_; ++w) {
      std::uint64_t z = h + set[w] + 0x9e3779b97f4a7c15ULL;  // splitmix64 step
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      h = z ^ (z >> 31);
    }
    return static_cast<std::size_t>(h);
  }

  std::size_t add_state(const std::vector<std::uint64_t>& set, std::uint64_t cost, std::uint64_t live,
                        std::size_t parent, std::size_t vertex, std::size_t depth) {
    sets_.insert(sets_.end(), set.begin(), set.end());
    states_.push_back({cost, live, parent, vertex, depth});
    const std::size_t id = states_.size() - 1;
    if (2 * states_.size() > table_.size()) rehash();
    else place(id);
    return id;
  }

  void place(std::size_t id) {
    const std::size_t mask = table_.size() - 1;
    for (std::size_t slot = hash(set_of(id)) & mask;; slot = (slot + 1) & mask) {
      if (table_[slot] == none) {
        table_[slot] = id;
        return;
      }
    }
  }

  void rehash() {
    table_.assign(std::max<std::size_t>(1024, std::bit_ceil(4 * states_.size())), none);
    for (std::size_t id = 0; id < states_.size(); ++id) place(id);
  }

  /// The id to queue for `set` reached at `cost`, or none when a path at most
  /// as costly reached it before.
  std::size_t find_or_add(const std::vector<std::uint64_t>& set, std::uint64_t cost, std::uint64_t live,
                          std::size_t parent, std::size_t vertex, std::size_t depth) {
    if (!table_.empty()) {
      const std::size_t mask = table_.size() - 1;
      for (std::size_t slot = hash(set.data()) & mask; table_[slot] != none; slot = (slot + 1) & mask) {
        const std::size_t id = table_[slot];
        if (!std::equal(set.begin(), set.end(), set_of(id))) continue;
        state& s = states_[id];
        if (s.cost <= cost) return none;
        s = {cost, live, parent, vertex, depth};
        return id;
      }
    }
    return add_state(set, cost, live, parent, vertex, depth);
  }

  std::vector<std::size_t> path_to(std::size_t id) const {
    std::vector<std::size_t> order;
    for (; states_[id].parent != none; id = states_[id].parent) order.push_back(states_[id].vertex);
    std::reverse(order.begin(), order.end());
    return order;
  }

  const segment& seg_;
  std::size_t k_;
  std::size_t words_;
  search_budget budget_;
  std::size_t state_limit_;
  std::vector<std::uint64_t> must_see_;
  std::vector<std::size_t> by_must_see_;  ///< vertices, most memory they must see first
  std::vector<std::size_t> by_step_;      ///< vertices, smallest outputs first
  std::vector<state> states_;
  std::vector<std::uint64_t> sets_;       ///< states' sets, words_ words each
  std::vector<std::size_t> table_;        ///< open addressing: state ids by set
  std::vector<move> moves_;
};

}  // namespace detail

namespace detail {

/// The whole order from each segment's local order: inert vertices first,
/// each floating one right before its first successor.
inline std::vector<std::size_t> assemble(const compact_graph& g, const std::vector<std::size_t>& start,
                                         const std::vector<vertex_role>& role, const std::vector<segment>& segments,
                                         const std::vector<std::vector<std::size_t>>& local_orders) {
  std::vector<std::size_t> order;
  order.reserve(g.num_vertices());
  std::vector<char> placed(g.num_vertices(), 0);
  for (const auto v : start) {
    if (role[v] == vertex_role::inert) order.push_back(v);
  }
  for (std::size_t s = 0; s < segments.size(); ++s) {
    for (const auto i : local_orders[s]) {
      const std::size_t v = segments[s].vertices[i];
      for (const auto p : g.predecessors[v]) {
        if (role[p] == vertex_role::floating && !placed[p]) {
          order.push_back(p);
          placed[p] = 1;
        }
      }
      order.push_back(v);
    }
  }
  return order;
}

inline std::vector<std::vector<std::size_t>> identity_orders(const std::vector<segment>& segments) {
  std::vector<std::vector<std::size_t>> orders(segments.size());
  for (std::size_t s = 0; s < segments.size(); ++s) {
    orders[s].resize(segments[s].size());
    std::iota(orders[s].begin(), orders[s].end(), std::size_t{0});
  }
  return orders;
}

/// Large-neighbourhood search where the segments are too wide to solve:
/// reorder a window of consecutive vertices around the peak exactly, everything
/// else fixed, with growing windows, while that lowers the peak and time lasts.
inline std::vector<std::size_t> improve_by_windows(const compact_graph& g, std::vector<std::size_t> order,
                                                   const std::vector<vertex_role>& role, std::uint64_t lower_bound,
                                                   search_budget& budget, std::size_t state_limit) {
  constexpr std::size_t widths[] = {16, 32, 64, 128, 256};
  while (!budget.exhausted()) {
    // Where the peak is, as a position among the normal vertices.
    auto segments = split_into_segments(g, order, role);
    std::uint64_t peak = 0;
    std::size_t peak_position = 0;
    for (std::size_t s = 0, first = 0; s < segments.size(); first += segments[s++].size()) {
      const auto [p, at] = segments[s].profile(identity_orders({segments[s]}).front());
      if (p > peak) {
        peak = p;
        peak_position = first + at;
      }
    }
    if (peak <= lower_bound) break;
    bool improved = false;
    for (const std::size_t width : widths) {
      for (const std::size_t offset : {width / 2, width / 4, 3 * width / 4}) {
        const std::size_t a = peak_position > offset ? peak_position - offset : 0;
        segments = split_into_segments(g, order, role, {a, a + width});
        std::size_t w = 0;
        std::uint64_t elsewhere = lower_bound;
        for (std::size_t s = 0, first = 0; s < segments.size(); first += segments[s++].size()) {
          if (first <= peak_position && peak_position < first + segments[s].size()) {
            w = s;
          } else {
            elsewhere = std::max(elsewhere, segments[s].peak_of(identity_orders({segments[s]}).front()));
          }
        }
        auto locals = identity_orders(segments);
        // A slice of what is left (at least half a second of the time, so
        // that a loaded machine still finishes windows).
        segment_search search(segments[w], budget.slice(1.0 / 6, std::chrono::milliseconds(500)), state_limit);
        auto found = search.run(locals[w], elsewhere);
        budget.charge(search.budget());
        if (found.peak < segments[w].peak_of(locals[w])) {
          locals[w] = std::move(found.order);
          order = assemble(g, order, role, segments, locals);
          improved = true;
          break;
        }
        if (budget.exhausted()) return order;
      }
      if (improved) break;
    }
    if (!improved) break;
  }
  return order;
}

}  // namespace detail

/// The exact order, starting from `start` (any topological order; its
/// segments are kept where the search cannot or need not improve them).
/// Segments are searched largest peak first, each with a third of the time left;
/// if the peak is still above the bound, windows around it are reordered
/// exactly (improve_by_windows) with the rest.
[[nodiscard]] inline order_bounds exact_order(const compact_graph& g, const std::vector<std::size_t>& start,
                                              const exact_options& options = {}) {
  detail::search_budget budget(options.time_limit_seconds, options.work_limit);
  const auto role = detail::vertex_roles(g, start);
  const auto segments = detail::split_into_segments(g, start, role);
  auto local_orders = detail::identity_orders(segments);
  std::vector<std::uint64_t> peaks(segments.size());
  std::uint64_t lower_bound = 0;
  for (std::size_t s = 0; s < segments.size(); ++s) {
    peaks[s] = segments[s].peak_of(local_orders[s]);
    lower_bound = std::max(lower_bound, detail::segment_search(segments[s], {}, 0).static_bound());
  }
  // The highest segments decide the peak: improve them first, each search
  // only down to the bound the others already force.
  std::vector<std::size_t> by_peak(segments.size());
  std::iota(by_peak.begin(), by_peak.end(), std::size_t{0});
  std::ranges::sort(by_peak, [&](auto a, auto b) { return peaks[a] > peaks[b]; });
  for (const auto s : by_peak) {
    if (peaks[s] <= lower_bound) break;
    detail::segment_search search(segments[s], budget.slice(1.0 / 3), options.state_limit);
    auto found = search.run(std::move(local_orders[s]), lower_bound);
    budget.charge(search.budget());
    local_orders[s] = std::move(found.order);
    peaks[s] = found.peak;
    lower_bound = std::max(lower_bound, found.lower_bound);
  }
  order_bounds r;
  r.order = detail::assemble(g, start, role, segments, local_orders);
  for (const auto peak : peaks) r.peak_bytes = std::max(r.peak_bytes, peak);
  if (r.peak_bytes > lower_bound) {
    r.order = detail::improve_by_windows(g, std::move(r.order), role, lower_bound, budget, options.state_limit);
    r.peak_bytes = 0;
    for (const auto& seg : detail::split_into_segments(g, r.order, role)) {
      r.peak_bytes = std::max(r.peak_bytes, seg.peak_of(detail::identity_orders({seg}).front()));
    }
  }
  r.lower_bound_bytes = std::min(lower_bound, r.peak_bytes);
  r.proved_optimal = r.peak_bytes == r.lower_bound_bytes;
  return r;
}

/// A lower bound on the peak of every order of g (no search).
[[nodiscard]] inline std::uint64_t lower_bound_of(const compact_graph& g) {
  const auto order = post_order_order(g);
  std::uint64_t bound = 0;
  for (const auto& seg : detail::split_into_segments(g, order, detail::vertex_roles(g, order))) {
    bound = std::max(bound, detail::segment_search(seg, {}, 0).static_bound());
  }
  return bound;
}

/// The minimum peak over all orders (anytime: see exact_options), starting
/// from best_heuristic's order, so never above any heuristic's peak. The
/// candidates are the heuristic seeds then "exact", the search itself; chosen
/// and method say which produced the order (the search only when it found a
/// lower peak than every seed), proved_optimal whether it is the minimum.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] best_of_result<G> exact_schedule(const G& g, const exact_options& options = {}, Index index = {}) {
  const auto c = make_compact_graph(g, index);
  const auto by_index = vertices_by_index(g, index);
  auto best = detail::best_heuristic_snapshot<G>(c, by_index, detail::program_indices(g, index));
  std::vector<std::size_t> start;
  for (const auto v : best.order) start.push_back(index(v));
  const auto started = std::chrono::steady_clock::now();
  const auto found = exact_order(c, start, options);
  auto r = evaluate_order<G>(c, by_index, found.order);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  best.candidates.push_back({"exact", r.peak_bytes, seconds});
  if (r.peak_bytes < best.peak_bytes) {
    static_cast<schedule_result<G>&>(best) = std::move(r);
    best.chosen = best.candidates.size() - 1;
    best.method = "exact";
  }
  best.lower_bound_bytes = std::min(found.lower_bound_bytes, best.peak_bytes);
  best.proved_optimal = best.peak_bytes == best.lower_bound_bytes;
  return best;
}

/// The library's recommended scheduler: exact_schedule within a few seconds.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] best_of_result<G> best_schedule(const G& g, Index index = {}) {
  return exact_schedule(g, exact_options{.time_limit_seconds = 3.0}, index);
}

/// A lower bound on the peak of every order of g.
template <tensor_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] std::uint64_t lower_bound(const G& g, Index index = {}) {
  return lower_bound_of(make_compact_graph(g, index));
}

}  // namespace memopt
