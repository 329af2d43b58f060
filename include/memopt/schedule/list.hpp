#pragma once
// list_schedule: the list scheduler of XLA's memory scheduler, with the
// priority as a policy. At each step it runs the ready vertex whose priority
// is highest; ties go by `tie_break`. A priority sees the vertex and the loop's
// list_state, and states what of that state its key reads (key_dependency);
// the loop recomputes a ready vertex's key whenever that may have changed, so
// no key goes stale. A priority that states nothing is recomputed for every
// ready vertex at every step.
//
// bytes_freed_priority is XLA's: bytes freed minus bytes defined, then the
// number of users; least_live_after_priority breaks that tie by the smaller
// outputs instead (the plain "least memory after" greedy). Persistent buffers are ignored, as XLA ignores parameters
// and constants; a graph output is never freed.
//
// O((V + E) log V) for the built-ins; see key_dependency for the others.
// Throws cycle_error (with the cycle) on a cyclic graph, bad_port_error on an
// edge reading a port its source lacks.

#include <memopt/detail/kahn.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/schedule/result.hpp>

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <queue>
#include <string_view>
#include <type_traits>
#include <vector>

namespace memopt {

/// gain - loss, exact for any two 64-bit byte counts.
struct byte_balance {
  std::uint64_t magnitude = 0;
  bool negative = false;

  static constexpr byte_balance of(std::uint64_t gain, std::uint64_t loss) noexcept {
    return gain >= loss ? byte_balance{gain - loss, false} : byte_balance{loss - gain, true};
  }
  friend constexpr bool operator==(const byte_balance&, const byte_balance&) = default;
  friend constexpr std::strong_ordering operator<=>(const byte_balance& a, const byte_balance& b) {
    if (a.negative != b.negative) return a.negative ? std::strong_ordering::less : std::strong_ordering::greater;
    return a.negative ? b.magnitude <=> a.magnitude : a.magnitude <=> b.magnitude;
  }
};

/// (gain - loss, then a count below 2^32) as one 97-bit number in two words,
/// ordered as (byte_balance::of(gain, loss), count) is: sixteen bytes where
/// that pair takes 32, and a comparison with no branch on a sign. The balance
/// lies in (-2^64, 2^64); plus 2^64 it takes 65 bits, the top 64 in `high`,
/// the lowest above the count in `low`. The default is above every key.
struct balance_key {
  std::uint64_t high = UINT64_MAX;
  std::uint64_t low = UINT64_MAX;

  static constexpr balance_key of(std::uint64_t gain, std::uint64_t loss, std::size_t count) noexcept {
    // 2^64 + gain - loss: its low 64 bits wrap around, its bit 64 is set unless loss > gain.
    const std::uint64_t wrapped = gain - loss;
    const std::uint64_t top = gain >= loss ? std::uint64_t{1} << 63 : 0;
    return {top | wrapped >> 1, (wrapped & 1) << 32 | count};
  }
  [[nodiscard]] constexpr std::size_t count() const noexcept { return low & 0xFFFFFFFF; }
  friend constexpr bool operator==(const balance_key&, const balance_key&) = default;
  friend constexpr auto operator<=>(const balance_key&, const balance_key&) = default;
};

/// What the list loop knows, for priorities to read. Vertices and buffers are
/// dense indices of `graph`.
class list_state {
 public:
  explicit list_state(const compact_graph& g) : graph(g), defined_(g.num_vertices(), 0),
      freed_(g.num_vertices(), 0), uses_(g.buffers.size()) {
    const auto& buffers = graph.buffers;
    dropped_.assign(graph.num_vertices(), 0);
    for (std::size_t v = 0; v < graph.num_vertices(); ++v) {
      for (buffer_id b = buffers.first[v]; b < buffers.first[v + 1]; ++b) {
        if (buffers.persistent[b]) continue;
        defined_[v] += buffers.bytes[b];
        if (graph.readers.size(b) == 0 && !buffers.live_out[b]) dropped_[v] += buffers.bytes[b];
      }
    }
    for (buffer_id b = 0; b < buffers.size(); ++b) {
      uses_[b].count = static_cast<compact_index>(graph.readers.size(b) + (buffers.live_out[b] ? 1 : 0));
      for (const auto r : graph.readers[b]) uses_[b].readers_xor ^= r;
      if (uses_[b].count == 1) credit_last_reader(b);
    }
  }

  const compact_graph& graph;

