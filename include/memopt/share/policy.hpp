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
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace memopt {

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
  void add(std::size_t storage, std::uint64_t bytes, std::uint32_t device) {
    pools_[device].insert(entry{bytes, next_release_++, storage});
  }

  /// A free storage on `device` that allowed(storage) accepts, chosen by the
  /// policy among at most max_candidates, and removed from the pool.
  template <class Allowed>
  std::optional<std::size_t> take(std::uint64_t bytes, std::uint32_t device, Allowed&& allowed,
                                  std::size_t max_candidates) {
    const auto found = pools_.find(device);
    if (found == pools_.end()) return std::nullopt;
    auto& pool = found->second;
    const auto take_at = [&pool](auto it) {
      const std::size_t storage = it->storage;
      pool.erase(it);
      return std::optional<std::size_t>(storage);
    };
    if constexpr (std::same_as<Policy, lifo_reuse>) {
      std::size_t seen = 0;
      for (auto it = pool.begin(); it != pool.end() && seen < max_candidates; ++it, ++seen) {
        if (allowed(it->storage)) return take_at(it);
      }
    } else if constexpr (std::same_as<Policy, best_fit_reuse>) {
      const auto fit = pool.lower_bound(entry{bytes, most_recent, 0});
      std::size_t seen = 0;
      for (auto it = fit; it != pool.end() && seen < max_candidates; ++it, ++seen) {
        if (allowed(it->storage)) return take_at(it);
      }
      // None fits: the largest below, group by group (most recent first in each).
      seen = 0;
      for (auto group_end = fit; group_end != pool.begin() && seen < max_candidates;) {
        const auto group = pool.lower_bound(entry{std::prev(group_end)->bytes, most_recent, 0});
        for (auto it = group; it != group_end && seen < max_candidates; ++it, ++seen) {
          if (allowed(it->storage)) return take_at(it);
        }
        group_end = group;
      }
    } else {
      auto best = pool.end();
      for (auto it = pool.begin(); it != pool.end(); ++it) {
        if (!allowed(it->storage)) continue;
        const bool first = best == pool.end();
        if (first || (it->bytes >= best->bytes && (best->bytes < bytes || best->bytes >= it->bytes))) {
          best = it;
        }
      }
      if (best != pool.end()) return take_at(best);
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
  std::map<std::uint32_t, std::set<entry, scan_order>> pools_;
  std::uint64_t next_release_ = 0;
};

}  // namespace detail

}  // namespace memopt
