#pragma once
// What the families' registries (schedule/registry.hpp, heap/registry.hpp,
// share/registry.hpp) share: the limits a searching algorithm takes, and the
// lookup of an entry by name. A registry is a constant table of entries, each
// with a name, a description for help texts and a way to run it.

#include <memopt/error.hpp>
#include <memopt/progress.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memopt {

/// How long a searching algorithm (exact, best) may run; the others ignore it.
struct search_limits {
  std::optional<double> time_limit_seconds;  ///< none: the algorithm's default, unless work_limit is set
  std::optional<std::uint64_t> work_limit;   ///< states or search nodes; alone, the result is repeatable
  const std::atomic<bool>* stop = nullptr;   ///< once *stop is true the search ends with its best (Ctrl-C)
  progress_callback progress;                ///< hears a search's best and bound as it goes (progress.hpp)

  /// The time limit to search with, given the algorithm's default: a work
  /// limit alone means no time limit, so that the result depends on the input only.
  [[nodiscard]] std::optional<double> time_limit_or(double default_seconds) const {
    if (time_limit_seconds) return time_limit_seconds;
    if (work_limit) return std::nullopt;
    return default_seconds;
  }
  /// The work limit to search with, given the algorithm's default: a time
  /// limit alone means no work limit (the caller asked for that much time).
  [[nodiscard]] std::optional<std::uint64_t> work_limit_or(std::optional<std::uint64_t> default_work) const {
    if (work_limit) return work_limit;
    if (time_limit_seconds) return std::nullopt;
    return default_work;
  }
};

namespace detail {

/// The names of a registry's entries, in table order.
template <class Entry>
[[nodiscard]] std::vector<std::string> names_of(std::span<const Entry> table) {
  std::vector<std::string> names;
  for (const auto& e : table) names.emplace_back(e.name);
  return names;
}

/// The entry called `name`; unknown_algorithm_error naming `family` otherwise.
template <class Entry>
[[nodiscard]] const Entry& entry_named(std::span<const Entry> table, std::string_view family,
                                       std::string_view name) {
  for (const auto& e : table) {
    if (e.name == name) return e;
  }
  throw unknown_algorithm_error(std::string(family), std::string(name), names_of(table));
}

/// An algorithm's name(), or "<kind> <position>" when it has none.
template <class A>
[[nodiscard]] std::string algorithm_name(const A& a, std::string_view kind, std::size_t position) {
  if constexpr (requires { a.name(); }) {
    return std::string(a.name());
  } else {
    return std::string(kind) + " " + std::to_string(position);
  }
}

}  // namespace detail

}  // namespace memopt
