#pragma once
// state_store: the exact search's states (segment_search.hpp), one per set of
// vertices run, found by the set (open addressing over a splitmix64 hash of
// its words): the cost of the cheapest path there, the bytes live after it,
// and the link back along that path.

#include <memopt/detail/splitmix.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace memopt::detail {

struct search_state {
  std::uint64_t cost;  ///< largest step memory on the path here
  std::uint64_t live;  ///< bytes live after the vertices of the set ran
  std::size_t parent;
  std::size_t vertex;  ///< the vertex run last on the path here
  std::size_t depth;   ///< vertices in the set
};

class state_store {
 public:
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

  /// A store of sets of `words` 64-bit words each.
  explicit state_store(std::size_t words) : words_(words) {}

  [[nodiscard]] std::size_t size() const { return states_.size(); }
  [[nodiscard]] const search_state& operator[](std::size_t id) const { return states_[id]; }
  [[nodiscard]] const std::uint64_t* set_of(std::size_t id) const { return sets_.data() + id * words_; }

  /// Adds a state for `set` (not in the store yet); returns its id. The
  /// sets may move: pointers from set_of are good until the next add.
  std::size_t add(const std::vector<std::uint64_t>& set, const search_state& state) {
    sets_.insert(sets_.end(), set.begin(), set.end());
    states_.push_back(state);
    const std::size_t id = states_.size() - 1;
    if (2 * states_.size() > table_.size()) rehash();
    else place(id);
    return id;
  }

  /// The id to queue for `set` reached as `state`, or none when a path at
  /// most as costly reached it before.
  std::size_t find_or_add(const std::vector<std::uint64_t>& set, const search_state& state) {
    const std::size_t id = find(set);
    if (id == none) return add(set, state);
    if (states_[id].cost <= state.cost) return none;
    states_[id] = state;
    return id;
  }

  /// The id of the state of `set`, or none.
  [[nodiscard]] std::size_t find(const std::vector<std::uint64_t>& set) const {
    if (table_.empty()) return none;
    const std::size_t mask = table_.size() - 1;
    for (std::size_t slot = hash(set.data()) & mask; table_[slot] != none; slot = (slot + 1) & mask) {
      if (std::equal(set.begin(), set.end(), set_of(table_[slot]))) return table_[slot];
    }
    return none;
  }

  /// The vertices run on the path to state `id`, first to last.
  [[nodiscard]] std::vector<std::size_t> path_to(std::size_t id) const {
    std::vector<std::size_t> order;
    for (; states_[id].parent != none; id = states_[id].parent) order.push_back(states_[id].vertex);
    std::reverse(order.begin(), order.end());
    return order;
  }

  void clear() {
    states_.clear();
    sets_.clear();
    table_.clear();
  }

 private:
  [[nodiscard]] std::size_t hash(const std::uint64_t* set) const {
    std::uint64_t h = 0;
    for (std::size_t w = 0; w < words_; ++w) h = splitmix64(h + set[w] + golden_gamma);
    return static_cast<std::size_t>(h);
  }

  void place(std::size_t id) {
    const std::size_t mask = table_.size() - 1;
    for (std::size_t slot = hash(set_of(id)) & mask;; slot = (slot + 1) & mask) {
      if (table_[slot] == none) {
        table_[slot] = id;
        return;
      }
    }
  }

  void rehash() {
    table_.assign(std::max<std::size_t>(1024, std::bit_ceil(4 * states_.size())), none);
    for (std::size_t id = 0; id < states_.size(); ++id) place(id);
  }

  std::size_t words_;
  std::vector<search_state> states_;
  std::vector<std::uint64_t> sets_;  ///< the states' sets, words_ words each
  std::vector<std::size_t> table_;   ///< open addressing: state ids by set
};

}  // namespace memopt::detail
