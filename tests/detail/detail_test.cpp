// detail/: the shared internals, each against a brute force or by hand.
#include <memopt/detail/checked.hpp>
#include <memopt/detail/event_sweep.hpp>
#include <memopt/detail/flow_network.hpp>
#include <memopt/detail/kahn.hpp>
#include <memopt/detail/keyed_position_set.hpp>
#include <memopt/detail/per_output.hpp>
#include <memopt/detail/radix_sort.hpp>
#include <memopt/detail/segment_tree.hpp>
#include <memopt/detail/union_find.hpp>
#include <memopt/graph/compact.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace {

/// A CSR graph from an edge list, shaped as kahn.hpp expects.
struct edge_graph {
  memopt::csr_rows<std::size_t> successors, predecessors;
  std::size_t n = 0;

  edge_graph(std::size_t vertices, const std::vector<std::pair<std::size_t, std::size_t>>& edges) : n(vertices) {
    successors.first.assign(n + 1, 0);
    predecessors.first.assign(n + 1, 0);
    for (const auto& [u, v] : edges) {
      ++successors.first[u + 1];
      ++predecessors.first[v + 1];
    }
    for (std::size_t v = 0; v < n; ++v) {
      successors.first[v + 1] += successors.first[v];
      predecessors.first[v + 1] += predecessors.first[v];
    }
    successors.items.resize(edges.size());
    predecessors.items.resize(edges.size());
    auto out = successors.first, in = predecessors.first;
    for (const auto& [u, v] : edges) {
      successors.items[out[u]++] = v;
      predecessors.items[in[v]++] = u;
    }
  }
  [[nodiscard]] std::size_t num_vertices() const { return n; }
};

}  // namespace

TEST_CASE("kahn_order: every vertex of a dag, each after its predecessors, in ready order") {
  const edge_graph g(5, {{0, 2}, {1, 2}, {2, 3}, {0, 4}});
  const auto order = memopt::detail::kahn_order(g);
  CHECK(order == std::vector<std::size_t>{0, 1, 4, 2, 3});
}

TEST_CASE("kahn_order: a cycle leaves out the vertices on and behind it") {
  // 0 -> 1 -> 2 -> 1 (a cycle), 2 -> 3; 4 alone.
  const edge_graph g(5, {{0, 1}, {1, 2}, {2, 1}, {2, 3}});
  auto order = memopt::detail::kahn_order(g);
  std::ranges::sort(order);
  CHECK(order == std::vector<std::size_t>{0, 4});
}

TEST_CASE("ready_tracker: a vertex is ready once its last predecessor arrived") {
  const edge_graph g(3, {{0, 2}, {1, 2}});
  memopt::detail::ready_tracker tracker(g);
  std::vector<std::size_t> ready;
  tracker.start([&](std::size_t v) { ready.push_back(v); });
  CHECK(ready == std::vector<std::size_t>{0, 1});
  CHECK(tracker.waits(2));
  CHECK_FALSE(tracker.arrived(2));
  CHECK(tracker.arrived(2));
  CHECK_FALSE(tracker.waits(2));
}

TEST_CASE("union_find: unite_roots by rank") {
  memopt::detail::union_find sets(6);
  CHECK(sets.size() == 6);
  for (std::size_t v = 0; v < 6; ++v) CHECK(sets.find(v) == v);
  const std::size_t r = sets.unite_roots(0, 1);
  CHECK((r == 0 || r == 1));
  CHECK(sets.find(0) == sets.find(1));
  CHECK(sets.unite_roots(sets.find(2), r) == r);  // the deeper tree leads
  CHECK(sets.find(2) == r);
  CHECK(sets.find(3) == 3);
  CHECK(sets.is_root(4));
  CHECK_FALSE(sets.is_root(2));
}

TEST_CASE("union_find: agrees with relabelling on random merges") {
  std::mt19937_64 rng(7);
  const std::size_t n = 200;
  memopt::detail::union_find sets(n);
  std::vector<std::size_t> label(n);
  for (std::size_t v = 0; v < n; ++v) label[v] = v;
  for (int step = 0; step < 300; ++step) {
    const std::size_t a = rng() % n, b = rng() % n;
    sets.unite_roots(sets.find(a), sets.find(b));
    const std::size_t from = label[b], to = label[a];
    for (auto& l : label) {
      if (l == from) l = to;
    }
    const std::size_t x = rng() % n, y = rng() % n;
    CHECK((sets.find(x) == sets.find(y)) == (label[x] == label[y]));
  }
}

