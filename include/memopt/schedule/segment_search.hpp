#pragma once
// segment_search: the exact scheduler's second stage (exact.hpp), A* over the
// downward-closed vertex sets of one segment (segments.hpp). A state is the
// set of vertices run, whose live bytes it determines; a path's cost is its
// largest step memory; the bound is the most memory a remaining vertex sees
// in every order (exact_bounds.hpp, sharpened by cut_bound.hpp) and the next
// step's. Beams (segment_beam.hpp) give wide segments an incumbent first.
// Paths reaching the same set keep the lower cost; a move that costs no more
// than the path and leaves no more live is taken alone (it can go first in
// some best completion). Stopped by its budget or state limit, it raises the
// bound by the orders of a few unordered vertices (cut_bound.hpp), then probes.
//
// When other segments already force a peak (good_enough) above this one's
// bound, the question is only whether some order stays within it, and a set
// of vertices run decides that alone: a depth-first search that never enters
// a set twice answers it storing only the sets it has left, where A* would
// store every set it has seen (ten times as many on RandWire stages).
//
// Probes guided by the incumbent (probe_guidance::incumbent, for the windows
// of windows.hpp once they stall) try first to run just under its peak
// following its order, and alternate their restarts between the two keys.

#include <memopt/detail/budget.hpp>
#include <memopt/schedule/cut_bound.hpp>
#include <memopt/schedule/exact_bounds.hpp>
#include <memopt/schedule/probe_keys.hpp>
#include <memopt/schedule/segment_beam.hpp>
#include <memopt/schedule/segments.hpp>
#include <memopt/schedule/state_store.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <type_traits>
#include <vector>

namespace memopt::detail {

/// The A* search of one segment.
class segment_search {
 public:
  /// States a probe runs before its first restart (order_within).
  static constexpr std::uint64_t default_restart_work = std::uint64_t{1} << 20;

  segment_search(const segment& seg, search_budget budget, std::size_t state_limit,
                 std::uint64_t restart_work = default_restart_work, probe_guidance guidance = probe_guidance::none)
      : seg_(seg), k_(seg.size()), words_((k_ + 63) / 64), budget_(budget), state_limit_(state_limit),
        restart_work_(restart_work), guidance_(guidance), store_(words_) {
    must_see_ = memory_every_order_sees(seg);
    sharpen_by_cuts(seg, must_see_, budget_);
    by_must_see_.resize(k_);
    std::iota(by_must_see_.begin(), by_must_see_.end(), std::size_t{0});
    std::ranges::sort(by_must_see_, [&](auto a, auto b) { return must_see_[a] > must_see_[b]; });
    by_step_ = by_must_see_;
    std::ranges::sort(by_step_, [&](auto a, auto b) { return seg.least_step_bytes(a) < seg.least_step_bytes(b); });
  }

  /// What the search spent (for the whole search's budget).
  [[nodiscard]] const search_budget& budget() const noexcept { return budget_; }

  /// Lower bound of the segment that needs no search.
  [[nodiscard]] std::uint64_t bound_before_search() const {
    return std::max(seg_.start_bytes, k_ > 0 ? must_see_[by_must_see_.front()] : 0);
  }

  struct outcome {
    std::vector<std::size_t> order;  ///< local
    std::uint64_t peak = 0;
    std::uint64_t lower_bound = 0;  ///< at most the larger of good_enough and every order's peak
  };

  /// Improves on `incumbent` (a local order) unless its peak is within
  /// `good_enough`, a bound the graph's peak cannot go under anyway. Costs
  /// count from good_enough up: paths below it are all as good, so reaching
  /// a set again by a cheaper one of them opens nothing new.
  outcome run(std::vector<std::size_t> incumbent, std::uint64_t good_enough) {
    outcome best{std::move(incumbent), 0, bound_before_search()};
    best.peak = seg_.peak_of(best.order);
    if (best.peak <= std::max(good_enough, best.lower_bound)) return best;
    // Whether an order stays within good_enough: where beams may help, asked
    // briefly before them (most stages answer at once), and at length after.
    if (beams_may_help()) {
      if (fits_within(best, good_enough, 1.0 / 16)) return best;
      if (within_slice(0.25, [&] { return improve_by_beams(best, good_enough); })) return best;
    }
    if (fits_within(best, good_enough, 0.5)) return best;
    if (within_slice(0.75, [&] { return best_first(best, good_enough); })) return best;
    best.lower_bound = within_slice(
        0.25, [&] { return raise_by_key_orders(seg_, must_see_, best.lower_bound, best.peak, budget_); });
    narrow_by_probes(best);
    return best;
  }

