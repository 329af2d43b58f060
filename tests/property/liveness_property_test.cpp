// Property tests over thousands of seeded random DAGs: the memory model agrees
// with a brute-force reading of its definition, on every graph type.
#include "../support/random_dag.hpp"

#include <memopt/graph/compact.hpp>
#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <vector>

namespace mt = memopt::testing;


TEST_CASE("property: peak equals the brute-force peak and the timeline's maximum, on every graph type") {
  std::mt19937_64 rng(20261122);
  for (int trial = 0; trial < 2000; ++trial) {
    const auto spec = mt::random_dag(rng);
    const auto order = mt::random_topological_order(spec, rng);
    REQUIRE(order.size() == spec.nodes.size());
    const auto r = mt::liveness_of<mt::vec_graph>(spec, order);
    INFO("trial " << trial);
    CHECK(r.peak_bytes == mt::brute_force_peak(spec, order));
    CHECK(r.peak_bytes == (r.timeline.empty() ? 0 : *std::ranges::max_element(r.timeline)));
    std::uint64_t at_peak = 0;
    for (const auto b : r.live_at_peak) at_peak += r.buffers.bytes[b];
    CHECK(at_peak == r.peak_bytes);
    CHECK(mt::liveness_of<mt::list_graph>(spec, order).peak_bytes == r.peak_bytes);
    CHECK(mt::liveness_of<mt::bidir_graph>(spec, order).peak_bytes == r.peak_bytes);
    const auto hand = mt::liveness_of<mt::hand_graph>(spec, order);
    CHECK(hand.intervals == r.intervals);
    CHECK(hand.timeline == r.timeline);
  }
}

TEST_CASE("property: with views and in-place results, the storage peak is the brute-force one and never above every output apart") {
  std::mt19937_64 rng(20261123);
  for (int trial = 0; trial < 2000; ++trial) {
    const auto spec = mt::random_dag(rng, {.alias_probability = 0.35});
    const auto order = mt::random_topological_order(spec, rng);
    REQUIRE(order.size() == spec.nodes.size());
    INFO("trial " << trial);
    const auto r = mt::liveness_of<mt::vec_graph>(spec, order);
    CHECK(r.peak_bytes == mt::brute_force_peak(spec, order));
    std::uint64_t at_peak = 0;
    for (const auto b : r.live_at_peak) at_peak += r.buffers.bytes[b];
    CHECK(at_peak == r.peak_bytes);
    CHECK(mt::liveness_of<mt::list_graph>(spec, order).intervals == r.intervals);
    CHECK(mt::liveness_of<mt::hand_graph>(spec, order).timeline == r.timeline);
    auto apart = spec;
    for (auto& node : apart.nodes) node.aliases.clear();
    CHECK(r.peak_bytes <= mt::liveness_of<mt::vec_graph>(apart, order).peak_bytes);
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    CHECK(memopt::is_topological_order(g, mt::to_vertices<mt::vec_graph>(vertex, order)));
  }
}

TEST_CASE("property: liveness on the snapshot equals liveness on the graph") {
  std::mt19937_64 rng(424242);
  for (int trial = 0; trial < 1000; ++trial) {
    const auto spec = mt::random_dag(rng, {.alias_probability = trial % 2 == 0 ? 0.0 : 0.35});
    const auto order = mt::random_topological_order(spec, rng);
    const auto [g, vertex] = mt::build<mt::list_graph>(spec);
    const auto index = mt::index_map(g);
    INFO("trial " << trial);
    const auto direct = memopt::liveness(g, mt::to_vertices<mt::list_graph>(vertex, order), index);
    const auto snapshot = memopt::snapshot_liveness(memopt::make_compact_graph(g, index), order);
    CHECK(snapshot.intervals == direct.intervals);
    CHECK(snapshot.timeline == direct.timeline);
    CHECK(snapshot.peak_step == direct.peak_step);
    CHECK(snapshot.live_at_peak == direct.live_at_peak);
    CHECK(snapshot.persistent_bytes == direct.persistent_bytes);
  }
}

