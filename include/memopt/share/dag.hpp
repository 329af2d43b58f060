#pragma once
// dag_share: buffer sharing valid for *every* order of the graph (Caffe2
// memonger's blob recycling for DAGs). A storage may take a new buffer only
// when the ops that last used it (the readers of its last member, or its
// producer when nobody reads it) all precede the new buffer's producer in the
// graph; so parallel branches never share, and no storage mixes devices.
//
// The seed tracks this with a token per branch and a token set per blob,
// quadratic on wide graphs. Here ops run in the seed's depth-first order (the
// graph inputs and weights first, then an op as soon as its last predecessor
// has, depth first), and "u precedes the op" is answered in near-constant
// time from facts the walk already holds: u is on the walk's stack (a chain of
// edges leads from u to the op), or a direct predecessor, or u has been merged
// (union-find) into one of those: once the last successor of a vertex has
// run, the vertex is merged into it. A "yes" is always a path in the graph,
// so every plan passes check_sharing(g, plan); a path the test cannot see
// costs a missed reuse, never a wrong one. A storage refused because of user
// u leaves the pool until a successor of u runs (nothing else can change the
// answer), so refusals are not paid for again and again.
//
// Among the allowed storages the policy picks (best fit by default), judging
// at most options.max_candidates per output; the pool keeps the
// options.max_free storages freed last per device.
//
// O((V + E) α(V) + B · max_candidates · log max_free) for B buffers (a
// refused storage comes back to the pool at most once per refusal). Throws cycle_error (with the cycle), bad_port_error,
// size_overflow_error, std::invalid_argument (options of the wrong length).

#include <memopt/detail/kahn.hpp>
#include <memopt/detail/union_find.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/graph/topology.hpp>
#include <memopt/liveness/liveness.hpp>
#include <memopt/share/plan.hpp>
#include <memopt/share/policy.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace memopt {

namespace detail {

/// The seed's depth-first topological walk: an op runs as soon as its last
/// predecessor has, depth first. The vertices without predecessors (graph
/// inputs, weights) and the persistent vertices fed only by those run first,
/// as the seed's heads and parameters exist before any op; then the walk
/// descends from each, in that order. on_run(v)
/// is called for each op, with `on_stack` telling which ops lie on the chain
/// of edges the walk followed to v. Returns the number of ops run (fewer than
/// V: the graph has a cycle).
template <class Persistent, class OnRun>
std::size_t depth_first_topological(const compact_graph& c, Persistent&& persistent,
                                    std::vector<bool>& on_stack, OnRun&& on_run) {
  const std::size_t n = c.num_vertices();
  ready_tracker tracker(c);
  on_stack.assign(n, false);
  std::vector<bool> started(n, false);
  std::size_t ran = 0;
  const auto run = [&](std::size_t v) {
    started[v] = true;
    on_run(v);
    ++ran;
  };
  // First the vertices without predecessors, and the persistent vertices
  // that only they feed (weight views): their successors are counted down now.
  std::vector<std::size_t> first;
  tracker.start([&first](std::size_t v) { first.push_back(v); });
  for (std::size_t k = 0; k < first.size(); ++k) {
    run(first[k]);
    tracker.ran(first[k], [&](std::size_t w) {
      if (persistent(w)) first.push_back(w);
    });
  }
  struct frame {
    std::size_t v;
    std::size_t next;  ///< position in successors[v]
  };
  std::vector<frame> stack;
  for (const std::size_t root : first) {
    on_stack[root] = true;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      frame& top = stack.back();
      const auto successors = c.successors[top.v];
      if (top.next == successors.size()) {
        on_stack[top.v] = false;
        stack.pop_back();
        continue;
      }
      const std::size_t w = successors[top.next++];
      // The successors of the first vertices were counted down when they ran.
      const bool ready = stack.size() == 1 ? !tracker.waits(w) : tracker.arrived(w);
      if (ready && !started[w]) {
        on_stack[w] = true;  // before on_run: w lies on its own chain
        run(w);
        stack.push_back({w, 0});
      }
    }
  }
  return ran;
}

/// "Does every last user of a storage precede op i?", from the walk's facts:
/// a user on the walk's stack, a direct predecessor of i, or merged
/// (union-find) into one of those: once the last successor of a vertex has
/// run, the vertex is merged into it. A yes is always a path of the graph.
class precedence_test {
 public:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  explicit precedence_test(const compact_graph& c)
      : c_(c), merged_(c.num_vertices()), successors_left_(c.num_vertices()),
        predecessor_of_(c.num_vertices(), none), seen_(c.num_vertices(), none) {
    for (std::size_t v = 0; v < c.num_vertices(); ++v) successors_left_[v] = c.successors.size(v);
  }

  /// Which ops lie on the walk's chain of edges (depth_first_topological keeps it).
  std::vector<bool>& on_stack() { return on_stack_; }

