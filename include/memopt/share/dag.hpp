#pragma once
// dag_share: buffer sharing valid for *every* order of the graph (Caffe2
// memonger's blob recycling for DAGs). A storage may take a new buffer only
// when the ops that last used it (the readers of its last member, or its
// producer when nobody reads it) all precede the new buffer's producer in the
// graph; so parallel branches never share, and no storage mixes devices.
//
// Ops run in the seed's depth-first order (graph inputs and weights first,
// then an op as soon as its last predecessor has, depth first). Whether a
// user precedes the op is exact on graphs of at most
// options.exact_precedence_vertices vertices (each op's descendants as bits,
// by position in that order: a storage refused is set aside until the first
// op all its users precede); on larger ones it comes in near-constant time
// from the walk's stack and a union-find of finished vertices (and users that
// passed at an op still on the stack pass), and may miss a path: a missed
// reuse, never a wrong one (docs/sharing.md). Either way every plan passes
// check_sharing(g, plan).
//
// Among the allowed storages the policy picks (best fit by default), judging
// at most options.max_candidates per output; the pool keeps the
// options.max_free storages freed last per device.
//
// O((V + E) α(V) + B · max_candidates · log max_free) for B buffers (a
// refused storage is judged again at most once per refusal); with exact
// precedence O(E · V / 64) more for the bits and O(V / 64) a user for each
// storage set aside. Throws cycle_error (with the cycle), bad_port_error,
// size_overflow_error, std::invalid_argument (options of the wrong length).

#include <memopt/detail/kahn.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/graph/topology.hpp>
#include <memopt/liveness/liveness.hpp>
#include <memopt/share/plan.hpp>
#include <memopt/share/policy.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
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

/// "Does every last user of a storage precede op i?", from the walk's facts:
/// op i is on top of the walk's stack, so a user with a successor on the
/// stack precedes it, and so does a user merged into such a vertex: once the
/// last successor of a vertex has run, the vertex is merged into it (a
/// union-find forest with path halving). A yes is always a path of the graph.
/// A storage refused because of user u waits on u: only when a successor of u
/// enters the stack can the answer for u change (u never returns to it).
class precedence_test {
 public:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  explicit precedence_test(const compact_graph& c) : c_(c), facts_(c.num_vertices()) {
    for (std::size_t v = 0; v < c.num_vertices(); ++v) {
      facts_[v].merged_into = static_cast<compact_index>(v);
      facts_[v].successors_left = static_cast<compact_index>(c.successors.size(v));
    }
  }

  /// Op i runs: each predecessor's last successor to run takes it in.
  void ran(std::size_t i) {
    for (const std::size_t p : c_.predecessors[i]) {
      vertex_facts& facts = facts_[p];
      if (--facts.successors_left == 0) facts.merged_into = static_cast<compact_index>(i);
    }
  }

  /// Op i enters the walk's stack: on_wake(storage) is called for the
  /// storages waiting on a predecessor, last come first (they wait no more).
  /// link_of(storage) returns the link wait() left in the caller's record.
  template <class LinkOf, class OnWake>
  void entered(std::size_t i, LinkOf&& link_of, OnWake&& on_wake) {
    facts_[i].on_stack = true;
    for (const std::size_t p : c_.predecessors[i]) {
      vertex_facts& facts = facts_[p];
      ++facts.successors_on_stack;
      for (compact_index s = facts.first_waiting; s != end_of_list;) {
        const compact_index next = link_of(s);
        on_wake(s);
        s = next;
      }
      facts.first_waiting = end_of_list;
    }
  }

  /// Op i leaves the walk's stack.
  void left(std::size_t i) {
    facts_[i].on_stack = false;
    for (const std::size_t p : c_.predecessors[i]) --facts_[p].successors_on_stack;
  }

  /// Whether op v is on the walk's stack (so it precedes the op on top).
  [[nodiscard]] bool on_stack(std::size_t v) const { return facts_[v].on_stack; }

  /// The first of `users` after the first `known` (known to precede op i)
  /// not known to precede it, or none; `known` becomes the number of users
  /// before it. In the walk's test `users` shrinks: those looked at up to the
  /// blocker become distinct set leaders (the blocker is the first user whose
  /// leader fails, so the ones after it need no look yet).
  std::size_t first_blocker(std::span<compact_index>& users, std::size_t& known, std::size_t i) {
    std::size_t kept = known, next = known, blocker = none;
    while (next < users.size() && blocker == none) {
      const std::size_t leader = leader_of(users[next++]);
      vertex_facts& facts = facts_[leader];
      if (facts.seen) continue;
      facts.seen = true;
      users[kept++] = static_cast<compact_index>(leader);
      if (leader != i && facts.successors_on_stack == 0) blocker = leader;
    }
    for (std::size_t k = known; k < kept; ++k) facts_[users[k]].seen = false;
    known = blocker == none ? kept : kept - 1;
    while (next < users.size()) users[kept++] = users[next++];
    users = users.first(kept);
    return blocker;
  }

