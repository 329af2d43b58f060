#pragma once
// The two answers dag_share gives to "does user u precede op i?" as its
// depth-first walk runs op i: exact ones within a block of consecutive ops of
// the walk's order (block_precedence), and the walk's own near-constant-time
// ones for users in earlier blocks (walk_precedence). A yes from either is a
// path of the graph; docs/sharing.md says what each misses and costs.

#include <memopt/graph/compact.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace memopt::detail {

/// "Does user u precede op i?" for users outside the exact block, from the
/// walk's facts: op i is on top of the walk's stack, so a user with a
/// successor on the stack precedes it, and so does a user merged into such a
/// vertex: once the last successor of a vertex has run, the vertex is merged
/// into it (a union-find forest with path halving). A yes is always a path of
/// the graph. A storage refused because of user u waits on u's leader: only
/// when a successor of it enters the stack can the answer change.
class walk_precedence {
 public:
  static constexpr std::size_t none = static_cast<std::size_t>(-1);

  explicit walk_precedence(const compact_graph& c) : c_(c), facts_(c.num_vertices()) {
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

  /// none when u is known to precede op i (on top of the stack); else the
  /// vertex to wait on, u's leader.
  std::size_t blocker(std::size_t u, std::size_t i) {
    const std::size_t leader = leader_of(u);
    return leader == i || facts_[leader].successors_on_stack > 0 ? none : leader;
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

/// Exact answers within a block of consecutive positions of the walk's order
/// (the walk does not depend on the sharing, so its order is known before
/// the pass): each op's descendants in the block as bits, a row holding only
/// the words from its own position on (block^2/16 bytes). A graph small
/// enough is one block. Besides "does u precede the op at position t", it
/// finds the first position after t that all of a storage's users in the
/// block precede: until then the storage is of no use, so it waits aside
/// instead of being judged at every request.
class block_precedence {
 public:
  block_precedence(const compact_graph& c, std::vector<std::size_t> order, std::size_t block)
      : c_(c), order_(std::move(order)), block_(block), position_(c.num_vertices()) {
    for (std::size_t t = 0; t < order_.size(); ++t) position_[order_[t]] = static_cast<compact_index>(t);
  }

  /// Whether one block holds the whole graph (every answer is exact).
  [[nodiscard]] bool whole_graph() const { return block_ >= order_.size(); }
  /// The position after the current block.
  [[nodiscard]] std::size_t end() const { return end_; }

  /// The walk reached position `first`: the block from it on becomes current.
  void start_block(std::size_t first) {
    begin_ = first;
    end_ = first + std::min(block_, order_.size() - first);
    const std::size_t last_word = (end_ + 63) / 64;
    row_start_.assign(end_ - begin_ + 1, 0);
    for (std::size_t t = begin_; t < end_; ++t) {
      row_start_[t - begin_ + 1] = row_start_[t - begin_] + last_word - t / 64;
    }
    bits_.assign(row_start_.back(), 0);
    for (std::size_t t = end_; t-- > begin_;) {
      for (const std::size_t s : c_.successors[order_[t]]) {
        const std::size_t p = position_[s];
        if (p >= end_) continue;
        for (std::size_t w = p / 64; w < last_word; ++w) bits_[word_at(t, w)] |= bits_[word_at(p, w)];
        bits_[word_at(t, p / 64)] |= std::uint64_t{1} << (p % 64);
      }
    }
  }

  /// Whether op u ran in the current block.
  [[nodiscard]] bool contains(std::size_t u) const { return position_[u] >= begin_ && position_[u] < end_; }

  /// Whether u (in the block) precedes the op at `position` (or is it).
  [[nodiscard]] bool precedes(std::size_t u, std::size_t position) const {
    const std::size_t mine = position_[u];
    if (position <= mine) return position == mine;
    return ((bits_[word_at(mine, position / 64)] >> (position % 64)) & 1) != 0;
  }

  /// The first position after `position` that every one of `users` in the
  /// block precedes (users that ran by `position`, as a free storage's have),
  /// or end() when none in the block does.
  [[nodiscard]] std::size_t next_common(std::span<const compact_index> users, std::size_t position) const {
    const std::size_t first = position + 1;
    for (std::size_t w = first / 64; 64 * w < end_; ++w) {
      std::uint64_t common = w == first / 64 ? ~std::uint64_t{0} << (first % 64) : ~std::uint64_t{0};
      for (std::size_t k = 0; k < users.size() && common != 0; ++k) {
        if (contains(users[k])) common &= bits_[word_at(position_[users[k]], w)];
      }
      if (common != 0) return std::min(end_, 64 * w + static_cast<std::size_t>(std::countr_zero(common)));
    }
    return end_;
  }

 private:
  /// Where word w (at least t / 64) of the row at position t is.
  [[nodiscard]] std::size_t word_at(std::size_t t, std::size_t w) const {
    return row_start_[t - begin_] + w - t / 64;
  }

  const compact_graph& c_;
  std::vector<std::size_t> order_;       ///< the walk's
  std::size_t block_;
  std::vector<compact_index> position_;  ///< by vertex: its place in the walk's order
  std::size_t begin_ = 0, end_ = 0;      ///< the current block
  std::vector<std::size_t> row_start_;   ///< by position in the block: where its row begins in bits_
  std::vector<std::uint64_t> bits_;
};

}  // namespace memopt::detail
