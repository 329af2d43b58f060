// Property tests of the exact scheduler's parts on the segments of thousands
// of seeded random DAGs, each against a brute force over the segment's sets of
// vertices run: the cut bound (cut_bound.hpp) is the least memory of each
// step over every set that may precede it (at most that, where the step may
// reuse a buffer in place), and a beam wide enough to cut no level
// (segment_beam.hpp) finds the optimum.
#include "../support/random_dag.hpp"

#include <memopt/schedule.hpp>
#include <memopt/schedule/cut_bound.hpp>
#include <memopt/schedule/segment_beam.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace mt = memopt::testing;
namespace md = memopt::detail;

namespace {

/// The segments of a random DAG's post-order.
std::vector<md::segment> segments_of(const mt::graph_spec& spec) {
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  const auto c = memopt::make_compact_graph(g);
  const auto order = memopt::post_order_order(c);
  return md::split_into_segments(c, order, md::vertex_roles(c, order));
}

/// Whether `set` (a bit per local vertex) holds every predecessor of `v`.
bool ready_after(const md::segment& seg, std::uint64_t set, std::size_t v) {
  return std::ranges::all_of(seg.preds[v], [&](std::size_t p) { return (set >> p & 1U) != 0; });
}

/// Calls step(set, u, memory of u's step) for every downward-closed set of
/// the segment's vertices, in increasing order, and each vertex u ready
/// after it (local indices are topological, so running a set's vertices by
/// index gives what it leaves live).
template <class Step>
void for_each_step(const md::segment& seg, Step step) {
  const std::size_t k = seg.size();
  for (std::uint64_t set = 0; set < (std::uint64_t{1} << k); ++set) {
    std::uint64_t live = seg.start_bytes, ran = 0;
    bool closed = true;
    for (std::size_t v = 0; v < k && closed; ++v) {
      if ((set >> v & 1U) == 0) continue;
      closed = ready_after(seg, ran, v);
      live = seg.step_after(&ran, live, v).second;
      ran |= std::uint64_t{1} << v;
    }
    if (!closed) continue;
    for (std::size_t u = 0; u < k; ++u) {
      if ((set >> u & 1U) == 0 && ready_after(seg, set, u)) step(set, u, seg.step_after(&set, live, u).first);
    }
  }
}

/// The segment's least peak, by a dynamic programme over downward-closed sets.
std::uint64_t optimum_of(const md::segment& seg) {
  std::vector<std::uint64_t> best(std::size_t{1} << seg.size(), UINT64_MAX);
  best[0] = seg.start_bytes;
  for_each_step(seg, [&](std::uint64_t set, std::size_t u, std::uint64_t memory) {
    const std::uint64_t next = set | std::uint64_t{1} << u;
    best[next] = std::min(best[next], std::max(best[set], memory));
  });
  return best.back();
}

std::vector<md::segment> random_segments(std::mt19937_64& rng, int trial) {
  return segments_of(mt::random_dag(rng, {.max_nodes = 10,
                                          .max_inputs = 3,
                                          .persistent_probability = trial % 3 == 0 ? 0.3 : 0.0,
                                          .alias_probability = trial % 2 == 0 ? 0.0 : 0.4,
                                          .may_alias_probability = trial % 4 == 1 ? 0.7 : 0.0}));
}

/// The key-order bound by its definition: over every order of `keys`, the
/// most any key's constrained cut sees (the keys before it and their
/// ancestors run, it and the keys after it with their descendants not);
/// the least of those. Orders that contradict the graph are left out.
std::uint64_t key_orders_by_permutation(const md::segment& seg, md::step_cut_network& network,
                                        std::vector<std::size_t> keys) {
  const std::size_t k = seg.size();
  std::uint64_t least = UINT64_MAX;
  std::ranges::sort(keys);
  do {
    std::uint64_t most = 0;
    bool possible = true;
    for (std::size_t at = 0; at < keys.size() && possible; ++at) {
      std::vector<char> side(k, md::step_cut_network::free_side);
      // Everything reachable from `from` along `next` (from itself unless
      // it is the key running) goes to side `want`.
      const auto force = [&](std::size_t from, const std::vector<std::vector<std::size_t>>& next, char want) {
        std::vector<char> reached(k, 0);
        reached[from] = 1;
        md::mark_reachable(reached, from, next, 1);
        if (from == keys[at] && want == md::step_cut_network::run_before) reached[from] = 0;
        for (std::size_t v = 0; v < k; ++v) {
          if (!reached[v]) continue;
          possible = possible && (side[v] == md::step_cut_network::free_side || side[v] == want);
          side[v] = want;
        }
      };
      for (std::size_t j = at; j < keys.size(); ++j) force(keys[j], network.successors(), md::step_cut_network::not_yet);
      for (std::size_t j = 0; j < at; ++j) force(keys[j], seg.preds, md::step_cut_network::run_before);
      force(keys[at], seg.preds, md::step_cut_network::run_before);
      if (!possible) break;
      const auto memory = network.least_memory(keys[at], side);
      possible = memory.has_value();
      if (possible) most = std::max(most, *memory);
    }
    if (possible) least = std::min(least, most);
  } while (std::ranges::next_permutation(keys).found);
  return least;
}

}  // namespace

