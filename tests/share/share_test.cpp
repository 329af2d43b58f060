// share/: linear_share, dag_share and check_sharing on small graphs worked
// out by hand, storage by storage.
#include "../support/graph_spec.hpp"
#include "../support/named_graphs.hpp"

#include <memopt/share.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace mt = memopt::testing;

namespace {

template <class G, class Policy = memopt::lifo_reuse>
memopt::sharing_plan linear(const mt::graph_spec& spec, const std::vector<std::size_t>& order,
                            Policy policy = {}, const memopt::share_options& options = {}) {
  const auto [g, vertex] = mt::build<G>(spec);
  const auto vs = mt::to_vertices<G>(vertex, order);
  auto plan = memopt::linear_share(g, std::span<const memopt::vertex_t<G>>(vs), policy, options,
                                   mt::index_map(g));
  CHECK(memopt::check_sharing(g, plan, std::span<const memopt::vertex_t<G>>(vs), options,
                              mt::index_map(g))
            .empty());
  return plan;
}

template <class G, class Policy = memopt::best_fit_reuse>
memopt::sharing_plan dag(const mt::graph_spec& spec, Policy policy = {},
                         const memopt::share_options& options = {}) {
  const auto [g, vertex] = mt::build<G>(spec);
  auto plan = memopt::dag_share(g, policy, options, mt::index_map(g));
  CHECK(memopt::check_sharing(g, plan, options, mt::index_map(g)).empty());
  return plan;
}

/// Storage of buffer (vertex, port 0), spec vertices being their own indices.
std::size_t storage(const memopt::sharing_plan& plan, std::size_t vertex) {
  return plan.storage_of[plan.buffers.id(vertex, 0)];
}

/// x(input) -> o1 -> o2 -> o3 -> o4 -> o5 (graph output), all 10 bytes.
mt::graph_spec long_chain() {
  mt::graph_spec spec{{{.outputs = {10}}}};
  for (std::size_t k = 1; k <= 5; ++k) spec.nodes.push_back({.outputs = {10}, .inputs = {{k - 1, 0}}});
  spec.nodes.back().live_out = {0};
  return spec;
}

/// x -> p(10), q(20); r(5) reads p then q; s(7) reads r; t(1) reads s (output).
mt::graph_spec two_freed() {
  return {{{.outputs = {1}},
           {.outputs = {10}, .inputs = {{0, 0}}},
           {.outputs = {20}, .inputs = {{0, 0}}},
           {.outputs = {5}, .inputs = {{1, 0}, {2, 0}}},
           {.outputs = {7}, .inputs = {{3, 0}}},
           {.outputs = {1}, .inputs = {{4, 0}}, .live_out = {0}}}};
}

/// s -> m(10) -> b1(1), b2(1) -> c2(1); j(8) reads b1, c2; k(10) reads j;
/// out(1) reads k. m's readers are parallel: m is free again only at j.
mt::graph_spec fan_join() {
  return {{{.outputs = {1}},
           {.outputs = {10}, .inputs = {{0, 0}}},
           {.outputs = {1}, .inputs = {{1, 0}}},
           {.outputs = {1}, .inputs = {{1, 0}}},
           {.outputs = {1}, .inputs = {{3, 0}}},
           {.outputs = {8}, .inputs = {{2, 0}, {4, 0}}},
           {.outputs = {10}, .inputs = {{5, 0}}},
           {.outputs = {1}, .inputs = {{6, 0}}, .live_out = {0}}}};
}

bool has(const std::vector<memopt::sharing_violation>& violations, memopt::sharing_fault fault) {
  return std::ranges::any_of(violations, [&](const auto& v) { return v.fault == fault; });
}

}  // namespace

#define ALL_GRAPH_TYPES mt::vec_graph, mt::list_graph, mt::bidir_graph, mt::hand_graph

TEST_CASE_TEMPLATE("linear_share: a chain alternates between two shared storages", G, ALL_GRAPH_TYPES) {
  const auto plan = linear<G>(long_chain(), mt::identity_order(6));
  CHECK(plan.num_storages() == 4);  // x, {o1, o3}, {o2, o4}, o5
  CHECK(storage(plan, 1) == storage(plan, 3));
  CHECK(storage(plan, 2) == storage(plan, 4));
  CHECK(storage(plan, 1) != storage(plan, 2));
  CHECK(plan.total_bytes == 40);
  CHECK(plan.unshared_bytes == 60);
}

