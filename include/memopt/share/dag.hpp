#pragma once
// dag_share: buffer sharing valid for *every* order of the graph (Caffe2
// memonger's blob recycling for DAGs). A storage may take a new buffer only
// when the ops that last used it (the readers of its last member, or its
// producer when nobody reads it) all precede the new buffer's producer in the
// graph; so parallel branches never share, and no storage mixes devices.
//
// Ops run in the seed's depth-first order (graph inputs and weights first,
// then an op as soon as its last predecessor has, depth first), which is
// known before the pass. Whether a user precedes the op is exact when both
// lie in one block of options.exact_block_vertices consecutive ops of that
// order, or anywhere on graphs of at most options.exact_precedence_vertices
// vertices (one block): each op's descendants in its block as bits, and a
// storage refused there is set aside until the first op all its users in the
// block precede. For a user in an earlier block it comes in near-constant
// time from the walk's stack and a union-find of finished vertices (and users
// that passed at an op still on the stack pass), and may miss a path: a
// missed reuse, never a wrong one (docs/sharing.md). Either way every plan
// passes check_sharing(g, plan); plan.exact_precedence says whether one block
// held the graph.
//
// Among the allowed storages the policy picks (best fit by default), judging
// at most options.max_candidates per output; the pool keeps the
// options.max_free storages freed last per device.
//
// O((V + E) α(V) + B · max_candidates · log max_free) for B buffers (a
// refused storage is judged again at most once per refusal), plus
// O(E · K / 64) for the bits of blocks of K ops and O(K / 64) a user for each
// storage set aside. Throws cycle_error (with the cycle), bad_port_error,
// size_overflow_error, std::invalid_argument (options of the wrong length).

#include <memopt/detail/kahn.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/graph/topology.hpp>
#include <memopt/liveness/liveness.hpp>
#include <memopt/share/plan.hpp>
#include <memopt/share/precedence.hpp>
#include <memopt/share/policy.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace memopt {

namespace detail {

/// The seed's depth-first topological walk: an op runs as soon as its last
/// predecessor has, depth first. The vertices without predecessors (graph
/// inputs, weights) and the persistent vertices fed only by those run first,
/// as the seed's heads and parameters exist before any op; then the walk
/// descends from each, in that order. on_run(v) is called for each op as it
/// runs, on_enter(v) and on_leave(v) as it joins and leaves the walk's stack
/// (the chain of edges the walk followed to the op that runs): an op enters
/// just before it runs; a first one leaves after it and enters again as the
/// root of its descent. Returns the number of ops run (fewer than V: the
/// graph has a cycle).
template <class Persistent, class OnRun, class OnEnter, class OnLeave>
std::size_t depth_first_topological(const compact_graph& c, Persistent&& persistent, OnRun&& on_run,
                                    OnEnter&& on_enter, OnLeave&& on_leave) {
  const std::size_t n = c.num_vertices();
  ready_tracker tracker(c);
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
    on_enter(first[k]);
    run(first[k]);
    on_leave(first[k]);
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
    on_enter(root);
    stack.push_back({root, 0});
    while (!stack.empty()) {
      frame& top = stack.back();
      const auto successors = c.successors[top.v];
      if (top.next == successors.size()) {
        on_leave(top.v);
        stack.pop_back();
        continue;
      }
      const std::size_t w = successors[top.next++];
      // The successors of the first vertices were counted down when they ran.
      const bool ready = stack.size() == 1 ? !tracker.waits(w) : tracker.arrived(w);
      if (ready && !started[w]) {
        on_enter(w);
        run(w);
        stack.push_back({w, 0});
      }
    }
  }
  return ran;
}

}  // namespace detail

template <tensor_graph G, reuse_policy Policy = best_fit_reuse,
          vertex_index_map<G> Index = identity_index>
