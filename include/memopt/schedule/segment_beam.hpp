#pragma once
// beam_order: a beam search over one segment's orders (segments.hpp), the
// exact scheduler's source of incumbents on segments too wide to search
// (segment_search.hpp). Level d holds at most `width` sets of d vertices run,
// each set once, ranked by the largest step on the path to it and then by the
// bytes it leaves live; the next level is every ready move from them.

#include <memopt/detail/budget.hpp>
#include <memopt/detail/splitmix.hpp>
#include <memopt/schedule/segments.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <vector>

namespace memopt::detail {

struct beam_outcome {
  std::vector<std::size_t> order;  ///< local vertices; empty when the budget ran out first
  bool exhaustive = false;         ///< no level was cut to the width: the order is optimal
};

/// The best complete order a beam of `width` sets finds, with peaks at most
/// `good_enough` counted as equal; `budget` pays one unit per move weighed.
inline beam_outcome beam_order(const segment& seg, std::size_t width, std::uint64_t good_enough,
                               search_budget& budget) {
  const std::size_t k = seg.size();
  const std::size_t words = (k + 63) / 64;
  std::vector<std::vector<std::size_t>> succs(k);
  for (std::size_t v = 0; v < k; ++v) {
    for (const auto p : seg.preds[v]) succs[p].push_back(v);
  }
  for (auto& s : succs) {
    std::ranges::sort(s);
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  // Zobrist keys: a set's hash is the xor of its vertices' keys.
  std::vector<std::uint64_t> key(k);
  for (std::uint64_t v = 0; v < k; ++v) key[v] = splitmix64((v + 1) * golden_gamma);
  struct node {
    std::uint64_t cost;  ///< largest step on the path, at least good_enough
    std::uint64_t live;
    std::uint64_t hash;
    std::vector<std::size_t> ready;
  };
  struct candidate {
    std::uint64_t cost, live, hash;
    std::size_t parent, vertex;
    auto rank() const { return std::tie(cost, live, hash, parent, vertex); }
  };
  std::vector<node> level(1);
  level[0] = {std::max(seg.start_bytes, good_enough), seg.start_bytes, 0, {}};
  for (std::size_t v = 0; v < k; ++v) {
    if (seg.preds[v].empty()) level[0].ready.push_back(v);
  }
  std::vector<std::uint64_t> sets(words, 0), next_sets;
  // trail[d][i]: the parent (at level d) and the vertex of set i of level d + 1.
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> trail;
  trail.reserve(k);
  std::vector<candidate> candidates;
  bool exhaustive = true;
  for (std::size_t depth = 0; depth < k; ++depth) {
    candidates.clear();
    for (std::size_t i = 0; i < level.size(); ++i) {
      const node& at = level[i];
      const std::uint64_t* set = sets.data() + i * words;
      const std::size_t first = candidates.size();
      for (const auto v : at.ready) {
        if (!budget.spend()) return {};
        const auto [step, live] = seg.step_after(set, at.live, v);
        const candidate c{std::max(at.cost, step), live, at.hash ^ key[v], i, v};
        // A move within the path's cost that frees bytes can go first in
        // some best completion: take it alone (as segment_search does).
        if (c.cost <= at.cost && live <= at.live) {
          candidates.resize(first);
          candidates.push_back(c);
          break;
        }
        candidates.push_back(c);
      }
    }
    // Each set once (its cheapest path), then the `width` best.
    std::ranges::sort(candidates, [](const candidate& a, const candidate& b) {
      return std::tie(a.hash, a.cost, a.live, a.parent, a.vertex) <
             std::tie(b.hash, b.cost, b.live, b.parent, b.vertex);
    });
    const auto same_set = [&](const candidate& a, const candidate& b) {
      if (a.hash != b.hash) return false;
      const std::uint64_t* x = sets.data() + a.parent * words;
      const std::uint64_t* y = sets.data() + b.parent * words;
      for (std::size_t w = 0; w < words; ++w) {
        const std::uint64_t xa = x[w] | (a.vertex / 64 == w ? std::uint64_t{1} << (a.vertex % 64) : 0);
        const std::uint64_t yb = y[w] | (b.vertex / 64 == w ? std::uint64_t{1} << (b.vertex % 64) : 0);
        if (xa != yb) return false;
      }
      return true;
    };
    std::size_t kept = 0;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      bool seen = false;
      for (std::size_t d = kept; d-- > 0 && candidates[d].hash == candidates[c].hash;) {
        seen = seen || same_set(candidates[d], candidates[c]);
      }
      if (!seen) candidates[kept++] = candidates[c];
    }
    candidates.resize(kept);
    const std::size_t next_size = std::min(width, kept);
    exhaustive = exhaustive && next_size == kept;
    const auto better = [](const candidate& a, const candidate& b) { return a.rank() < b.rank(); };
    std::ranges::partial_sort(candidates, candidates.begin() + static_cast<std::ptrdiff_t>(next_size), better);
    candidates.resize(next_size);
    // The next level.
    std::vector<node> next(next_size);
    next_sets.assign(next_size * words, 0);
    auto& steps = trail.emplace_back(next_size);
    for (std::size_t j = 0; j < next_size; ++j) {
      const candidate& c = candidates[j];
      std::uint64_t* set = next_sets.data() + j * words;
      std::copy_n(sets.data() + c.parent * words, words, set);
      set[c.vertex / 64] |= std::uint64_t{1} << (c.vertex % 64);
      next[j] = {c.cost, c.live, c.hash, {}};
      next[j].ready.reserve(level[c.parent].ready.size() + succs[c.vertex].size());
      for (const auto v : level[c.parent].ready) {
        if (v != c.vertex) next[j].ready.push_back(v);
      }
      for (const auto s : succs[c.vertex]) {
        if (std::ranges::all_of(seg.preds[s], [&](std::size_t p) { return segment::has(set, p); })) {
          next[j].ready.push_back(s);
        }
      }
      steps[j] = {c.parent, c.vertex};
    }
    level = std::move(next);
    sets.swap(next_sets);
  }
  beam_outcome found{std::vector<std::size_t>(k), exhaustive};
  for (std::size_t depth = k, i = 0; depth-- > 0;) {
    found.order[depth] = trail[depth][i].second;
    i = trail[depth][i].first;
  }
  return found;
}

}  // namespace memopt::detail