TEST_CASE("linear_share: graph inputs are static unless options say otherwise") {
  memopt::share_options options{.share_graph_inputs = true};
  const auto plan = linear<mt::vec_graph>(long_chain(), mt::identity_order(6), memopt::lifo_reuse{}, options);
  // x is freed after o1: o2 takes it, o3 takes o1's, o4 takes x's again.
  CHECK(plan.num_storages() == 3);
  CHECK(storage(plan, 0) == storage(plan, 2));
  CHECK(storage(plan, 0) == storage(plan, 4));
  CHECK(storage(plan, 1) == storage(plan, 3));
  CHECK(plan.total_bytes == 30);
}

TEST_CASE("graph inputs (docs/sharing.md): no predecessor, not even a control one, static unless options say") {
  // x -> o1 -> ... -> o5, and a source z (10) read by o5 alongside o4.
  auto spec = long_chain();
  spec.nodes.push_back({.outputs = {10}});
  spec.nodes[5].inputs.push_back({6, 0});
  const memopt::share_options shared{.share_graph_inputs = true};
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  // x and z are graph inputs: alone in their storages by default, recycled when the options say.
  const auto fixed = memopt::dag_share(g);
  CHECK(memopt::check_sharing(g, fixed).empty());
  for (const std::size_t v : {1, 2, 3, 4, 5}) CHECK(storage(fixed, v) != storage(fixed, 0));
  const auto recycled = memopt::dag_share(g, memopt::best_fit_reuse{}, shared);
  CHECK(memopt::check_sharing(g, recycled, shared).empty());
  CHECK(storage(recycled, 2) == storage(recycled, 0));
  // The default options refuse that plan: a graph input shares its storage.
  CHECK(has(memopt::check_sharing(g, recycled), memopt::sharing_fault::static_shared));
  // A control predecessor is a predecessor: x after a control edge is no graph input.
  spec.nodes[0].control = {6};
  const auto after_control = dag<mt::vec_graph>(spec);
  CHECK(storage(after_control, 2) == storage(after_control, 0));
}

TEST_CASE("linear_share: LIFO takes the storage freed last, best fit the smallest that fits") {
  const auto lifo = linear<mt::vec_graph>(two_freed(), mt::identity_order(6));
  CHECK(storage(lifo, 4) == storage(lifo, 2));  // q was freed after p
  CHECK(lifo.storage_bytes[storage(lifo, 4)] == 20);
  CHECK(lifo.total_bytes == 1 + 10 + 20 + 5 + 1);
  const auto fit = linear<mt::vec_graph>(two_freed(), mt::identity_order(6), memopt::best_fit_reuse{});
  CHECK(storage(fit, 4) == storage(fit, 1));  // p (10) is the smallest that holds 7
  CHECK(fit.total_bytes == 1 + 10 + 20 + 5 + 1);
}

TEST_CASE("linear_share: an op never writes into an input it reads for the last time") {
  // r reads p and q for the last time: r's output takes neither.
  const auto plan = linear<mt::vec_graph>(two_freed(), mt::identity_order(6));
  CHECK(storage(plan, 3) != storage(plan, 1));
  CHECK(storage(plan, 3) != storage(plan, 2));
}

TEST_CASE("linear_share: the outputs of one op stay apart") {
  // a(8) read by b; c has two outputs of 4 after a dies... both cannot take a's storage.
  const mt::graph_spec spec{{{.outputs = {1}},
                             {.outputs = {8}, .inputs = {{0, 0}}},
                             {.outputs = {1}, .inputs = {{1, 0}}},
                             {.outputs = {4, 4}, .inputs = {{2, 0}}},
                             {.outputs = {1}, .inputs = {{3, 0}, {3, 1}}, .live_out = {0}}}};
  const auto plan = linear<mt::vec_graph>(spec, mt::identity_order(5));
  const auto c0 = plan.storage_of[plan.buffers.id(3, 0)];
  const auto c1 = plan.storage_of[plan.buffers.id(3, 1)];
  CHECK(c0 != c1);
  CHECK((c0 == storage(plan, 1) || c1 == storage(plan, 1)));
}

