#pragma once
// Reuse policies: which free storage an output takes, among those the pass
// allows (the DAG pass only allows storages whose last users all precede the
// op). A storage is free from the release of its last member on.
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
#include <optional>
#include <set>
#include <tuple>

namespace memopt {

/// What a pass says of a free storage it is offered: take it, pass it over,
/// or drop it from the pool (the pass will give it back later).
enum class reuse_verdict { take, skip, drop };

struct lifo_reuse {};
struct best_fit_reuse {};
struct caffe2_size_aware_reuse {};

template <class P>
concept reuse_policy = std::same_as<P, lifo_reuse> || std::same_as<P, best_fit_reuse> ||
                       std::same_as<P, caffe2_size_aware_reuse>;

namespace detail {

/// Free storages, one ordered set per device, in the order the policy scans.
template <reuse_policy Policy>
class free_pool {
 public:
  /// A pool keeping at most `capacity` free storages per device: adding one
  /// more forgets the one freed first (it is never reused).
  explicit free_pool(std::size_t capacity = std::numeric_limits<std::size_t>::max())
      : capacity_(capacity) {}

  /// Frees `storage`; returns its release number (0, 1, 2, ...).
  std::uint64_t add(std::size_t storage, std::uint64_t bytes, std::uint32_t device) {
    restore(storage, bytes, device, next_release_);
    return next_release_++;
  }

  /// Frees `storage` again as if released at `release` (after a judge dropped it).
  void restore(std::size_t storage, std::uint64_t bytes, std::uint32_t device, std::uint64_t release) {
    auto& pool = pools_[device];
    const entry added{bytes, release, storage};
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

  /// A free storage on `device` that judge(storage) lets the policy take,
  /// among at most max_candidates judged; removed from the pool, as are the
  /// storages judged reuse_verdict::drop.
  template <class Judge>
  std::optional<std::size_t> take(std::uint64_t bytes, std::uint32_t device, Judge&& judge,
                                  std::size_t max_candidates) {
    const auto found = pools_.find(device);
    if (found == pools_.end()) return std::nullopt;
    auto& pool = found->second;
    std::size_t seen = 0;
    // Judges *it; erases it when dropped. Returns the storage when taken.
    const auto consider = [&](auto& it) -> std::optional<std::size_t> {
      ++seen;
      const std::size_t storage = it->storage;
      switch (judge(storage)) {
        case reuse_verdict::take: pool.erase(it); return storage;
        case reuse_verdict::drop: it = pool.erase(it); return std::nullopt;
        case reuse_verdict::skip: ++it; return std::nullopt;
      }
      return std::nullopt;
    };
    if constexpr (std::same_as<Policy, lifo_reuse>) {
      for (auto it = pool.begin(); it != pool.end() && seen < max_candidates;) {
        if (const auto s = consider(it)) return s;
      }
    } else if constexpr (std::same_as<Policy, best_fit_reuse>) {
      for (auto it = pool.lower_bound(entry{bytes, most_recent, 0});
           it != pool.end() && seen < max_candidates;) {
        if (const auto s = consider(it)) return s;
      }
      // None fits: the largest below, group by group (most recent first in each).
      for (auto group_end = pool.lower_bound(entry{bytes, most_recent, 0});
           group_end != pool.begin() && seen < max_candidates;) {
        const std::uint64_t group_bytes = std::prev(group_end)->bytes;
        auto it = pool.lower_bound(entry{group_bytes, most_recent, 0});
        while (it != pool.end() && it->bytes == group_bytes && seen < max_candidates) {
          if (const auto s = consider(it)) return s;
        }
        group_end = pool.lower_bound(entry{group_bytes, most_recent, 0});
      }
    } else {
      // The seed's pick over every allowed storage, in release order.
      auto best = pool.end();
      for (auto it = pool.begin(); it != pool.end();) {
        const auto current = it;
        const std::size_t storage = it->storage;
        const reuse_verdict verdict = judge(storage);
        if (verdict == reuse_verdict::drop) {
          it = pool.erase(it);
          continue;
        }
        ++it;
        if (verdict == reuse_verdict::skip) continue;
        if (best == pool.end() ||
            (current->bytes >= best->bytes && (best->bytes < bytes || best->bytes >= current->bytes))) {
          best = current;
        }
      }
      if (best != pool.end()) {
        const std::size_t storage = best->storage;
        pool.erase(best);
        return storage;
      }
    }
    return std::nullopt;
  }

 private:
  static constexpr std::uint64_t most_recent = std::numeric_limits<std::uint64_t>::max();
  struct entry {
    std::uint64_t bytes;
    std::uint64_t release;  ///< 0, 1, 2, ... in release order
    std::size_t storage;
  };
  struct scan_order {
    bool operator()(const entry& a, const entry& b) const {
      if constexpr (std::same_as<Policy, lifo_reuse>) {
        return a.release > b.release;
      } else if constexpr (std::same_as<Policy, best_fit_reuse>) {
        return std::tuple(a.bytes, b.release) < std::tuple(b.bytes, a.release);
      } else {
        return a.release < b.release;
      }
    }
  };
  std::size_t capacity_;
  std::map<std::uint32_t, std::set<entry, scan_order>> pools_;
  std::map<std::uint32_t, std::deque<entry>> freed_order_;  ///< only with a capacity
  std::uint64_t next_release_ = 0;
};

}  // namespace detail

}  // namespace memopt