[[nodiscard]] sharing_plan dag_share(const G& g, Policy policy = {}, const share_options& options = {},
                                     Index index = {}) {
  compact_graph c = make_compact_graph(g, index);
  const buffer_table& buffers = c.buffers;
  detail::check_option_sizes(options, buffers.size());
  const std::size_t n = c.num_vertices();

  sharing_plan plan;
  plan.storage_of.assign(buffers.size(), no_storage);
  detail::free_pool<Policy> pool(options.max_free, std::move(policy));

  const auto persistent = [&buffers](std::size_t v) {
    return buffers.num_outputs(v) > 0 && buffers.persistent[buffers.first[v]];
  };
  // The walk does not depend on the sharing: it is taken once, its steps kept
  // and replayed below, and its order known before the pass.
  enum class step_kind : std::uint8_t { enter, run, leave };
  struct walk_step {
    compact_index vertex;
    step_kind kind;
  };
  std::vector<walk_step> steps;
  steps.reserve(3 * n);
  std::vector<std::size_t> order;
  order.reserve(n);
  const auto step = [&steps](step_kind kind) {
    return [&steps, kind](std::size_t v) { steps.push_back({static_cast<compact_index>(v), kind}); };
  };
  const auto record_run = [&](std::size_t v) {
    order.push_back(v);
    steps.push_back({static_cast<compact_index>(v), step_kind::run});
  };
  if (detail::depth_first_topological(c, persistent, record_run, step(step_kind::enter), step(step_kind::leave)) != n) {
    require_acyclic(g, index);
  }
  const std::size_t block =
      n <= options.exact_precedence_vertices ? n : std::max<std::size_t>(1, options.exact_block_vertices);
  detail::block_precedence exact(c, std::move(order), block);
  detail::walk_precedence walk(c);
  // A storage an op in the block refuses waits aside, in a list by the
  // position of the first op all its users there precede (or the block's end,
  // where they leave it; position n: never).
  constexpr compact_index end_of_list = std::numeric_limits<compact_index>::max();
  std::vector<compact_index> first_aside(n + 1, end_of_list);
  // By buffer: the reads still to come before its storage is free again, or
  // never_freed (persistent, static, or in another buffer's storage).
  constexpr compact_index never_freed = std::numeric_limits<compact_index>::max();
  std::vector<compact_index> reads_left(buffers.size());
  for (buffer_id b = 0; b < buffers.size(); ++b) {
    const bool recycled = buffers.owns_storage(b) && !buffers.persistent[b] && !detail::is_static(c, options, b);
    reads_left[b] = recycled ? static_cast<compact_index>(c.readers.size(b)) : never_freed;
  }

  // The last users of every release, one after the other: each free storage
  // holds a slice.
  std::vector<compact_index> users;
  users.reserve(c.readers.items.size() + buffers.size());
  struct freed_storage {  // what a restore and the test read, side by side
    std::uint64_t bytes = 0;
    std::uint64_t release = 0;
    std::size_t first_user = 0;
    compact_index user_count = 0;
    std::uint32_t device = 0;
    compact_index next_waiting = 0;  ///< while it waits (walk_precedence::wait) or waits aside
    /// The op at which its first `users_passed` users were last seen to
    /// precede the op judging it: they precede every op above it on the stack.
    compact_index passed_at = 0;
    compact_index users_passed = 0;
  };
  std::vector<freed_storage> freed;  // by storage, while it is free
  const auto release = [&](buffer_id b, const auto& last_users) {
    const std::size_t s = plan.storage_of[b];
    freed_storage& f = freed[s];
    f.bytes = plan.storage_bytes[s];
    f.users_passed = 0;
    f.first_user = users.size();
    f.user_count = static_cast<compact_index>(last_users.size());
    users.insert(users.end(), last_users.begin(), last_users.end());
    f.device = detail::device_of(options, b);
    f.release = pool.add(s, f.bytes, f.device);
  };

  // A storage the walk's test refused stays out of the pool while it waits;
  // woken as op i enters the stack, it is judged again as i runs, and returns
  // to the pool only if it passes (most that fail there fail on another user).
  std::vector<std::size_t> woken;
  const auto enter = [&](std::size_t i) {
    walk.entered(
        i, [&](std::size_t s) { return freed[s].next_waiting; }, [&](std::size_t s) { woken.push_back(s); });
  };
  const auto leave = [&](std::size_t i) { walk.left(i); };
  std::size_t position = 0;  // of the op running, in the walk's order
  const auto run = [&](std::size_t i) {
    walk.ran(i);
    if (position == exact.end()) exact.start_block(position);
    const auto judge = [&](std::size_t s) {
      freed_storage& f = freed[s];
      const std::span<const compact_index> last_users(users.data() + f.first_user, f.user_count);
      // Users that preceded an op still on the stack precede i: look only past them.
      const std::size_t known = f.users_passed > 0 && walk.on_stack(f.passed_at) ? f.users_passed : 0;
      std::size_t passed = last_users.size();  // the users before the first refusal
      for (std::size_t k = known; k < last_users.size(); ++k) {
        const std::size_t u = last_users[k];
        if (exact.contains(u)) {
          if (!exact.precedes(u, position)) passed = std::min(passed, k);
        } else if (const std::size_t blocker = walk.blocker(u, i); blocker != detail::walk_precedence::none) {
          f.passed_at = static_cast<compact_index>(i);
          f.users_passed = static_cast<compact_index>(std::min(passed, k));
          walk.wait(s, blocker, f.next_waiting);
          return reuse_verdict::drop;
        }
      }
      f.passed_at = static_cast<compact_index>(i);
      f.users_passed = static_cast<compact_index>(passed);
      if (passed == last_users.size()) return reuse_verdict::take;
      const std::size_t back = exact.next_common(last_users, position);
      f.next_waiting = first_aside[back];
      first_aside[back] = static_cast<compact_index>(s);
      return reuse_verdict::set_aside;
    };
    for (compact_index s = first_aside[position]; s != end_of_list;) {  // their users in the block precede i
      const compact_index next = freed[s].next_waiting;
      pool.restore(s, freed[s].bytes, freed[s].device, freed[s].release);
      s = next;
    }
    for (const std::size_t s : woken) {
      if (judge(s) == reuse_verdict::take) pool.restore(s, freed[s].bytes, freed[s].device, freed[s].release);
    }
    woken.clear();
    detail::place_outputs(c, options, i, plan, [&](buffer_id b) {
      return pool.take(buffers.bytes[b], detail::device_of(options, b), judge, options.max_candidates);
    });
    freed.resize(plan.num_storages());
    for (const buffer_id b : c.reads[i]) {
      if (reads_left[b] != never_freed && --reads_left[b] == 0) release(b, c.readers[b]);
    }
    for (buffer_id b = buffers.first[i]; b < buffers.first[i + 1]; ++b) {  // outputs nobody reads
      if (reads_left[b] == 0) release(b, std::array<compact_index, 1>{static_cast<compact_index>(i)});
    }
    ++position;
  };
  for (const walk_step& s : steps) {
    switch (s.kind) {
      case step_kind::enter: enter(s.vertex); break;
      case step_kind::run: run(s.vertex); break;
      case step_kind::leave: leave(s.vertex); break;
    }
  }

  detail::sum_storages(plan);
  plan.exact_precedence = exact.whole_graph();
  plan.buffers = std::move(c.buffers);
  return plan;
}

}  // namespace memopt