 private:
  /// Runs `part` on `fraction` of the budget left, billing what it spent.
  template <class Part>
  std::invoke_result_t<Part&> within_slice(double fraction, Part part) {
    search_budget whole = budget_;
    budget_ = whole.slice(fraction);
    const auto result = part();
    whole.charge(budget_);
    budget_ = whole;
    return result;
  }

  /// Beams are for segments of 65 to 8192 vertices: below, a set is one word
  /// and A* usually ends, so a beam would only take its budget; above, a
  /// level's sets cost more to copy than the budget counts.
  bool beams_may_help() const { return k_ > 64 && k_ <= 8192; }

  /// Asks on `share` of the budget left whether some order stays within
  /// good_enough, when that is above the bound: true when one does (best is
  /// then that order); a proof that none does raises the bound. One run, no
  /// restarts: on RandWire's stages it answers in a tenth of the time.
  bool fits_within(outcome& best, std::uint64_t good_enough, double share) {
    if (good_enough <= best.lower_bound) return false;
    std::vector<std::size_t> order;
    switch (within_slice(share, [&] { return order_within(good_enough, order, {}); })) {
      case verdict::found:
        best.order = std::move(order);
        best.peak = seg_.peak_of(best.order);
        best.lower_bound = good_enough;
        return true;
      case verdict::none:
        best.lower_bound = good_enough + 1;
        return false;
      case verdict::stopped:
        return false;
    }
    return false;
  }

  /// Beam searches of width 8, 32, ..., 8192 (beam_order) while the budget
  /// lasts and the peak is above what the segment needs: true once it is
  /// not. A beam that never cut a level proves its order optimal. At most
  /// 2^24 links back (width times vertices, 16 bytes each).
  bool improve_by_beams(outcome& best, std::uint64_t good_enough) {
    constexpr std::size_t widest = 8192, most_links = std::size_t{1} << 24;
    const auto settled = [&] { return best.peak <= std::max(good_enough, best.lower_bound); };
    for (std::size_t width = 8; width <= widest && width * k_ <= most_links && !settled(); width *= 4) {
      const auto found = beam_order(seg_, width, good_enough, budget_);
      if (found.order.empty()) break;
      const std::uint64_t peak = seg_.peak_of(found.order);
      if (peak < best.peak) {
        best.order = found.order;
        best.peak = peak;
      }
      if (found.exhaustive) {
        best.lower_bound = std::max(best.lower_bound, std::min(best.peak, std::max(peak, good_enough)));
        break;
      }
    }
    return settled();
  }

  /// A* from the empty set: true when it ended (best is then optimal, or
  /// within good_enough); otherwise best.lower_bound is the least bound left
  /// open. Leaves the state store empty.
  bool best_first(outcome& best, std::uint64_t good_enough) {
    store_.add(std::vector<std::uint64_t>(words_, 0),
               {std::max(seg_.start_bytes, good_enough), seg_.start_bytes, none, none, 0});
    open_queue open;
    open.push(make_entry(0, good_enough));
    std::vector<std::uint64_t> next_set(words_);
    bool ended = false;
    while (!open.empty()) {
      const entry top = open.top();
      if (!budget_.spend()) break;
      if (store_.size() > state_limit_) break;
      open.pop();
      const state s = store_[top.id];
      if (top.cost != s.cost) continue;  // superseded by a cheaper path
      if (s.depth == k_) {
        // The least key left: no path is cheaper (unless within good_enough).
        best.order = store_.path_to(top.id);
        best.peak = seg_.peak_of(best.order);
        best.lower_bound = std::max(best.lower_bound, std::min(s.cost, top.bound));
        ended = true;
        break;
      }
      const std::uint64_t* set = store_.set_of(top.id);
      collect_moves(set, s, good_enough);
      for (const move& m : moves_) {
        if (m.cost >= best.peak) continue;  // cannot beat the incumbent
        std::copy(set, set + words_, next_set.begin());
        next_set[m.vertex / 64] |= std::uint64_t{1} << (m.vertex % 64);
        const std::size_t id =
            store_.find_or_add(next_set, {std::max(m.cost, good_enough), m.live, top.id, m.vertex, s.depth + 1});
        if (id != none) open.push(make_entry(id, good_enough));
        set = store_.set_of(top.id);  // the arena may have moved
      }
    }
    // Stopped by a limit (or every path to beat the incumbent tried): every
    // order is at least the least bound left open.
    if (!ended) best.lower_bound = std::max(best.lower_bound, least_open(std::move(open), best.peak));
    store_.clear();
    return ended || best.lower_bound >= best.peak;
  }

