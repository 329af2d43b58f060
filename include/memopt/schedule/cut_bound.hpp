#pragma once
// memory_at_least_at_each_step: for each vertex u of a segment, the least
// memory of u's step over every set of vertices that may run before it (all
// of u's ancestors, none of its descendants), by one minimum cut per vertex;
// never below memory_every_order_sees (exact_bounds.hpp), which weighs each
// vertex unordered with u apart. Where u may reuse an input in place it
// counts the saving as if u read that input last. sharpen_by_cuts raises a
// search's bounds to it where that is affordable.
// memory_at_least_over_key_orders: a bound on the segment's peak over the
// orders of a few unordered vertices (the keys), each key's step cut with
// the keys before it run and those after it not; raise_by_key_orders grows
// the keys while a budget lasts. docs/design.md, "The exact scheduler", has
// the closure problem behind both.

#include <memopt/detail/budget.hpp>
#include <memopt/detail/flow_network.hpp>
#include <memopt/schedule/segments.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
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

/// The closure problem behind the cut bounds, built once per segment: the
/// least memory of a step u over the sets of vertices run before it that
/// hold every vertex forced in and none forced out.
class step_cut_network {
 public:
  static constexpr char free_side = 0, run_before = 1, not_yet = 2;

  explicit step_cut_network(const segment& seg) : seg_(seg), k_(seg.size()), succs_(seg.size()) {
    // Choosing the set S run before u pays each buffer's bytes when S makes it
    // and leaves a reader out: with M_x "some vertex of S makes x" and Z_x
    // "every reader of x is in S", x costs bytes * (M_x - Z_x), Z_x implies M_x
    // and each reader, each maker implies M_x, and each vertex its predecessors.
    // A least-weight closure is a minimum s-t cut (Picard, 1976); a node on the
    // source side is in the closure. Nodes: the k vertices, then per buffer M_x
    // and Z_x, then source and sink.
    const std::size_t buffers = seg.bytes.size();
    const auto made = [&](std::size_t x) { return k_ + 2 * x; };
    const auto all_read = [&](std::size_t x) { return k_ + 2 * x + 1; };
    source_ = k_ + 2 * buffers;
    sink_ = source_ + 1;
    net_ = flow_network(sink_ + 1);
    // More than any cut that respects the implications (each buffer is cut
    // at most twice: M_x -> sink and source -> Z_x).
    for (const auto b : seg.bytes) forced_ += 2 * static_cast<std::int64_t>(b);
    // "a in S implies b in S": cutting a -> b is never allowed.
    const auto implies = [&](std::size_t a, std::size_t b) { net_.capacity(arc(a, b)) = forced_; };
    for (std::size_t v = 0; v < k_; ++v) {
      for (const auto p : seg.preds[v]) {
        implies(v, p);
        succs_[p].push_back(v);
      }
    }
    std::vector<std::size_t> maker(buffers, k_);  // k: made before the segment
    for (std::size_t v = 0; v < k_; ++v) {
      for (const auto x : seg.produces[v]) maker[x] = v;
    }
    // made_at_[x]: forces M_x when the step is one of x's triggers (it materialises x).
    made_at_.resize(buffers);
    for (std::size_t x = 0; x < buffers; ++x) {
      const auto bytes = static_cast<std::int64_t>(seg.bytes[x]);
      if (!outlives_its_step(seg, x)) continue;
      // M_x in S costs its bytes (M_x -> sink cut).
      net_.capacity(arc(made(x), sink_)) = bytes;
      if (!seg.triggers[x].empty()) {
        for (const auto t : seg.triggers[x]) implies(t, made(x));
        made_at_[x] = arc(source_, made(x));
      } else if (maker[x] < k_) {
        implies(maker[x], made(x));
      } else {
        implies(source_, made(x));
      }
      if (seg.keep[x]) continue;
      // Z_x in S gains its bytes back: out of S it pays them (source -> Z_x cut).
      net_.capacity(arc(source_, all_read(x))) = bytes;
      constant_ -= bytes;
      implies(all_read(x), made(x));
      for (const auto r : seg.readers[x]) implies(all_read(x), r);
    }
    force_in_.resize(k_);
    force_out_.resize(k_);
    for (std::size_t v = 0; v < k_; ++v) {
      force_in_[v] = arc(source_, v);
      force_out_[v] = arc(v, sink_);
    }
  }

  [[nodiscard]] const std::vector<std::vector<std::size_t>>& successors() const { return succs_; }