TEST_CASE("linear_share: unread outputs are free after their step") {
  // x -> u(50) nobody reads; v(5) reads x and takes u's storage; w(30) reads v.
  const mt::graph_spec spec{{{.outputs = {1}},
                             {.outputs = {50}, .inputs = {{0, 0}}},
                             {.outputs = {5}, .inputs = {{0, 0}}},
                             {.outputs = {30}, .inputs = {{2, 0}}},
                             {.outputs = {1}, .inputs = {{3, 0}}, .live_out = {0}}}};
  const auto plan = linear<mt::vec_graph>(spec, mt::identity_order(5));
  CHECK(storage(plan, 2) == storage(plan, 1));
  CHECK(plan.num_storages() == 4);
  CHECK(plan.total_bytes == 1 + 50 + 30 + 1);
  // Graph outputs are never recycled: each of outputs_dead's stays alone.
  const auto dead = linear<mt::vec_graph>(mt::outputs_dead(), mt::identity_order(5));
  CHECK(dead.num_storages() == 5);
  CHECK(dead.total_bytes == 122);
}

TEST_CASE("linear_share: persistent buffers are in no storage, don't-share buffers alone") {
  const auto plan = linear<mt::vec_graph>(mt::persistent(), mt::identity_order(5));
  CHECK(plan.storage_of[0] == memopt::no_storage);
  CHECK(plan.storage_of[1] == memopt::no_storage);
  CHECK(plan.unshared_bytes == 50);

  memopt::share_options options;
  options.dont_share.assign(6, false);
  options.dont_share[1] = true;  // o1 stays: o3 needs a new storage, o4 takes o2's
  const auto kept = linear<mt::vec_graph>(long_chain(), mt::identity_order(6), memopt::lifo_reuse{}, options);
  CHECK(kept.num_storages() == 5);
  CHECK(storage(kept, 4) == storage(kept, 2));
  for (std::size_t v : {0U, 2U, 3U, 4U, 5U}) CHECK(storage(kept, v) != storage(kept, 1));
}

TEST_CASE("linear_share: no storage mixes devices") {
  memopt::share_options options;
  options.device = {0, 0, 1, 0, 1, 0};  // o2 and o4 on device 1
  const auto plan = linear<mt::vec_graph>(long_chain(), mt::identity_order(6), memopt::lifo_reuse{}, options);
  CHECK(storage(plan, 1) == storage(plan, 3));
  CHECK(storage(plan, 2) == storage(plan, 4));
  options.device = {0, 0, 1, 1, 0, 0};  // o3 cannot take o1's storage; o4 can
  const auto moved = linear<mt::vec_graph>(long_chain(), mt::identity_order(6), memopt::lifo_reuse{}, options);
  CHECK(storage(moved, 3) != storage(moved, 1));
  CHECK(storage(moved, 4) == storage(moved, 1));
  CHECK(moved.num_storages() == 5);
}

TEST_CASE_TEMPLATE("dag_share: parallel branches never share", G, ALL_GRAPH_TYPES) {
  // diamond: s -> l1, r1 -> l2, r2 -> j. Linear on the order s l1 l2 r1 r2 j
  // puts r1 in l1's storage; in another order both are live together.
  const auto plan = dag<G>(mt::diamond());
  CHECK(plan.num_storages() == 6);
  const auto [g, vertex] = mt::build<G>(mt::diamond());
  const auto order = mt::to_vertices<G>(vertex, {0, 1, 3, 2, 4, 5});
  const auto lin = memopt::linear_share(g, std::span<const memopt::vertex_t<G>>(order),
                                        memopt::lifo_reuse{}, {}, mt::index_map(g));
  CHECK(lin.storage_of[lin.buffers.id(1, 0)] == lin.storage_of[lin.buffers.id(2, 0)]);
  const auto every = memopt::check_sharing(g, lin, {}, mt::index_map(g));
  REQUIRE(every.size() == 1);
  CHECK(every[0] == memopt::sharing_violation{memopt::sharing_fault::overlap, lin.buffers.id(1, 0),
                                               lin.buffers.id(2, 0)});
}

