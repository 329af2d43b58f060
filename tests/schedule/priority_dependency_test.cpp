// list_order keeps every key fresh for what its priority states it reads: a
// priority of each key_dependency, and one that states nothing, gives the same
// order as a reference loop that recomputes every ready key at every step, on
// the shipped graphs and on random DAGs; a hand-checked graph where a key of
// unscheduled uses refreshed only when bytes freed change picks differently;
// and the list state itself, step by step, against the readers not yet run.
#include "../support/graph_spec.hpp"
#include "../support/random_dag.hpp"

#include <memopt/io.hpp>
#include <memopt/schedule.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mt = memopt::testing;
using memopt::key_dependency;

namespace {

/// Reads only the graph: the smallest outputs first, then the most users.
struct smallest_outputs {
  static constexpr key_dependency depends_on = key_dependency::none;
  auto operator()(const memopt::list_state& s, std::size_t v) const {
    return std::pair{~s.bytes_defined(v), s.users(v)};
  }
};

/// Each transient input's bytes shared among its readers still to run, minus
/// the bytes defined: an input with fewer readers left counts for more.
struct input_share_keys {
  auto operator()(const memopt::list_state& s, std::size_t v) const {
    std::uint64_t share = 0;
    for (const auto b : s.graph.reads[v]) {
      if (!s.graph.buffers.persistent[b]) share += s.graph.buffers.bytes[b] / s.unscheduled_uses(b);
    }
    return memopt::byte_balance::of(share, s.bytes_defined(v));
  }
};
struct input_share : input_share_keys {
  static constexpr key_dependency depends_on = key_dependency::unscheduled_uses;
};
/// The same keys, wrongly declared: refreshed only when bytes freed change.
struct input_share_stale : input_share_keys {
  static constexpr key_dependency depends_on = key_dependency::bytes_freed;
};

/// Reads another vertex's state: an op whose predecessor in program order has
/// run goes first (staying near the file's order), then XLA's key.
struct follows_program_order {
  static constexpr key_dependency depends_on = key_dependency::any_state;
  auto operator()(const memopt::list_state& s, std::size_t v) const {
    return std::pair{v > 0 && s.scheduled(v - 1), memopt::bytes_freed_priority{}(s, v)};
  }
};

static_assert(memopt::priority_dependency<input_share_keys>() == key_dependency::any_state);
static_assert(memopt::priority_dependency<input_share>() == key_dependency::unscheduled_uses);

/// The reference: at every step, every ready vertex's key computed afresh; the
/// highest runs, ties to the lowest index.
template <class Priority>
std::vector<std::size_t> recomputed_order(const memopt::compact_graph& g, const Priority& priority) {
  const std::size_t n = g.num_vertices();
  memopt::list_state state(g);
  std::vector<std::size_t> waiting(n);
  std::vector<std::size_t> ready;
  for (std::size_t v = 0; v < n; ++v) {
    waiting[v] = g.predecessors.size(v);
    if (waiting[v] == 0) ready.push_back(v);
  }
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    std::size_t best = 0;
    auto leader = priority(state, ready[0]);
    for (std::size_t k = 1; k < ready.size(); ++k) {
      auto challenger = priority(state, ready[k]);
      if (leader < challenger || (!(challenger < leader) && ready[k] < ready[best])) {
        best = k;
        leader = std::move(challenger);
      }
    }
    const std::size_t v = ready[best];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(best));
    order.push_back(v);
    state.run(v);
    for (const auto w : g.successors[v]) {
      if (--waiting[w] == 0) ready.push_back(w);
    }
  }
  return order;
}

constexpr memopt::list_options by_index{.ties = memopt::tie_break::lowest_index};

template <class... Priorities>
void check_against_reference(const memopt::compact_graph& g, const Priorities&... priorities) {
  const auto same = [&](const auto& priority) {
    CHECK(memopt::list_order(g, priority, by_index) == recomputed_order(g, priority));
  };
  (same(priorities), ...);
}

}  // namespace