TEST_CASE("min_tree: range minima and point updates against a brute force") {
  std::mt19937_64 rng(11);
  constexpr int empty = std::numeric_limits<int>::max();
  for (const std::size_t n : {0U, 1U, 5U, 64U, 100U}) {
    std::vector<int> keys(n);
    for (auto& k : keys) k = static_cast<int>(rng() % 1000);
    memopt::detail::min_tree built(keys, empty);
    memopt::detail::min_tree<int> updated(n, empty);
    for (std::size_t i = 0; i < n; ++i) updated.set(i, keys[i]);
    for (int step = 0; step < 200; ++step) {
      if (n > 0 && step % 3 == 0) {
        const std::size_t i = rng() % n;
        keys[i] = static_cast<int>(rng() % 1000);
        built.set(i, keys[i]);
        updated.set(i, keys[i]);
      }
      const std::size_t lo = rng() % (n + 1), hi = lo + rng() % (n + 1 - lo);
      const int expected = lo == hi ? empty : *std::min_element(keys.begin() + static_cast<std::ptrdiff_t>(lo),
                                                                 keys.begin() + static_cast<std::ptrdiff_t>(hi));
      CHECK(built.min(lo, hi) == expected);
      CHECK(updated.min(lo, hi) == expected);
    }
  }
}

TEST_CASE("keyed_position_set: range minima and first positions as keys fall and positions leave, against a brute force") {
  std::mt19937_64 rng(12);
  constexpr int empty = std::numeric_limits<int>::max();
  // 4500 positions make three levels of summaries above the keys.
  for (const std::size_t n : {0U, 1U, 5U, 64U, 65U, 200U, 4500U}) {
    std::vector<int> keys(n, empty);  // empty: absent
    memopt::detail::keyed_position_set<int> set(n, empty);
    for (int step = 0; step < 3000; ++step) {
      if (n > 0) {
        const std::size_t i = rng() % n;
        if (rng() % 3 == 0) {
          keys[i] = empty;
          set.erase(i);
        } else {  // a present key only falls
          keys[i] = std::min(keys[i], static_cast<int>(rng() % 1000));
          set.lower(i, keys[i]);
        }
      }
      const std::size_t lo = rng() % (n + 1), hi = lo + rng() % (n + 1 - lo);
      const int expected = lo == hi ? empty : *std::min_element(keys.begin() + static_cast<std::ptrdiff_t>(lo),
                                                                 keys.begin() + static_cast<std::ptrdiff_t>(hi));
      CHECK(set.min(lo, hi) == expected);
      std::size_t first = lo;
      while (first < n && keys[first] == empty) ++first;
      CHECK(set.first_from(lo) == (first < n ? first : SIZE_MAX));
    }
  }
}

TEST_CASE("sorted_with_index: keys ascending, ties by index, against a comparison sort") {
  std::mt19937_64 rng(13);
  // Keys of few values (many ties), of three bytes, of all eight, and with a
  // shared high byte that the sort skips.
  for (const std::uint64_t mask : {std::uint64_t{3}, std::uint64_t{0xFFFFFF}, ~std::uint64_t{0}}) {
    for (const std::uint64_t high : {std::uint64_t{0}, std::uint64_t{0xAB} << 56}) {
      for (const std::size_t n : {0U, 1U, 7U, 1000U}) {
        std::vector<std::uint64_t> keys(n);
        for (auto& k : keys) k = (rng() & mask) | high;
        std::vector<std::pair<std::uint64_t, std::size_t>> expected(n);
        for (std::size_t i = 0; i < n; ++i) expected[i] = {keys[i], i};
        std::sort(expected.begin(), expected.end());
        CHECK(memopt::detail::sorted_with_index(n, [&](std::size_t i) { return keys[i]; }) == expected);
      }
    }
  }
}