TEST_CASE("dag_share: a storage read by parallel branches is free again after they join") {
  const auto plan = dag<mt::vec_graph>(fan_join());
  // c2 runs after b2, the last reader of m, but b1 may still read m.
  CHECK(storage(plan, 4) != storage(plan, 1));
  // j follows both readers: m's 10 bytes are the best fit for its 8.
  CHECK(storage(plan, 5) == storage(plan, 1));
  // k (10) finds only 1-byte storages free: the most recently freed (c2's) grows.
  CHECK(storage(plan, 6) == storage(plan, 4));
  CHECK(plan.num_storages() == 6);
  CHECK(plan.total_bytes == 1 + 10 + 1 + 1 + 10 + 1);
}

TEST_CASE("dag_share: the walk's test sees a user whose successor is on the stack") {
  // r -> p(10) -> u; r2 -> y -> x; a reads u and x; b(10) reads a; k reads
  // b; e reads u and k (the output); all else 1 byte. The walk descends r p u
  // (a waits for x, e for k), leaves them, then runs r2 y x a b k e. At b,
  // p's storage is free since u ran; u is off the stack and still waits for
  // e, but its successor a is on the stack under b: b takes it. (When only a
  // direct predecessor counted, b grew x's 1-byte storage to 10: 25 bytes.)
  const mt::graph_spec spec{{{.outputs = {1}},
                             {.outputs = {10}, .inputs = {{0, 0}}},
                             {.outputs = {1}, .inputs = {{1, 0}}},
                             {.outputs = {1}},
                             {.outputs = {1}, .inputs = {{3, 0}}},
                             {.outputs = {1}, .inputs = {{4, 0}}},
                             {.outputs = {1}, .inputs = {{2, 0}, {5, 0}}},
                             {.outputs = {10}, .inputs = {{6, 0}}},
                             {.outputs = {1}, .inputs = {{7, 0}}},
                             {.outputs = {1}, .inputs = {{2, 0}, {8, 0}}, .live_out = {0}}}};
  memopt::share_options walk_only;
  walk_only.exact_precedence_vertices = 0;
  walk_only.exact_block_vertices = 1;  // the walk's answers alone
  for (const auto& options : {walk_only, memopt::share_options{}}) {
    const auto plan = dag<mt::vec_graph>(spec, memopt::best_fit_reuse{}, options);
    CHECK(storage(plan, 7) == storage(plan, 1));
    CHECK(storage(plan, 6) == storage(plan, 4));  // a takes y's storage, the best fit
    // r, r2, p and b, u, y and a and k, x, e.
    CHECK(plan.total_bytes == 1 + 1 + 10 + 1 + 1 + 1 + 1);
  }
}

TEST_CASE("dag_share: a path through an op the walk has left, seen with exact precedence") {
  // r -> p(10) -> u -> c -> d(10) <- x <- r2; c reads p too; e reads u
  // and d; out reads e; all else 1 byte. The walk descends r p u c, cannot
  // run d (x has not run), leaves c, u, p and r, then runs r2 x d. p's
  // storage is free since c ran, its last users u and c; u precedes d
  // through c, but c has left the stack and u still waits for e. Exact: d
  // takes p's storage, e x's (storages r, r2, p and d, u, c, x and e, out).
  const mt::graph_spec spec{{{.outputs = {1}},
                             {.outputs = {10}, .inputs = {{0, 0}}},
                             {.outputs = {1}, .inputs = {{1, 0}}},
                             {.outputs = {1}, .inputs = {{1, 0}, {2, 0}}},
                             {.outputs = {1}},
                             {.outputs = {1}, .inputs = {{4, 0}}},
                             {.outputs = {10}, .inputs = {{3, 0}, {5, 0}}},
                             {.outputs = {1}, .inputs = {{2, 0}, {6, 0}}},
                             {.outputs = {1}, .inputs = {{7, 0}}, .live_out = {0}}}};
  const auto exact = dag<mt::vec_graph>(spec);
  CHECK(storage(exact, 6) == storage(exact, 1));
  CHECK(storage(exact, 7) == storage(exact, 5));
  CHECK(exact.total_bytes == 1 + 1 + 10 + 1 + 1 + 1 + 1);
  memopt::share_options walk_only;
  walk_only.exact_precedence_vertices = 0;
  walk_only.exact_block_vertices = 1;  // the walk's answers alone
  const auto walk = dag<mt::vec_graph>(spec, memopt::best_fit_reuse{}, walk_only);
  CHECK(storage(walk, 6) != storage(walk, 1));
  CHECK(walk.total_bytes == exact.total_bytes + 10);
  CHECK(exact.exact_precedence);
  CHECK_FALSE(walk.exact_precedence);
  // In blocks of the walk's order: r p u c | r2 x d e | out. d asks about u
  // and c, in the block before its own: the walk's answers, so d does not
  // take p's storage. In blocks of eight, d's block holds them: exact, though
  // not for the whole graph.
  memopt::share_options blocks = walk_only;
  blocks.exact_block_vertices = 4;
  const auto four = dag<mt::vec_graph>(spec, memopt::best_fit_reuse{}, blocks);
  CHECK(four.storage_of == walk.storage_of);
  blocks.exact_block_vertices = 8;
  const auto eight = dag<mt::vec_graph>(spec, memopt::best_fit_reuse{}, blocks);
  CHECK(eight.storage_of == exact.storage_of);
  CHECK_FALSE(eight.exact_precedence);
}

