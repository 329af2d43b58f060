#pragma once
// keyed_position_set: a set of positions in [0, n), each with a key that only
// falls while the position is present: the least key over a range of present
// positions, and the first present position from a point. The inductor
// scheduler keeps its ready vertices in one, by size rank (a ready vertex's key
// only falls: the bytes it would free only grow).
//
// A 64-ary tree of summaries: level 0 holds the positions' keys, and entry j of
// level k + 1 the least key of group j of level k (its entries 64j .. 64j + 63);
// each level has a bit mask of its present entries, and an absent entry's key
// is never read. An update climbs while a group's least key changes, a query
// reads one or two groups a level, visiting present entries only. Above level 0
// everything is n / 64 entries or fewer (a 10^6-position set: 15625, then 245,
// 4 and 1), so a climb stays in cache, where a binary tree over the same
// positions would miss at most of its 20 levels; and no update reads a
// position's old key, which would miss too.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memopt::detail {

template <class Key>
class keyed_position_set {
 public:
  /// n positions, none present; `empty` is above every key (and stands for none).
  keyed_position_set(std::size_t n, Key empty) : empty_(empty) {
    std::size_t count = n;
    do {
      levels_.push_back({std::vector<Key>(count, empty), std::vector<std::uint64_t>((count + 63) / 64, 0)});
      count = (count + 63) / 64;
    } while (levels_.back().keys.size() > 1);
  }

  /// Adds position i with `key`, or lowers present i's key to `key` (never above it).
  void lower(std::size_t i, Key key) {
    for (std::size_t k = 0; k < levels_.size(); ++k) {
      level& at = levels_[k];
      at.keys[i] = key;
      at.present[i / 64] |= bit(i);
      if (k + 1 == levels_.size()) return;
      i /= 64;  // i's group, an entry above
      const level& up = levels_[k + 1];
      if (up.has(i) && !(key < up.keys[i])) return;  // the group's least stays
    }
  }

  /// Removes present position i.
  void erase(std::size_t i) {
    // Going up, entry i has left its group, or its key has risen to `key`.
    bool left = true;
    Key key = empty_;
    for (std::size_t k = 0; k < levels_.size(); ++k) {
      level& at = levels_[k];
      if (left) {
        at.present[i / 64] &= ~bit(i);
      } else {
        at.keys[i] = key;
      }
      if (k + 1 == levels_.size()) return;
      const std::size_t group = i / 64;
      left = at.present[group] == 0;
      if (!left) {
        key = least(empty_, at, group * 64, group * 64 + 64);
        if (key == levels_[k + 1].keys[group]) return;  // not the group's least that left or rose
      }
      i = group;
    }
  }

  /// The least key over present positions in [lo, hi); `empty` when there are none.
  [[nodiscard]] Key min(std::size_t lo, std::size_t hi) const {
    Key best = empty_;
    // Take the partial groups at both ends at this level, the whole ones between
    // them from the level above. A range reaching the end ends with a whole
    // group: so the whole set's least is the top entry, read alone.
    for (const level& at : levels_) {
      if (lo >= hi) break;
      if (hi == at.keys.size()) hi = (hi + 63) / 64 * 64;
      if (lo / 64 == (hi - 1) / 64) return least(best, at, lo, hi);
      if (lo % 64 != 0) best = least(best, at, lo, (lo / 64 + 1) * 64);
      if (hi % 64 != 0) best = least(best, at, hi / 64 * 64, hi);
      lo = (lo + 63) / 64;
      hi /= 64;
    }
    return best;
  }

  /// The first present position >= from, or SIZE_MAX.
  [[nodiscard]] std::size_t first_from(std::size_t from) const {
    // Climb until a group holds a present entry at or after `from`'s, then
    // descend through each level's first present entry.
    std::size_t k = 0;
    for (;; ++k) {
      const auto& present = levels_[k].present;
      if (from / 64 >= present.size()) return SIZE_MAX;
      const std::uint64_t rest = present[from / 64] & (~std::uint64_t{0} << (from % 64));
      if (rest != 0) {
        from = from / 64 * 64 + static_cast<std::size_t>(std::countr_zero(rest));
        break;
      }
      if (k + 1 == levels_.size()) return SIZE_MAX;
      from = from / 64 + 1;
    }
    for (; k > 0; --k) from = from * 64 + static_cast<std::size_t>(std::countr_zero(levels_[k - 1].present[from]));
    return from;
  }

 private:
  struct level {
    std::vector<Key> keys;               ///< by entry: its key, read only while present
    std::vector<std::uint64_t> present;  ///< by group: a bit for each present entry
    [[nodiscard]] bool has(std::size_t i) const { return (present[i / 64] & bit(i)) != 0; }
  };

  static std::uint64_t bit(std::size_t i) { return std::uint64_t{1} << (i % 64); }

  /// min(best, the keys of present entries in [lo, hi)), all in one group.
  static Key least(Key best, const level& at, std::size_t lo, std::size_t hi) {
    const std::uint64_t from_lo = ~std::uint64_t{0} << (lo % 64);
    const std::uint64_t below_hi = hi % 64 == 0 ? ~std::uint64_t{0} : ~(~std::uint64_t{0} << (hi % 64));
    const std::size_t base = lo / 64 * 64;
    for (std::uint64_t m = at.present[lo / 64] & from_lo & below_hi; m != 0; m &= m - 1) {
      const Key& key = at.keys[base + static_cast<std::size_t>(std::countr_zero(m))];
      if (key < best) best = key;
    }
    return best;
  }

  Key empty_;
  std::vector<level> levels_;  ///< levels_[0]: the positions; the last: one entry, the least of all
};

}  // namespace memopt::detail