  /// Where best-first search stopped: depth-first probes halve the distance
  /// between bound and peak, each on half the budget left, restarting (on
  /// RandWire's 64-node stages one run finds nothing within 230 MB in 5 *
  /// 10^7 states, restarts find 211 MB in 3.6 * 10^7). A probe that finds
  /// an order lowers the peak, one that proves there is none raises the
  /// bound, and one stopped by its budget is followed by an easier one.
  /// Guided by the incumbent, each round first asks on a quarter of the
  /// budget left for an order just under the peak, near the incumbent's.
  void narrow_by_probes(outcome& best) {
    const bool guided = guidance_ == probe_guidance::incumbent;
    // A probe within `limit`: an order found lowers the peak, a proof of
    // none raises the bound.
    const auto probe = [&](std::uint64_t limit, const probe_keys& keys, double share) {
      std::vector<std::size_t> order;
      const verdict v = within_slice(share, [&] { return order_within(limit, order, keys); });
      if (v == verdict::found) {
        best.order = std::move(order);
        best.peak = seg_.peak_of(best.order);
      } else if (v == verdict::none) {
        best.lower_bound = limit + 1;
      }
      return v;
    };
    std::uint64_t easiest_unknown = best.lower_bound;
    while (best.lower_bound < best.peak && !budget_.exhausted()) {
      const std::uint64_t from = std::max(best.lower_bound, easiest_unknown);
      if (from >= best.peak) break;
      if (guided && probe(best.peak - 1, {.restarts = true, .incumbent = &best.order, .every_run = true}, 0.25) !=
                        verdict::stopped) {
        continue;
      }
      const std::uint64_t limit = from + (best.peak - 1 - from) / 2;
      if (probe(limit, {.restarts = true, .incumbent = guided ? &best.order : nullptr}, 0.5) == verdict::stopped) {
        easiest_unknown = limit + 1;
      }
    }
  }

  static constexpr std::size_t none = state_store::none;
  using state = search_state;
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

  using open_queue = std::priority_queue<entry, std::vector<entry>, std::greater<>>;

  enum class verdict { found, none, stopped };

  /// How order_within orders the moves of a set.
  struct probe_keys {
    bool restarts = false;  ///< start again after luby(n) * restart_work_ states
    /// When set, runs are keyed by the vertices' positions in this order (odd
    /// runs only, or every run; near_position).
    const std::vector<std::size_t>* incumbent = nullptr;
    bool every_run = false;
  };

  /// Depth-first search for an order whose every step is within `limit`,
  /// into `order` when found; least live after the move first (or as
  /// `keys` say). Such a search finds an order soon or wanders long below a
  /// wrong early choice: with restarts, it starts again after luby(n) *
  /// restart_work_ states, each time with the moves' live bytes jittered by
  /// up to 1/16 (the first run as they are); a set found a dead end stays
  /// one, so the dead ends it remembers (at most state_limit, then it
  /// forgets them) carry over. It leaves the store empty.
  verdict order_within(std::uint64_t limit, std::vector<std::size_t>& order, const probe_keys& keys) {
    struct frame {
      std::vector<std::uint64_t> set;
      std::uint64_t live;
      std::vector<move> moves;
      std::size_t next = 0;
    };
    std::uint64_t run = 0, run_left = keys.restarts ? restart_work_ : std::numeric_limits<std::uint64_t>::max();
    std::vector<std::uint64_t> position;
    if (keys.incumbent != nullptr) {
      position.resize(k_);
      for (std::size_t i = 0; i < keys.incumbent->size(); ++i) position[(*keys.incumbent)[i]] = i;
    }
    const auto moves_within = [&](const std::vector<std::uint64_t>& set, std::uint64_t live) {
      collect_moves(set.data(), {limit, live, none, none, 0}, limit);
      std::erase_if(moves_, [&](const move& m) { return m.cost > limit; });
      const bool by_position = !position.empty() && (keys.every_run || run % 2 == 1);
      const auto key = [&](const move& m) {
        if (by_position) return near_position(position[m.vertex], run, m.vertex);
        return run == 0 ? m.live : jittered(m.live, run, m.vertex);
      };
      std::ranges::sort(moves_, [&](const move& a, const move& b) { return key(a) < key(b); });
      return moves_;
    };
    std::vector<frame> stack;
    std::vector<std::size_t> path;
    const std::vector<std::uint64_t> root(words_, 0);
    verdict result = verdict::none;
    while (true) {
      if (stack.empty()) {  // the start, or a run cut short: restart
        if (run_left == 0) run_left = restart_work_ * luby(++run);
        path.clear();
        stack.push_back({root, seg_.start_bytes, moves_within(root, seg_.start_bytes)});
      }
      if (!budget_.spend()) {
        result = verdict::stopped;
        break;
      }
      if (store_.size() > state_limit_) store_.clear();  // forget dead ends rather than stop
      if (path.size() == k_) {
        order = path;
        result = verdict::found;
        break;
      }
      if (--run_left == 0) {
        stack.clear();
        continue;
      }
      frame& f = stack.back();
      if (f.next == f.moves.size()) {  // a dead end: remember it
        store_.find_or_add(f.set, {0, 0, none, none, path.size()});
        stack.pop_back();
        if (!path.empty()) path.pop_back();
        if (stack.empty()) break;  // every set tried: none is within the limit
        continue;
      }
      const move m = f.moves[f.next++];
      auto next = f.set;
      next[m.vertex / 64] |= std::uint64_t{1} << (m.vertex % 64);
      if (store_.find(next) != none || remaining_bound(next.data(), m.live) > limit) continue;
      auto moves = moves_within(next, m.live);
      path.push_back(m.vertex);
      stack.push_back({std::move(next), m.live, std::move(moves)});
    }
    store_.clear();
    return result;
  }