TEST_CASE("property: the cut bound is each step's least memory over the sets that may precede it") {
  std::mt19937_64 rng(2611);
  int sharper = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    INFO("trial " << trial);
    for (const auto& seg : random_segments(rng, trial)) {
      const std::size_t k = seg.size();
      std::vector<std::uint64_t> least(k, UINT64_MAX);
      for_each_step(seg, [&](std::uint64_t, std::size_t u, std::uint64_t memory) {
        least[u] = std::min(least[u], memory);
      });
      const auto by_cuts = md::memory_at_least_at_each_step(seg);
      const auto by_ancestry = md::memory_every_order_sees(seg);
      CHECK(md::cut_work(seg) > 0);
      for (std::size_t u = 0; u < k; ++u) {
        // In-place reuse saves at u's step only when u reads the buffer last,
        // which the cut does not follow: there it may be below the least.
        if (seg.reusable_bytes[u] == 0) CHECK(by_cuts[u] == least[u]);
        CHECK(by_cuts[u] <= least[u]);
        CHECK(by_ancestry[u] <= by_cuts[u]);
        sharper += by_ancestry[u] < by_cuts[u] ? 1 : 0;
      }
    }
  }
  CHECK(sharper > 100);
}

TEST_CASE("property: a beam that cuts no level finds the segment's optimum, a narrow one a valid order") {
  std::mt19937_64 rng(2612);
  int cut_levels = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    INFO("trial " << trial);
    for (const auto& seg : random_segments(rng, trial)) {
      const std::size_t k = seg.size();
      const std::uint64_t optimum = optimum_of(seg);
      md::search_budget budget;
      const auto wide = md::beam_order(seg, std::size_t{1} << 12, 0, budget);
      CHECK(wide.exhaustive);
      CHECK(seg.peak_of(wide.order) == optimum);
      const auto narrow = md::beam_order(seg, 2, 0, budget);
      REQUIRE(narrow.order.size() == k);
      std::vector<char> ran(k, 0);
      for (const auto v : narrow.order) {
        CHECK(std::ranges::all_of(seg.preds[v], [&](std::size_t p) { return ran[p] != 0; }));
        ran[v] = 1;
      }
      CHECK(seg.peak_of(narrow.order) >= optimum);
      cut_levels += narrow.exhaustive ? 0 : 1;
      // Peaks up to good_enough count as equal: the beam's order is within it.
      const auto within = md::beam_order(seg, std::size_t{1} << 12, optimum + 1, budget);
      CHECK(seg.peak_of(within.order) <= optimum + 1);
    }
  }
  CHECK(cut_levels > 100);
}