  /// `storage` waits on `blocker` (a storage waits on one vertex at most).
  /// `link` is the caller's place for the next storage waiting on the same
  /// vertex: kept beside the storage's other facts, it costs no cache miss of
  /// its own when the list is walked.
  void wait(std::size_t storage, std::size_t blocker, compact_index& link) {
    vertex_facts& facts = facts_[blocker];
    link = facts.first_waiting;
    facts.first_waiting = static_cast<compact_index>(storage);
  }

 private:
  static constexpr compact_index end_of_list = std::numeric_limits<compact_index>::max();
  /// What the test reads and writes of a vertex, side by side: one cache
  /// miss, not one an array (the forest's links too, rather than a
  /// detail::union_find: a user still a leader costs one miss, not two).
  struct vertex_facts {
    compact_index merged_into = 0;  ///< the forest's link: itself at a leader
    compact_index successors_left = 0;  ///< not yet run
    compact_index successors_on_stack = 0;
    compact_index first_waiting = end_of_list;  ///< the storages waiting on this vertex, in a list
    bool seen = false;  ///< de-duplicates a list of users
    bool on_stack = false;  ///< on the walk's stack now
  };

  /// The leader of v's set (path halving).
  std::size_t leader_of(std::size_t v) {
    while (facts_[v].merged_into != v) v = facts_[v].merged_into = facts_[facts_[v].merged_into].merged_into;
    return v;
  }

  const compact_graph& c_;
  std::vector<vertex_facts> facts_;
};

/// The exact answer, for graphs small enough to keep V^2/16 bytes: each op's
/// descendants as bits, by position in the walk's order (the walk does not
/// depend on the sharing, so its order is known before the pass). Besides
/// "does u precede the op at position t", it finds the first position after
/// t that all of a storage's users precede: until then the storage is of no
/// use, so it waits aside instead of being judged at every request.
class descendant_bits {
 public:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  /// Rows by position; a row holds only the words from its own position's
  /// on (an op's descendants come after it): V^2/16 bytes, not V^2/8.
  descendant_bits(const compact_graph& c, std::span<const std::size_t> order)
      : words_((order.size() + 63) / 64), position_(c.num_vertices()), row_start_(order.size() + 1, 0) {
    for (std::size_t t = 0; t < order.size(); ++t) {
      position_[order[t]] = static_cast<compact_index>(t);
      row_start_[t + 1] = row_start_[t] + words_ - t / 64;
    }
    bits_.assign(row_start_.back(), 0);
    for (std::size_t t = order.size(); t-- > 0;) {
      for (const std::size_t s : c.successors[order[t]]) {
        const std::size_t p = position_[s];
        for (std::size_t w = p / 64; w < words_; ++w) bits_[word_at(t, w)] |= bits_[word_at(p, w)];
        bits_[word_at(t, p / 64)] |= std::uint64_t{1} << (p % 64);
      }
    }
  }

  /// Whether u precedes the op at `position` (or is it).
  [[nodiscard]] bool precedes(std::size_t u, std::size_t position) const {
    const std::size_t mine = position_[u];
    if (position <= mine) return position == mine;
    return ((bits_[word_at(mine, position / 64)] >> (position % 64)) & 1) != 0;
  }

  /// The first position after `position` that every one of `users` precedes
  /// (users that ran by `position`, as a free storage's have), or none.
  [[nodiscard]] std::size_t next_common(std::span<const compact_index> users, std::size_t position) const {
    const std::size_t first = position + 1;
    for (std::size_t w = first / 64; w < words_; ++w) {
      std::uint64_t common = w == first / 64 ? ~std::uint64_t{0} << (first % 64) : ~std::uint64_t{0};
      for (std::size_t k = 0; k < users.size() && common != 0; ++k) {
        common &= bits_[word_at(position_[users[k]], w)];
      }
      if (common != 0) return 64 * w + static_cast<std::size_t>(std::countr_zero(common));
    }
    return none;
  }

 private:
  /// Where word w (at least t / 64) of the row at position t is.
  [[nodiscard]] std::size_t word_at(std::size_t t, std::size_t w) const { return row_start_[t] + w - t / 64; }