  /// The moves from `set`, reached as `s`, into moves_: the ready vertices,
  /// or a safe one alone.
  void collect_moves(const std::uint64_t* set, const state& s, std::uint64_t good_enough) {
    moves_.clear();
    for (std::size_t v = 0; v < k_; ++v) {
      if (contains(set, v) || !ready(set, v)) continue;
      const move m = try_move(set, s, v);
      // A move that costs no more than the path so far (or than is good
      // enough) and leaves no more live is safe to take first: moving it to
      // the front of any completion lowers or keeps every later step.
      if (m.cost <= std::max(s.cost, good_enough) && m.live <= s.live) {
        moves_.assign(1, m);
        return;
      }
      moves_.push_back(m);
    }
  }

  /// The least bound among the live entries of `open` (at most `peak`).
  std::uint64_t least_open(open_queue open, std::uint64_t peak) const {
    for (; !open.empty(); open.pop()) {
      if (open.top().cost == store_[open.top().id].cost) peak = std::min(peak, open.top().bound);
    }
    return peak;
  }

  /// Running v after the vertices of `set`, reached as `s`.
  move try_move(const std::uint64_t* set, const state& s, std::size_t v) const {
    const auto [step, live] = seg_.step_after(set, s.live, v);
    return {v, std::max(s.cost, step), live};
  }

  static bool contains(const std::uint64_t* set, std::size_t v) { return segment::has(set, v); }
  bool ready(const std::uint64_t* set, std::size_t v) const {
    return std::ranges::all_of(seg_.preds[v], [&](std::size_t p) { return contains(set, p); });
  }

  /// The most memory some vertex outside `set` will see, after `set` ran
  /// leaving `live` bytes: what it must see in every order, and the next step.
  std::uint64_t remaining_bound(const std::uint64_t* set, std::uint64_t live) const {
    std::uint64_t h = 0;
    for (const auto u : by_must_see_) {
      if (!contains(set, u)) {
        h = must_see_[u];
        break;
      }
    }
    for (const auto u : by_step_) {
      if (!contains(set, u)) {
        h = std::max(h, live + seg_.least_step_bytes(u));
        break;
      }
    }
    return h;
  }

  entry make_entry(std::size_t id, std::uint64_t good_enough) const {
    const state& s = store_[id];
    const std::uint64_t bound = std::max(s.cost, remaining_bound(store_.set_of(id), s.live));
    return {std::max(bound, good_enough), s.depth, s.cost, bound, id};
  }

  const segment& seg_;
  std::size_t k_;
  std::size_t words_;
  search_budget budget_;
  std::size_t state_limit_;
  std::uint64_t restart_work_;
  probe_guidance guidance_;
  std::vector<std::uint64_t> must_see_;
  std::vector<std::size_t> by_must_see_;  ///< vertices, most memory they must see first
  std::vector<std::size_t> by_step_;      ///< vertices, smallest outputs first
  state_store store_;
  std::vector<move> moves_;
};

}  // namespace memopt::detail