TEST_CASE("dag_share: a storage that passed at an op passes above it on the stack") {
  // r -> u(8) -> l; r -> p(4) -> w; w waits for l, m for l and w, j(8) for
  // w (those three by control edges only; l, w and m make nothing). The walk
  // descends r u l (w and m wait), leaves them, then runs p: u's storage,
  // free since l ran, fails there (l is off the stack) and waits on l. It
  // wakes as w enters and passes as w runs. Then m runs and leaves, l's last
  // successor: l is merged into m, which is off the stack, so the walk's test
  // fails at j; but w, where the storage passed, is under j: j takes it.
  // (Judged anew, j grew p's 4-byte storage to 8: 17 bytes.)
  const mt::graph_spec spec{{{.outputs = {1}},
                             {.outputs = {8}, .inputs = {{0, 0}}},
                             {.inputs = {{1, 0}}},
                             {.outputs = {4}, .inputs = {{0, 0}}},
                             {.inputs = {{3, 0}}, .control = {2}},
                             {.control = {2, 4}},
                             {.outputs = {8}, .control = {4}}}};
  memopt::share_options walk_only;
  walk_only.exact_precedence_vertices = 0;
  walk_only.exact_block_vertices = 1;  // the walk's answers alone
  for (const auto& options : {walk_only, memopt::share_options{}}) {
    const auto plan = dag<mt::vec_graph>(spec, memopt::best_fit_reuse{}, options);
    CHECK(storage(plan, 6) == storage(plan, 1));
    CHECK(plan.num_storages() == 3);
    CHECK(plan.total_bytes == 1 + 8 + 4);
  }
}

TEST_CASE("dag_share: users that passed at an op still on the stack pass, though their set has left it") {
  // Weights r and r2; p(10) reads r, u1 and u2 read p, z reads r2, j(10)
  // reads u1 and z, m reads u1 (control from j), w(10) reads u2 and j. The
  // walk descends r p u1 u2 (j waits for z, w for j), leaves them, then runs
  // r2 z j: p's storage, free since u2 ran, is judged at j: u1 passes (j, its
  // successor, is on the stack), u2 fails and the storage waits on it. Then
  // m runs, u1's last successor, and leaves: u1's set is now m's, off the
  // stack. w enters (u2's successor) and the storage is judged again at w: u1
  // passed at j, still under w, so only u2 is looked at: w takes the storage.
  // (Judging u1 anew through m, w grew z's 1-byte storage to 10: 32 bytes.)
  const mt::graph_spec spec{{{.outputs = {1}, .persistent = true},
                             {.outputs = {1}, .persistent = true},
                             {.outputs = {10}, .inputs = {{0, 0}}},
                             {.outputs = {1}, .inputs = {{2, 0}}},
                             {.outputs = {1}, .inputs = {{2, 0}}},
                             {.outputs = {1}, .inputs = {{1, 0}}},
                             {.outputs = {10}, .inputs = {{3, 0}, {5, 0}}},
                             {.inputs = {{3, 0}}, .control = {6}},
                             {.outputs = {10}, .inputs = {{4, 0}, {6, 0}}}}};
  memopt::share_options walk_only;
  walk_only.exact_precedence_vertices = 0;
  walk_only.exact_block_vertices = 1;  // the walk's answers alone
  for (const auto& options : {walk_only, memopt::share_options{}}) {
    const auto plan = dag<mt::vec_graph>(spec, memopt::best_fit_reuse{}, options);
    CHECK(storage(plan, 8) == storage(plan, 2));
    CHECK(storage(plan, 6) != storage(plan, 2));
    CHECK(plan.total_bytes == 10 + 1 + 1 + 1 + 10);  // p and w, u1, u2, z, j
  }
}

