#pragma once
// A rematerialisation schedule written as the vertices it runs, in order:
// the first run of a vertex is the vertex itself, each later run a copy of
// it (Recomputed/<node>, then Recomputed_<k>/<node>), and every run reads
// the latest run of each of its inputs. plan_of_runs turns such a sequence
// (an exact solver's answer, a checkpointing library's schedule) into a
// rewrite plan and the order to run it in, as the planners return, with the
// peak measured by the liveness model on the rewritten graph. Each copy
// waits (a control edge) for the run before it, so it runs where the
// sequence puts it; an original reading a copy also waits for its own
// producer, so the originals keep a topological order of the graph. A copy
// of an in-place op writes a new tensor (the value it overwrote may still be
// read), and every run must read each storage in the state the graph's own
// vertex reads it: not after an in-place write that vertex comes before, nor,
// as a copy, before a write still to come (copies follow every original in
// the rewritten graph, so in-place hazards put the writes first). A copy of
// an op that reads only its inputs' shapes (empty_like) reads nothing.

#include <memopt/liveness.hpp>
#include <memopt/rewrite/apply.hpp>
#include <memopt/rewrite/copy.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/remat/options.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace memopt::remat {

namespace detail {

/// The state of storage a tensor holds in the graph's own program, the order
/// its vertices are listed in (where in-place writes take effect, as in
/// graph/storage.hpp): the root tensor of its storage and how many in-place
/// writes into that storage came before.
using storage_state = std::pair<operand, std::size_t>;

class storage_states {
 public:
  explicit storage_states(const graph_facts& f) : f_(f), root_(rewrite::detail::storage_roots(f)), writers_(f.size()) {
    for (std::size_t v = 0; v < f.size(); ++v) writers_[v].resize(f.outputs[v].size());
    for (std::size_t v = 0; v < f.size(); ++v) {  // by vertex index: each list sorted
      for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
        const auto& shares = f.outputs[v][port].shares;
        if (shares && shares->in_place) writers_[root_[v][port].vertex][root_[v][port].port].push_back(v);
      }
    }
  }
  /// What vertex v's operand i reads: its storage before v writes.
  [[nodiscard]] storage_state read(std::size_t v, std::size_t i) const {
    const operand o = f_.operands[v][i];
    return state(root_[o.vertex][o.port], v, false);
  }
  /// What vertex v's output `port` holds once v has run.
  [[nodiscard]] storage_state made(std::size_t v, std::size_t port) const { return state(root_[v][port], v, true); }
  /// The in-place write into the storage after `s`, if any.
  [[nodiscard]] std::optional<std::size_t> next_writer(storage_state s) const {
    const auto& writers = writers_[s.first.vertex][s.first.port];
    if (s.second < writers.size()) return writers[s.second];
    return std::nullopt;
  }

 private:
  storage_state state(operand root, std::size_t v, bool with_v) const {
    const auto& writers = writers_[root.vertex][root.port];
    const auto end = with_v ? std::ranges::upper_bound(writers, v) : std::ranges::lower_bound(writers, v);
    return {root, static_cast<std::size_t>(end - writers.begin())};
  }
  const graph_facts& f_;
  rewrite::detail::storage_root_table root_;              // by tensor
  std::vector<std::vector<std::vector<std::size_t>>> writers_;  // by root tensor: its in-place writers, by index
};

/// The liveness peak and timeline of the plan run in `order`, into r.
inline void measure_planned_run(const graph_facts& f, remat_result& r) {
  const rewritten_graph g = rewrite::apply(f, r.plan);
  std::vector<std::size_t> order;
  order.reserve(r.order.size());
  for (const node_ref ref : r.order) order.push_back(ref.added ? f.size() + ref.index : ref.index);
  auto live = liveness(g, std::span<const std::size_t>(order));
  r.planned_peak = live.peak_bytes;
  r.planned_bytes = std::move(live.timeline);
}

}  // namespace detail