  /// Transient bytes of v's outputs.
  [[nodiscard]] std::uint64_t bytes_defined(std::size_t v) const { return defined_[v]; }
  /// Transient bytes v frees if it runs now: buffers it is the last unscheduled reader of.
  [[nodiscard]] std::uint64_t bytes_freed(std::size_t v) const { return freed_[v]; }
  /// Transient bytes of v's outputs that nobody reads: freed right after v's step.
  [[nodiscard]] std::uint64_t bytes_dropped(std::size_t v) const { return dropped_[v]; }
  /// Readers of b not yet run (plus one for a graph output).
  [[nodiscard]] std::size_t unscheduled_uses(buffer_id b) const { return uses_[b].count; }
  /// The reader of b not yet run, while unscheduled_uses(b) == 1 and b is no graph output.
  [[nodiscard]] std::size_t sole_unscheduled_reader(buffer_id b) const { return uses_[b].readers_xor; }
  /// Distinct vertices reading any output of v.
  [[nodiscard]] std::size_t users(std::size_t v) const {
    if (users_.empty()) users_ = detail::count_users(graph);
    return users_[v];
  }
  [[nodiscard]] bool scheduled(std::size_t v) const { return scheduled_.size() > v && scheduled_[v]; }

  /// Records that v ran; returns the buffers whose last reader is now known.
  const std::vector<buffer_id>& run(std::size_t v) {
    if (scheduled_.empty()) scheduled_.assign(graph.num_vertices(), 0);
    scheduled_[v] = 1;
    now_single_.clear();
    for (const auto b : graph.reads[v]) {
      uses_[b].readers_xor ^= static_cast<compact_index>(v);
      if (--uses_[b].count == 1) {
        credit_last_reader(b);
        now_single_.push_back(b);
      }
    }
    return now_single_;
  }

 private:
  void credit_last_reader(buffer_id b) {
    if (graph.buffers.persistent[b] || graph.buffers.live_out[b]) return;
    freed_[sole_unscheduled_reader(b)] += graph.buffers.bytes[b];
  }