  /// The least memory of u's step over the sets S run before it with
  /// side[v] == run_before in S and side[v] == not_yet out (u among them);
  /// none when no such set is closed under predecessors.
  [[nodiscard]] std::optional<std::uint64_t> least_memory(std::size_t u, const std::vector<char>& side) {
    for (std::size_t v = 0; v < k_; ++v) {
      net_.capacity(force_in_[v]) = side[v] == run_before ? forced_ : 0;
      net_.capacity(force_out_[v]) = side[v] == not_yet ? forced_ : 0;
    }
    for (const auto x : seg_.materialises[u]) {
      if (outlives_its_step(seg_, x)) net_.capacity(made_at_[x]) = forced_;
    }
    const std::int64_t cut = net_.max_flow(source_, sink_);
    for (const auto x : seg_.materialises[u]) {
      if (outlives_its_step(seg_, x)) net_.capacity(made_at_[x]) = 0;
    }
    if (cut >= forced_) return std::nullopt;
    const auto least_live = static_cast<std::uint64_t>(std::max<std::int64_t>(0, cut + constant_));
    return seg_.base + seg_.least_step_bytes(u) + least_live;
  }

 private:
  flow_network::arc_id arc(std::size_t from, std::size_t to) { return net_.add_arc(from, to); }

  const segment& seg_;
  std::size_t k_;
  std::vector<std::vector<std::size_t>> succs_;
  flow_network net_;
  std::size_t source_ = 0, sink_ = 0;
  std::int64_t forced_ = 1;
  std::int64_t constant_ = 0;  ///< bytes every set pays
  std::vector<flow_network::arc_id> made_at_, force_in_, force_out_;
};

/// Marks with `value` every vertex reachable from u through `next` (u itself not).
inline void mark_reachable(std::vector<char>& side, std::size_t u, const std::vector<std::vector<std::size_t>>& next,
                           char value) {
  std::vector<std::size_t> stack(1, u);
  while (!stack.empty()) {
    const std::size_t v = stack.back();
    stack.pop_back();
    for (const auto w : next[v]) {
      if (side[w] == value) continue;
      side[w] = value;
      stack.push_back(w);
    }
  }
}

/// For each vertex of `seg`, the bytes live during its step whatever ran
/// before it. O(cut_work(seg)) for each vertex's max-flow, in practice.
/// `go_on()` is asked before each vertex's cut: when it says no, the result
/// is empty (a stop flag or a deadline).
template <class GoOn = bool (*)()>
std::vector<std::uint64_t> memory_at_least_at_each_step(const segment& seg, GoOn go_on = [] { return true; }) {
  step_cut_network network(seg);
  std::vector<char> side(seg.size());
  std::vector<std::uint64_t> at_least(seg.size());
  for (std::size_t u = 0; u < seg.size(); ++u) {
    if (!go_on()) return {};
    std::ranges::fill(side, step_cut_network::free_side);
    mark_reachable(side, u, seg.preds, step_cut_network::run_before);
    side[u] = step_cut_network::not_yet;
    mark_reachable(side, u, network.successors(), step_cut_network::not_yet);
    at_least[u] = *network.least_memory(u, side);  // u's ancestors and descendants never meet
  }
  return at_least;
}

/// The most keys memory_at_least_over_key_orders takes (a set of keys is a
/// 64-bit word; the sets it settles grow about twofold a key).
inline constexpr std::size_t max_keys = 32;