TEST_CASE("sweep_intervals: ends before starts at equal times, then by item, live sums match a brute force") {
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> touching = {{2, 4}, {0, 2}, {2, 2}, {0, 2}};
  std::vector<std::pair<bool, std::size_t>> seen;
  memopt::detail::sweep_intervals(
      touching.size(), [&](std::size_t i) { return touching[i]; },
      [&](std::size_t i) { seen.emplace_back(true, i); }, [&](std::size_t i) { seen.emplace_back(false, i); });
  const std::vector<std::pair<bool, std::size_t>> expected = {
      {true, 1}, {true, 3}, {false, 1}, {false, 3}, {true, 0}, {false, 0}};  // item 2 is empty
  CHECK(seen == expected);

  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans(rng() % 30);
    for (auto& [lower, upper] : spans) {
      lower = rng() % 20;
      upper = lower + rng() % 6;
    }
    std::uint64_t live = 0, peak = 0;
    memopt::detail::sweep_intervals(
        spans.size(), [&](std::size_t i) { return spans[i]; },
        [&](std::size_t) { peak = std::max(peak, ++live); }, [&](std::size_t) { --live; });
    std::uint64_t brute = 0;
    for (std::uint64_t t = 0; t < 30; ++t) {
      const auto at_t = std::ranges::count_if(spans, [&](const auto& s) { return s.first <= t && t < s.second; });
      brute = std::max(brute, static_cast<std::uint64_t>(at_t));
    }
    CHECK(live == 0);
    CHECK(peak == brute);
  }
}

TEST_CASE("sweep_intervals: the counting sort (times below twice the events) and the comparison sort agree") {
  // The same intervals with times scaled by 10^12 (and one near 2^64) leave
  // the counting range: the event sequence must not change.
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans(1 + rng() % 40);
    for (auto& [lower, upper] : spans) {
      lower = rng() % 25;
      upper = lower + rng() % 8;
    }
    const auto events_of = [&](std::uint64_t scale, std::uint64_t shift) {
      std::vector<std::pair<bool, std::size_t>> seen;
      memopt::detail::sweep_intervals(
          spans.size(), [&](std::size_t i) { return std::pair(spans[i].first * scale + shift, spans[i].second * scale + shift); },
          [&](std::size_t i) { seen.emplace_back(true, i); }, [&](std::size_t i) { seen.emplace_back(false, i); });
      return seen;
    };
    const auto counted = events_of(1, 0);
    CHECK(counted == events_of(1'000'000'000'000, 0));
    CHECK(counted == events_of(1, std::numeric_limits<std::uint64_t>::max() - 40));
  }
}

TEST_CASE("add_overflows and checked_add at the 2^64 edge") {
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t out = 0;
  CHECK_FALSE(memopt::detail::add_overflows<std::uint64_t>(max - 1, 1, out));
  CHECK(out == max);
  CHECK(memopt::detail::add_overflows<std::uint64_t>(max, 1, out));
  CHECK(out == 0);  // wrapped, as the builtin leaves it
  CHECK(memopt::detail::add_overflows<std::uint64_t>(std::uint64_t{1} << 63, std::uint64_t{1} << 63, out));
  std::uint32_t narrow = 0;
  CHECK(memopt::detail::add_overflows<std::uint32_t>(std::numeric_limits<std::uint32_t>::max(), 1, narrow));
  CHECK(memopt::detail::checked_add(max - 5, 5, 0) == max);
  try {
    (void)memopt::detail::checked_add(max, 2, 7);
    FAIL("no throw");
  } catch (const memopt::size_overflow_error& e) {
    CHECK(e.vertex == 7);
    CHECK(e.sum_bytes == max);
    CHECK(e.added_bytes == 2);
  }
}

TEST_CASE("flow_network: a hand-checked cut, and the capacities set again for a second cut") {
  // 0 = source, 3 = sink; 0 -> 1 (3), 0 -> 2 (2), 1 -> 2 (1), 1 -> 3 (2), 2 -> 3 (3).
  memopt::detail::flow_network net(4);
  const auto s1 = net.add_arc(0, 1), s2 = net.add_arc(0, 2), a12 = net.add_arc(1, 2);
  const auto t1 = net.add_arc(1, 3), t2 = net.add_arc(2, 3);
  CHECK(net.num_arcs() == 10);
  CHECK(net.from(s1 + 1) == 1);  // the reverse arc
  CHECK(net.to(s1 + 1) == 0);
  net.capacity(s1) = 3;
  net.capacity(s2) = 2;
  net.capacity(a12) = 1;
  net.capacity(t1) = 2;
  net.capacity(t2) = 3;
  CHECK(net.max_flow(0, 3) == 5);
  // Both source arcs are saturated: the cut nearest the source is {0}.
  CHECK(net.source_side(0) == std::vector<bool>{true, false, false, false});
  net.capacity(s1) = 10;  // now 1 -> 3 and 1 -> 2 -> 3 carry what 1 gets: 2 + 1, plus 2 from 0 -> 2
  CHECK(net.max_flow(0, 3) == 5);
  CHECK(net.source_side(0) == std::vector<bool>{true, true, false, false});
  // An arc added later joins the next cut.
  const auto extra = net.add_arc(1, 3);
  net.capacity(extra) = 4;
  CHECK(net.max_flow(0, 3) == 9);
}