  /// Op i runs: each predecessor's last successor to run takes it in.
  void ran(std::size_t i) {
    for (const std::size_t p : c_.predecessors[i]) {
      predecessor_of_[p] = i;
      if (--successors_left_[p] == 0) merged_.attach(p, i);
    }
  }

  /// The first of `users` not known to precede op i, or none; `users` shrinks
  /// to distinct set leaders. `list` names the list (distinct per storage).
  std::size_t first_blocker(std::vector<std::size_t>& users, std::size_t list, std::size_t i) {
    std::size_t kept = 0, blocker = none;
    for (const std::size_t u : users) {
      const std::size_t leader = merged_.find(u);
      if (seen_[leader] == list) continue;
      seen_[leader] = list;
      users[kept++] = leader;
      const bool reaches = leader == i || on_stack_[leader] || predecessor_of_[leader] == i;
      if (!reaches && blocker == none) blocker = leader;
    }
    users.resize(kept);
    for (const std::size_t u : users) seen_[u] = none;
    return blocker;
  }

 private:
  const compact_graph& c_;
  union_find merged_;
  std::vector<std::size_t> successors_left_;
  std::vector<std::size_t> predecessor_of_;  ///< stamp: a predecessor of this op
  std::vector<std::size_t> seen_;            ///< stamp: de-duplicates a list of users
  std::vector<bool> on_stack_;
};

}  // namespace detail

template <tensor_graph G, reuse_policy Policy = best_fit_reuse,
          vertex_index_map<G> Index = identity_index>
[[nodiscard]] sharing_plan dag_share(const G& g, Policy policy = {}, const share_options& options = {},
                                     Index index = {}) {
  const compact_graph c = make_compact_graph(g, index);
  const buffer_table& buffers = c.buffers;
  detail::check_option_sizes(options, buffers.size());
  const std::size_t n = c.num_vertices();

  sharing_plan plan;
  plan.buffers = buffers;
  plan.storage_of.assign(buffers.size(), no_storage);
  std::vector<std::vector<std::size_t>> last_users;  // by storage, while it is free
  detail::free_pool<Policy> pool(options.max_free, std::move(policy));

  detail::precedence_test precedes(c);
  std::vector<std::size_t> readers_left(buffers.size());
  for (buffer_id b = 0; b < buffers.size(); ++b) readers_left[b] = c.readers.size(b);

  // A storage whose test fails because of user u stays out of the pool until
  // a successor of u runs: u never returns to the stack, so only then can u
  // become a predecessor of the op or be merged into another vertex.
  std::vector<std::vector<std::size_t>> parked(n);  // by vertex: storages waiting on it
  struct release_info {
    std::uint64_t release = 0;
    std::uint32_t device = 0;
  };
  std::vector<release_info> freed;  // by storage, while it is free
  const auto release = [&](buffer_id b, const auto& users) {
    const std::size_t s = plan.storage_of[b];
    last_users[s].assign(users.begin(), users.end());
    freed[s].device = detail::device_of(options, b);
    freed[s].release = pool.add(s, plan.storage_bytes[s], freed[s].device);
  };

  const auto persistent = [&buffers](std::size_t v) {
    return buffers.num_outputs(v) > 0 && buffers.persistent[buffers.first[v]];
  };
  const std::size_t ran = detail::depth_first_topological(c, persistent, precedes.on_stack(), [&](std::size_t i) {
    precedes.ran(i);
    for (const std::size_t p : c.predecessors[i]) {
      for (const std::size_t s : parked[p]) pool.restore(s, plan.storage_bytes[s], freed[s].device, freed[s].release);
      parked[p].clear();
    }
    const auto judge = [&](std::size_t s) {
      const std::size_t blocker = precedes.first_blocker(last_users[s], s, i);
      if (blocker == detail::precedence_test::none) return reuse_verdict::take;
      parked[blocker].push_back(s);
      return reuse_verdict::drop;
    };
    detail::place_outputs(c, options, i, plan, [&](buffer_id b) {
      return pool.take(buffers.bytes[b], detail::device_of(options, b), judge, options.max_candidates);
    });
    last_users.resize(plan.num_storages());
    freed.resize(plan.num_storages());
    for (const buffer_id b : c.reads[i]) {
      if (--readers_left[b] == 0 && !buffers.persistent[b] && !detail::is_static(c, options, b)) {
        release(b, c.readers[b]);
      }
    }
    for (buffer_id b = buffers.first[i]; b < buffers.first[i + 1]; ++b) {
      if (c.readers.size(b) == 0 && buffers.owns_storage(b) && !buffers.persistent[b] &&
          !detail::is_static(c, options, b)) {
        release(b, std::array<std::size_t, 1>{i});
      }
    }
  });
  if (ran != n) require_acyclic(g, index);

  detail::sum_storages(plan);
  return plan;
}

}  // namespace memopt