/// A lower bound on the segment's peak from the orders of `keys` (vertices
/// of the segment, at most max_keys): in every order of the segment the keys run
/// in some order, and when a key runs, the keys before it and their
/// ancestors have run and the keys after it (and it) with their descendants
/// have not. So the peak is at least the least, over the orders of the keys,
/// of the most memory a key's step sees under those constraints (one cut
/// each):
///   f(P) = min over keys u in P of max(f(P - u), cut(u | P - u before, the rest after)),
/// found best first: the sets of keys run, least f first, each adding one
/// more key, until the set of all comes out; sets whose f is above the answer
/// are never expanded (a tenth of the cuts of computing f for every set on
/// RandWire's stages). With one key it is that key's cut bound; every key
/// added can only raise it. Values at or above `enough` are not refined:
/// the result is at most `enough`. `go_on()` is asked before each cut: when
/// it says no, the result is nullopt.
template <class GoOn>
std::optional<std::uint64_t> memory_at_least_over_key_orders(const segment& seg, step_cut_network& network,
                                                             const std::vector<std::size_t>& keys,
                                                             std::uint64_t enough, GoOn go_on) {
  const std::size_t k = seg.size(), n = keys.size();
  if (n > max_keys) {
    throw std::invalid_argument("memory_at_least_over_key_orders: more than " + std::to_string(max_keys) + " keys");
  }
  std::vector<std::vector<char>> up(n, std::vector<char>(k, 0)), down(n, std::vector<char>(k, 0));
  for (std::size_t i = 0; i < n; ++i) {
    up[i][keys[i]] = 1;
    mark_reachable(up[i], keys[i], seg.preds, 1);
    down[i][keys[i]] = 1;
    mark_reachable(down[i], keys[i], network.successors(), 1);
  }
  const std::uint64_t all = n == 0 ? 0 : ~std::uint64_t{0} >> (64 - n);
  using reached = std::pair<std::uint64_t, std::uint64_t>;  // (f, set of keys run)
  std::priority_queue<reached, std::vector<reached>, std::greater<>> open;
  std::unordered_map<std::uint64_t, std::uint64_t> least;  // set -> the least f found
  open.push({0, 0});
  least[0] = 0;
  std::vector<char> side(k);
  while (!open.empty()) {
    const auto [f, ran] = open.top();
    open.pop();
    if (f >= enough) return enough;
    if (least.at(ran) < f) continue;  // reached again more cheaply
    if (ran == all) return f;
    for (std::size_t i = 0; i < n; ++i) {
      if ((ran >> i & 1U) != 0) continue;
      const std::uint64_t next = ran | std::uint64_t{1} << i;
      const auto known = least.find(next);
      if (known != least.end() && known->second <= f) continue;
      // The keys run before u and their ancestors in, u and the keys after
      // it with their descendants out, u's ancestors in.
      std::ranges::fill(side, step_cut_network::free_side);
      bool possible = true;
      for (std::size_t j = 0; j < n; ++j) {
        const bool before = (ran >> j & 1U) != 0;
        const char want = before ? step_cut_network::run_before : step_cut_network::not_yet;
        for (std::size_t v = 0; v < k; ++v) {
          if (!(before ? up : down)[j][v]) continue;
          possible = possible && (side[v] == step_cut_network::free_side || side[v] == want);
          side[v] = want;
        }
      }
      for (std::size_t v = 0; v < k; ++v) {
        if (!up[i][v] || v == keys[i]) continue;
        possible = possible && side[v] != step_cut_network::not_yet;
        side[v] = step_cut_network::run_before;
      }
      if (!possible) continue;  // a key after u is an ancestor of one before it
      if (!go_on()) return std::nullopt;
      const auto memory = network.least_memory(keys[i], side);
      if (!memory) continue;
      const std::uint64_t through = std::max(f, *memory);
      if (known == least.end() || through < known->second) {
        least[next] = through;
        open.push({through, next});
      }
    }
  }
  return enough;  // no order of the keys is possible: never for keys of one segment
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

/// Up to `most` pairwise unordered vertices of `seg` for
/// memory_at_least_over_key_orders: the joins of most predecessors first
/// (all of them are live at its step, so the order of the joins decides
/// much of the peak), then most memory every order sees (`must_see`, per
/// vertex), each skipping the ancestors and descendants of those taken.
inline std::vector<std::size_t> unordered_keys(const segment& seg, const step_cut_network& network,
                                               const std::vector<std::uint64_t>& must_see, std::size_t most) {
  std::vector<std::size_t> by_memory(seg.size());
  std::iota(by_memory.begin(), by_memory.end(), std::size_t{0});
  std::ranges::stable_sort(by_memory, [&](auto a, auto b) {
    return std::pair(seg.preds[a].size(), must_see[a]) > std::pair(seg.preds[b].size(), must_see[b]);
  });
  std::vector<char> ordered_with_a_key(seg.size(), 0);
  std::vector<std::size_t> keys;
  for (const auto u : by_memory) {
    if (keys.size() == most) break;
    if (ordered_with_a_key[u]) continue;
    keys.push_back(u);
    ordered_with_a_key[u] = 1;
    mark_reachable(ordered_with_a_key, u, seg.preds, 1);
    mark_reachable(ordered_with_a_key, u, network.successors(), 1);
  }
  return keys;
}

/// Raises `bound` (the segment's) towards `peak` by key orders
/// (memory_at_least_over_key_orders) over 2, 3, ... of unordered_keys, while
/// `budget` lasts (a cut costs its share of cut_work), within max_cut_work a
/// cut problem and max_keys keys; returns the new bound.
inline std::uint64_t raise_by_key_orders(const segment& seg, const std::vector<std::uint64_t>& must_see,
                                         std::uint64_t bound, std::uint64_t peak, search_budget& budget) {
  const std::uint64_t work = cut_work(seg);
  if (seg.size() < 2 || work > max_cut_work || bound >= peak) return bound;
  const std::uint64_t units_per_cut = work / (seg.size() * cut_work_per_unit) + 1;
  step_cut_network network(seg);
  const auto keys = unordered_keys(seg, network, must_see, max_keys);
  for (std::size_t n = 2; n <= keys.size() && bound < peak; ++n) {
    const std::vector<std::size_t> first(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n));
    const auto at_least =
        memory_at_least_over_key_orders(seg, network, first, peak, [&] { return budget.spend(units_per_cut); });
    if (!at_least) break;
    bound = std::max(bound, *at_least);
  }
  return bound;
}

}  // namespace memopt::detail