  std::size_t words_;
  std::vector<compact_index> position_;  ///< by vertex: its place in the walk's order
  std::vector<std::size_t> row_start_;   ///< by position: where its row begins in bits_
  std::vector<std::uint64_t> bits_;
};

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
  detail::precedence_test precedes(c);
  // Exact answers: a storage refused waits aside, in a list by the position of
  // the first op all its users precede (descendant_bits::next_common).
  constexpr compact_index end_of_list = std::numeric_limits<compact_index>::max();
  std::optional<detail::descendant_bits> descendants;
  std::vector<compact_index> first_aside;
  if (n <= options.exact_precedence_vertices) {
    std::vector<std::size_t> order;
    order.reserve(n);
    const auto nothing = [](std::size_t) {};
    const auto record = [&order](std::size_t v) { order.push_back(v); };
    if (detail::depth_first_topological(c, persistent, record, nothing, nothing) != n) require_acyclic(g, index);
    descendants.emplace(c, order);
    first_aside.assign(n, end_of_list);
  }
  // By buffer: the reads still to come before its storage is free again, or
  // never_freed (persistent, static, or in another buffer's storage).
  constexpr compact_index never_freed = std::numeric_limits<compact_index>::max();
  std::vector<compact_index> reads_left(buffers.size());
  for (buffer_id b = 0; b < buffers.size(); ++b) {
    const bool recycled = buffers.owns_storage(b) && !buffers.persistent[b] && !detail::is_static(c, options, b);
    reads_left[b] = recycled ? static_cast<compact_index>(c.readers.size(b)) : never_freed;
  }

  // The last users of every release, one after the other: each free storage
  // holds a slice (which the precedence test shrinks).
  std::vector<compact_index> users;
  users.reserve(c.readers.items.size() + buffers.size());
  struct freed_storage {  // what a restore and the test read, side by side
    std::uint64_t bytes = 0;
    std::uint64_t release = 0;
    std::size_t first_user = 0;
    compact_index user_count = 0;
    std::uint32_t device = 0;
    compact_index next_waiting = 0;  ///< while it waits (precedence_test::wait) or waits aside
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

  // A storage whose test failed stays out of the pool while it waits; woken
  // as op i enters the stack, it is judged again as i runs, and returns to
  // the pool only if it passes (most that fail there fail on another user).
  std::vector<std::size_t> woken;
  const auto enter = [&](std::size_t i) {
    precedes.entered(
        i, [&](std::size_t s) { return freed[s].next_waiting; }, [&](std::size_t s) { woken.push_back(s); });
  };
  const auto leave = [&](std::size_t i) { precedes.left(i); };
  std::size_t position = 0;  // of the op running, in the walk's order
  const auto run = [&](std::size_t i) {
    precedes.ran(i);
    const auto judge = [&](std::size_t s) {
      freed_storage& f = freed[s];
      if (descendants) {
        const std::span<const compact_index> last_users(users.data() + f.first_user, f.user_count);
        const auto precede = [&](std::size_t u) { return descendants->precedes(u, position); };
        if (std::ranges::all_of(last_users, precede)) return reuse_verdict::take;
        const std::size_t next = descendants->next_common(last_users, position);
        if (next != detail::descendant_bits::none) {  // else no later op may take it
          f.next_waiting = first_aside[next];
          first_aside[next] = static_cast<compact_index>(s);
        }
        return reuse_verdict::set_aside;
      }
      // Users that preceded an op still on the stack precede i: look only past them.
      std::size_t known = f.users_passed > 0 && precedes.on_stack(f.passed_at) ? f.users_passed : 0;
      if (known == f.user_count) return reuse_verdict::take;
      std::span<compact_index> last_users(users.data() + f.first_user, f.user_count);
      const std::size_t blocker = precedes.first_blocker(last_users, known, i);
      f.user_count = static_cast<compact_index>(last_users.size());
      f.passed_at = static_cast<compact_index>(i);
      f.users_passed = static_cast<compact_index>(known);
      if (blocker == detail::precedence_test::none) return reuse_verdict::take;
      precedes.wait(s, blocker, f.next_waiting);
      return reuse_verdict::drop;
    };
    if (descendants) {  // the storages all of whose users precede this op come back
      for (compact_index s = first_aside[position]; s != end_of_list;) {
        const compact_index next = freed[s].next_waiting;
        pool.restore(s, freed[s].bytes, freed[s].device, freed[s].release);
        s = next;
      }
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
  if (detail::depth_first_topological(c, persistent, run, enter, leave) != n) require_acyclic(g, index);

  detail::sum_storages(plan);
  plan.exact_precedence = descendants.has_value();
  plan.buffers = std::move(c.buffers);
  return plan;
}

}  // namespace memopt