TEST_CASE("property: intervals follow the definition") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 1000; ++trial) {
    const auto spec = mt::random_dag(rng);
    const auto order = mt::random_topological_order(spec, rng);
    const auto r = mt::liveness_of<mt::vec_graph>(spec, order);
    const std::size_t n = order.size();
    std::vector<std::size_t> step(n);
    for (std::size_t t = 0; t < n; ++t) step[order[t]] = t;
    for (memopt::buffer_id b = 0; b < r.buffers.size(); ++b) {
      const auto v = r.buffers.owner[b];
      const auto& node = spec.nodes[v];
      const auto port = r.buffers.port_of(b);
      const auto interval = r.intervals[b];
      if (node.persistent) {
        CHECK(interval == memopt::live_interval{0, n - 1});
        continue;
      }
      CHECK(interval.first == step[v]);
      std::size_t last = step[v];
      for (std::size_t reader = 0; reader < n; ++reader) {
        for (const auto& in : spec.nodes[reader].inputs) {
          if (in == std::pair{v, port}) last = std::max(last, step[reader]);
        }
      }
      if (std::ranges::count(node.live_out, port) > 0) last = n - 1;
      CHECK(interval.last == last);
    }
  }
}

TEST_CASE("property: an order and its validator agree, and liveness refuses exactly the bad ones") {
  std::mt19937_64 rng(99);
  int valid = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const auto spec = mt::random_dag(rng, {.max_nodes = 9, .alias_probability = trial % 3 == 0 ? 0.5 : 0.0});
    // Half the time a shuffled topological order, which may stay topological.
    auto order = mt::random_topological_order(spec, rng);
    if (trial % 2 == 1) {
      std::ranges::shuffle(order, rng);
    }
    if (trial % 7 == 3 && !order.empty()) order.pop_back();
    if (trial % 11 == 5 && !order.empty()) order.push_back(order.front());
    const bool expected = mt::brute_force_is_topological(spec, order);
    valid += expected ? 1 : 0;
    {
      const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
      const auto vs = mt::to_vertices<mt::vec_graph>(vertex, order);
      CHECK(memopt::is_topological_order(g, vs) == expected);
      CHECK(memopt::check_topological_order(g, vs).empty() == expected);
      if (expected) {
        CHECK_NOTHROW((void)memopt::liveness(g, vs));
      } else {
        CHECK_THROWS_AS((void)memopt::liveness(g, vs), memopt::not_topological_error);
      }
    }
    {
      const auto [g, vertex] = mt::build<mt::list_graph>(spec);
      const auto vs = mt::to_vertices<mt::list_graph>(vertex, order);
      CHECK(memopt::is_topological_order(g, vs, mt::index_map(g)) == expected);
    }
  }
  CHECK(valid > 500);  // both outcomes are well represented
  CHECK(valid < 2500);
}

TEST_CASE("property: find_cycle finds exactly the cycles a back edge makes") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 1000; ++trial) {
    const auto spec = mt::random_dag(rng, {.min_nodes = 2});
    auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    CHECK_FALSE(memopt::find_cycle(g).has_value());
    // An edge from a node back to one of its ancestors closes a cycle.
    const auto preds = mt::predecessors(spec);
    std::size_t v = spec.nodes.size() - 1;
    while (v > 0 && preds[v].empty()) --v;
    if (v == 0) continue;
    add_edge(v, preds[v].front(), g);
    const auto cycle = memopt::find_cycle(g);
    REQUIRE(cycle.has_value());
    // Every consecutive pair, and last -> first, is an edge.
    for (std::size_t k = 0; k < cycle->size(); ++k) {
      CHECK(edge((*cycle)[k], (*cycle)[(k + 1) % cycle->size()], g).second);
    }
  }
}