/// The plan and order of `runs` (see the header comment); planned_peak and
/// planned_bytes from the liveness model. Throws bad_plan_error naming the
/// run that reads a vertex not run yet or a storage in another state than
/// in the graph's own program, a vertex out of range, or a vertex never run;
/// liveness' errors for an order that breaks the graph's edges.
/// O(runs + E + the plan's apply).
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] remat_result plan_of_runs(const graph_facts& f, std::span<const std::size_t> runs, const Naming& naming = {}) {
  const std::size_t n = f.size();
  remat_result r;
  std::vector<std::size_t> times_run(n, 0);
  std::vector<node_ref> latest(n);  // by vertex: its latest run
  const detail::storage_states states(f);
  std::vector<std::vector<std::size_t>> held_in(n);  // by vertex and port: the storage of its latest run's output
  std::vector<detail::storage_state> holds;          // by storage: the state it holds now
  std::vector<bool> originals_storage;               // by storage: an original's output owns it
  r.order.reserve(runs.size());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const std::size_t v = runs[k];
    if (v >= n) throw bad_plan_error({"run " + std::to_string(k) + ": vertex " + std::to_string(v) + " does not exist"});
    const auto reading = [&](const std::string& what) {
      return "run " + std::to_string(k) + " of '" + f.name[v] + "' reads '" + what;
    };
    std::vector<tensor_ref> inputs;
    // A copy of an op reading only its inputs' shapes reads none of them.
    const bool reads_inputs = times_run[v] == 0 || !reads_shape_only(f, v);
    for (std::size_t i = 0; i < f.operands[v].size() && reads_inputs; ++i) {
      const operand o = f.operands[v][i];
      if (times_run[o.vertex] == 0) throw bad_plan_error({reading(f.name[o.vertex]) + "', not run yet"});
      const std::size_t storage = held_in[o.vertex][o.port];
      if (holds[storage] != states.read(v, i)) {
        throw bad_plan_error({reading(f.name[o.vertex]) + "' in another state than '" + f.name[v] +
                              "' does in the graph (an in-place write comes between)"});
      }
      // In the rewritten graph a copy comes after every original, so every
      // in-place write into an original's storage precedes its copies' reads.
      if (const auto writer = states.next_writer(holds[storage]); times_run[v] > 0 && originals_storage[storage] && writer) {
        throw bad_plan_error({reading(f.name[o.vertex]) + "' before '" + f.name[*writer] +
                              "' writes it in place, as a copy (copies read a storage after all its writes)"});
      }
      inputs.push_back({latest[o.vertex], o.port});
    }
    const bool first = times_run[v]++ == 0;
    held_in[v].resize(f.outputs[v].size());
    for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
      const auto& shares = f.outputs[v][port].shares;
      if (shares && !shares->in_place) {  // a view, the original's or a copy's: the state it reads
        held_in[v][port] = held_in[shares->source.vertex][shares->source.port];
        continue;
      }
      if (shares && first) {  // the original writes in place
        held_in[v][port] = held_in[shares->source.vertex][shares->source.port];
      } else {
        held_in[v][port] = holds.size();
        holds.emplace_back();
        originals_storage.push_back(first);
      }
      holds[held_in[v][port]] = states.made(v, port);
    }
    if (first) {
      latest[v] = rewrite::original(v);
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].node.added) continue;
        r.plan.redirects.push_back({v, i, inputs[i]});
        const control_change wait{rewrite::original(f.operands[v][i].vertex), rewrite::original(v)};
        if (r.plan.controls.empty() || r.plan.controls.back().from != wait.from || r.plan.controls.back().to != wait.to) {
          r.plan.controls.push_back(wait);
        }
      }
    } else {
      added_node copy = rewrite::detail::recompute_copy(f, v, times_run[v] - 2, naming);
      copy.inputs = std::move(inputs);
      copy.control.push_back(r.order.back());
      latest[v] = rewrite::added(r.plan.nodes.size());
      r.plan.nodes.push_back(std::move(copy));
      r.extra_flops += f.flops[v];
    }
    r.order.push_back(latest[v]);
  }
  if (const auto never = std::ranges::find(times_run, std::size_t{0}); never != times_run.end()) {
    throw bad_plan_error({"'" + f.name[static_cast<std::size_t>(never - times_run.begin())] + "' never runs"});
  }
  detail::measure_planned_run(f, r);
  r.method = "runs";
  return r;
}

/// The vertex runs of a plan whose added nodes are all copies (as the
/// rematerialisation planners return): its order with each copy as the
/// vertex it copies. Empty when an added node is not a copy.
[[nodiscard]] inline std::vector<std::size_t> runs_of(const remat_result& r) {
  std::vector<std::size_t> runs;
  runs.reserve(r.order.size());
  for (const node_ref ref : r.order) {
    if (!ref.added) {
      runs.push_back(ref.index);
    } else if (const auto& copy_of = r.plan.nodes.at(ref.index).copy_of) {
      runs.push_back(*copy_of);
    } else {
      return {};
    }
  }
  return runs;
}