TEST_CASE("reuse policies: LIFO, best fit, and the seed's size-aware pick") {
  const auto pick = [](auto policy, std::vector<std::uint64_t> sizes, std::uint64_t request) {
    memopt::detail::free_pool<decltype(policy)> pool;
    for (std::size_t s = 0; s < sizes.size(); ++s) pool.add(s, sizes[s], 0);
    return pool.take(request, 0, [](std::size_t) { return memopt::reuse_verdict::take; }, 64);
  };
  CHECK(pick(memopt::lifo_reuse{}, {100, 10}, 10) == 1);
  CHECK(pick(memopt::lifo_reuse{}, {10, 100}, 10) == 1);
  CHECK(pick(memopt::best_fit_reuse{}, {100, 10}, 10) == 1);
  CHECK(pick(memopt::best_fit_reuse{}, {10, 100}, 10) == 0);
  CHECK(pick(memopt::best_fit_reuse{}, {10, 30, 20, 20}, 15) == 3);  // ties: freed last
  CHECK(pick(memopt::best_fit_reuse{}, {5, 8, 8, 3}, 15) == 2);      // none fits: largest
  CHECK(pick(memopt::caffe2_size_aware_reuse{}, {100, 10}, 10) == 0);  // the seed's quirk
  CHECK(pick(memopt::caffe2_size_aware_reuse{}, {10, 100}, 10) == 0);
  CHECK(pick(memopt::caffe2_size_aware_reuse{}, {4, 6, 50, 12}, 8) == 2);
  CHECK(pick(memopt::best_fit_reuse{}, {}, 8) == std::nullopt);
  memopt::detail::free_pool<memopt::best_fit_reuse> pool;
  pool.add(0, 10, 1);
  const auto verdict = [](memopt::reuse_verdict v) { return [v](std::size_t) { return v; }; };
  CHECK(pool.take(10, 0, verdict(memopt::reuse_verdict::take), 64) == std::nullopt);  // other device
  CHECK(pool.take(10, 1, verdict(memopt::reuse_verdict::skip), 64) == std::nullopt);  // passed over
  CHECK(pool.take(10, 1, verdict(memopt::reuse_verdict::take), 64) == 0);
  pool.add(1, 10, 1);
  CHECK(pool.take(10, 1, verdict(memopt::reuse_verdict::drop), 64) == std::nullopt);  // dropped
  CHECK(pool.take(10, 1, verdict(memopt::reuse_verdict::take), 64) == std::nullopt);
  pool.restore(1, 10, 1, 7);
  CHECK(pool.take(10, 1, verdict(memopt::reuse_verdict::take), 64) == 1);
  pool.add(2, 10, 1);
  pool.add(3, 10, 1);  // asked first: freed last
  const auto aside_three = [](std::size_t s) {
    return s == 3 ? memopt::reuse_verdict::set_aside : memopt::reuse_verdict::take;
  };
  CHECK(pool.take(10, 1, aside_three, 1) == 2);  // set aside uncounted: the one question left takes 2
  CHECK(pool.take(10, 1, verdict(memopt::reuse_verdict::take), 64) == std::nullopt);  // 3 left the pool
  memopt::detail::free_pool<memopt::lifo_reuse> small(2);  // keeps the two freed last
  for (std::size_t s = 0; s < 3; ++s) small.add(s, 1, 0);
  CHECK(small.take(1, 0, verdict(memopt::reuse_verdict::take), 64) == 2);
  CHECK(small.take(1, 0, verdict(memopt::reuse_verdict::take), 64) == 1);
  CHECK(small.take(1, 0, verdict(memopt::reuse_verdict::take), 64) == std::nullopt);
}

