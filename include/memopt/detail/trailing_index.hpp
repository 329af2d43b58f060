#pragma once
// A variadic call whose last argument may be the vertex index map, as
// best_of(g, schedulers..., index) and compare::schedule_cells(g, name,
// options, own..., index) take it (the index map is the last argument
// everywhere in memopt): last_t names the last argument's type, all_but_last
// checks the others, with_last_first hands the last argument to a callable
// first.

#include <concepts>
#include <cstddef>
#include <tuple>
#include <utility>

namespace memopt::detail {

/// The last type of a non-empty pack.
template <class... Args>
using last_t = std::tuple_element_t<sizeof...(Args) - 1, std::tuple<Args...>>;

/// Whether every flag but the last holds (flags: one per argument, e.g. scheduler<Args>...).
template <std::same_as<bool>... B>
  requires(sizeof...(B) > 0)
constexpr bool all_but_last(B... flags) {
  const bool each[]{flags...};
  for (std::size_t k = 0; k + 1 < sizeof...(B); ++k) {
    if (!each[k]) return false;
  }
  return true;
}

/// f(last, first...) for args = first..., last.
template <class F, class... Args>
decltype(auto) with_last_first(F&& f, const Args&... args) {
  const auto all = std::forward_as_tuple(args...);
  return [&]<std::size_t... K>(std::index_sequence<K...>) -> decltype(auto) {
    return std::forward<F>(f)(std::get<sizeof...(Args) - 1>(all), std::get<K>(all)...);
  }(std::make_index_sequence<sizeof...(Args) - 1>{});
}

}  // namespace memopt::detail