namespace detail {

/// The largest of any range of a sequence in O(1), after O(n log n) (a sparse table).
class range_max {
 public:
  explicit range_max(std::span<const std::uint64_t> values) {
    levels_.emplace_back(values.begin(), values.end());
    for (std::size_t width = 1; 2 * width <= values.size(); width *= 2) {
      const std::vector<std::uint64_t>& below = levels_.back();
      std::vector<std::uint64_t> level(below.size() - width);
      for (std::size_t i = 0; i < level.size(); ++i) level[i] = std::max(below[i], below[i + width]);
      levels_.push_back(std::move(level));
    }
  }
  /// The largest of values[first, last); 0 when empty.
  [[nodiscard]] std::uint64_t operator()(std::size_t first, std::size_t last) const {
    if (first >= last) return 0;
    const auto level = static_cast<std::size_t>(std::bit_width(last - first) - 1);
    return std::max(levels_[level][first], levels_[level][last - (std::size_t{1} << level)]);
  }

 private:
  std::vector<std::vector<std::uint64_t>> levels_;  // level l: maxima of 2^l values from each start
};

/// r without the recomputations it can do without: a copy is dropped when
/// the plan without it (its readers reading the run before) still keeps
/// within `budget`. Copies are tried most flops first, those that look
/// promising (see below) before the others, which are tried only when the
/// trials left allow trying every copy. Each try builds and measures the
/// whole plan, O(runs + E), and tries stop at `max_trials`, a work limit
/// that repeats. r as it is when it is over the budget or has added nodes
/// that are not copies.
template <rewrite_naming Naming>
remat_result without_needless_copies(const graph_facts& f, remat_result r, std::uint64_t budget, const Naming& naming,
                                     std::size_t max_trials) {
  std::vector<std::size_t> runs = runs_of(r);
  if (r.plan.nodes.empty() || runs.empty() || r.planned_peak > budget || r.planned_bytes.size() != runs.size()) return r;
  std::vector<std::uint64_t> made_bytes(f.size(), 0);  // by vertex
  for (std::size_t v = 0; v < f.size(); ++v) made_bytes[v] = bytes_made(f, v);
  std::vector<bool> rejected(runs.size(), false);  // by position in runs: tried and needed
  std::vector<std::size_t> trial;
  const std::string method = r.method;
  bool pruned = false;
  const auto done = [&] {
    if (pruned) r.method = method.ends_with(", pruned") ? method : method + ", pruned";
    return std::move(r);
  };
  for (bool progress = true; progress;) {
    progress = false;
    // By position: the run before of the same vertex, and the last position reading the run.
    std::vector<std::size_t> before(runs.size(), no_vertex), last_read(runs.size());
    std::vector<std::size_t> latest(f.size(), no_vertex);
    for (std::size_t k = 0; k < runs.size(); ++k) {
      last_read[k] = k;
      for (const operand& o : f.operands[runs[k]]) last_read[latest[o.vertex]] = k;
      before[k] = std::exchange(latest[runs[k]], k);
    }
    // A copy nothing reads goes for free. Another is tried first when the
    // bytes of its vertex's outputs fit on top of each step the run before
    // would now stay through; all are tried when the trials left allow.
    const range_max live(r.planned_bytes);
    const auto promising = [&](std::size_t k) {
      return last_read[k] == k || live(last_read[before[k]] + 1, k) + made_bytes[runs[k]] <= budget;
    };
    std::vector<std::size_t> copies;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      if (before[k] != no_vertex && !rejected[k] && f.flops[runs[k]] > 0) copies.push_back(k);
    }
    const bool try_all = copies.size() <= max_trials;
    std::erase_if(copies, [&](std::size_t k) { return !try_all && !promising(k); });
    std::ranges::stable_sort(copies, std::greater<>(), [&](std::size_t k) { return std::pair(promising(k), f.flops[runs[k]]); });
    for (const std::size_t k : copies) {
      if (max_trials == 0) return done();
      --max_trials;
      rejected[k] = true;
      trial = runs;
      trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(k));
      try {
        if (auto without = plan_of_runs(f, trial, naming); without.planned_peak <= budget) {
          r = std::move(without);
          pruned = true;
          runs.swap(trial);
          rejected.erase(rejected.begin() + static_cast<std::ptrdiff_t>(k));
          progress = true;
          break;
        }
      } catch (const bad_plan_error&) {  // a reader would see another state of an overwritten storage
      }
    }
  }
  return done();
}

}  // namespace detail

}  // namespace memopt::remat