  std::vector<std::uint64_t> defined_;
  std::vector<std::uint64_t> freed_;
  std::vector<std::uint64_t> dropped_;
  mutable std::vector<compact_index> users_;  ///< counted on first use: not every priority asks
  struct unscheduled {
    compact_index count = 0;        ///< readers not yet run, plus one for a graph output
    compact_index readers_xor = 0;  ///< their indices XORed: the one left when it is alone
  };
  std::vector<unscheduled> uses_;  ///< by buffer (readers are distinct)
  std::vector<char> scheduled_;
  std::vector<buffer_id> now_single_;
};

/// What a priority's key reads of list_state, and so when the loop recomputes
/// it for a ready vertex v. Each kind covers the ones before it.
enum class key_dependency {
  none,              ///< the graph alone (bytes_defined, bytes_dropped, users): keyed once
  bytes_freed,       ///< also bytes_freed(v): re-keyed when it changes, O(E) in all
  unscheduled_uses,  ///< also unscheduled_uses(b) of the buffers v reads: v is re-keyed when
                     ///< one of them changes, O(sum over buffers of readers squared) in all
  any_state          ///< anything: every ready vertex re-keyed at every step, O(V x ready)
};

/// A priority: higher runs first. It may state what its key reads as
/// `static constexpr memopt::key_dependency depends_on`; one that does not is
/// taken to read any state.
template <class P>
concept schedule_priority = requires(const P& p, const list_state& s, std::size_t v) {
  { p(s, v) } -> std::totally_ordered;
} && (!requires { P::depends_on; } || std::same_as<std::remove_cvref_t<decltype(P::depends_on)>, key_dependency>);

/// What P's key reads: its depends_on, or any state when it states nothing.
template <class P>
constexpr key_dependency priority_dependency() {
  if constexpr (requires { P::depends_on; }) {
    return P::depends_on;
  } else {
    return key_dependency::any_state;
  }
}

/// A priority may name itself (name()); the list scheduler then reports it.
template <class P>
constexpr std::string_view priority_name() {
  if constexpr (requires { P::name(); }) {
    return P::name();
  } else {
    return "list";
  }
}

/// XLA's: bytes freed minus bytes defined, then the number of users (below
/// 2^32, as a snapshot's vertices are).
struct bytes_freed_priority {
  static constexpr std::string_view name() { return "list"; }
  static constexpr key_dependency depends_on = key_dependency::bytes_freed;
  balance_key operator()(const list_state& s, std::size_t v) const {
    return balance_key::of(s.bytes_freed(v), s.bytes_defined(v), s.users(v));
  }
};

/// The plain greedy: least live memory after the step (bytes freed, unread
/// outputs included, minus bytes defined), then the smaller step memory.
struct least_live_after_priority {
  static constexpr std::string_view name() { return "least-live-after"; }
  static constexpr key_dependency depends_on = key_dependency::bytes_freed;
  auto operator()(const list_state& s, std::size_t v) const {
    return std::pair{byte_balance::of(s.bytes_freed(v) + s.bytes_dropped(v), s.bytes_defined(v)),
                     ~s.bytes_defined(v)};
  }
};

/// Who wins among ready vertices of equal priority.
enum class tie_break {
  latest_ready,    ///< the one that became ready (or changed priority) last: XLA's multimap
  earliest_ready,  ///< first come, first served
  lowest_index     ///< the lowest vertex index (program order for files)
};

struct list_options {
  tie_break ties = tie_break::latest_ready;
};

/// The list order of the snapshot, as dense vertex indices.
template <schedule_priority Priority = bytes_freed_priority>
[[nodiscard]] std::vector<std::size_t> list_order(const compact_graph& g, const Priority& priority = {},
                                                  const list_options& options = {}) {
  using key_type = std::invoke_result_t<const Priority&, const list_state&, std::size_t>;
  const std::size_t n = g.num_vertices();
  struct entry {
    key_type key;
    std::uint64_t tie;
    compact_index vertex;
    std::uint32_t version;  // requeued at most once a step (a key reads only the state): no wrap
    bool operator<(const entry& other) const {
      if (key < other.key) return true;
      if (other.key < key) return false;
      return tie < other.tie;
    }
  };
  constexpr key_dependency depends = priority_dependency<Priority>();
  list_state state(g);
  std::priority_queue<entry> ready;
  // The ready vertices and their current keys, side by side and dense (few
  // are ready at once); by vertex, where it sits among them and its newest entry.
  constexpr compact_index not_ready = std::numeric_limits<compact_index>::max();
  std::vector<std::size_t> ready_vertices;
  std::vector<key_type> ready_keys;
  struct place {
    compact_index slot;
    std::uint32_t version;
  };
  std::vector<place> where(n, place{not_ready, 0});
  std::uint64_t sequence = 0;
  // Queues v, or requeues it when its priority changed (an unchanged one keeps
  // its place among equals, as in XLA).
  const auto push = [&](std::size_t v) {
    auto k = priority(state, v);
    if (where[v].slot == not_ready) {
      where[v].slot = static_cast<compact_index>(ready_vertices.size());
      ready_vertices.push_back(v);
      ready_keys.push_back(k);
    } else if (ready_keys[where[v].slot] == k) {
      return;
    } else {
      ready_keys[where[v].slot] = k;
    }
    ++sequence;
    const std::uint64_t tie = options.ties == tie_break::latest_ready     ? sequence
                              : options.ties == tie_break::earliest_ready ? ~sequence
                                                                          : ~static_cast<std::uint64_t>(v);
    ready.push({std::move(k), tie, static_cast<compact_index>(v), ++where[v].version});
  };
  const auto rekey_ready_readers = [&](buffer_id b) {
    for (const auto r : g.readers[b]) {
      if (where[r].slot != not_ready) push(r);
    }
  };
  // b's last reader is known: only its bytes freed changed (none left for a graph output).
  const auto rekey_sole_reader = [&](buffer_id b) {
    if (g.buffers.live_out[b]) return;
    const std::size_t r = state.sole_unscheduled_reader(b);
    if (where[r].slot != not_ready) push(r);
  };

  detail::ready_tracker tracker(g);
  tracker.start(push);
  std::vector<std::size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const entry top = ready.top();
    ready.pop();
    if (top.version != where[top.vertex].version) continue;  // superseded by a newer priority
    const std::size_t v = top.vertex;
    if (const std::size_t last = ready_vertices.back(); last != v) {  // takes v's place
      ready_vertices[where[v].slot] = last;
      ready_keys[where[v].slot] = std::move(ready_keys.back());
      where[last].slot = where[v].slot;
    }
    ready_vertices.pop_back();
    ready_keys.pop_back();
    where[v].slot = not_ready;
    order.push_back(v);
    const auto& single = state.run(v);
    tracker.ran(v, push);
    if constexpr (depends == key_dependency::any_state) {
      for (std::size_t k = 0; k < ready_vertices.size(); ++k) push(ready_vertices[k]);
    } else if constexpr (depends == key_dependency::unscheduled_uses) {
      for (const auto b : g.reads[v]) rekey_ready_readers(b);
    } else if constexpr (depends == key_dependency::bytes_freed) {
      for (const auto b : single) rekey_sole_reader(b);
    }
  }
  detail::require_complete(g, order);
  return order;
}

/// Runs the ready vertex `priority` ranks first. O((V + E) log V).
template <tensor_graph G, schedule_priority Priority = bytes_freed_priority,
          vertex_index_map<G> Index = identity_index>
[[nodiscard]] schedule_result<G> list_schedule(const G& g, const Priority& priority = {},
                                               const list_options& options = {}, Index index = {}) {
  return schedule_with(g, index, priority_name<Priority>(),
                       [&](const compact_graph& c) { return list_order(c, priority, options); });
}

}  // namespace memopt