TEST_CASE("list_order: a key of unscheduled uses is refreshed when a use runs, not only when bytes freed change") {
  // a (120 B) is read by x, y, z (10 B each); s (40 B) is read by t, which
  // waits for x by a control edge. After s, a, x (a tie of 30 among x, y, z:
  // 120 / 3 - 10), a has two readers left: y and z are worth 120 / 2 - 10 = 50,
  // above t's 40 - 0. Kept at 30, they lose to t.
  mt::graph_spec spec{{
      {.outputs = {120}},                                   // 0 a
      {.outputs = {40}},                                    // 1 s
      {.outputs = {10}, .inputs = {{0, 0}}},                // 2 x
      {.outputs = {10}, .inputs = {{0, 0}}},                // 3 y
      {.outputs = {10}, .inputs = {{0, 0}}},                // 4 z
      {.outputs = {}, .inputs = {{1, 0}}, .control = {2}},  // 5 t
  }};
  const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
  const auto c = memopt::make_compact_graph(g);
  const std::vector<std::size_t> fresh{1, 0, 2, 3, 4, 5};
  CHECK(memopt::list_order(c, input_share{}, by_index) == fresh);
  CHECK(memopt::list_order(c, input_share_keys{}, by_index) == fresh);
  CHECK(recomputed_order(c, input_share{}) == fresh);
  CHECK(memopt::list_order(c, input_share_stale{}, by_index) == std::vector<std::size_t>{1, 0, 2, 5, 3, 4});
  // s and a live through x: 40 + 120 + 10
  CHECK(memopt::list_schedule(g, input_share{}, by_index).peak_bytes == 170);
}

TEST_CASE("list_order: every key kind matches recomputing every key at every step, on random DAGs") {
  std::mt19937_64 rng(34);
  for (int k = 0; k < 300; ++k) {
    const auto spec = mt::random_dag(rng, {.max_nodes = 30, .alias_probability = k % 2 == 0 ? 0.0 : 0.3});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    INFO("graph " << k);
    check_against_reference(memopt::make_compact_graph(g), smallest_outputs{}, memopt::bytes_freed_priority{},
                            memopt::least_live_after_priority{}, input_share{}, follows_program_order{},
                            input_share_keys{});
  }
}

namespace {

/// Every graph file of a folder against the reference; how many.
std::size_t check_folder(const std::filesystem::path& folder) {
  std::size_t graphs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string file = entry.path().filename().string();
    if (!file.ends_with(".json") && !file.ends_with(".json.gz")) continue;
    INFO(file);
    check_against_reference(memopt::make_compact_graph(memopt::io::read_graph(entry.path().string())),
                            smallest_outputs{}, memopt::bytes_freed_priority{}, input_share{},
                            follows_program_order{});
    ++graphs;
  }
  return graphs;
}

}  // namespace

TEST_CASE("list_order: every key kind matches recomputing every key at every step, on the shipped graphs") {
  CHECK(check_folder(MEMOPT_DATA_DIR) >= 20);
}

TEST_CASE("list_state: bytes freed, unscheduled uses and the sole reader left agree with the readers not run, "
          "on random DAGs") {
  std::mt19937_64 rng(35);
  for (int k = 0; k < 300; ++k) {
    const auto spec = mt::random_dag(rng, {.max_nodes = 30, .alias_probability = k % 2 == 0 ? 0.0 : 0.3});
    const auto [g, vertex] = mt::build<mt::vec_graph>(spec);
    const auto c = memopt::make_compact_graph(g);
    const auto& buffers = c.buffers;
    INFO("graph " << k);
    memopt::list_state state(c);
    std::vector<bool> ran(c.num_vertices(), false);
    // After each step (and before the first), recounted from the readers not run.
    const auto check_state = [&] {
      std::vector<std::uint64_t> freed(c.num_vertices(), 0);
      for (memopt::buffer_id b = 0; b < buffers.size(); ++b) {
        std::vector<std::size_t> left;
        for (const auto r : c.readers[b]) {
          if (!ran[r]) left.push_back(r);
        }
        CHECK(state.unscheduled_uses(b) == left.size() + (buffers.live_out[b] ? 1 : 0));
        if (left.size() != 1 || buffers.live_out[b]) continue;
        CHECK(state.sole_unscheduled_reader(b) == left[0]);
        if (!buffers.persistent[b]) freed[left[0]] += buffers.bytes[b];
      }
      for (std::size_t v = 0; v < c.num_vertices(); ++v) {
        if (!ran[v]) CHECK(state.bytes_freed(v) == freed[v]);
      }
    };
    check_state();
    for (const std::size_t v : memopt::detail::kahn_order(c)) {
      state.run(v);
      ran[v] = true;
      check_state();
    }
  }
}