namespace {

/// A user's policy: the storage freed first that holds the output, never
/// one that would have to grow.
struct first_fit_in_release_order {
  [[nodiscard]] bool before(const memopt::free_storage& a, const memopt::free_storage& b) const {
    return a.release < b.release;
  }
  std::optional<std::size_t> choose(auto& candidates, std::uint64_t bytes) const {
    for (auto it = candidates.begin(); it != candidates.end() && candidates.open();) {
      if (it->bytes < bytes) {
        ++it;
        continue;
      }
      const auto current = it;
      if (candidates.allows(it)) return candidates.take(current);
    }
    return std::nullopt;
  }
};

struct without_choose {
  [[nodiscard]] bool before(const memopt::free_storage&, const memopt::free_storage&) const { return false; }
};
struct without_order {
  std::optional<std::size_t> choose(auto&, std::uint64_t) const { return std::nullopt; }
};

static_assert(memopt::reuse_policy<memopt::lifo_reuse>);
static_assert(memopt::reuse_policy<memopt::best_fit_reuse>);
static_assert(memopt::reuse_policy<memopt::caffe2_size_aware_reuse>);
static_assert(memopt::reuse_policy<first_fit_in_release_order>);
static_assert(!memopt::reuse_policy<without_choose>);
static_assert(!memopt::reuse_policy<without_order>);

}  // namespace

TEST_CASE("reuse policies: a user's policy plugs into both passes") {
  // fan_join in the order s m b1 b2 c2 j k out. Linear: m is free after b2;
  // c2 (1) takes it; j (8) finds only b2's 1 byte and takes a new storage;
  // k (10) passes over b2's and b1's storages (too small) for m's.
  const auto lin = linear<mt::vec_graph>(fan_join(), mt::identity_order(8), first_fit_in_release_order{});
  CHECK(storage(lin, 4) == storage(lin, 1));
  CHECK(storage(lin, 6) == storage(lin, 1));
  CHECK(lin.num_storages() == 6);  // s, {m, c2, k}, b1, b2, j, out
  CHECK(lin.total_bytes == 1 + 10 + 1 + 1 + 8 + 1);
  // DAG: b1 may still read m when c2 runs; j takes m's storage after the join;
  // k (10) finds only 1-byte storages and, not growing one, takes a new one.
  const auto every = dag<mt::vec_graph>(fan_join(), first_fit_in_release_order{});
  CHECK(storage(every, 4) != storage(every, 1));
  CHECK(storage(every, 5) == storage(every, 1));
  CHECK(every.num_storages() == 7);  // s, {m, j}, b1, b2, c2, k, out
  CHECK(every.total_bytes == 1 + 10 + 1 + 1 + 1 + 10 + 1);
}

TEST_CASE("dag_share: storages stay on one device") {
  memopt::share_options options;
  options.device = {0, 0, 1, 0, 0, 0};  // o2 on device 1
  const auto plan = dag<mt::vec_graph>(long_chain(), memopt::best_fit_reuse{}, options);
  CHECK(storage(plan, 3) == storage(plan, 1));
  CHECK(storage(plan, 4) != storage(plan, 2));
  CHECK(plan.num_storages() == 5);
}

TEST_CASE("dag_share: a chain shares as the linear pass does") {
  const auto plan = dag<mt::vec_graph>(long_chain());
  CHECK(plan.num_storages() == 4);
  CHECK(storage(plan, 1) == storage(plan, 3));
  CHECK(storage(plan, 2) == storage(plan, 4));
}