TEST_CASE("beam_order: an empty order when its budget runs out") {
  std::mt19937_64 rng(2613);
  const auto segments = random_segments(rng, 0);
  const auto widest = std::ranges::max_element(segments, {}, [](const md::segment& s) { return s.size(); });
  REQUIRE(widest->size() > 2);
  md::search_budget none(std::nullopt, 1);
  CHECK(md::beam_order(*widest, 8, 0, none).order.empty());
}

TEST_CASE("memory_at_least_at_each_step: a chain unordered with u leaves one of its links live, wherever u runs") {
  // a(10) -> b(10) -> u(1) -> d(1, output) <- c2(10) <- c1(10) <- a. At u's
  // step b's output is live, and a's, c1's or c2's, whichever ran: 21, the
  // optimum. Ancestry alone sees 20 at most (c1's step: a's output and its own).
  const mt::graph_spec spec{{{.outputs = {10}},
                             {.outputs = {10}, .inputs = {{0, 0}}},
                             {.outputs = {1}, .inputs = {{1, 0}}},
                             {.outputs = {10}, .inputs = {{0, 0}}},
                             {.outputs = {10}, .inputs = {{3, 0}}},
                             {.outputs = {1}, .inputs = {{2, 0}, {4, 0}}, .live_out = {0}}}};
  std::uint64_t by_cuts = 0, by_ancestry = 0;
  for (const auto& seg : segments_of(spec)) {
    for (const auto m : md::memory_at_least_at_each_step(seg)) by_cuts = std::max(by_cuts, m);
    for (const auto m : md::memory_every_order_sees(seg)) by_ancestry = std::max(by_ancestry, m);
  }
  CHECK(by_ancestry == 20);
  CHECK(by_cuts == 21);
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  CHECK(memopt::exact_schedule(g).peak_bytes == 21);
}

TEST_CASE("memory_at_least_over_key_orders: whichever branch ends second sees what the first left") {
  // s(1) feeds a1(10) -> a2(5) and b1(10) -> b2(5); t(1) reads a2 and b2.
  // At a2's step alone the cut runs nothing of b before it: a1's 10, a2's 5
  // and s's 1 = 16 (b2's alike). But a2 and b2 run in some order, and the
  // second sees the first's 5 instead of s's 1: 20, the optimum.
  const mt::graph_spec spec{{{.outputs = {1}},
                             {.outputs = {10}, .inputs = {{0, 0}}},
                             {.outputs = {5}, .inputs = {{1, 0}}},
                             {.outputs = {10}, .inputs = {{0, 0}}},
                             {.outputs = {5}, .inputs = {{3, 0}}},
                             {.outputs = {1}, .inputs = {{2, 0}, {4, 0}}, .live_out = {0}}}};
  std::uint64_t by_cuts = 0, by_key_orders = 0;
  for (const auto& seg : segments_of(spec)) {
    const auto cuts = md::memory_at_least_at_each_step(seg);
    for (const auto m : cuts) by_cuts = std::max(by_cuts, m);
    md::step_cut_network network(seg);
    const auto keys = md::unordered_keys(seg, network, cuts, 20);
    const auto bound = md::memory_at_least_over_key_orders(seg, network, keys, UINT64_MAX, [] { return true; });
    REQUIRE(bound);
    by_key_orders = std::max(by_key_orders, *bound);
    const std::vector<std::size_t> too_many(md::max_keys + 1, 0);
    CHECK_THROWS_AS((void)md::memory_at_least_over_key_orders(seg, network, too_many, UINT64_MAX, [] { return true; }),
                    std::invalid_argument);
  }
  CHECK(by_cuts == 16);
  CHECK(by_key_orders == 20);
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  CHECK(memopt::exact_schedule(g).peak_bytes == 20);
}

