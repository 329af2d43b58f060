#pragma once
// Reuse policies: which free storage an output takes, among those the pass
// allows (the DAG pass only allows storages whose last users all precede the
// op). A storage is free from the release of its last member on.
//
// A policy is a value with two members (the reuse_policy concept):
// - before(a, b): the order in which the pool keeps the free storages of a
//   device (free_storage: bytes, release number, storage);
// - choose(candidates, bytes): walks them (begin, end, lower_bound), asks the
//   pass about some (allows, take_first), and takes one (take) or none. Each
//   question but those the pass refuses exactly counts towards the pass's
//   max_candidates (open() until then); a policy that keeps asking beyond
//   pays for it (the seed's pick does).
// The built-ins:
// - lifo_reuse: the most recently freed (the seed's linear pass).
// - best_fit_reuse: the smallest storage at least as large as the output;
//   when none is, the largest (it grows the least); ties: most recently freed.
// - caffe2_size_aware_reuse: the seed's size-aware pick, kept for
//   compatibility: scanning free storages in release order, take a larger one
//   while the best so far is smaller than the output, else only an equal one.
//   With free sizes [100, 10] a 10-byte output takes the 100-byte storage.
// lifo and best fit: O(log F) per request plus the allowed-test of at most
// max_candidates storages (F free storages); caffe2_size_aware: O(F).

#include <concepts>
#include <deque>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <memory_resource>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace memopt {

/// What a pass says of a free storage it is offered: take it, pass it over
/// (an exact, cheap refusal: it does not count towards max_candidates), drop
/// it from the pool (the pass will give it back later), or set it aside: an
/// exact refusal like skip, but the pass takes the storage out of the pool
/// and gives it back when it may be taken.
enum class reuse_verdict { take, skip, drop, set_aside };

/// A free storage as a policy sees it.
struct free_storage {
  std::uint64_t bytes = 0;
  std::uint64_t release = 0;  ///< 0, 1, 2, ... in release order
  std::size_t storage = 0;
};

namespace detail {

/// The pool's order: the policy's before().
template <class Policy>
struct policy_order {
  Policy policy;
  bool operator()(const free_storage& a, const free_storage& b) const { return policy.before(a, b); }
};

/// The free storages of one device, in the policy's order. Their nodes come
/// from the pool's own free lists: the DAG pass drops and restores storages
/// millions of times on large graphs.
template <class Policy>
using free_storages = std::pmr::set<free_storage, policy_order<Policy>>;

/// A pass's judge as reuse_policy checks it.
struct judge_archetype {
  reuse_verdict operator()(std::size_t) const;
};

}  // namespace detail

/// What a policy's choose() sees for one request: the free storages of one
/// device, in its before() order, and the pass's judgement of each.
template <class Policy, class Judge>
class reuse_candidates {
 public:
  using iterator = typename detail::free_storages<Policy>::const_iterator;

  reuse_candidates(detail::free_storages<Policy>& pool, Judge& judge, std::size_t max_candidates)
      : pool_(pool), judge_(judge), max_candidates_(max_candidates) {}

  [[nodiscard]] iterator begin() const { return pool_.begin(); }
  [[nodiscard]] iterator end() const { return pool_.end(); }
  /// The first storage not before `probe` in the policy's order.
  [[nodiscard]] iterator lower_bound(const free_storage& probe) const { return pool_.lower_bound(probe); }
  /// Fewer than max_candidates storages judged so far (skipped ones aside).
  [[nodiscard]] bool open() const { return judged_ < max_candidates_; }

  /// Asks the pass about *it and moves it to the next storage; a dropped
  /// storage leaves the pool. True when the pass lets the policy take it.
  bool allows(iterator& it) {
    switch (judge_(it->storage)) {
      case reuse_verdict::take: ++judged_; ++it; return true;
      case reuse_verdict::drop: ++judged_; it = pool_.erase(it); return false;
      case reuse_verdict::skip: ++it; return false;
      case reuse_verdict::set_aside: it = pool_.erase(it); return false;
    }
    return false;
  }
  /// Removes *it from the pool; returns its storage.
  std::size_t take(iterator it) {
    const std::size_t storage = it->storage;
    pool_.erase(it);
    return storage;
  }
  /// Takes the first storage of [first, last) the pass allows, while open().
  std::optional<std::size_t> take_first(iterator first, iterator last) {
    while (first != last && open()) {
      const iterator current = first;
      if (allows(first)) return take(current);
    }
    return std::nullopt;
  }

 private:
  detail::free_storages<Policy>& pool_;
  Judge& judge_;
  std::size_t max_candidates_;
  std::size_t judged_ = 0;
};

template <class P>
concept reuse_policy =
    std::copy_constructible<P> &&
    requires(const P p, const free_storage& a, const free_storage& b,
             reuse_candidates<P, const detail::judge_archetype>& candidates, std::uint64_t bytes) {
      { p.before(a, b) } -> std::convertible_to<bool>;
      { p.choose(candidates, bytes) } -> std::same_as<std::optional<std::size_t>>;
    };