TEST_CASE_TEMPLATE("property: the compact snapshot lists each neighbour, read and reader once, in-place orders as arcs, under any index map",
                   G, mt::vec_graph, mt::bidir_graph, mt::list_graph) {
  std::mt19937_64 rng(11);
  std::size_t in_place_orders = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const bool views = trial % 2 == 1;
    const auto spec = mt::random_dag(rng, {.alias_probability = views ? 0.3 : 0.0});
    const std::size_t n = spec.nodes.size();
    std::vector<std::size_t> relabel(n);  // node i has index relabel[i]
    std::iota(relabel.begin(), relabel.end(), std::size_t{0});
    std::ranges::shuffle(relabel, rng);
    // The graph names an alias's source by its index in the map it is read
    // with: under relabel, the relabelled node.
    mt::graph_spec relabelled_aliases = spec;
    for (auto& node : relabelled_aliases.nodes) {
      for (auto& alias : node.aliases) alias.node = relabel[alias.node];
    }
    const auto [g, vertex] = mt::build<G>(relabelled_aliases);
    const auto plain = mt::index_map(g);
    const auto c = memopt::make_compact_graph(g, [&](auto v) { return relabel[plain(v)]; });
    INFO("trial " << trial);

    std::vector<std::set<std::size_t>> successors(n), predecessors(n), reads(n), readers(c.buffers.size());
    const auto arc = [&](std::size_t from, std::size_t to) {
      successors[from].insert(to);
      predecessors[to].insert(from);
    };
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t v = relabel[i];
      for (const auto& [producer, port] : spec.nodes[i].inputs) {
        arc(relabel[producer], v);
        const memopt::buffer_id storage = c.buffers.storage[c.buffers.id(relabel[producer], port)];
        reads[v].insert(storage);
        readers[storage].insert(v);
      }
      for (const std::size_t before : spec.nodes[i].control) arc(relabel[before], v);
    }
    for (const auto& h : c.hazards) arc(h.before, h.after);
    in_place_orders += c.hazards.size();
    const auto lists_once = [](const auto& row, const std::set<std::size_t>& expected) {
      return row.size() == expected.size() && std::set<std::size_t>(row.begin(), row.end()) == expected;
    };
    for (std::size_t v = 0; v < n; ++v) {
      CHECK(lists_once(c.successors[v], successors[v]));
      CHECK(lists_once(c.predecessors[v], predecessors[v]));
      CHECK(lists_once(c.reads[v], reads[v]));
    }
    for (memopt::buffer_id b = 0; b < c.buffers.size(); ++b) CHECK(lists_once(c.readers[b], readers[b]));

    // Rows keep edge order whatever the numbering: those of the graph's own
    // numbering, relabelled, item for item (in-place orders follow the edges,
    // in an order of their own: left out).
    if (views) continue;
    const auto same = memopt::make_compact_graph(g, plain);
    const auto relabelled = [&](std::span<const memopt::compact_index> row, const std::vector<std::size_t>& to) {
      std::vector<std::size_t> out;
      for (const auto item : row) out.push_back(to[item]);
      return out;
    };
    std::vector<std::size_t> buffer_relabel(same.buffers.size());
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t port = 0; port < spec.nodes[i].outputs.size(); ++port) {
        buffer_relabel[same.buffers.id(i, port)] = c.buffers.id(relabel[i], port);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(std::ranges::equal(c.successors[relabel[i]], relabelled(same.successors[i], relabel)));
      CHECK(std::ranges::equal(c.predecessors[relabel[i]], relabelled(same.predecessors[i], relabel)));
      CHECK(std::ranges::equal(c.reads[relabel[i]], relabelled(same.reads[i], buffer_relabel)));
    }
    for (memopt::buffer_id b = 0; b < same.buffers.size(); ++b) {
      CHECK(std::ranges::equal(c.readers[buffer_relabel[b]], relabelled(same.readers[b], relabel)));
    }
  }
  CHECK(in_place_orders > 0);
}

TEST_CASE("property: with in-place candidates, the peak is a step-by-step simulation of the reuse rule") {
  std::mt19937_64 rng(20261126);
  for (int trial = 0; trial < 1500; ++trial) {
    const double views = trial % 2 == 0 ? 0.0 : 0.25;
    const auto spec = mt::random_dag(rng, {.max_nodes = 24, .alias_probability = views, .may_alias_probability = 0.6});
    const auto order = mt::random_topological_order(spec, rng);
    INFO("trial " << trial);
    const auto r = mt::liveness_of<mt::vec_graph>(spec, order);
    CHECK(r.peak_bytes == mt::brute_force_reuse_peak(spec, order));
    CHECK(r.peak_bytes == (r.timeline.empty() ? 0 : *std::ranges::max_element(r.timeline)));
    CHECK(mt::liveness_of<mt::list_graph>(spec, order).timeline == r.timeline);
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const auto snapshot = memopt::snapshot_liveness(memopt::make_compact_graph(g), order);
    CHECK(snapshot.timeline == r.timeline);
    CHECK(snapshot.buffers.storage == r.buffers.storage);
    // Reuse only lowers the step that takes a storage, by the taker's bytes.
    auto without = spec;
    for (auto& node : without.nodes) node.may_aliases.clear();
    const auto apart = mt::liveness_of<mt::vec_graph>(without, order);
    std::vector<std::size_t> step(order.size());
    for (std::size_t t = 0; t < order.size(); ++t) step[order[t]] = t;
    std::vector<std::uint64_t> saved(order.size(), 0);
    for (const auto b : r.reused) saved[step[r.buffers.owner[b]]] += apart.buffers.bytes[b];
    for (std::size_t t = 0; t < order.size(); ++t) CHECK(r.timeline[t] + saved[t] == apart.timeline[t]);
  }
}