TEST_CASE("flow_network: the cut equals the least over every source side, on random networks") {
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 2 + rng() % 7;
    memopt::detail::flow_network net(n);
    std::vector<std::tuple<std::size_t, std::size_t, std::int64_t>> arcs;
    const std::size_t m = rng() % 16;
    for (std::size_t k = 0; k < m; ++k) {
      const std::size_t u = rng() % n, v = rng() % n;
      if (u == v) continue;
      const auto c = static_cast<std::int64_t>(rng() % 10);
      net.capacity(net.add_arc(u, v)) = c;
      arcs.emplace_back(u, v, c);
    }
    const std::size_t source = 0, sink = n - 1;
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    std::vector<std::uint64_t> least_sides;  // every source side of least capacity
    for (std::uint64_t side = 0; side < (std::uint64_t{1} << n); ++side) {
      if (((side >> source) & 1) == 0 || ((side >> sink) & 1) != 0) continue;
      std::int64_t cut = 0;
      for (const auto& [u, v, c] : arcs) {
        if (((side >> u) & 1) != 0 && ((side >> v) & 1) == 0) cut += c;
      }
      if (cut < least) least_sides.clear();
      if (cut <= least) least_sides.push_back(side);
      least = std::min(least, cut);
    }
    CHECK(net.max_flow(source, sink) == least);
    // The source side found is the least one: inside every side of least capacity.
    const auto reached = net.source_side(source);
    std::uint64_t found = 0;
    for (std::size_t v = 0; v < n; ++v) found |= static_cast<std::uint64_t>(reached[v]) << v;
    for (const auto side : least_sides) CHECK((found & ~side) == 0);
    CHECK(std::ranges::find(least_sides, found) != least_sides.end());
  }
}

TEST_CASE("per_output: a value per output, vertex by vertex, sharing offsets") {
  const std::vector<std::vector<int>> outputs{{1, 2}, {}, {3}, {4, 5, 6}};
  const auto first = memopt::detail::output_offsets(outputs);
  CHECK(*first == std::vector<std::size_t>{0, 2, 2, 3, 6});
  memopt::detail::per_output<std::size_t> table(first, 7);
  CHECK(table[1].empty());
  CHECK(table[3].size() == 3);
  table[3][2] = 9;
  table[0][1] = 8;
  CHECK(table.values() == std::vector<std::size_t>{7, 8, 7, 7, 7, 9});
  auto copy = table;
  copy[0][0] = 1;
  CHECK(table[0][0] == 7);
  CHECK(copy.offsets() == table.offsets());
}

TEST_CASE("gather_rows: rows in the order handed, and a length_error when the entries overflow the offsets") {
  // 300 entries: row k % 3 gets k, so each row holds its items in increasing order.
  const auto entries = [](std::size_t count) {
    return [count](auto&& emit) {
      for (std::size_t k = 0; k < count; ++k) emit(k % 3, static_cast<int>(k));
    };
  };
  const auto wide = memopt::detail::gather_rows<int>(3, entries(300));
  REQUIRE(wide.first == std::vector<std::size_t>{0, 100, 200, 300});
  CHECK(wide[1].front() == 1);
  CHECK(wide[1].back() == 298);
  // 8-bit offsets hold 255 entries, not 256 (as 32-bit ones hold 2^32 - 1).
  const auto narrow = memopt::detail::gather_rows<int, std::uint8_t>(3, entries(255));
  CHECK(narrow.first == std::vector<std::uint8_t>{0, 85, 170, 255});
  CHECK(narrow[2].back() == 254);
  const auto overflowing = [&] { return memopt::detail::gather_rows<int, std::uint8_t>(3, entries(256)); };
  CHECK_THROWS_WITH_AS(overflowing(), "memopt: 256 entries overflow rows with 8-bit offsets", std::length_error);
}