TEST_CASE("property: key orders bound the segment's optimum, never below their keys' cuts") {
  std::mt19937_64 rng(2614);
  int sharper = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    INFO("trial " << trial);
    for (const auto& seg : random_segments(rng, trial)) {
      const std::size_t k = seg.size();
      const std::uint64_t optimum = optimum_of(seg);
      const auto cuts = md::memory_at_least_at_each_step(seg);
      md::step_cut_network network(seg);
      // Unordered keys, as the search takes them, and any keys at all
      // (ordered ones too: orders that contradict the graph are left out).
      auto keys = md::unordered_keys(seg, network, cuts, 20);
      std::vector<std::size_t> any;
      for (std::size_t v = 0; v < k; ++v) {
        if (rng() % 2 == 0) any.push_back(v);
      }
      for (const auto& chosen : {keys, any}) {
        if (chosen.empty()) continue;
        const auto bound = md::memory_at_least_over_key_orders(seg, network, chosen, UINT64_MAX, [] { return true; });
        REQUIRE(bound);
        std::uint64_t keys_cut = 0;
        for (const auto u : chosen) keys_cut = std::max(keys_cut, cuts[u]);
        CHECK(*bound <= optimum);
        CHECK(*bound >= keys_cut);
        if (chosen.size() <= 6) CHECK(*bound == key_orders_by_permutation(seg, network, chosen));
        sharper += *bound > std::ranges::max(cuts) ? 1 : 0;
        // Refined only up to `enough`: at least that, or the same value.
        const auto capped =
            md::memory_at_least_over_key_orders(seg, network, chosen, keys_cut + 1, [] { return true; });
        CHECK(*capped == std::min(*bound, keys_cut + 1));
      }
      md::search_budget spent(std::nullopt, 1);
      CHECK(spent.spend(1));
      const std::uint64_t start = k > 0 ? std::ranges::max(cuts) : 0;
      CHECK(md::raise_by_key_orders(seg, cuts, start, optimum, spent) == start);
      md::search_budget ample;
      const auto raised = md::raise_by_key_orders(seg, cuts, start, optimum, ample);
      CHECK(raised >= start);
      CHECK(raised <= optimum);
    }
  }
  CHECK(sharper > 60);
}

TEST_CASE("property: probes that restart every few states prove the optimum where A* stops at once") {
  for (const auto guidance : {md::probe_guidance::none, md::probe_guidance::incumbent}) {
    std::mt19937_64 rng(2615);
    for (int trial = 0; trial < 1000; ++trial) {
      INFO("trial " << trial << ", guided by the incumbent " << (guidance == md::probe_guidance::incumbent));
      for (const auto& seg : random_segments(rng, trial)) {
        const std::uint64_t optimum = optimum_of(seg);
        std::vector<std::size_t> identity(seg.size());
        std::iota(identity.begin(), identity.end(), std::size_t{0});
        // A* stops past two states; the probes forget their dead ends past
        // two, and restart after runs of 1, 1, 2, 1, 1, 2, 4, ... states.
        md::segment_search search(seg, md::search_budget{}, 2, 1, guidance);
        const auto found = search.run(identity, 0);
        CHECK(found.peak == optimum);
        CHECK(found.lower_bound == optimum);
        CHECK(seg.peak_of(found.order) == optimum);
      }
    }
  }
}

TEST_CASE("probe keys: Luby's run lengths, and an incumbent's positions moved by at most three places") {
  const std::uint64_t lengths[] = {1, 1, 2, 1, 1, 2, 4, 1, 1, 2, 1, 1, 2, 4, 8, 1};
  for (std::uint64_t n = 1; n <= std::size(lengths); ++n) CHECK(md::luby(n) == lengths[n - 1]);
  int reordered = 0;
  for (std::uint64_t run = 0; run < 40; ++run) {
    for (std::size_t p = 0; p < 200; ++p) {
      for (std::size_t q = p + 1; q < 200; ++q) {
        // Vertex v at position v: a later one may come first only if close.
        if (md::near_position(q, run, q) >= md::near_position(p, run, p)) continue;
        ++reordered;
        CHECK(run > 0);
        CHECK(q - p <= 3);
      }
    }
  }
  CHECK(reordered > 1000);  // later runs do differ from the first
}