struct lifo_reuse {
  [[nodiscard]] bool before(const free_storage& a, const free_storage& b) const {
    return a.release > b.release;
  }
  std::optional<std::size_t> choose(auto& candidates, std::uint64_t /*bytes*/) const {
    return candidates.take_first(candidates.begin(), candidates.end());
  }
};

struct best_fit_reuse {
  /// By size, the most recently freed first among equal sizes.
  [[nodiscard]] bool before(const free_storage& a, const free_storage& b) const {
    return std::tuple(a.bytes, b.release) < std::tuple(b.bytes, a.release);
  }
  std::optional<std::size_t> choose(auto& candidates, std::uint64_t bytes) const {
    const auto first_of = [&](std::uint64_t size) {
      return candidates.lower_bound({.bytes = size, .release = most_recent});
    };
    if (const auto s = candidates.take_first(first_of(bytes), candidates.end())) return s;
    // None fits: the largest below, group by group (most recent first in each).
    for (auto group_end = first_of(bytes); group_end != candidates.begin() && candidates.open();) {
      const std::uint64_t group_bytes = std::prev(group_end)->bytes;
      if (const auto s = candidates.take_first(first_of(group_bytes), group_end)) return s;
      group_end = first_of(group_bytes);
    }
    return std::nullopt;
  }

 private:
  static constexpr std::uint64_t most_recent = std::numeric_limits<std::uint64_t>::max();
};

struct caffe2_size_aware_reuse {
  [[nodiscard]] bool before(const free_storage& a, const free_storage& b) const {
    return a.release < b.release;
  }
  /// The seed's pick over every allowed storage, in release order.
  std::optional<std::size_t> choose(auto& candidates, std::uint64_t bytes) const {
    auto best = candidates.end();
    for (auto it = candidates.begin(); it != candidates.end();) {
      const auto current = it;
      if (!candidates.allows(it)) continue;
      if (best == candidates.end() ||
          (current->bytes >= best->bytes && (best->bytes < bytes || best->bytes >= current->bytes))) {
        best = current;
      }
    }
    if (best == candidates.end()) return std::nullopt;
    return candidates.take(best);
  }
};

namespace detail {

/// Free storages, one ordered set per device, in the policy's order.
template <reuse_policy Policy>
class free_pool {
 public:
  /// A pool keeping at most `capacity` free storages per device: adding one
  /// more forgets the one freed first (it is never reused).
  explicit free_pool(std::size_t capacity = std::numeric_limits<std::size_t>::max(), Policy policy = {})
      : capacity_(capacity), policy_(std::move(policy)) {}

  /// Frees `storage`; returns its release number (0, 1, 2, ...).
  std::uint64_t add(std::size_t storage, std::uint64_t bytes, std::uint32_t device) {
    restore(storage, bytes, device, next_release_);
    return next_release_++;
  }

  /// Frees `storage` again as if released at `release` (after a judge dropped it).
  void restore(std::size_t storage, std::uint64_t bytes, std::uint32_t device, std::uint64_t release) {
    auto& pool = pools_.try_emplace(device, policy_order<Policy>{policy_}, &nodes_).first->second;
    const free_storage added{bytes, release, storage};
    pool.insert(added);
    if (capacity_ == std::numeric_limits<std::size_t>::max()) return;
    auto& freed = freed_order_[device];
    freed.push_back(added);
    if (pool.size() > capacity_) {  // forget the storage freed (or restored) first
      while (!pool.contains(freed.front())) freed.pop_front();  // taken since
      pool.erase(freed.front());
      freed.pop_front();
    }
  }

  /// A free storage on `device` for `bytes`, chosen by the policy among those
  /// judge(storage) allows (at most max_candidates judged, as the policy
  /// keeps to it); removed from the pool, as are the storages judged
  /// reuse_verdict::drop.
  template <class Judge>
  std::optional<std::size_t> take(std::uint64_t bytes, std::uint32_t device, Judge&& judge,
                                  std::size_t max_candidates) {
    const auto found = pools_.find(device);
    if (found == pools_.end()) return std::nullopt;
    reuse_candidates<Policy, std::remove_reference_t<Judge>> candidates(found->second, judge, max_candidates);
    return policy_.choose(candidates, bytes);
  }

 private:
  std::size_t capacity_;
  Policy policy_;
  std::pmr::unsynchronized_pool_resource nodes_;  ///< before the sets that use it
  std::map<std::uint32_t, free_storages<Policy>> pools_;
  std::map<std::uint32_t, std::deque<free_storage>> freed_order_;  ///< only with a capacity
  std::uint64_t next_release_ = 0;
};

}  // namespace detail

}  // namespace memopt
