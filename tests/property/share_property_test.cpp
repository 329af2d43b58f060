// Property tests over thousands of seeded random DAGs: every sharing plan
// passes check_sharing, never costs less than the peak of its order, and
// check_sharing's every-order verdict agrees with a brute-force reading of
// its definition (a path from each user of one buffer to the other's producer).
#include "../support/random_dag.hpp"

#include <memopt/liveness.hpp>
#include <memopt/share.hpp>

#include <doctest/doctest.h>

#include <random>

namespace mt = memopt::testing;

namespace {

/// Random don't-share marks and devices (two) for the buffers of g, half the time.
memopt::share_options random_options(const memopt::buffer_table& buffers, std::mt19937_64& rng) {
  memopt::share_options options;
  if (rng() % 2 == 0) return options;
  options.dont_share.resize(buffers.size());
  options.device.resize(buffers.size());
  for (memopt::buffer_id b = 0; b < buffers.size(); ++b) {
    options.dont_share[b] = rng() % 10 == 0;
    options.device[b] = static_cast<std::uint32_t>(rng() % 2);
  }
  options.share_graph_inputs = rng() % 2 == 0;
  options.max_candidates = 1 + rng() % 8;
  return options;
}

/// reach[u][v]: a path of at least one edge from u to v (data or control).
std::vector<std::vector<bool>> closure(const mt::graph_spec& spec) {
  const std::size_t n = spec.nodes.size();
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  const auto preds = mt::predecessors(spec);
  for (std::size_t v = 0; v < n; ++v) {  // nodes are listed in topological order
    for (const auto p : preds[v]) {
      reach[p][v] = true;
      for (std::size_t u = 0; u < n; ++u) {
        if (reach[u][p]) reach[u][v] = true;
      }
    }
  }
  return reach;
}

/// True when two graph storages (roots) in one blob may be live together in
/// some order: a reader of any tensor of one does not reach the other's producer.
bool brute_force_overlap(const mt::graph_spec& spec, const memopt::sharing_plan& plan) {
  const auto reach = closure(spec);
  const auto root = mt::storage_roots(spec);
  const auto& buffers = plan.buffers;
  const auto before = [&](memopt::buffer_id a, memopt::buffer_id b) {
    const std::size_t pa = buffers.owner[a], pb = buffers.owner[b];
    bool read = false;
    for (std::size_t r = 0; r < spec.nodes.size(); ++r) {
      for (const auto& [u, p] : spec.nodes[r].inputs) {
        if (root[u][p] != mt::tensor{pa, buffers.port_of(a)}) continue;
        read = true;
        if (!reach[r][pb]) return false;
      }
    }
    return read || reach[pa][pb];
  };
  for (memopt::buffer_id a = 0; a < buffers.size(); ++a) {
    for (memopt::buffer_id b = a + 1; b < buffers.size(); ++b) {
      if (!buffers.owns_storage(a) || !buffers.owns_storage(b)) continue;
      if (plan.storage_of[a] == memopt::no_storage || plan.storage_of[a] != plan.storage_of[b]) continue;
      if (!before(a, b) && !before(b, a)) return true;
    }
  }
  return false;
}

bool has_overlap(const std::vector<memopt::sharing_violation>& violations) {
  for (const auto& v : violations) {
    if (v.fault == memopt::sharing_fault::overlap) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("property: linear plans pass check_sharing for their order and cost at least its peak") {
  std::mt19937_64 rng(61);
  for (int trial = 0; trial < 2000; ++trial) {
    const auto spec = mt::random_dag(rng, {.alias_probability = trial % 2 == 0 ? 0.0 : 0.3});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const auto order = mt::random_topological_order(spec, rng);
    const std::span<const std::size_t> steps(order);
    const auto options = random_options(memopt::make_buffer_table(g), rng);
    INFO("trial " << trial);
    const auto peak = memopt::liveness(g, steps).peak_bytes;
    for (const auto& plan : {memopt::linear_share(g, steps, memopt::lifo_reuse{}, options),
                             memopt::linear_share(g, steps, memopt::best_fit_reuse{}, options),
                             memopt::linear_share(g, steps, memopt::caffe2_size_aware_reuse{}, options)}) {
      CHECK(memopt::check_sharing(g, plan, steps, options).empty());
      CHECK(plan.total_bytes >= peak);
      CHECK(plan.total_bytes <= plan.unshared_bytes);
    }
  }
}

TEST_CASE("property: under in-place reuse, linear plans keep each taker in its storage's blob, and check_sharing says so") {
  std::mt19937_64 rng(3302);
  int split = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const auto spec = mt::random_dag(rng, {.max_nodes = 25, .alias_probability = trial % 2 == 0 ? 0.0 : 0.3,
                                           .may_alias_probability = 0.5});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const auto order = mt::random_topological_order(spec, rng);
    const std::span<const std::size_t> steps(order);
    INFO("trial " << trial);
    const auto live = memopt::liveness(g, steps);
    auto plan = memopt::linear_share(g, steps, memopt::best_fit_reuse{});
    CHECK(memopt::check_sharing(g, plan, steps).empty());
    CHECK(plan.total_bytes >= live.peak_bytes);
    for (const auto b : live.reused) CHECK(plan.storage_of[b] == plan.storage_of[live.buffers.storage[b]]);
    if (live.reused.empty()) continue;
    // A taker moved to a blob of its own breaks the order's storage.
    plan.storage_of[live.reused.front()] = plan.storage_bytes.size();
    plan.storage_bytes.push_back(live.buffers.bytes[live.reused.front()]);
    const auto faults = memopt::check_sharing(g, plan, steps);
    split += std::ranges::count_if(faults, [](const auto& f) { return f.fault == memopt::sharing_fault::split_storage; }) > 0;
  }
  CHECK(split > 100);
}

TEST_CASE("property: DAG plans pass check_sharing under every order, and under random orders") {
  std::mt19937_64 rng(62);
  for (int trial = 0; trial < 1200; ++trial) {
    const auto spec = mt::random_dag(rng, {.alias_probability = trial % 2 == 0 ? 0.0 : 0.3});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    auto options = random_options(memopt::make_buffer_table(g), rng);
    if (trial % 4 >= 2) {  // the walk's test alone, or between blocks of a few ops
      options.exact_precedence_vertices = 0;
      options.exact_block_vertices = trial % 4 == 2 ? 1 : 2 + static_cast<std::size_t>(trial) % 13;
    }
    const std::size_t vertices = spec.nodes.size();
    INFO("trial " << trial);
    for (const auto& plan : {memopt::dag_share(g, memopt::best_fit_reuse{}, options),
                             memopt::dag_share(g, memopt::lifo_reuse{}, options),
                             memopt::dag_share(g, memopt::caffe2_size_aware_reuse{}, options)}) {
      CHECK(memopt::check_sharing(g, plan, options).empty());
      CHECK(plan.exact_precedence ==
            (vertices <= options.exact_precedence_vertices || vertices <= options.exact_block_vertices));
      CHECK_FALSE(brute_force_overlap(spec, plan));
      for (int k = 0; k < 2; ++k) {
        const auto order = mt::random_topological_order(spec, rng);
        const std::span<const std::size_t> steps(order);
        CHECK(memopt::check_sharing(g, plan, steps, options).empty());
        CHECK(plan.total_bytes >= memopt::liveness(g, steps).peak_bytes);
      }
    }
  }
}

TEST_CASE("property: the same plan on every graph type") {
  std::mt19937_64 rng(63);
  for (int trial = 0; trial < 500; ++trial) {
    const auto spec = mt::random_dag(rng);
    const auto order = mt::random_topological_order(spec, rng);
    const auto reference = [&] {
      const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
      return std::pair(memopt::dag_share(g), memopt::linear_share(g, std::span<const std::size_t>(order)));
    }();
    const auto [g, vertex] = mt::build<mt::list_graph>(spec);
    const auto index = mt::index_map(g);
    const auto steps = mt::to_vertices<mt::list_graph>(vertex, order);
    const auto dag = memopt::dag_share(g, memopt::best_fit_reuse{}, {}, index);
    const auto lin = memopt::linear_share(g, std::span<const memopt::vertex_t<mt::list_graph>>(steps),
                                          memopt::lifo_reuse{}, {}, index);
    CHECK(dag.storage_of == reference.first.storage_of);
    CHECK(lin.storage_of == reference.second.storage_of);
    const auto [h, hv] = mt::build<mt::hand_graph>(spec);
    CHECK(memopt::dag_share(h).storage_of == reference.first.storage_of);
  }
}

TEST_CASE("property: check_sharing's every-order verdict matches brute force on random plans") {
  std::mt19937_64 rng(64);
  int overlapping = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const auto spec = mt::random_dag(rng, {.max_nodes = 12});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    memopt::sharing_plan plan;
    plan.buffers = memopt::make_buffer_table(g);
    const std::size_t storages = 1 + rng() % (plan.buffers.size() + 1);
    plan.storage_bytes.assign(storages, 0);
    plan.storage_of.assign(plan.buffers.size(), memopt::no_storage);
    for (memopt::buffer_id b = 0; b < plan.buffers.size(); ++b) {
      if (plan.buffers.persistent[b]) continue;
      plan.storage_of[b] = rng() % storages;
    }
    INFO("trial " << trial);
    const bool expected = brute_force_overlap(spec, plan);
    overlapping += expected ? 1 : 0;
    CHECK(has_overlap(memopt::check_sharing(g, plan, {.share_graph_inputs = true})) == expected);
  }
  CHECK(overlapping > 100);
}