TEST_CASE("dag_share: a cycle is a cycle_error, options of the wrong length invalid_argument") {
  mt::vec_graph g(2);
  g[0].outputs = {{.bytes = 1}};
  g[1].outputs = {{.bytes = 1}};
  add_edge(0, 1, memopt::tensor_edge{}, g);
  add_edge(1, 0, memopt::tensor_edge{}, g);
  CHECK_THROWS_AS((void)memopt::dag_share(g), memopt::cycle_error);
  CHECK_THROWS_AS((void)memopt::check_sharing(g, memopt::sharing_plan{}), memopt::cycle_error);
  mt::vec_graph h(1);
  h[0].outputs = {{.bytes = 1}};
  memopt::share_options options{.dont_share = {true, false}};
  CHECK_THROWS_AS((void)memopt::dag_share(h, memopt::best_fit_reuse{}, options), std::invalid_argument);
  const std::vector<std::size_t> order{0, 0};
  CHECK_THROWS_AS((void)memopt::linear_share(h, std::span<const std::size_t>(order)),
                  memopt::not_topological_error);
}

TEST_CASE("check_sharing: the bookkeeping faults") {
  const auto spec = long_chain();
  const auto built = mt::build<mt::vec_graph>(spec);  // members, not a binding: clang 14 lambdas cannot capture those
  const auto& g = built.g;
  const auto order = mt::identity_order(6);
  const std::span<const std::size_t> steps(order);
  const auto good = memopt::linear_share(g, steps);
  REQUIRE(memopt::check_sharing(g, good, steps).empty());
  using memopt::sharing_fault;
  const auto fault_of = [&](const memopt::sharing_plan& plan) {
    const auto v = memopt::check_sharing(g, plan, steps);
    return v.empty() ? std::optional<sharing_fault>{} : v.front().fault;
  };

  auto p = good;
  p.storage_of.pop_back();
  CHECK(fault_of(p) == sharing_fault::wrong_size);
  p = good;
  p.storage_of[2] = memopt::no_storage;
  CHECK(fault_of(p) == sharing_fault::unstored);
  p = good;
  p.storage_bytes[storage(good, 1)] = 11;
  CHECK(fault_of(p) == sharing_fault::bad_totals);
  p.total_bytes += 1;
  CHECK(fault_of(p) == sharing_fault::bad_bytes);
  p = good;
  p.storage_of[0] = storage(good, 1);  // the graph input x joins o1 and o3
  auto v = memopt::check_sharing(g, p, steps);
  CHECK(has(v, sharing_fault::static_shared));
  CHECK(has(v, sharing_fault::overlap));
  CHECK(has(v, sharing_fault::bad_bytes));  // x's own storage is now empty

  memopt::share_options options;
  options.device = {0, 1, 0, 0, 0, 0};  // o1 on another device than o3
  CHECK(memopt::check_sharing(g, good, steps, options) ==
        std::vector<memopt::sharing_violation>{{sharing_fault::devices_mixed, 1, 3}});
}

TEST_CASE("check_sharing: persistent buffers belong to no storage") {
  const auto [g, vertex] = mt::build<mt::vec_graph>(mt::persistent());
  const auto order = mt::identity_order(5);
  const std::span<const std::size_t> steps(order);
  auto plan = memopt::linear_share(g, steps);
  REQUIRE(memopt::check_sharing(g, plan).empty());
  plan.storage_of[0] = 0;
  CHECK(has(memopt::check_sharing(g, plan, steps), memopt::sharing_fault::persistent_stored));
}

TEST_CASE("check_sharing: one order allows what every order does not") {
  // A hand-made plan for the chain a -> b -> c -> d: b and d may share under
  // every order, a and c too, a and b never (b reads a).
  const auto [g, vertex] = mt::build<mt::vec_graph>(long_chain());
  memopt::sharing_plan plan;
  plan.buffers = memopt::make_buffer_table(g);
  plan.storage_of = {0, 1, 2, 1, 2, 3};
  plan.storage_bytes = {10, 10, 10, 10};
  plan.total_bytes = 40;
  plan.unshared_bytes = 60;
  CHECK(memopt::check_sharing(g, plan).empty());
  plan.storage_of = {0, 1, 1, 2, 2, 3};
  const auto v = memopt::check_sharing(g, plan);
  CHECK(v == std::vector<memopt::sharing_violation>{{memopt::sharing_fault::overlap, 1, 2},
                                                    {memopt::sharing_fault::overlap, 3, 4}});
}
